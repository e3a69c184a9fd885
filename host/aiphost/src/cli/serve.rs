//! `aiphost serve`.

use aiphost::server::{Server, ServerConfig};
use aiphost::transport::connections::HttpLimits;
use anyhow::Context;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug)]
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
    /// Largest request body accepted, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Default `responseTimeout`: how long start/continue wait for the partner, in ms.
    #[arg(long, default_value_t = 25_000)]
    pub response_timeout_ms: u64,
    /// Default `awaitingInputTimeout` in ms (then the task is canceled).
    #[arg(long, default_value_t = 3_600_000)]
    pub awaiting_input_timeout_ms: u64,
    /// Default `awaitingCompletionTimeout` in ms (then the task is completed).
    #[arg(long, default_value_t = 3_600_000)]
    pub awaiting_completion_timeout_ms: u64,
    /// The most product bytes a task may hold, whatever the Leader asks.
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub max_products_bytes: u64,
    /// Seconds between keep-alive comments on an idle event stream.
    #[arg(long, default_value_t = 15)]
    pub sse_keep_alive_secs: u64,
    /// The most events kept per task; a re-stream that needs older ones gets an error.
    #[arg(long, default_value_t = 10_000)]
    pub event_retention_count: u64,
    /// How long the events of an ended task are kept, in seconds.
    #[arg(long, default_value_t = 86_400)]
    pub event_retention_secs: u64,
    /// Let webhooks target loopback, private and link-local addresses (local development, tests).
    #[arg(long)]
    pub webhook_allow_private: bool,
    /// First webhook retry delay in ms (doubling per attempt, with jitter).
    #[arg(long, default_value_t = 500)]
    pub webhook_retry_base_ms: u64,
    /// Longest delay between webhook retries, in ms.
    #[arg(long, default_value_t = 300_000)]
    pub webhook_retry_max_ms: u64,
    /// Give up on a notification this many seconds after its first attempt.
    #[arg(long, default_value_t = 86_400)]
    pub webhook_horizon_secs: u64,
    /// Webhook request timeout in ms (connecting: at most 3 s).
    #[arg(long, default_value_t = 10_000)]
    pub webhook_timeout_ms: u64,
    /// sled's page cache, in MiB.
    #[arg(long, default_value_t = 64)]
    pub store_cache_mib: u64,
    /// Invocations that may run at once (more wait).
    #[arg(long, default_value_t = 256)]
    pub max_concurrent_invocations: u32,
    /// Memory per partner instance when its manifest does not say, in MiB.
    #[arg(long, default_value_t = 64)]
    pub default_memory_mib: u64,
    /// The most memory a manifest may ask for, in MiB.
    #[arg(long, default_value_t = 512)]
    pub max_memory_mib: u64,
    /// Time per invocation when the manifest does not say, in ms.
    #[arg(long, default_value_t = 30_000)]
    pub default_invocation_ms: u64,
    /// The most time per invocation a manifest may ask for, in ms.
    #[arg(long, default_value_t = 300_000)]
    pub max_invocation_ms: u64,
    /// Group mode: what a partner does with a group message that mentions nobody.
    #[arg(long, value_enum, default_value_t = aiphost::group::membership::UnaddressedPolicy::Handle)]
    group_unaddressed: aiphost::group::membership::UnaddressedPolicy,
    /// Group mode: give up joining a group whose broker does not answer within this many ms.
    #[arg(long, default_value_t = 10_000)]
    group_connect_timeout_ms: u64,
    /// Group mode: brokers invitations may name whatever they resolve to, as HOST:PORT (exactly
    /// that host, as spelled, and port), comma-separated. Others must resolve to public
    /// addresses.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    group_brokers: Vec<aiphost::net_policy::HostPort>,
    /// Group mode: let invitations name brokers at loopback, private and link-local addresses.
    #[arg(long)]
    group_allow_private: bool,
    /// The operator's admin token (default: the one in DATA/operator-token, made on first start).
    #[arg(long, env = "AIPHOST_OPERATOR_TOKEN", hide_env_values = true)]
    operator_token: Option<String>,
    /// Quotas of tenants created without their own, as JSON, e.g. '{"maxAgents": 5}'.
    #[arg(long)]
    tenant_quotas: Option<String>,
    /// Let published components import wasi:sockets (the sandbox still grants no network).
    #[arg(long)]
    allow_socket_imports: bool,
    /// Hosts partners may be granted outbound HTTP to (`api.example.com`, `host:port`,
    /// `*.example.com`, `*`); a manifest asking for others is refused. Default: none.
    #[arg(long, value_delimiter = ',')]
    outbound_hosts: Vec<String>,
    /// Let outbound HTTP reach loopback, private, link-local and metadata addresses.
    #[arg(long)]
    outbound_allow_private: bool,
    /// Timeout of each outbound HTTP step (connect, first byte, between bytes), in ms.
    #[arg(long, default_value_t = 30_000)]
    outbound_timeout_ms: u64,
    /// Largest outbound HTTP response body a partner may read, in bytes.
    #[arg(long, default_value_t = 8 * 1024 * 1024)]
    outbound_max_response_bytes: u64,
    /// Tasks that have not ended one Leader may have with one partner; all Leaders of an open
    /// partner share one count [default: 10000].
    #[arg(long)]
    max_live_tasks: Option<u64>,
    /// Commands a task's history keeps, the oldest dropped first (its start and the newest
    /// always stay) [default: 256].
    #[arg(long)]
    history_max_commands: Option<usize>,
    /// Bytes of commands a task's history keeps [default: 1048576].
    #[arg(long)]
    history_max_command_bytes: Option<usize>,
    /// Commands that changed nothing (gets, ignored commands) a task's history keeps: the newest
    /// [default: 32].
    #[arg(long)]
    history_max_unchanging: Option<usize>,
    /// Statuses a task's history keeps (its first and current always stay) [default: 256].
    #[arg(long)]
    history_max_statuses: Option<usize>,
    /// Invocations of one partner that run at once; more wait their turn [default: 8].
    #[arg(long)]
    max_invocations_per_partner: Option<u32>,
    /// Threads that run partner code, apart from those serving Leaders [default: one per CPU].
    #[arg(long)]
    guest_threads: Option<usize>,
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
    /// A request head (and a TLS handshake) must arrive within this many ms of its first byte.
    #[arg(long, default_value_t = duration_ms(HttpLimits::default().header_timeout))]
    http_header_timeout_ms: u64,
    /// A request body must arrive within this many ms of its head.
    #[arg(long, default_value_t = duration_ms(HttpLimits::default().body_timeout))]
    http_body_timeout_ms: u64,
    /// A connection with no request under way is closed after this many ms.
    #[arg(long, default_value_t = duration_ms(HttpLimits::default().idle_timeout))]
    http_idle_timeout_ms: u64,
    /// A connection whose client stops reading an answer is closed after this many ms.
    #[arg(long, default_value_t = duration_ms(HttpLimits::default().write_timeout))]
    http_write_timeout_ms: u64,
    /// Connections open at once (TLS handshakes included); more are refused.
    #[arg(long, default_value_t = HttpLimits::default().max_connections)]
    max_connections: usize,
}

