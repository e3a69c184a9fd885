//! Hostile neighbours: what a partner that misbehaves costs the others on the same host.
//!
//! - `neighbours`: echo round trips (one connection, one at a time) while N invocations of the
//!   hostile partner spin in a loop until their deadline (each is started again when it fails,
//!   so N spin all the time). Every echo reply is checked to be `awaiting-completion`, every
//!   looper to end `failed` by its deadline.
//! - `flood`: rounds of N hostile invocations streaming 1 MiB product chunks until the host
//!   refuses one; the host's RSS before, at its peak, 1 s after each round, and a while after the
//!   last (what a round leaves behind shows as growth from round to round).
//!
//! `--baseline BIN` runs every measurement with that aiphost binary too, interleaved run by run,
//! so the two are compared on the same machine at the same time.

use crate::{Host, rss_mib};
use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct NeighboursArgs {
    /// Looping hostile invocations kept running, each count in its own runs.
    #[arg(long, value_delimiter = ',', default_value = "0,4,8")]
    loopers: Vec<usize>,
    /// Seconds of echo round trips per run (after the loopers have started).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Runs per looper count and binary (the median is reported, with min-max).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Another aiphost binary to measure side by side (e.g. the commit before a change).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Extra arguments for `aiphost serve` (repeatable).
    #[arg(long = "host-arg", allow_hyphen_values = true)]
    host_args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct FloodArgs {
    /// Product floods run at once.
    #[arg(long, default_value_t = 8)]
    floods: usize,
    /// Runs per binary (the median is reported, with min-max).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Rounds of floods, one after the other (memory a round leaves behind shows as growth).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Seconds after the last round of the last RSS sample.
    #[arg(long, default_value_t = 10)]
    settle: u64,
    /// Another aiphost binary to measure side by side.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Extra arguments for `aiphost serve` (repeatable).
    #[arg(long = "host-arg", allow_hyphen_values = true)]
    host_args: Vec<String>,
}

fn command(command: &str, task: &str, text: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "rpc", "id": task, "params": {"command": {
        "type": "task-command", "id": format!("m-{}", uuid()), "sentAt": "2026-01-01T00:00:00+00:00",
        "senderRole": "leader", "senderId": "1.2.156.3088.1.1.BENCH.LEADER.1.0000",
        "command": command, "dataItems": [{"type": "text", "text": text}],
        "commandParams": params, "taskId": task, "sessionId": "bench"
    }}})
}

/// A message id no other request of this process has.
fn uuid() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .to_string()
}

