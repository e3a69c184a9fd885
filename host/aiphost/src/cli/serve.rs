//! `aiphost serve`.
//!
//! Flags come in named groups, one per part of the host. Every flag that has a default is an
//! `Option`: given, it overrides the value of the library's config ([`ServerConfig::new`] and the
//! config structs of its parts), which alone holds the defaults; `--help` shows them from there.

use aiphost::server::{Server, ServerConfig};
use aiphost::transport::connections::HttpLimits;
use aiphost::units;
use anyhow::Context;
use clap::Args;
use std::fmt::Display;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(
    after_help = "Durations and sizes take a unit: 500ms, 30s, 10m, 2h, 1d; 64MiB, 1GiB, \
    512KiB, 10MB. A bare number is in the unit the flag names (ms for --*-ms, seconds for \
    --*-secs, MiB for --*-mib, bytes for --*-bytes); a value with a unit must come to a whole \
    number of it."
)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", env = "AIPHOST_LISTEN")]
    pub listen: SocketAddr,
    /// Where tasks, events and compiled partners are kept.
    #[arg(long, default_value = "./aiphost-data", env = "AIPHOST_DATA")]
    pub data: PathBuf,
    /// Directories of partner bundles (each a `partner.toml` + `partner.wasm`); repeatable.
    #[arg(
        long = "agents",
        default_value = "plugins/dist",
        env = "AIPHOST_AGENTS",
        value_delimiter = ','
    )]
    pub agents: Vec<PathBuf>,
    /// The URL Leaders reach this host at, for ACS documents (default: the request's Host).
    #[arg(long, env = "AIPHOST_PUBLIC_URL")]
    pub public_url: Option<String>,
    #[command(flatten)]
    http: HttpFlags,
    #[command(flatten)]
    tasks: TaskFlags,
    #[command(flatten)]
    runtime: RuntimeFlags,
    #[command(flatten)]
    outbound: OutboundFlags,
    #[command(flatten)]
    webhooks: WebhookFlags,
    /// The group door's own flags.
    #[command(flatten)]
    groups: aiphost::transport::group::flags::GroupFlags,
    /// The AIFlowy chat door's own flags.
    #[command(flatten)]
    aiflowy: aiphost::transport::aiflowy::flags::AiflowyFlags,
    /// The MCP door's own flags.
    #[command(flatten)]
    mcp: aiphost::transport::mcp::flags::McpFlags,
    #[command(flatten)]
    partners: PartnerFlags,
    #[command(flatten)]
    partner_logs: aiphost::partner_logs::flags::PartnerLogFlags,
    #[command(flatten)]
    tenancy: TenancyFlags,
    /// Export traces over OTLP/HTTP to this collector (`http://collector:4318`; a URL without a
    /// path gets `/v1/traces`). Default: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` if set, else no export.
    #[arg(long, value_name = "URL", help_heading = "Telemetry")]
    pub otlp_endpoint: Option<String>,
}

/// The library's defaults, for `--help`.
fn defaults() -> &'static ServerConfig {
    static DEFAULTS: OnceLock<ServerConfig> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        ServerConfig::new(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            PathBuf::from("./aiphost-data"),
            Vec::new(),
        )
    })
}

