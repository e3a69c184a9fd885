//! Group round trips through RabbitMQ: a Leader publishes `start` on the group's exchange (no
//! mentions, so every member handles it) and a round trip ends when every hosted member has
//! published `awaiting-completion` for the task. N members are N copies of the echo partner
//! under their own ids and AICs.

use crate::Host;
use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
    QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties, ExchangeKind};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

const LEADER: &str = "1.2.156.3088.1.1.BENCH.LEADER.1.0000";

#[derive(Args, Debug)]
pub struct GroupArgs {
    /// Members per run (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,10")]
    partners: Vec<usize>,
    /// Seconds per run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Tasks in flight at once.
    #[arg(long, default_value_t = 32)]
    in_flight: usize,
    /// The broker.
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    amqp: String,
}

/// N copies of the echo bundle, as `echo0..echoN-1`.
fn echo_copies(agents: &Path, n: usize, into: &Path) -> anyhow::Result<()> {
    let manifest = std::fs::read_to_string(agents.join("echo/partner.toml"))
        .context("plugins/dist/echo (bash scripts/build-plugins.sh)")?;
    for i in 0..n {
        let dir = into.join(format!("echo{i}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(agents.join("echo/partner.wasm"), dir.join("partner.wasm"))?;
        let mut changed = String::new();
        for line in manifest.lines() {
            if line.starts_with("id = \"echo\"") {
                changed.push_str(&format!("id = \"echo{i}\"\n"));
            } else if line.starts_with("aic = ") {
                changed.push_str(&format!("aic = \"{}\"\n", aic(i)));
            } else {
                changed.push_str(line);
                changed.push('\n');
            }
        }
        std::fs::write(dir.join("partner.toml"), changed)?;
    }
    Ok(())
}

fn aic(i: usize) -> String {
    format!("1.2.156.3088.1.1.BENCH.ECHO{i}.1.0000")
}

pub async fn run(bin: &Path, agents: &Path, args: GroupArgs) -> anyhow::Result<()> {
    println!(
        "| members | round trips/s | member results/s | p50 ms | p99 ms | errors | host peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &n in &args.partners {
        let copies = tempfile::tempdir()?;
        echo_copies(agents, n, copies.path())?;
        // The invitations name the broker at 127.0.0.1:5672, a loopback address: the host
        // must be told it may join groups there.
        let host = Host::start(bin, copies.path(), &["--group-brokers", "127.0.0.1:5672"])?;
        let group = format!("bench-{}-{n}", std::process::id());
        let row = one_run(&host, &group, n, &args).await?;
        println!("{row} | {} |", crate::peak_rss(host.pid()));
        // The host goes first: deleting its group's exchange under it would only make it log
        // reconnect attempts.
        drop(host);
        remove_group(&args.amqp, &group, n).await;
    }
    Ok(())
}

fn exchange_of(group: &str) -> String {
    format!("group_{LEADER}_{group}")
}

/// Delete what a run left on the broker: the members' queues and the group's exchange.
async fn remove_group(amqp: &str, group: &str, n: usize) {
    let Ok(conn) = Connection::connect(amqp, ConnectionProperties::default()).await else {
        return;
    };
    let Ok(ch) = conn.create_channel().await else {
        return;
    };
    let exchange = exchange_of(group);
    for m in (0..n).map(aic) {
        let _ = ch
            .queue_delete(
                format!("{exchange}_{m}").into(),
                QueueDeleteOptions::default(),
            )
            .await;
    }
    let _ = ch
        .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
        .await;
    let _ = conn.close(200, "bench over".into()).await;
}

async fn one_run(host: &Host, group: &str, n: usize, args: &GroupArgs) -> anyhow::Result<String> {
    let exchange = exchange_of(group);
    let conn = Connection::connect(&args.amqp, ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    ch.exchange_declare(
        exchange.clone().into(),
        ExchangeKind::Fanout,
        ExchangeDeclareOptions {
            auto_delete: true,
            ..ExchangeDeclareOptions::default()
        },
        FieldTable::default(),
    )
    .await?;
    let mine = format!("{exchange}_leader");
    ch.queue_declare(
        mine.clone().into(),
        QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..QueueDeclareOptions::default()
        },
        FieldTable::default(),
    )
    .await?;
    ch.queue_bind(
        mine.clone().into(),
        exchange.clone().into(),
        "".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    let mut heard = ch
        .basic_consume(
            mine.clone().into(),
            "bench".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    let http = reqwest::Client::new();
    let members: Vec<String> = (0..n).map(aic).collect();
    for i in 0..n {
        let invite = json!({"jsonrpc": "2.0", "method": "group", "id": i, "params": {
            "protocol": "rabbitmq:4.0",
            "group": {"groupId": group, "leader": {"aic": LEADER},
                      "partners": members.iter().map(|a| json!({"aic": a})).collect::<Vec<_>>()},
            "server": {"host": "127.0.0.1", "port": 5672, "vhost": "/", "accessToken": "guest:guest"},
            "amqp": {"exchange": exchange, "exchangeType": "fanout", "routingKey": ""}}});
        let answer: Value = http
            .post(format!("{}/agents/echo{i}/group", host.url))
            .json(&invite)
            .send()
            .await?
            .json()
            .await?;
        if answer.get("result").is_none() {
            bail!("echo{i} did not join: {answer}");
        }
    }
    let publish = |task: String| {
        let ch = ch.clone();
        let exchange = exchange.clone();
        let group = group.to_owned();
        async move {
            let command = json!({
                "type": "task-command", "id": format!("cmd-{task}"), "sentAt": chrono_now(),
                "senderRole": "leader", "senderId": LEADER, "groupId": group, "sessionId": "bench",
                "command": "start", "taskId": task, "dataItems": [{"type": "text", "text": "ping"}],
            });
            ch.basic_publish(
                exchange.into(),
                "".into(),
                BasicPublishOptions::default(),
                command.to_string().as_bytes(),
                BasicProperties::default().with_content_type("application/json".into()),
            )
            .await
            .map(|_| ())
        }
    };
    let mut next = 0u64;
    let mut open: HashMap<String, (Instant, usize)> = HashMap::new();
    for _ in 0..args.in_flight {
        let task = format!("t{next}");
        next += 1;
        open.insert(task.clone(), (Instant::now(), n));
        publish(task).await?;
    }
    let started = Instant::now();
    let until = started + Duration::from_secs(args.seconds);
    let (mut done, mut results, mut errors) = (0u64, 0u64, 0u64);
    let mut latencies = Vec::new();
    while Instant::now() < until {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(Some(delivery)) = tokio::time::timeout(left, heard.next()).await else {
            break;
        };
        let delivery = delivery?;
        let m: Value = serde_json::from_slice(&delivery.data).unwrap_or_default();
        if m["type"] != "task-result" {
            continue;
        }
        let state = m["status"]["state"].as_str().unwrap_or_default();
        let task = m["taskId"].as_str().unwrap_or_default().to_string();
        match state {
            "awaiting-completion" => {
                results += 1;
                if m["products"][0]["dataItems"][0]["text"] != "ping" {
                    errors += 1;
                }
            }
            "accepted" | "working" => continue,
            _ => {
                errors += 1;
                continue;
            }
        }
        let finished = match open.get_mut(&task) {
            Some((_, remaining)) => {
                *remaining -= 1;
                *remaining == 0
            }
            None => false,
        };
        if finished && let Some((sent, _)) = open.remove(&task) {
            done += 1;
            latencies.push(sent.elapsed());
            let task = format!("t{next}");
            next += 1;
            open.insert(task.clone(), (Instant::now(), n));
            publish(task).await?;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(
                ((latencies.len() as f64 * p / 100.0) as usize)
                    .min(latencies.len().saturating_sub(1)),
            )
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let _ = conn.close(200, "bench over".into()).await;
    Ok(format!(
        "| {n} | {:.0} | {:.0} | {:.2} | {:.2} | {errors}",
        done as f64 / secs,
        results as f64 / secs,
        pct(50.0),
        pct(99.0)
    ))
}

fn chrono_now() -> String {
    aiphost::model::Timestamp::now().to_string()
}