async fn state(client: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<String> {
    let answer: Value = client.post(url).json(body).send().await?.json().await?;
    answer["result"]["status"]["state"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no task in the answer: {answer}"))
}

/// Keep one looping invocation running until `stop`; how many loopers ended `failed`.
async fn looper(base: String, worker: usize, stop: Instant) -> anyhow::Result<u64> {
    let client = reqwest::Client::new();
    let url = format!("{base}/agents/hostile/rpc");
    let mut failed = 0;
    let mut n = 0;
    while Instant::now() < stop {
        n += 1;
        let task = format!("loop-{worker}-{n}");
        let answer = state(
            &client,
            &url,
            &command("start", &task, "loop", json!({"responseTimeout": 50})),
        )
        .await?;
        if answer != "working" && answer != "accepted" {
            bail!("a looper started {answer}");
        }
        // Its deadline (3 s in the bundle's manifest) fails it.
        let started = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = state(&client, &url, &command("get", &task, "", json!({}))).await?;
            if now == "failed" {
                failed += 1;
                break;
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("a looper was still {now} after 30 s");
            }
        }
    }
    Ok(failed)
}

/// Echo round trips, one at a time, from `from` to `until`: their latencies.
async fn echoes(base: &str, from: Instant, until: Instant) -> anyhow::Result<Vec<Duration>> {
    let client = reqwest::Client::new();
    let url = format!("{base}/agents/echo/rpc");
    let mut latencies = Vec::new();
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let sent = Instant::now();
        let task = format!("echo-{n}");
        let got = state(&client, &url, &command("start", &task, "hello", json!({}))).await?;
        if got != "awaiting-completion" {
            bail!("echo answered {got}");
        }
        if sent >= from {
            latencies.push(sent.elapsed());
        }
    }
    Ok(latencies)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Median, min and max of `values`.
fn spread(values: &mut [f64]) -> String {
    values.sort_by(f64::total_cmp);
    let median = values.get(values.len() / 2).copied().unwrap_or(f64::NAN);
    format!(
        "{median:.1} ({:.1}–{:.1})",
        values.first().copied().unwrap_or(f64::NAN),
        values.last().copied().unwrap_or(f64::NAN)
    )
}

/// Binary `i` of [`binaries`]: the baseline (1) may not know flags added since, so it gets only
/// the caller's.
fn start(i: usize, binary: &Path, agents: &Path, extra: &[String]) -> anyhow::Result<Host> {
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    if i == 0 {
        Host::start(binary, agents, &extra)
    } else {
        Host::start_as_given(binary, agents, &extra)
    }
}

fn binaries(bin: &Path, baseline: &Option<PathBuf>) -> Vec<(String, PathBuf)> {
    let mut out = vec![("this".to_string(), bin.to_path_buf())];
    if let Some(b) = baseline {
        out.push(("baseline".to_string(), b.clone()));
    }
    out
}

/// One binary's figures over the runs of one looper count.
#[derive(Default)]
struct Tally {
    p50: Vec<f64>,
    p99: Vec<f64>,
    rate: Vec<f64>,
    failed: u64,
}

pub async fn neighbours(bin: &Path, agents: &Path, args: NeighboursArgs) -> anyhow::Result<()> {
    let bins = binaries(bin, &args.baseline);
    println!(
        "echo round trips (1 connection) while N hostile invocations loop; median of {} runs (min–max)",
        args.runs
    );
    println!(
        "| binary | loopers | echo p50 ms | echo p99 ms | echoes/s | loopers failed by deadline |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for &loopers in &args.loopers {
        let mut results: Vec<Tally> = (0..bins.len()).map(|_| Tally::default()).collect();
        for _ in 0..args.runs {
            for (i, (_, binary)) in bins.iter().enumerate() {
                let host = start(i, binary, agents, &args.host_args)?;
                let from = Instant::now() + Duration::from_millis(1500);
                let until = from + Duration::from_secs(args.seconds);
                let spinning: Vec<_> = (0..loopers)
                    .map(|w| tokio::spawn(looper(host.url.clone(), w, until)))
                    .collect();
                let mut latencies = echoes(&host.url, from, until).await?;
                let mut failed = 0;
                for s in spinning {
                    failed += s.await??;
                }
                latencies.sort();
                let r = &mut results[i];
                r.p50.push(percentile(&latencies, 50.0));
                r.p99.push(percentile(&latencies, 99.0));
                r.rate.push(latencies.len() as f64 / args.seconds as f64);
                r.failed += failed;
            }
        }
        for ((name, _), r) in bins.iter().zip(results.iter_mut()) {
            println!(
                "| {name} | {loopers} | {} | {} | {} | {} |",
                spread(&mut r.p50),
                spread(&mut r.p99),
                spread(&mut r.rate),
                r.failed
            );
        }
    }
    Ok(())
}

pub async fn flood(bin: &Path, agents: &Path, args: FloodArgs) -> anyhow::Result<()> {
    let bins = binaries(bin, &args.baseline);
    let rounds = args.rounds.max(1);
    println!(
        "{} rounds of {} hostile product floods at once (1 MiB chunks until the 16 MiB cap); host RSS in MiB, median of {} runs (min–max)",
        rounds, args.floods, args.runs
    );
    let mut head = "| binary | idle | peak |".to_string();
    let mut rule = "| --- | ---: | ---: |".to_string();
    for round in 1..=rounds {
        head.push_str(&format!(" round {round} +1 s |"));
        rule.push_str(" ---: |");
    }
    head.push_str(&format!(" +{} s |", args.settle));
    rule.push_str(" ---: |");
    println!("{head}\n{rule}");
    // Per binary: idle, peak, each round +1 s, the end +settle.
    let columns = 3 + rounds;
    let mut results: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); columns]; bins.len()];
    for _ in 0..args.runs {
        for (i, (_, binary)) in bins.iter().enumerate() {
            let host = start(i, binary, agents, &args.host_args)?;
            let pid = host.pid();
            let client = reqwest::Client::new();
            let url = format!("{}/agents/hostile/rpc", host.url);
            // Warm: one echo through the hostile partner.
            state(&client, &url, &command("start", "warm", "hi", json!({}))).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut row = vec![rss_mib(pid)];
            let mut peak = row[0];
            let mut after_rounds = Vec::new();
            for round in 0..rounds {
                let floods: Vec<_> = (0..args.floods)
                    .map(|n| {
                        let (client, url) = (client.clone(), url.clone());
                        tokio::spawn(async move {
                            let task = format!("flood-{round}-{n}");
                            state(&client, &url, &command("start", &task, "flood", json!({}))).await
                        })
                    })
                    .collect();
                while floods.iter().any(|f| !f.is_finished()) {
                    peak = peak.max(rss_mib(pid));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                for f in floods {
                    let ended = f.await??;
                    if ended != "failed" {
                        bail!("a flood ended {ended}, not failed at the product cap");
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                after_rounds.push(rss_mib(pid));
            }
            tokio::time::sleep(Duration::from_secs(args.settle.saturating_sub(1))).await;
            row.push(peak);
            row.extend(after_rounds);
            row.push(rss_mib(pid));
            for (slot, v) in results[i].iter_mut().zip(row) {
                slot.push(v);
            }
        }
    }
    for ((name, _), r) in bins.iter().zip(results.iter_mut()) {
        let cells: Vec<String> = r.iter_mut().map(|c| spread(c)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}