/// A flag's help: `text` and the default the library's config holds.
fn help(text: &str, default: impl Display) -> String {
    format!("{} [default: {default}]", text.trim_end_matches('.'))
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

#[derive(Args, Debug)]
#[command(next_help_heading = "HTTP")]
struct HttpFlags {
    #[arg(long, value_parser = units::bytes_usize, help = help("Largest request body accepted, in bytes.", defaults().max_body_bytes))]
    max_body_bytes: Option<usize>,
    #[arg(long, value_parser = units::seconds, help = help("Seconds between keep-alive comments on an idle event stream.", defaults().sse_keep_alive.as_secs()))]
    sse_keep_alive_secs: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("A request head (and a TLS handshake) must arrive within this many ms of its first byte.", ms(defaults().http.header_timeout)))]
    http_header_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("A request body must arrive within this many ms of its head.", ms(defaults().http.body_timeout)))]
    http_body_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("A connection with no request under way is closed after this many ms.", ms(defaults().http.idle_timeout)))]
    http_idle_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("A connection whose client stops reading an answer is closed after this many ms.", ms(defaults().http.write_timeout)))]
    http_write_timeout_ms: Option<u64>,
    #[arg(long, help = help("Connections open at once (TLS handshakes included); more are refused.", defaults().http.max_connections))]
    max_connections: Option<usize>,
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Accept client certificates from these CAs (PEM): mutual TLS for partners whose manifest
    /// says `leaders = "mtls"`.
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(next_help_heading = "Tasks")]
struct TaskFlags {
    #[arg(long, value_parser = units::millis, help = help("Default `responseTimeout`: how long start/continue wait for the partner, in ms.", defaults().tasks.response_timeout_ms))]
    response_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("Default `awaitingInputTimeout` in ms (then the task is canceled).", defaults().tasks.awaiting_input_timeout_ms))]
    awaiting_input_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("Default `awaitingCompletionTimeout` in ms (then the task is completed).", defaults().tasks.awaiting_completion_timeout_ms))]
    awaiting_completion_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::bytes, help = help("The most product bytes a task may hold, whatever the Leader asks.", defaults().tasks.max_products_bytes))]
    max_products_bytes: Option<u64>,
    #[arg(long, help = help("The most events kept per task; a re-stream that needs older ones gets an error.", defaults().tasks.event_retention_count))]
    event_retention_count: Option<u64>,
    #[arg(long, value_parser = units::seconds, help = help("How long the events of an ended task are kept, in seconds.", defaults().tasks.event_retention_ms / 1000))]
    event_retention_secs: Option<u64>,
    #[arg(long, value_parser = parse_retention, help = help("How long an ended task is kept before it is deleted with its events, products, key-value entries and notification configs: a duration (`30s`, `10m`, `12h`, `7d`; seconds without a unit), or `off` to keep ended tasks for ever.", show_retention(defaults().tasks.task_retention_ms)))]
    task_retention: Option<Retention>,
    #[arg(long, help = help("Tasks that have not ended one Leader may have with one partner; all Leaders of an open partner share one count.", defaults().tasks.max_live_tasks))]
    max_live_tasks: Option<u64>,
    #[arg(long, help = help("Commands a task's history keeps, the oldest dropped first (its start and the newest always stay).", defaults().tasks.history.max_commands))]
    history_max_commands: Option<usize>,
    #[arg(long, value_parser = units::bytes_usize, help = help("Bytes of commands a task's history keeps.", defaults().tasks.history.max_command_bytes))]
    history_max_command_bytes: Option<usize>,
    #[arg(long, help = help("Commands that changed nothing (gets, ignored commands) a task's history keeps: the newest.", defaults().tasks.history.max_unchanging))]
    history_max_unchanging: Option<usize>,
    #[arg(long, help = help("Statuses a task's history keeps (its first and current always stay).", defaults().tasks.history.max_statuses))]
    history_max_statuses: Option<usize>,
    #[arg(long, value_parser = units::mebibytes, help = help("sled's page cache, in MiB.", defaults().store_cache_bytes >> 20))]
    store_cache_mib: Option<u64>,
    #[arg(long, value_parser = units::mebibytes, help = help("Free space kept on the store's disk, in MiB: below it new starts and continues are refused with a retryable 503 (and /readyz says 503), below a quarter of it every write; the host takes work again as soon as space returns.", defaults().store_reserve_bytes >> 20))]
    store_reserve_mib: Option<u64>,
}

#[derive(Args, Debug)]
#[command(next_help_heading = "Partner runtime")]
struct RuntimeFlags {
    #[arg(long, help = help("Invocations that may run at once (more wait).", defaults().runtime.max_concurrent))]
    max_concurrent_invocations: Option<u32>,
    #[arg(long, help = help("Invocations of one partner that run at once; more wait their turn.", defaults().tasks.max_invocations_per_partner))]
    max_invocations_per_partner: Option<u32>,
    /// Threads that run partner code, apart from those serving Leaders [default: one per CPU].
    #[arg(long)]
    guest_threads: Option<usize>,
    /// Where compiled components are kept, to load in a millisecond at the next start; hosts
    /// of one aiphost build may share it [default: DATA/compiled].
    #[arg(long)]
    compiled_cache: Option<PathBuf>,
    #[arg(long, value_parser = units::mebibytes, help = help("Memory per partner instance when its manifest does not say, in MiB.", defaults().runtime.default_memory_mib))]
    default_memory_mib: Option<u64>,
    #[arg(long, value_parser = units::mebibytes, help = help("The most memory a manifest may ask for, in MiB.", defaults().runtime.max_memory_mib))]
    max_memory_mib: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("Time per invocation when the manifest does not say, in ms.", defaults().runtime.default_invocation_ms))]
    default_invocation_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("The most time per invocation a manifest may ask for, in ms.", defaults().runtime.max_invocation_ms))]
    max_invocation_ms: Option<u64>,
}

