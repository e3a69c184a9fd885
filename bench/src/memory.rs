//! Memory under many tasks and streams, and start-up time with many published partners.
//!
//! - `completed`: tasks started and completed (echo) by 16 connections; the host's RSS is sampled
//!   every `--sample-every` tasks, to show it stays flat (terminal tasks live in sled only).
//! - `awaiting-input`: tasks left waiting for input (trip-planner); RSS once they all wait.
//! - `sse`: idle SSE streams (re-streams of tasks waiting for input) held open at once; RSS.
//! - `store`: the store alone, in this process, without the host: the writes of a real completed
//!   echo task, repeated for N tasks; this process's RSS is sampled as in `completed`, to tell
//!   the store's share of that growth from the engine's.
//! - `startup`: N partners published through the admin API; the host is restarted and timed
//!   until it serves all of them (their compiled code comes from the precompiled cache).

use crate::{Host, free_port, rss_mib};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use futures::StreamExt;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// An argument for `aiphost serve` (repeatable), e.g. `--host-arg=--store-cache-mib=8`.
    #[arg(long = "host-arg", allow_hyphen_values = true, global = true)]
    host_args: Vec<String>,
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand, Debug)]
enum What {
    /// Start and complete `--tasks` tasks; sample RSS as they accumulate.
    Completed {
        #[arg(long, default_value_t = 1_000_000)]
        tasks: u64,
        #[arg(long, default_value_t = 100_000)]
        sample_every: u64,
        #[arg(long, default_value_t = 16)]
        connections: usize,
    },
    /// Leave `--tasks` tasks waiting in awaiting-input; RSS at the end.
    AwaitingInput {
        #[arg(long, default_value_t = 100_000)]
        tasks: u64,
        #[arg(long, default_value_t = 16)]
        connections: usize,
    },
    /// Hold `--streams` idle SSE streams open at once; RSS before and after.
    Sse {
        #[arg(long, default_value_t = 10_000)]
        streams: u64,
    },
    /// The store alone: the two writes of a real completed echo task (copied from one run through
    /// a host), repeated `--tasks` times by 16 writers; RSS of this process as they accumulate.
    Store {
        #[arg(long, default_value_t = 1_000_000)]
        tasks: u64,
        #[arg(long, default_value_t = 100_000)]
        sample_every: u64,
        /// sled's page cache, in MiB (the host's `--store-cache-mib`).
        #[arg(long, default_value_t = 64)]
        cache_mib: u64,
    },
    /// Publish `--partners` partners, restart the host, time until it serves them all.
    Startup {
        #[arg(long, default_value_t = 100)]
        partners: u64,
    },
}

const LEADER: &str = "1.2.156.3088.1.1.BENCH.LEADER.1.0000";

fn command(method: &str, command: &str, task: &str, text: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": task, "params": {"command": {
        "type": "task-command", "id": format!("m-{command}-{task}"),
        "sentAt": "2026-01-01T00:00:00+00:00", "senderRole": "leader", "senderId": LEADER,
        "command": command, "commandParams": params,
        "dataItems": [{"type": "text", "text": text}], "taskId": task, "sessionId": "bench"
    }}})
}

async fn rpc(client: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<String> {
    let answer: Value = client.post(url).json(body).send().await?.json().await?;
    answer["result"]["status"]["state"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("not a task: {answer}"))
}

/// Print the head of a table of RSS against tasks done (and its first row, at 0) for process
/// `pid`; the returned closure prints a row, for [`drive`]'s samples.
fn rss_table(pid: u32, counted: &str, rss: &str) -> impl FnMut(u64, Duration) {
    println!("| {counted} | {rss} | elapsed | tasks/s so far |");
    println!("| ---: | ---: | ---: | ---: |");
    println!("| 0 | {:.1} MiB | 0 s | |", rss_mib(pid));
    move |n, t| {
        println!(
            "| {n} | {:.1} MiB | {:.0} s | {:.0} |",
            rss_mib(pid),
            t.as_secs_f64(),
            n as f64 / t.as_secs_f64()
        )
    }
}

/// Run `per_task` for tasks 0..n over `connections` connections, calling `sample` after every
/// `every` tasks (in completion order).
async fn drive<F, Fut>(
    n: u64,
    connections: usize,
    every: u64,
    per_task: F,
    mut sample: impl FnMut(u64, Duration),
) -> anyhow::Result<()>
where
    F: Fn(reqwest::Client, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let per_task = Arc::new(per_task);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..connections {
        let (next, done, per_task) = (next.clone(), done.clone(), per_task.clone());
        workers.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()?;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return anyhow::Ok(());
                }
                per_task(client.clone(), i).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let mut mark = every;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let d = done.load(Ordering::Relaxed);
        while d >= mark && mark <= n {
            sample(mark, started.elapsed());
            mark += every;
        }
        // Workers stop when the tasks run out or one fails; either way, collect them below.
        if workers.iter().all(|w| w.is_finished()) {
            break;
        }
    }
    for w in workers {
        w.await??;
    }
    let d = done.load(Ordering::Relaxed);
    if d < n {
        bail!("only {d} of {n} tasks were done");
    }
    Ok(())
}

