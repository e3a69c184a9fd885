//! Side by side in one run: the same `wrk` load against (a) aiphost's `echo` partner (durable),
//! (b) the reference partner (acps-sdk's own FastAPI server with an echo handler) and (c) a bare
//! axum JSON echo — the floor no HTTP+JSON server on this machine can beat — reported as ratios.

use crate::{Host, Killed, free_port, peak_rss, wait_for_port};
use anyhow::{Context, bail};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Concurrent connections (wrk -c).
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// wrk threads (wrk -t); they share the machine's cores with the server.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seconds measured per target, after a warm-up of 2 s.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The Python with acps-sdk (scripts/python-env.sh makes it).
    #[arg(long, default_value = ".venv/bin/python")]
    python: PathBuf,
    /// The wrk script that makes each request a `start` of a new task.
    #[arg(long, default_value = "bench/wrk/start.lua")]
    script: PathBuf,
    /// Leave the reference partner out (when its Python environment is missing).
    #[arg(long)]
    no_reference: bool,
}

/// One wrk run's figures, from the script's `RESULT` line.
#[derive(Debug, Default, Clone)]
pub struct WrkResult {
    pub requests: u64,
    pub seconds: f64,
    pub wrong: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl WrkResult {
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    fn parse(output: &str) -> anyhow::Result<WrkResult> {
        let line = output
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .with_context(|| format!("wrk printed no RESULT line:\n{output}"))?;
        let mut r = WrkResult::default();
        for field in line.split_whitespace() {
            let (name, value) = field.split_once('=').context("a RESULT field")?;
            match name {
                "requests" => r.requests = value.parse()?,
                "seconds" => r.seconds = value.parse()?,
                "wrong" => r.wrong = value.parse()?,
                "errors" => r.errors = value.parse()?,
                "p50_us" => r.p50_us = value.parse()?,
                "p90_us" => r.p90_us = value.parse()?,
                "p99_us" => r.p99_us = value.parse()?,
                "max_us" => r.max_us = value.parse()?,
                _ => {}
            }
        }
        Ok(r)
    }
}

/// Run wrk against `url` for `seconds`; a reply without `expect` counts as wrong.
pub fn wrk(
    script: &Path,
    url: &str,
    threads: usize,
    connections: usize,
    seconds: u64,
    expect: &str,
) -> anyhow::Result<WrkResult> {
    let out = Command::new("wrk")
        .args([
            &format!("-t{threads}"),
            &format!("-c{connections}"),
            &format!("-d{seconds}s"),
            "--timeout",
            "10s",
            "-s",
        ])
        .arg(script)
        .args([url, "--", expect])
        .output()
        .context("running wrk (apt-get install -y wrk; scripts/bench.sh installs it)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "wrk failed: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    WrkResult::parse(&text)
}

/// One target's figures.
struct Row {
    name: &'static str,
    result: WrkResult,
    rss: String,
}

/// Counters of aiphost's /metrics that tell how durability is amortised.
async fn counters(url: &str) -> anyhow::Result<(u64, u64)> {
    let text = reqwest::get(format!("{url}/metrics")).await?.text().await?;
    // Every series of the family added up (`aiphost_commands_total` has one per partner).
    let read = |name: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}{{")))
            .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    Ok((
        read("aiphost_commands_total"),
        read("aiphost_store_flushes_total"),
    ))
}

pub async fn run(bin: &Path, agents: &Path, args: CompareArgs) -> anyhow::Result<()> {
    if !args.script.is_file() {
        bail!(
            "{} not found: run from the repository root",
            args.script.display()
        );
    }
    let (c, t, s) = (args.connections, args.threads, args.seconds);
    let measure = |url: &str, expect: &str| -> anyhow::Result<WrkResult> {
        wrk(&args.script, url, t, c, 2, expect)?;
        wrk(&args.script, url, t, c, s, expect)
    };
    let mut rows = Vec::new();

    // (c) the floor: a bare axum JSON echo in its own process.
    {
        let port = free_port()?;
        let child = Command::new(std::env::current_exe()?)
            .args(["echo-server", "--port", &port.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .context("starting the axum echo")?;
        let server = Killed(child);
        wait_for_port(port, "the axum echo")?;
        let result = measure(&format!("http://127.0.0.1:{port}/rpc"), "\"start\"")?;
        rows.push(Row {
            name: "bare axum JSON echo",
            result,
            rss: peak_rss(server.0.id()),
        });
    }

    // (b) the reference partner.
    if !args.no_reference {
        if !args.python.is_file() {
            bail!(
                "{} not found: run scripts/python-env.sh (or pass --no-reference)",
                args.python.display()
            );
        }
        let port = free_port()?;
        let child = Command::new(&args.python)
            .args(["tests/interop/reference_partner.py", &port.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .context("starting the reference partner")?;
        let server = Killed(child);
        wait_for_port(port, "the reference partner")?;
        let result = measure(
            &format!("http://127.0.0.1:{port}/rpc"),
            "awaiting-completion",
        )?;
        rows.push(Row {
            name: "reference partner (acps-sdk 2.1.0)",
            result,
            rss: peak_rss(server.0.id()),
        });
    }

    // (a) aiphost, durable: every reply waits for its writes to be on disk.
    let host = Host::start(bin, agents, &[])?;
    let url = format!("{}/agents/echo/rpc", host.url);
    wrk(&args.script, &url, t, c, 2, "awaiting-completion")?;
    let (commands0, flushes0) = counters(&host.url).await?;
    let result = wrk(&args.script, &url, t, c, s, "awaiting-completion")?;
    let (commands1, flushes1) = counters(&host.url).await?;
    let secs = result.seconds;
    rows.push(Row {
        name: "aiphost echo partner (durable)",
        result,
        rss: peak_rss(host.pid()),
    });

    println!(
        "rpc `start` → `awaiting-completion`, {c} connections, {t} wrk threads, {s} s each, one run"
    );
    println!();
    println!("| target | requests/s | p50 | p90 | p99 | max | wrong/errors | peak RSS |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
    for row in &rows {
        let r = &row.result;
        println!(
            "| {} | {:.0} | {} | {} | {} | {} | {}/{} | {} |",
            row.name,
            r.rate(),
            ms(r.p50_us),
            ms(r.p90_us),
            ms(r.p99_us),
            ms(r.max_us),
            r.wrong,
            r.errors,
            row.rss
        );
    }
    let rate = |name: &str| {
        rows.iter()
            .find(|r| r.name.starts_with(name))
            .map(|r| r.result.rate())
    };
    if let Some(ours) = rate("aiphost") {
        println!();
        if let Some(reference) = rate("reference") {
            println!("aiphost / reference partner: {:.2}×", ours / reference);
        }
        if let Some(floor) = rate("bare") {
            println!("aiphost / bare axum echo: {:.2}", ours / floor);
        }
        let (commands, flushes) = (commands1 - commands0, flushes1 - flushes0);
        println!(
            "aiphost durability: {:.0} commands/s, {:.0} flushes (fsyncs)/s, {:.1} commands per flush",
            commands as f64 / secs,
            flushes as f64 / secs,
            commands as f64 / (flushes.max(1)) as f64
        );
    }
    Ok(())
}

/// The bare axum JSON echo: parses the body as JSON and sends it back.
pub async fn echo_server(port: u16) -> anyhow::Result<()> {
    use axum::{Json, Router, routing::post};
    let app = Router::new().route(
        "/rpc",
        post(|Json(body): Json<serde_json::Value>| async move { Json(body) }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    axum::serve(listener, app).await?;
    Ok(())
}