#[derive(Args, Debug)]
#[command(next_help_heading = "Partners' outbound HTTP")]
struct OutboundFlags {
    /// Hosts partners may be granted outbound HTTP to (`api.example.com`, `host:port`,
    /// `*.example.com`, `*`); a manifest asking for others is refused. Default: none.
    #[arg(long, value_delimiter = ',')]
    outbound_hosts: Vec<String>,
    /// Let outbound HTTP reach loopback, private, link-local and metadata addresses.
    #[arg(long)]
    outbound_allow_private: bool,
    #[arg(long, value_parser = units::millis, help = help("Timeout of each outbound HTTP step (connect, first byte, between bytes), in ms.", ms(defaults().runtime.outbound.timeout)))]
    outbound_timeout_ms: Option<u64>,
    #[arg(long, value_parser = units::bytes, help = help("Largest outbound HTTP response body a partner may read, in bytes.", defaults().runtime.outbound.max_response_bytes))]
    outbound_max_response_bytes: Option<u64>,
}

#[derive(Args, Debug)]
#[command(next_help_heading = "Notifications (webhooks)")]
struct WebhookFlags {
    /// Let webhooks target loopback, private and link-local addresses (local development, tests).
    #[arg(long)]
    webhook_allow_private: bool,
    #[arg(long, value_parser = units::millis, help = help("First webhook retry delay in ms (doubling per attempt, with jitter).", ms(defaults().notify.retry_base)))]
    webhook_retry_base_ms: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("Longest delay between webhook retries, in ms.", ms(defaults().notify.retry_max)))]
    webhook_retry_max_ms: Option<u64>,
    #[arg(long, value_parser = units::seconds, help = help("Give up on a notification this many seconds after its first attempt.", defaults().notify.horizon.as_secs()))]
    webhook_horizon_secs: Option<u64>,
    #[arg(long, value_parser = units::millis, help = help("Webhook request timeout in ms (connecting: at most 3 s).", ms(defaults().notify.timeout)))]
    webhook_timeout_ms: Option<u64>,
}

#[derive(Args, Debug)]
#[command(next_help_heading = "The operator's partners (--agents)")]
struct PartnerFlags {
    /// Answer ListTasks on this partner although its clients do not authenticate (they share
    /// one namespace: any client then sees every client's tasks). Repeatable. Default: off on
    /// every open partner. A tenant's partners take it from the tenant's quotas
    /// (`listTasksOnOpenPartners`).
    #[arg(long, value_name = "AGENT", value_delimiter = ',')]
    list_tasks_on: Vec<String>,
    /// Requests a second each of these partners takes (over either door, whoever sends them);
    /// more are refused with when to retry (-32009 over AIP, 429 over A2A), as a tenant's
    /// `requestsPerSecond`. Default: no limit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    requests_per_second: Option<u32>,
    /// Requests taken at once above --requests-per-second [default: twice it].
    #[arg(long, value_name = "N", requires = "requests_per_second", value_parser = clap::value_parser!(u32).range(1..))]
    request_burst: Option<u32>,
}

#[derive(Args)]
#[command(next_help_heading = "Tenancy")]
struct TenancyFlags {
    /// The operator's admin token (default: the one in DATA/operator-token, made on first start).
    #[arg(long, env = "AIPHOST_OPERATOR_TOKEN", hide_env_values = true)]
    operator_token: Option<String>,
    /// Quotas of tenants created without their own, as JSON, e.g. '{"maxAgents": 5}'.
    #[arg(long)]
    tenant_quotas: Option<String>,
}

impl std::fmt::Debug for TenancyFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenancyFlags")
            .field(
                "operator_token",
                &aiphost::redact::Redacted::of(&self.operator_token),
            )
            .field("tenant_quotas", &self.tenant_quotas)
            .finish()
    }
}

/// Override `field` (whose default the library's config holds) when the flag was given.
/// `--task-retention`: how long in ms, or `None` (`off`) for ever.
#[derive(Clone, Copy, Debug)]
struct Retention(Option<u64>);