pub async fn run(bin: &Path, agents: &Path, args: MemoryArgs) -> anyhow::Result<()> {
    let host_args: Vec<&str> = args.host_args.iter().map(String::as_str).collect();
    match args.what {
        What::Completed {
            tasks,
            sample_every,
            connections,
        } => {
            let host = Host::start(bin, agents, &host_args)?;
            let (pid, url) = (host.pid(), format!("{}/agents/echo/rpc", host.url));
            let row = rss_table(pid, "tasks completed", "host RSS");
            drive(
                tasks,
                connections,
                sample_every,
                move |client, i| {
                    let url = url.clone();
                    async move {
                        let task = format!("c{i}");
                        let s = rpc(
                            &client,
                            &url,
                            &command("rpc", "start", &task, "hi", json!({})),
                        )
                        .await?;
                        let c = rpc(
                            &client,
                            &url,
                            &command("rpc", "complete", &task, "", json!({})),
                        )
                        .await?;
                        if s != "awaiting-completion" || c != "completed" {
                            bail!("task {task}: {s}, then {c}");
                        }
                        Ok(())
                    }
                },
                row,
            )
            .await
        }
        What::AwaitingInput { tasks, connections } => {
            let host = Host::start(bin, agents, &host_args)?;
            let pid = host.pid();
            let before = rss_mib(pid);
            start_waiting(&host.url, tasks, connections, "w").await?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            println!(
                "{tasks} tasks in awaiting-input: host RSS {:.1} MiB (at start {before:.1} MiB); runtime pool slots: 256, so no task can hold an instance",
                rss_mib(pid)
            );
            Ok(())
        }
        What::Sse { streams } => sse(bin, agents, &host_args, streams).await,
        What::Store {
            tasks,
            sample_every,
            cache_mib,
        } => store_alone(bin, agents, tasks, sample_every, cache_mib).await,
        What::Startup { partners } => startup(bin, agents, partners).await,
    }
}

/// What a completed echo task wrote: its record, its events in order, its product chunks, how
/// many of the events its `start` wrote (the rest came with `complete`), and its command history
/// entry (the complete's; the start is in the record).
struct TaskWrites {
    record: aiphost::store::Encoded,
    events: Vec<aiphost::store::Encoded>,
    at_rest: usize,
    chunks: Vec<(String, aiphost::store::Encoded)>,
    history: Vec<(u64, aiphost::store::Encoded)>,
}

/// Run one echo task to completion through a real host and read back what it stored.
async fn one_completed_task(bin: &Path, agents: &Path) -> anyhow::Result<TaskWrites> {
    let data = tempfile::tempdir()?;
    let agents_arg = agents.to_string_lossy();
    {
        let cache = crate::compiled_cache(bin);
        let host = Host::start_in(
            bin,
            data.path(),
            free_port()?,
            &["--agents", &agents_arg, "--compiled-cache", &cache],
        )?;
        let (client, url) = (
            reqwest::Client::new(),
            format!("{}/agents/echo/rpc", host.url),
        );
        let start = rpc(
            &client,
            &url,
            &command("rpc", "start", "c0", "hi", json!({})),
        )
        .await?;
        let done = rpc(
            &client,
            &url,
            &command("rpc", "complete", "c0", "", json!({})),
        )
        .await?;
        if start != "awaiting-completion" || done != "completed" {
            bail!("the sample task went {start}, then {done}");
        }
    } // the host is killed here; every answer above was durable
    let store = aiphost::store::Store::open(&data.path().join("store"))?;
    let key = aiphost::store::TaskKey::new("echo", "c0");
    let record: Value = store
        .load_task(&key)?
        .context("the sample task is not in the store")?;
    let events: Vec<aiphost::store::Encoded> = store
        .events_after(&key, 0, usize::MAX)?
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    let at_rest = events
        .iter()
        .position(|e| {
            e.decode::<Value>()
                .is_ok_and(|v| v.to_string().contains("awaiting-completion"))
        })
        .map_or(events.len() / 2, |i| i + 1);
    let mut chunks = Vec::new();
    for product in record["task"]["products"].as_array().into_iter().flatten() {
        if let Some(id) = product["id"].as_str() {
            for items in store.product_chunks(&key, id)? {
                chunks.push((id.to_string(), items));
            }
        }
    }
    // The start is in the record; the complete is the one entry.
    let history = store.command_history(&key)?;
    if history.len() != 1 {
        bail!(
            "the sample task stored {} history entries, not 1",
            history.len()
        );
    }
    Ok(TaskWrites {
        record: aiphost::store::Encoded::of(&record)?,
        events,
        at_rest,
        chunks,
        history,
    })
}

