//! rpc `start` → `awaiting-completion` round trips at several connection counts.

use crate::{Host, peak_rss};
use clap::Args;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct RpcArgs {
    /// Connection counts to measure, each in its own run (on a fresh host).
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    connections: Vec<usize>,
    /// Seconds of load per run (after a 1 s warm-up).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The dialect of the requests.
    #[arg(long, default_value = "v2")]
    dialect: String,
    /// Measure another partner's rpc URL instead of starting aiphost.
    #[arg(long)]
    url: Option<String>,
    /// With --url: the partner's process id, to report its peak RSS.
    #[arg(long)]
    pid: Option<u32>,
}

fn start_request(dialect: &str, task: &str) -> Value {
    let (field, kind) = if dialect == "v1" {
        ("message", "message")
    } else {
        ("command", "task-command")
    };
    json!({"jsonrpc": "2.0", "method": "rpc", "id": task, "params": {field: {
        "type": kind, "id": format!("m-{task}"), "sentAt": "2026-01-01T00:00:00+00:00",
        "senderRole": "leader", "senderId": "1.2.156.3088.1.1.BENCH.LEADER.1.0000",
        "command": "start", "dataItems": [{"type": "text", "text": "hello"}],
        "taskId": task, "sessionId": "bench"
    }}})
}

#[derive(Default)]
struct Tally {
    ok: u64,
    errors: u64,
    latencies: Vec<Duration>,
}

/// One connection: one request at a time over one keep-alive connection, until `until`.
async fn connection(
    url: String,
    dialect: String,
    worker: usize,
    until: Instant,
    record_from: Instant,
) -> Tally {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap_or_default();
    let mut tally = Tally::default();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let task = format!("b{worker}-{n}");
        let sent = Instant::now();
        let good = match client
            .post(&url)
            .json(&start_request(&dialect, &task))
            .send()
            .await
        {
            Ok(r) => r
                .json::<Value>()
                .await
                .is_ok_and(|v| v["result"]["status"]["state"] == "awaiting-completion"),
            Err(_) => false,
        };
        if sent >= record_from {
            if good {
                tally.ok += 1;
                tally.latencies.push(sent.elapsed());
            } else {
                tally.errors += 1;
            }
        }
    }
    tally
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(bin: &Path, agents: &Path, args: RpcArgs) -> anyhow::Result<()> {
    println!("| connections | round trips/s | p50 | p99 | max | errors | peak RSS |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &conns in &args.connections {
        // A fresh host per run, so RSS and the store start from zero.
        let host = match &args.url {
            Some(_) => None,
            None => Some(Host::start(bin, agents, &[])?),
        };
        let (url, pid) = match &host {
            Some(h) => (format!("{}/agents/echo/rpc", h.url), Some(h.pid())),
            None => (args.url.clone().unwrap_or_default(), args.pid),
        };
        let record_from = Instant::now() + Duration::from_secs(1);
        let until = record_from + Duration::from_secs(args.seconds);
        let workers: Vec<_> = (0..conns)
            .map(|w| {
                tokio::spawn(connection(
                    url.clone(),
                    args.dialect.clone(),
                    w,
                    until,
                    record_from,
                ))
            })
            .collect();
        let mut total = Tally::default();
        for w in workers {
            let t = w.await?;
            total.ok += t.ok;
            total.errors += t.errors;
            total.latencies.extend(t.latencies);
        }
        total.latencies.sort();
        println!(
            "| {conns} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} |",
            total.ok as f64 / args.seconds as f64,
            ms(percentile(&total.latencies, 50.0)),
            ms(percentile(&total.latencies, 99.0)),
            ms(total.latencies.last().copied().unwrap_or_default()),
            total.errors,
            pid.map_or("?".to_string(), peak_rss),
        );
    }
    Ok(())
}