fn parse_retention(text: &str) -> Result<Retention, String> {
    if text.trim().eq_ignore_ascii_case("off") {
        return Ok(Retention(None));
    }
    let duration = units::duration(text, units::TimeUnit::Secs)
        .map_err(|e| format!("{e} (or `off` to keep ended tasks for ever)"))?;
    match u64::try_from(duration.as_millis()) {
        Ok(0) => Err("a retention of 0 would delete tasks as they end; say `off` to keep them for ever, or give at least 1ms".into()),
        Ok(ms) => Ok(Retention(Some(ms))),
        Err(_) => Err(format!("{text:?} is too long")),
    }
}

/// The default retention as `--task-retention` spells it.
fn show_retention(ms: Option<u64>) -> String {
    match ms {
        None => "off".into(),
        Some(ms) if ms % 86_400_000 == 0 => format!("{}d", ms / 86_400_000),
        Some(ms) if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        Some(ms) if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        Some(ms) => format!("{}s", ms / 1_000),
    }
}

fn set<T>(field: &mut T, flag: Option<T>) {
    if let Some(value) = flag {
        *field = value;
    }
}

/// Override a duration given in ms (at least 1 ms).
fn set_ms(field: &mut Duration, flag: Option<u64>) {
    set(field, flag.map(|ms| Duration::from_millis(ms.max(1))));
}

/// The library's config with every given flag applied.
fn config(args: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let mut config = ServerConfig::new(args.listen, args.data.clone(), args.agents.clone());
    config.public_url = args.public_url.clone();
    apply_http(&mut config, &args.http);
    apply_tasks(&mut config, &args.tasks);
    apply_runtime(&mut config, &args.runtime, &args.outbound);
    apply_webhooks(&mut config, &args.webhooks);
    args.groups.apply(&mut config.groups);
    args.aiflowy.apply(&mut config.aiflowy);
    args.mcp.apply(&mut config.mcp);
    args.partner_logs.apply(&mut config.partner_logs);
    config.operator_partners = aiphost::agent::policy::OperatorPolicy {
        list_tasks_on: args.partners.list_tasks_on.clone(),
        request_rate: args.partners.requests_per_second.map(|rate| {
            let burst = args
                .partners
                .request_burst
                .unwrap_or(rate.saturating_mul(2));
            (rate, burst)
        }),
    };
    config.operator_token = args.tenancy.operator_token.clone();
    if let Some(quotas) = &args.tenancy.tenant_quotas {
        let quotas: aiphost::tenant::quota::Quotas =
            serde_json::from_str(quotas).context("--tenant-quotas")?;
        quotas
            .check()
            .map_err(|(field, reason)| anyhow::anyhow!("--tenant-quotas: {field} {reason}"))?;
        config.tenant_quotas = quotas;
    }
    Ok(config)
}

fn apply_http(config: &mut ServerConfig, flags: &HttpFlags) {
    set(&mut config.max_body_bytes, flags.max_body_bytes);
    set(
        &mut config.sse_keep_alive,
        flags
            .sse_keep_alive_secs
            .map(|s| Duration::from_secs(s.max(1))),
    );
    let http: &mut HttpLimits = &mut config.http;
    set_ms(&mut http.header_timeout, flags.http_header_timeout_ms);
    set_ms(&mut http.body_timeout, flags.http_body_timeout_ms);
    set_ms(&mut http.idle_timeout, flags.http_idle_timeout_ms);
    set_ms(&mut http.write_timeout, flags.http_write_timeout_ms);
    set(
        &mut http.max_connections,
        flags.max_connections.map(|n| n.max(1)),
    );
    if let (Some(cert), Some(key)) = (&flags.tls_cert, &flags.tls_key) {
        config.tls = Some(aiphost::transport::tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: flags.tls_client_ca.clone(),
        });
    }
}

