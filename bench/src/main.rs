//! `aiphost-bench`: load benchmarks against a real `aiphost serve` process (not run in CI).
//!
//! ```sh
//! cargo build --release -p aiphost -p aiphost-bench && bash scripts/build-plugins.sh
//! target/release/aiphost-bench rpc --connections 1,16 --seconds 15   # rpc start round trips (echo)
//! target/release/aiphost-bench stream --fanout 1,100 --events 10000   # events delivered to streams
//! target/release/aiphost-bench catchup --events 10000                 # re-stream of stored events
//! target/release/aiphost-bench group --partners 1,10 --seconds 10      # round trips via RabbitMQ
//! target/release/aiphost-bench neighbours --loopers 0,4,8              # echo while partners loop
//! target/release/aiphost-bench flood --floods 8                         # RSS after product floods
//! target/release/aiphost-bench list --tasks 1000,10000,100000            # CPU per ListTasks call
//! ```
//!
//! `rpc --url URL [--pid PID]` measures another partner instead (the reference partner, say).
//! Every reply and event is checked; a wrong one counts as an error and is reported.

mod compare;
mod group;
mod listing;
mod memory;
mod neighbours;
mod rpc;
mod sled_values;
mod stream;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Load benchmarks for aiphost")]
struct Args {
    /// The aiphost binary.
    #[arg(long, global = true, default_value = "target/release/aiphost")]
    aiphost: PathBuf,
    /// Partner bundles to serve.
    #[arg(long, global = true, default_value = "plugins/dist")]
    agents: PathBuf,
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// rpc `start` → `awaiting-completion` round trips against the echo partner.
    Rpc(rpc::RpcArgs),
    /// Product-chunk events delivered live to 1..N concurrent streams of one task.
    Stream(stream::StreamArgs),
    /// Time for a re-stream to replay a task's stored events.
    Catchup(stream::CatchupArgs),
    /// Task round trips through a RabbitMQ group with 1..N hosted members.
    Group(group::GroupArgs),
    /// The same wrk load against aiphost, the reference partner and a bare axum echo, one run.
    Compare(compare::CompareArgs),
    /// Memory under many tasks and idle streams; start-up with many published partners.
    Memory(memory::MemoryArgs),
    /// Echo latency while hostile invocations loop (a noisy neighbour's cost).
    Neighbours(neighbours::NeighboursArgs),
    /// Host memory during and after hostile product floods.
    Flood(neighbours::FloodArgs),
    /// Host CPU per A2A ListTasks call at 1k, 10k and 100k stored tasks.
    List(listing::ListArgs),
    /// What sled itself keeps in memory for values of a given size (no host).
    SledValues(sled_values::SledValuesArgs),
    /// A bare axum JSON echo (the floor of `compare`), serving POST /rpc on 127.0.0.1:PORT.
    EchoServer {
        #[arg(long)]
        port: u16,
    },
}

/// An `aiphost serve` process, killed on drop, with its data directory (a fresh temporary one,
/// removed on drop, unless the caller keeps its own).
pub struct Host {
    child: Killed,
    pub url: String,
    _data: Option<tempfile::TempDir>,
}

impl Host {
    /// Start `aiphost serve` serving `agents` on a free port, in a fresh data directory, with
    /// `extra` arguments. Benchmarks make far more tasks than one Leader may keep open by
    /// default: the cap of live tasks is lifted ([`UNCAPPED`]).
    pub fn start(bin: &Path, agents: &Path, extra: &[&str]) -> anyhow::Result<Host> {
        let cache = compiled_cache(bin);
        let mut args = UNCAPPED.to_vec();
        args.extend_from_slice(&["--compiled-cache", &cache]);
        args.extend_from_slice(extra);
        Self::start_as_given(bin, agents, &args)
    }