/// A default duration as the flag's milliseconds.
fn duration_ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = ServerConfig::new(args.listen, args.data.clone(), args.agents.clone());
    config.public_url = args.public_url;
    config.max_body_bytes = args.max_body_bytes;
    config.tasks.response_timeout_ms = args.response_timeout_ms;
    config.tasks.awaiting_input_timeout_ms = args.awaiting_input_timeout_ms;
    config.tasks.awaiting_completion_timeout_ms = args.awaiting_completion_timeout_ms;
    config.tasks.max_products_bytes = args.max_products_bytes;
    config.store_cache_bytes = args.store_cache_mib.max(1) << 20;
    config.notify.allow_private = args.webhook_allow_private;
    config.notify.retry_base = std::time::Duration::from_millis(args.webhook_retry_base_ms.max(1));
    config.notify.retry_max = std::time::Duration::from_millis(args.webhook_retry_max_ms.max(1));
    config.notify.horizon = std::time::Duration::from_secs(args.webhook_horizon_secs);
    config.notify.timeout = std::time::Duration::from_millis(args.webhook_timeout_ms.max(1));
    config.notify.connect_timeout = config.notify.timeout.min(std::time::Duration::from_secs(3));
    config.sse_keep_alive = std::time::Duration::from_secs(args.sse_keep_alive_secs.max(1));
    config.tasks.event_retention_count = args.event_retention_count.max(1);
    config.tasks.event_retention_ms = args.event_retention_secs.saturating_mul(1000);
    config.runtime.max_concurrent = args.max_concurrent_invocations;
    config.runtime.default_memory_mib = args.default_memory_mib;
    config.runtime.max_memory_mib = args.max_memory_mib;
    config.runtime.default_invocation_ms = args.default_invocation_ms;
    config.runtime.max_invocation_ms = args.max_invocation_ms;
    config.groups.unaddressed = args.group_unaddressed;
    config.groups.connect_timeout =
        std::time::Duration::from_millis(args.group_connect_timeout_ms.max(1));
    config.groups.brokers = args.group_brokers;
    config.groups.allow_private = args.group_allow_private;
    config.operator_token = args.operator_token;
    if let Some(quotas) = &args.tenant_quotas {
        let quotas: aiphost::tenant::quota::Quotas =
            serde_json::from_str(quotas).context("--tenant-quotas")?;
        quotas
            .check()
            .map_err(|(field, reason)| anyhow::anyhow!("--tenant-quotas: {field} {reason}"))?;
        config.tenant_quotas = quotas;
    }
    config.imports.allow_socket_imports = args.allow_socket_imports;
    let tasks = &mut config.tasks;
    set(&mut tasks.max_live_tasks, args.max_live_tasks);
    set(&mut tasks.history.max_commands, args.history_max_commands);
    set(
        &mut tasks.history.max_command_bytes,
        args.history_max_command_bytes,
    );
    set(
        &mut tasks.history.max_unchanging,
        args.history_max_unchanging,
    );
    set(&mut tasks.history.max_statuses, args.history_max_statuses);
    set(
        &mut tasks.max_invocations_per_partner,
        args.max_invocations_per_partner,
    );
    set(&mut config.runtime.guest_threads, args.guest_threads);
    if let (Some(cert), Some(key)) = (args.tls_cert, args.tls_key) {
        config.tls = Some(aiphost::transport::tls::TlsFiles {
            cert,
            key,
            client_ca: args.tls_client_ca,
        });
    }
    config.runtime.outbound = std::sync::Arc::new(aiphost::runtime::outbound::OutboundPolicy {
        allowed_hosts: args.outbound_hosts,
        allow_private: args.outbound_allow_private,
        timeout: std::time::Duration::from_millis(args.outbound_timeout_ms.max(1)),
        max_response_bytes: args.outbound_max_response_bytes,
    });
    let ms = |ms: u64| std::time::Duration::from_millis(ms.max(1));
    config.http = HttpLimits {
        header_timeout: ms(args.http_header_timeout_ms),
        body_timeout: ms(args.http_body_timeout_ms),
        idle_timeout: ms(args.http_idle_timeout_ms),
        write_timeout: ms(args.http_write_timeout_ms),
        max_connections: args.max_connections.max(1),
    };
    let mut server = Server::start(config)
        .await
        .with_context(|| format!("starting aiphost (data in {})", args.data.display()))?;
    eprintln!("aiphost listening on {} (Ctrl-C to stop)", server.url());
    tokio::select! {
        _ = server.wait() => {}
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("shutting down");
            server.shutdown().await;
        }
    }
    Ok(())
}

/// Override `field` (whose default the library's config holds) when the flag was given.
fn set<T>(field: &mut T, flag: Option<T>) {
    if let Some(value) = flag {
        *field = value;
    }
}