fn apply_tasks(config: &mut ServerConfig, flags: &TaskFlags) {
    let tasks = &mut config.tasks;
    set(&mut tasks.response_timeout_ms, flags.response_timeout_ms);
    set(
        &mut tasks.awaiting_input_timeout_ms,
        flags.awaiting_input_timeout_ms,
    );
    set(
        &mut tasks.awaiting_completion_timeout_ms,
        flags.awaiting_completion_timeout_ms,
    );
    set(&mut tasks.max_products_bytes, flags.max_products_bytes);
    set(
        &mut tasks.event_retention_count,
        flags.event_retention_count.map(|n| n.max(1)),
    );
    set(
        &mut tasks.event_retention_ms,
        flags.event_retention_secs.map(|s| s.saturating_mul(1000)),
    );
    set(
        &mut tasks.task_retention_ms,
        flags.task_retention.map(|Retention(ms)| ms),
    );
    set(&mut tasks.max_live_tasks, flags.max_live_tasks);
    set(&mut tasks.history.max_commands, flags.history_max_commands);
    set(
        &mut tasks.history.max_command_bytes,
        flags.history_max_command_bytes,
    );
    set(
        &mut tasks.history.max_unchanging,
        flags.history_max_unchanging,
    );
    set(&mut tasks.history.max_statuses, flags.history_max_statuses);
    set(
        &mut config.store_cache_bytes,
        flags.store_cache_mib.map(|mib| mib.max(1) << 20),
    );
    set(
        &mut config.store_reserve_bytes,
        flags.store_reserve_mib.map(|mib| mib << 20),
    );
}

fn apply_runtime(config: &mut ServerConfig, flags: &RuntimeFlags, outbound: &OutboundFlags) {
    set(
        &mut config.tasks.max_invocations_per_partner,
        flags.max_invocations_per_partner,
    );
    let runtime = &mut config.runtime;
    set(
        &mut runtime.max_concurrent,
        flags.max_concurrent_invocations,
    );
    set(&mut runtime.guest_threads, flags.guest_threads);
    if let Some(dir) = &flags.compiled_cache {
        runtime.cache_dir = dir.clone();
    }
    set(&mut runtime.default_memory_mib, flags.default_memory_mib);
    set(&mut runtime.max_memory_mib, flags.max_memory_mib);
    set(
        &mut runtime.default_invocation_ms,
        flags.default_invocation_ms,
    );
    set(&mut runtime.max_invocation_ms, flags.max_invocation_ms);
    let mut policy = (*runtime.outbound).clone();
    policy.allowed_hosts = outbound.outbound_hosts.clone();
    policy.allow_private = outbound.outbound_allow_private;
    set_ms(&mut policy.timeout, outbound.outbound_timeout_ms);
    set(
        &mut policy.max_response_bytes,
        outbound.outbound_max_response_bytes,
    );
    runtime.outbound = std::sync::Arc::new(policy);
}

fn apply_webhooks(config: &mut ServerConfig, flags: &WebhookFlags) {
    let notify = &mut config.notify;
    notify.allow_private = flags.webhook_allow_private;
    set_ms(&mut notify.retry_base, flags.webhook_retry_base_ms);
    set_ms(&mut notify.retry_max, flags.webhook_retry_max_ms);
    set(
        &mut notify.horizon,
        flags.webhook_horizon_secs.map(Duration::from_secs),
    );
    set_ms(&mut notify.timeout, flags.webhook_timeout_ms);
    notify.connect_timeout = notify.timeout.min(Duration::from_secs(3));
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let config = config(&args)?;
    let data: &Path = &args.data;
    let mut server = Server::start(config)
        .await
        .with_context(|| format!("starting aiphost (data in {})", data.display()))?;
    eprintln!("aiphost listening on {} (Ctrl-C to stop)", server.url());
    // As Jupyter does: a signed-in console URL, the token in the fragment (which a browser
    // never sends, so it reaches no access log). To the terminal only, never to the log.
    match console_token(&args) {
        Some(token) => {
            let base = args.public_url.clone().unwrap_or_else(|| server.url());
            let base = base.trim_end_matches('/');
            eprintln!("console: {base}/console#token={}", fragment_escape(&token));
        }
        None => eprintln!("console: {}/console", server.url()),
    }
    tokio::select! {
        _ = server.wait() => {}
        _ = stop_signal() => {
            tracing::info!("shutting down");
            server.shutdown().await;
        }
    }
    Ok(())
}

/// The operator token the console URL carries: the flag's, else the one the host keeps in
/// its data directory (made on its first start).
fn console_token(args: &ServeArgs) -> Option<String> {
    if let Some(token) = &args.tenancy.operator_token {
        return Some(token.clone());
    }
    let kept = std::fs::read_to_string(args.data.join("operator-token")).ok()?;
    Some(kept.trim().to_string()).filter(|t| !t.is_empty())
}

/// `text` percent-encoded but for the characters a URL fragment keeps as they are.
fn fragment_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Ctrl-C, or SIGTERM (what a service manager or a container runtime sends to stop a process):
/// either way the host shuts down cleanly, its store flushed.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the host cleanly");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