/// `memory store`: the writes of `sample` for `tasks` tasks, straight into a store in this
/// process (16 writers, each waiting for its writes to be durable, as the engine does).
async fn store_alone(
    bin: &Path,
    agents: &Path,
    tasks: u64,
    every: u64,
    cache_mib: u64,
) -> anyhow::Result<()> {
    use aiphost::store::{ChunkWrite, Liveness, Store, TaskKey, TaskWrite};
    let sample = Arc::new(one_completed_task(bin, agents).await?);
    println!(
        "one completed echo task stores a {} B record, {} events ({} B), {} product chunks ({} B)",
        sample.record.len(),
        sample.events.len(),
        sample.events.iter().map(|e| e.len()).sum::<usize>(),
        sample.chunks.len(),
        sample.chunks.iter().map(|(_, c)| c.len()).sum::<usize>(),
    );
    let dir = tempfile::tempdir()?;
    let store = Store::open_with_cache(&dir.path().join("store"), cache_mib << 20)?;
    let row = rss_table(std::process::id(), "tasks written", "this process's RSS");
    drive(
        tasks,
        16,
        every,
        move |_client, i| {
            let (store, sample) = (store.clone(), sample.clone());
            async move {
                let key = TaskKey::new("echo", format!("c{i}"));
                let now = i64::try_from(i).unwrap_or(i64::MAX);
                let deadline = now + 3_600_000;
                let started = store.write_task(TaskWrite {
                    deadline: (None, Some(deadline)),
                    live: (None, Some(Liveness::Waiting)),
                    events: (1..)
                        .zip(sample.events[..sample.at_rest].iter().cloned())
                        .collect(),
                    chunks: (0..)
                        .zip(&sample.chunks)
                        .map(|(seq, (product, items))| ChunkWrite {
                            product: product.clone(),
                            seq,
                            items: items.clone(),
                            replaces: false,
                        })
                        .collect(),
                    ..TaskWrite::record_only(&key, sample.record.clone())
                })?;
                store.durable(started.applied().await?).await?;
                let first_later = u64::try_from(sample.at_rest)? + 1;
                let completed = store.write_task(TaskWrite {
                    deadline: (Some(deadline), None),
                    live: (Some(Liveness::Waiting), None),
                    history: sample.history.clone(),
                    events: (first_later..)
                        .zip(sample.events[sample.at_rest..].iter().cloned())
                        .collect(),
                    ended_at: Some(now),
                    ..TaskWrite::record_only(&key, sample.record.clone())
                })?;
                store.durable(completed.applied().await?).await?;
                Ok(())
            }
        },
        row,
    )
    .await
}

/// Start `tasks` trip-planner tasks that rest in awaiting-input.
async fn start_waiting(
    base: &str,
    tasks: u64,
    connections: usize,
    prefix: &'static str,
) -> anyhow::Result<()> {
    let url = format!("{base}/agents/trip-planner/rpc");
    drive(
        tasks,
        connections,
        tasks,
        move |client, i| {
            let url = url.clone();
            async move {
                let task = format!("{prefix}{i}");
                let params = json!({"awaitingInputTimeout": 86_400_000});
                let s = rpc(
                    &client,
                    &url,
                    &command("rpc", "start", &task, "I want a trip to Beijing", params),
                )
                .await?;
                if s != "awaiting-input" {
                    bail!("task {task} is {s}");
                }
                Ok(())
            }
        },
        |_, _| {},
    )
    .await
}

