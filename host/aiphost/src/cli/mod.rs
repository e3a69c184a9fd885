//! Command-line interface: `serve`, `dev`, `agent new|build|list|publish|versions|rollback|
//! unpublish`, `call`, `notifications`, `groups`, `tenant`, `key`, `logs`, `store`.

mod admin;
mod agent;
mod call;
mod dev;
mod groups;
mod keys;
mod logs;
mod notifications;
mod output;
mod serve;
mod store;
mod tenant;

use clap::{Args, Parser, Subcommand};

/// Host AIP partners as sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "aiphost", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub log: LogArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Logging options (every subcommand).
#[derive(Args, Debug)]
pub struct LogArgs {
    /// Log as JSON lines instead of human-readable text.
    #[arg(long, global = true)]
    pub log_json: bool,
    /// Log filter, e.g. `info`, `aiphost=debug` (overrides RUST_LOG).
    #[arg(long, global = true, value_name = "FILTER")]
    pub log: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve hosted partners over AIP.
    Serve(Box<serve::ServeArgs>),
    /// Develop a partner: build it, serve it with the bundled partners, and on every change of
    /// its sources build and publish it again (running tasks finish on their version).
    Dev(dev::DevArgs),
    /// Create, build, test and list partners; publish them to a running host and manage their
    /// versions, config values and secrets.
    #[command(subcommand)]
    Agent(agent::AgentCommand),
    /// Act as a Leader: send AIP commands to any partner URL.
    Call(call::CallArgs),
    /// Inspect a running host's webhook notifications.
    #[command(subcommand)]
    Notifications(notifications::NotificationsCommand),
    /// Show a running host's group memberships, per hosted partner.
    Groups(groups::GroupsArgs),
    /// Create, list and remove tenants (operator).
    #[command(subcommand)]
    Tenant(tenant::TenantCommand),
    /// Issue, list and revoke Leader API keys for a tenant's partners.
    #[command(subcommand)]
    Key(keys::KeyCommand),
    /// Show a partner's own log lines (its `log` calls), or follow them live.
    Logs(logs::LogsArgs),
    /// Check a stopped host's store, or accept what a damaged one lost.
    #[command(subcommand)]
    Store(store::StoreCommand),
}

/// Set up `tracing`: human-readable by default, JSON with `--log-json`. Without `--log` or
/// `RUST_LOG`, `aiphost dev` shows the partner's log lines and the host's warnings; every other
/// command the host's info lines. Spans are exported over OTLP when `serve --otlp-endpoint` or
/// the standard variables name a collector; the guard flushes them at the end.
pub fn init_logging(
    args: &LogArgs,
    command: &Command,
) -> Result<aiphost::telemetry::Guard, aiphost::telemetry::TelemetryError> {
    let default = match command {
        Command::Dev(_) => "warn,partner=trace",
        _ => "info,wasmtime=warn,cranelift=warn",
    };
    use tracing_subscriber::EnvFilter;
    let filter = args
        .log
        .as_deref()
        .map(EnvFilter::new)
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    // Colour only for a person at a terminal: a log written to a file or a pipe stays plain text
    // (and NO_COLOR is honoured).
    use std::io::IsTerminal;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    aiphost::telemetry::init(aiphost::telemetry::Options {
        filter,
        json: args.log_json,
        colour,
        otlp_endpoint: match command {
            Command::Serve(serve) => serve.otlp_endpoint.clone(),
            _ => None,
        },
    })
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Dev(args) => dev::run(args).await,
        Command::Agent(cmd) => agent::run(cmd).await,
        Command::Call(args) => call::run(args).await,
        Command::Notifications(cmd) => notifications::run(cmd).await,
        Command::Groups(args) => groups::run(args).await,
        Command::Tenant(cmd) => tenant::run(cmd).await,
        Command::Key(cmd) => keys::run(cmd).await,
        Command::Logs(args) => logs::run(args).await,
        Command::Store(cmd) => store::run(cmd).await,
    }
}
