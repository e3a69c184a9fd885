//! Streaming benchmarks: live delivery of product-chunk events to 1..N streams of one task, and
//! re-stream catch-up over stored events.
//!
//! The `chunked` partner emits `--events` chunks of 64 bytes as fast as it can; the task then
//! rests in awaiting-completion, whose status event marks the end of a measurement.

use crate::{Host, peak_rss};
use aiphost_client::SseFrames;
use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

const CHUNK: u64 = 64;

#[derive(Args, Debug)]
pub struct StreamArgs {
    /// Numbers of concurrent streams, each in its own run (on a fresh host).
    #[arg(long, value_delimiter = ',', default_value = "1,100")]
    fanout: Vec<usize>,
    /// Product chunks the partner emits.
    #[arg(long, default_value_t = 10_000)]
    events: u64,
}

#[derive(Args, Debug)]
pub struct CatchupArgs {
    /// Product chunks stored before the re-stream.
    #[arg(long, default_value_t = 10_000)]
    events: u64,
}

fn request(command: &str, task: &str, text: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "stream", "id": task, "params": {"message": {
        "type": "task-command", "id": format!("m-{command}-{task}"), "sentAt": "2026-01-01T00:00:00+00:00",
        "senderRole": "leader", "senderId": "1.2.156.3088.1.1.BENCH.LEADER.1.0000",
        "command": command, "commandParams": params, "dataItems": [{"type": "text", "text": text}],
        "taskId": task, "sessionId": "bench"
    }}})
}

/// What one stream saw: events, when the first and the last (the resting status) arrived.
struct Seen {
    events: u64,
    first: Instant,
    last: Instant,
}

/// Read a stream until the task rests in awaiting-completion; `first_event` fires on its first event.
async fn follow(
    url: String,
    body: Value,
    first_event: Option<tokio::sync::oneshot::Sender<()>>,
) -> anyhow::Result<Seen> {
    let response = reqwest::Client::new().post(&url).json(&body).send().await?;
    if !response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
    {
        bail!("no stream: {}", response.text().await.unwrap_or_default());
    }
    let mut first_event = first_event;
    let mut frames = SseFrames::default();
    let mut body = response.bytes_stream();
    let mut seen = Seen {
        events: 0,
        first: Instant::now(),
        last: Instant::now(),
    };
    let mut expected_seq = None;
    // The last event, to say how a stream that ended early ended (a task that failed: its reason).
    let mut last = Value::Null;
    while let Some(chunk) = body.next().await {
        for data in frames.push(&chunk?) {
            let event: Value = serde_json::from_str(&data)?;
            let seq = event["result"]["eventSeq"]
                .as_u64()
                .with_context(|| format!("an event without eventSeq: {data}"))?;
            if let Some(expected) = expected_seq
                && seq != expected
            {
                bail!("event {seq} arrived where {expected} was due");
            }
            expected_seq = Some(seq + 1);
            if seen.events == 0 {
                seen.first = Instant::now();
                if let Some(tx) = first_event.take() {
                    let _ = tx.send(());
                }
            }
            seen.events += 1;
            if event["result"]["eventData"]["status"]["state"] == "awaiting-completion" {
                seen.last = Instant::now();
                return Ok(seen);
            }
            last = event;
        }
    }
    bail!(
        "the stream closed after {} events, before the task rested; its last event: {}",
        seen.events,
        last["result"]
    )
}

fn host_args(events: u64) -> Vec<String> {
    let bytes = (events * CHUNK * 2).max(16 << 20).to_string();
    vec![
        "--event-retention-count".into(),
        (events * 2 + 100).to_string(),
        "--max-products-bytes".into(),
        bytes,
    ]
}

pub async fn fan_out(bin: &Path, agents: &Path, args: StreamArgs) -> anyhow::Result<()> {
    println!(
        "| streams | events per stream | total events delivered | wall time | events/s, all streams | events/s, first stream | host peak RSS |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &streams in &args.fanout {
        let extra = host_args(args.events);
        let host = Host::start(
            bin,
            agents,
            &extra.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        let url = format!("{}/agents/chunked/stream", host.url);
        let task = "bench-fanout";
        let params = json!({"size": args.events * CHUNK, "chunkSize": CHUNK});
        let started = Instant::now();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut followers = vec![tokio::spawn(follow(
            url.clone(),
            request("start", task, "go", params),
            Some(tx),
        ))];
        rx.await.context("the first stream saw no event")?;
        for _ in 1..streams {
            let body = request("re-stream", task, "", json!({"lastEventSeq": null}));
            followers.push(tokio::spawn(follow(url.clone(), body, None)));
        }
        let mut total = 0;
        let mut first_rate = 0.0;
        for (i, f) in followers.into_iter().enumerate() {
            let seen = f.await??;
            total += seen.events;
            if i == 0 {
                first_rate =
                    seen.events as f64 / seen.last.duration_since(seen.first).as_secs_f64();
            }
        }
        let wall = started.elapsed();
        println!(
            "| {streams} | {} | {total} | {:.2} s | {:.0} | {:.0} | {} |",
            total / streams as u64,
            wall.as_secs_f64(),
            total as f64 / wall.as_secs_f64(),
            first_rate,
            peak_rss(host.pid()),
        );
    }
    Ok(())
}

pub async fn catch_up(bin: &Path, agents: &Path, args: CatchupArgs) -> anyhow::Result<()> {
    let extra = host_args(args.events);
    let host = Host::start(
        bin,
        agents,
        &extra.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    let url = format!("{}/agents/chunked/stream", host.url);
    let task = "bench-catchup";
    let params = json!({"size": args.events * CHUNK, "chunkSize": CHUNK});
    let produced = follow(url.clone(), request("start", task, "go", params), None).await?;
    let mut rows = Vec::new();
    for run in 1..=3 {
        let started = Instant::now();
        let seen = follow(
            url.clone(),
            request("re-stream", task, "", json!({"lastEventSeq": null})),
            None,
        )
        .await?;
        if seen.events != produced.events {
            bail!(
                "the re-stream replayed {} events of {}",
                seen.events,
                produced.events
            );
        }
        rows.push((run, seen.events, started.elapsed()));
    }
    println!("| run | stored events replayed | catch-up time | events/s |");
    println!("| ---: | ---: | ---: | ---: |");
    for (run, events, took) in rows {
        println!(
            "| {run} | {events} | {:.1} ms | {:.0} |",
            took.as_secs_f64() * 1000.0,
            events as f64 / took.as_secs_f64()
        );
    }
    Ok(())
}