async fn sse(bin: &Path, agents: &Path, host_args: &[&str], streams: u64) -> anyhow::Result<()> {
    // Room under the host's connection cap for every stream and the clients that set them up,
    // unless the caller sets the cap.
    let cap = format!("--max-connections={}", streams + 1_000);
    let mut args = host_args.to_vec();
    if !args.iter().any(|a| a.starts_with("--max-connections")) {
        args.push(&cap);
    }
    let host = Host::start(bin, agents, &args)?;
    let pid = host.pid();
    start_waiting(&host.url, streams, 16, "s").await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_mib(pid);
    let url = format!("{}/agents/trip-planner/stream", host.url);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let opened = Arc::new(AtomicU64::new(0));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<anyhow::Result<()>>(1024);
    let (stop_tx, stop) = tokio::sync::watch::channel(());
    let started = Instant::now();
    for i in 0..streams {
        let (client, url, tx, opened, stop) = (
            client.clone(),
            url.clone(),
            tx.clone(),
            opened.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            let body = command(
                "stream",
                "re-stream",
                &format!("s{i}"),
                "",
                json!({"lastEventSeq": null}),
            );
            let result = async {
                let response = client.post(&url).json(&body).send().await?;
                let mut bytes = response.bytes_stream();
                // The replay of the task's stored events: wait for the first of it.
                bytes.next().await.context("the stream ended at once")??;
                opened.fetch_add(1, Ordering::Relaxed);
                let _ = tx.send(Ok(())).await;
                // Then hold the stream open, idle, until told to stop.
                let mut stop = stop;
                let _ = stop.changed().await;
                drop(bytes);
                anyhow::Ok(())
            }
            .await;
            if let Err(e) = result {
                let _ = tx.send(Err(e)).await;
            }
        });
        // Open them in waves, so the host's accept queue is not flooded.
        if i % 500 == 499 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    drop(tx);
    let mut ok = 0;
    while ok < streams {
        match rx.recv().await {
            Some(Ok(())) => ok += 1,
            Some(Err(e)) => bail!("a stream failed after {ok} opened: {e:#}"),
            None => break,
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let metrics = reqwest::get(format!("{}/metrics", host.url))
        .await?
        .text()
        .await?;
    let open = metrics
        .lines()
        .find_map(|l| l.strip_prefix("aiphost_open_streams "))
        .unwrap_or("?")
        .to_string();
    println!(
        "{ok} idle SSE streams open (host reports {open}), opened in {:.1} s: host RSS {:.1} MiB (before the streams: {before:.1} MiB, {:.1} KiB per stream)",
        started.elapsed().as_secs_f64(),
        rss_mib(pid),
        (rss_mib(pid) - before) * 1024.0 / ok.max(1) as f64
    );
    drop(stop_tx);
    Ok(())
}

async fn startup(bin: &Path, agents: &Path, partners: u64) -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let token = "bench-operator-token-0123456789abcdef";
    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let cache = crate::compiled_cache(bin);
    let spawn = || {
        Host::start_in(
            bin,
            data.path(),
            port,
            &["--operator-token", token, "--compiled-cache", &cache],
        )
    };
    let serving = |want: u64| {
        let base = base.clone();
        async move {
            let started = Instant::now();
            loop {
                if let Ok(r) = reqwest::get(format!("{base}/agents")).await
                    && let Ok(v) = r.json::<Value>().await
                    && v["agents"].as_array().map_or(0, Vec::len) as u64 >= want
                {
                    return Ok(started.elapsed());
                }
                if started.elapsed() > Duration::from_secs(120) {
                    bail!("the host did not serve {want} partners within 120 s");
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    let child = spawn()?;
    serving(0).await?;
    let client = reqwest::Client::new();
    let answer: Value = client
        .post(format!("{base}/admin/tenants"))
        .bearer_auth(token)
        // The publish budget (60 an hour, 5 at once, by default) would stop this at the fifth.
        .json(&json!({"id": "bench", "quotas": {"maxAgents": partners, "publishesPerHour": 1_000_000}}))
        .send()
        .await?
        .json()
        .await?;
    let tenant_token = answer["adminToken"]
        .as_str()
        .with_context(|| format!("no tenant token: {answer}"))?
        .to_string();
    let manifest = std::fs::read_to_string(agents.join("echo/partner.toml"))?;
    let wasm = std::fs::read(agents.join("echo/partner.wasm"))?;
    use base64::Engine as _;
    let component = base64::engine::general_purpose::STANDARD.encode(&wasm);
    let published = Instant::now();
    for i in 0..partners {
        // Each its own id and AIC: a host serves one partner per AIC.
        let manifest = manifest
            .replacen("id = \"echo\"", &format!("id = \"echo-{i}\""), 1)
            .replacen(
                "aic = \"1.2.156.3088.1.1.AIPHST.ECHO.1.0000\"",
                &format!("aic = \"1.2.156.3088.1.1.BENCH.P{i}.1.0000\""),
                1,
            );
        let r = client
            .post(format!("{base}/admin/agents"))
            .bearer_auth(&tenant_token)
            .json(&json!({"manifest": manifest, "component": component}))
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("publishing echo-{i}: {}", r.text().await?);
        }
    }
    println!(
        "published {partners} partners in {:.1} s",
        published.elapsed().as_secs_f64()
    );
    drop(child);
    for run in 1..=3 {
        let started = Instant::now();
        let child = spawn()?;
        serving(partners).await?;
        let ready = started.elapsed();
        // And the last one published answers an rpc start.
        let s = rpc(
            &client,
            &format!("{base}/agents/echo-{}/rpc", partners - 1),
            &command("rpc", "start", &format!("t{run}"), "hi", json!({})),
        )
        .await?;
        println!(
            "restart {run}: serving all {partners} published partners {:.0} ms after the process started (first start there: {s})",
            ready.as_secs_f64() * 1000.0
        );
        drop(child);
    }
    Ok(())
}