    /// [`Host::start`] with exactly `extra` (for a binary older than the flags it adds).
    pub fn start_as_given(bin: &Path, agents: &Path, extra: &[&str]) -> anyhow::Result<Host> {
        let data = tempfile::tempdir()?;
        let agents = agents.to_string_lossy();
        let mut args = vec!["--agents", agents.as_ref()];
        args.extend_from_slice(extra);
        let mut host = Host::start_in(bin, data.path(), free_port()?, &args)?;
        host._data = Some(data);
        Ok(host)
    }

    /// Start `aiphost serve` on `port` with the data directory `data` (kept by the caller, so a
    /// host can be restarted on it) and `extra` arguments; return once it listens.
    pub fn start_in(bin: &Path, data: &Path, port: u16, extra: &[&str]) -> anyhow::Result<Host> {
        if !bin.is_file() {
            bail!(
                "{} not found: cargo build --release -p aiphost",
                bin.display()
            );
        }
        let child = Command::new(bin)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--log",
                "error",
            ])
            .arg("--data")
            .arg(data)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let host = Host {
            child: Killed(child),
            url: format!("http://127.0.0.1:{port}"),
            _data: None,
        };
        wait_ready(port)?;
        Ok(host)
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }
}

/// A compiled-component cache shared by every host a benchmark starts with `bin`: the bundled
/// Python partners take seconds of Cranelift each, which no benchmark here measures (and which
/// would otherwise land in the first start-up it times).
pub fn compiled_cache(bin: &Path) -> String {
    bin.parent()
        .unwrap_or(Path::new("."))
        .join("aiphost-bench-compiled")
        .to_string_lossy()
        .into_owned()
}

/// Lifts the cap of live tasks per Leader (benchmarks open more than the default 10,000).
pub const UNCAPPED: [&str; 2] = ["--max-live-tasks", "1000000000"];

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Wait (up to 300 s: a first start compiles what the cache does not hold) until something
/// listens on 127.0.0.1:`port`.
pub fn wait_for_port(port: u16, what: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if started.elapsed() > Duration::from_secs(300) {
            bail!("{what} did not listen on port {port} within 300 s");
        }
        // Fine-grained: start-up times are measured through this.
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Wait (up to 300 s) until the aiphost on 127.0.0.1:`port` says all its partners are ready
/// (`GET /readyz` answers 200): it listens at once and compiles partners in the background.
pub fn wait_ready(port: u16) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let started = Instant::now();
    let ready = || -> bool {
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
            return false;
        };
        let request = "GET /readyz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response.starts_with("HTTP/1.1 200")
    };
    while !ready() {
        if started.elapsed() > Duration::from_secs(300) {
            bail!("aiphost on port {port} was not ready within 300 s");
        }
        // Fine-grained: start-up times are measured through this.
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// A field of a process's /proc status in KiB (`VmHWM`, `VmRSS`, …).
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Peak resident set size of a process, formatted.
pub fn peak_rss(pid: u32) -> String {
    status_kib(pid, "VmHWM").map_or("?".to_string(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

/// Current resident set size of a process, in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    status_kib(pid, "VmRSS").map_or(f64::NAN, |k| k as f64 / 1024.0)
}

/// A child process killed (and reaped) when dropped, also when a benchmark fails half-way.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.bench {
        Bench::Rpc(a) => rpc::run(&args.aiphost, &args.agents, a).await,
        Bench::Stream(a) => stream::fan_out(&args.aiphost, &args.agents, a).await,
        Bench::Catchup(a) => stream::catch_up(&args.aiphost, &args.agents, a).await,
        Bench::Group(a) => group::run(&args.aiphost, &args.agents, a).await,
        Bench::Memory(a) => memory::run(&args.aiphost, &args.agents, a).await,
        Bench::List(a) => listing::run(&args.aiphost, &args.agents, a).await,
        Bench::Compare(a) => compare::run(&args.aiphost, &args.agents, a).await,
        Bench::Neighbours(a) => neighbours::neighbours(&args.aiphost, &args.agents, a).await,
        Bench::Flood(a) => neighbours::flood(&args.aiphost, &args.agents, a).await,
        Bench::SledValues(a) => sled_values::run(a),
        Bench::EchoServer { port } => compare::echo_server(port).await,
    }
}
