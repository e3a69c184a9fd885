//! `aiphost dev [PATH]`: the author's loop. Build the partner (Rust, Python or JavaScript), serve
//! it beside the bundled partners, and on every change of its sources build it again and publish
//! the new version, through the same versioned path as `agent publish`: new tasks run on the new
//! version at once, tasks already running finish on theirs. The partner's log lines are shown as
//! they come.
//!
//! The host's data (tasks, versions) lives in a scratch directory that goes with the command: a
//! development host starts clean every time.

use super::admin::AdminArgs;
use super::agent;
use aiphost::server::{Server, ServerConfig};
use aiphost::units;
use anyhow::Context;
use clap::Args;
use reqwest::Method;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Args, Debug)]
pub struct DevArgs {
    /// The partner's directory (with its partner.toml).
    #[arg(default_value = ".")]
    path: PathBuf,
    /// The address to serve on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Directories of bundles to serve beside it (those that exist).
    #[arg(long = "agents", default_value = "plugins/dist", value_delimiter = ',')]
    agents: Vec<PathBuf>,
    /// How often the sources are looked at for changes (`500ms`, `2s`; a number is ms).
    #[arg(long, value_parser = units::millis, default_value = "500")]
    poll: u64,
}

/// The tenant the development host publishes the partner as.
const TENANT: &str = "dev";

pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let path = args.path.clone();
    let data = tempfile::Builder::new()
        .prefix("aiphost-dev-")
        .tempdir()
        .context("creating the development host's data directory")?;
    let agents: Vec<PathBuf> = args.agents.iter().filter(|d| d.is_dir()).cloned().collect();
    let mut config = ServerConfig::new(args.listen, data.path().to_path_buf(), agents);
    let operator = uuid::Uuid::new_v4().simple().to_string();
    config.operator_token = Some(operator.clone());
    let mut server = Server::start(config)
        .await
        .context("starting the development host")?;
    let url = server.url();
    eprintln!(
        "aiphost dev: serving on {url} (data in {}; Ctrl-C to stop)",
        data.path().display()
    );

    let console = format!("{url}/console#token={operator}");
    let operator = AdminArgs {
        url: url.clone(),
        token: Some(operator),
    };
    let created = operator
        .request(
            Method::POST,
            "/admin/tenants",
            Some(&serde_json::json!({
                "id": TENANT,
                // The author is the only tenant: every rebuild publishes, as often as they save.
                "quotas": {
                    "maxComponentBytes": 256u64 << 20,
                    "maxStoredBytes": 16u64 << 30,
                    "publishesPerHour": 100_000,
                },
            })),
        )
        .await?;
    let tenant = AdminArgs {
        url: url.clone(),
        token: created["adminToken"].as_str().map(str::to_string),
    };

    let mut seen = sources_state(&path);
    let mut announced = false;
    let mut pending: Option<SourcesState> = Some(seen.clone());
    loop {
        if let Some(state) = pending.take() {
            seen = state;
            match build_and_publish(&path, &tenant).await {
                Ok(id) if !announced => {
                    announced = true;
                    eprintln!("aiphost dev: {id} is at");
                    for (what, at) in [
                        ("AIP rpc", format!("{url}/agents/{id}/rpc")),
                        ("AIP stream", format!("{url}/agents/{id}/stream")),
                        (
                            "A2A card",
                            format!("{url}/agents/{id}/.well-known/agent-card.json"),
                        ),
                    ] {
                        eprintln!("    {what:<11} {at}");
                    }
                    eprintln!("    {:<11} {console} (chat, tasks, logs)", "console");
                    eprintln!("  try: aiphost call {url}/agents/{id} start --text hello");
                    eprintln!("aiphost dev: watching {} for changes", path.display());
                }
                Ok(_) => {}
                Err(e) => eprintln!(
                    "aiphost dev: the build failed; the last version keeps serving: {e:#}"
                ),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(args.poll)) => {}
            _ = server.wait() => return Ok(()),
            _ = tokio::signal::ctrl_c() => {
                server.shutdown().await;
                return Ok(());
            }
        }
        let now = sources_state(&path);
        if now != seen {
            // Editors write in several steps: wait until the sources stop changing.
            tokio::time::sleep(Duration::from_millis(args.poll)).await;
            if sources_state(&path) == now {
                eprintln!("aiphost dev: sources changed; building again");
                pending = Some(now);
            }
        }
    }
}

/// Build the partner and publish the bundle; returns its id.
async fn build_and_publish(path: &Path, tenant: &AdminArgs) -> anyhow::Result<String> {
    let (dir, out) = (path.to_path_buf(), path.join("dist"));
    let bundle = tokio::task::spawn_blocking(move || agent::build(&dir, &out, false))
        .await
        .context("the build task failed")??;
    agent::publish(&bundle, tenant).await?;
    Ok(bundle
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default())
}

/// What the sources look like: each file's path, size and modification time.
type SourcesState = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// The partner's sources: every file below `root` but build output, dependencies and hidden
/// files (`dist`, `target`, `node_modules`, `__pycache__`, `.git`, ...).
fn sources_state(root: &Path) -> SourcesState {
    const SKIPPED: [&str; 5] = ["dist", "target", "node_modules", "__pycache__", "build"];
    let mut state = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || SKIPPED.contains(&name.as_ref()) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                state.push((entry.path(), meta.len(), meta.modified().ok()));
            }
        }
    }
    state.sort();
    state
}
