//! `aiphost-bench list`: what one A2A `ListTasks` costs the host as its store grows (issue 29
//! item 4): the host's CPU per call (utime + stime of the serving process), at each size, for
//! each query shape, the runs of the shapes interleaved. Every call's answer is checked: the
//! page's size, its `totalSize` (the exact number of matches) and, for a filter, that every
//! task listed matches it.
//!
//! Tasks are made over A2A (`SendMessage` to echo, which completes each), `CONTEXTS` sessions
//! in turn, so a session filter matches a tenth of them.

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};
use std::path::Path;

/// Sessions the tasks are spread over.
const CONTEXTS: usize = 10;
/// Requests in flight while tasks are made.
const FILLERS: usize = 16;

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Stored tasks at which to measure, ascending.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    tasks: Vec<usize>,
    /// Calls per run of one shape.
    #[arg(long, default_value_t = 200)]
    calls: usize,
    /// Runs per shape and size (the median, min and max are reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The page size of every measured call.
    #[arg(long, default_value_t = 50)]
    page_size: usize,
}

/// utime + stime of `pid`, in clock ticks (1/100 s).
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command's `)`: state is field 3; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').context("/proc stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11).context("utime")?.parse()?;
    let stime: u64 = fields.get(12).context("stime")?.parse()?;
    Ok(utime + stime)
}

struct Shape {
    name: &'static str,
    params: fn(&str, usize) -> Value,
    /// Tasks matching, given how many are stored.
    matches: fn(usize) -> usize,
    /// A token to start from is needed (the second page).
    second_page: bool,
}

const SHAPES: [Shape; 4] = [
    Shape {
        name: "first page, no filter",
        params: |_, page| json!({"pageSize": page}),
        matches: |n| n,
        second_page: false,
    },
    Shape {
        name: "second page, no filter",
        params: |token, page| json!({"pageSize": page, "pageToken": token}),
        matches: |n| n,
        second_page: true,
    },
    Shape {
        name: "first page, one context (a tenth)",
        params: |_, page| json!({"pageSize": page, "contextId": "ctx-3"}),
        matches: |n| n / CONTEXTS + usize::from(n % CONTEXTS > 3),
        second_page: false,
    },
    Shape {
        name: "first page, status COMPLETED (all)",
        params: |_, page| json!({"pageSize": page, "status": "TASK_STATE_COMPLETED"}),
        matches: |n| n,
        second_page: false,
    },
];

async fn call(
    client: &reqwest::Client,
    url: &str,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer: Value = client.post(url).json(&body).send().await?.json().await?;
    if answer.get("error").is_some() {
        bail!("{method} failed: {answer}");
    }
    Ok(answer["result"].clone())
}

/// Make tasks `from..to`, `FILLERS` at a time.
async fn fill(client: &reqwest::Client, url: &str, from: usize, to: usize) -> anyhow::Result<()> {
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(from));
    let mut workers = Vec::new();
    for _ in 0..FILLERS {
        let (client, url, next) = (client.clone(), url.to_string(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= to {
                    return anyhow::Ok(());
                }
                let message = json!({"role": "ROLE_USER", "messageId": format!("m-{i}"),
                    "contextId": format!("ctx-{}", i % CONTEXTS), "parts": [{"text": "hi"}]});
                let task = call(&client, &url, "SendMessage", json!({"message": message})).await?;
                if task["task"]["status"]["state"] != "TASK_STATE_COMPLETED" {
                    bail!("task {i} did not complete: {task}");
                }
            }
        }));
    }
    for w in workers {
        w.await??;
    }
    Ok(())
}

/// Check one answer of `shape` against `stored` tasks.
fn check(shape: &Shape, stored: usize, size: usize, page: &Value) -> anyhow::Result<()> {
    let want = (shape.matches)(stored);
    let tasks = page["tasks"].as_array().context("tasks")?;
    let on_page = if shape.second_page {
        want.saturating_sub(size).min(size)
    } else {
        want.min(size)
    };
    if page["totalSize"].as_u64() != Some(want as u64) || tasks.len() != on_page {
        bail!(
            "{}: {} tasks of total {} (want {on_page} of {want})",
            shape.name,
            tasks.len(),
            page["totalSize"]
        );
    }
    for task in tasks {
        if shape.name.contains("context") && task["contextId"] != "ctx-3" {
            bail!("{}: a task of another context listed: {task}", shape.name);
        }
        if task["status"]["state"] != "TASK_STATE_COMPLETED" {
            bail!("{}: a task not completed: {task}", shape.name);
        }
    }
    Ok(())
}

pub async fn run(bin: &Path, agents: &Path, args: ListArgs) -> anyhow::Result<()> {
    let host = crate::Host::start(bin, agents, &["--list-tasks-on", "echo"])?;
    let url = format!("{}/agents/echo/a2a", host.url);
    let client = reqwest::Client::new();
    let page_size = args.page_size;
    println!(
        "A2A ListTasks on echo, pageSize {page_size}: host CPU per call (utime+stime, /proc), median of {} interleaved runs of {} calls [min–max]; every answer checked",
        args.runs, args.calls
    );
    println!();
    println!("| stored tasks | query | CPU per call, median [min–max] |");
    println!("|---|---|---|");
    let mut stored = 0;
    for &size in &args.tasks {
        let started = std::time::Instant::now();
        fill(&client, &url, stored, size).await?;
        stored = size;
        eprintln!(
            "{size} tasks made in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let first = call(&client, &url, "ListTasks", json!({"pageSize": page_size})).await?;
        let token = first["nextPageToken"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut per_call: Vec<Vec<f64>> = vec![Vec::new(); SHAPES.len()];
        for _ in 0..args.runs {
            for (s, shape) in SHAPES.iter().enumerate() {
                let params = (shape.params)(&token, page_size);
                let before = cpu_ticks(host.pid())?;
                let mut answers = Vec::with_capacity(args.calls);
                for _ in 0..args.calls {
                    answers.push(call(&client, &url, "ListTasks", params.clone()).await?);
                }
                let ticks = cpu_ticks(host.pid())? - before;
                for answer in &answers {
                    check(shape, stored, page_size, answer)?;
                }
                per_call[s].push(ticks as f64 * 10.0 / args.calls as f64);
            }
        }
        for (shape, mut ms) in SHAPES.iter().zip(per_call) {
            ms.sort_by(f64::total_cmp);
            println!(
                "| {size} | {} | {:.2} ms [{:.2}–{:.2}] |",
                shape.name,
                ms[ms.len() / 2],
                ms[0],
                ms[ms.len() - 1]
            );
        }
    }
    Ok(())
}
