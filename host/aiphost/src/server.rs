//! A running host: store, runtime, partners, task engine and HTTP, assembled from one config.
//!
//! ```no_run
//! # async fn demo() -> Result<(), aiphost::server::ServerError> {
//! use aiphost::server::{Server, ServerConfig};
//! let config = ServerConfig::new("127.0.0.1:0".parse().unwrap(), "./data".into(), vec!["plugins/dist".into()]);
//! let server = Server::start(config).await?;
//! println!("serving at {}", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```

use crate::agent::policy::OperatorPolicy;
use crate::agent::{AgentError, Registry};
use crate::fan_out::Deliverers;
use crate::metrics::HostMetrics;
use crate::metrics::store::StoreTiming;
use crate::net_policy::TargetPolicy;
use crate::notify::{Notifier, NotifyConfig};
use crate::partner_logs::runner::LoggingRunner;
use crate::partner_logs::{PartnerLogConfig, PartnerLogs};
use crate::runtime::{Runtime, RuntimeConfig, RuntimeError};
use crate::store::{Store, StoreError};
use crate::task::{TaskDefaults, TaskEngine};
use crate::tenant::quota::Quotas;
use crate::tenant::{Tenancy, TenancyConfig, TenancyError};
use crate::transport::a2a::door::A2aDoor;
use crate::transport::agent_api::door::AgentApiDoor;
use crate::transport::aiflowy::config::AiflowyConfig;
use crate::transport::aiflowy::door::AiflowyDoor;
use crate::transport::aip::door::AipDoor;
use crate::transport::aip::invitations::GroupInvitations;
use crate::transport::connections::{ConnectionStats, HttpLimits};
use crate::transport::group::config::GroupConfig;
use crate::transport::group::door::GroupDoor;
use crate::transport::group::groups::Groups;
use crate::transport::group::links::GroupLinks;
use crate::transport::host::endpoints::Endpoints;
use crate::transport::kit::door::Door;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use crate::transport::mcp::config::McpConfig;
use crate::transport::mcp::door::McpDoor;
use crate::transport::tls::{TlsError, TlsFiles};
use crate::transport::{self, host};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Everything a host is configured with.
#[derive(Clone)]
pub struct ServerConfig {
    /// Where the host listens (port 0: any free port; [`Server::url`] tells which).
    pub listen: SocketAddr,
    /// Where the store, the precompiled-component cache and published bundles are kept.
    pub data_dir: PathBuf,
    /// Directories of the operator's partner bundles.
    pub agent_dirs: Vec<PathBuf>,
    /// What the operator allows its own partners: listing an open partner's tasks, a request
    /// rate.
    pub operator_partners: OperatorPolicy,
    /// The largest AIP request body, in bytes.
    pub max_body_bytes: usize,
    /// The base URL written into ACS documents (`None`: the request's Host).
    pub public_url: Option<String>,
    /// How often an idle stream gets a keep-alive comment.
    pub sse_keep_alive: std::time::Duration,
    /// sled's page cache, in bytes.
    pub store_cache_bytes: u64,
    /// Free bytes kept on the store's disk: below them new work is refused (a retryable 503),
    /// below a quarter of them every write (see `store/src/space.rs`).
    pub store_reserve_bytes: u64,
    /// Task defaults and limits (timeouts, retention, histories, caps).
    pub tasks: TaskDefaults,
    /// The partner runtime (pool, memory and time limits, guest threads, outbound policy).
    pub runtime: RuntimeConfig,
    /// Webhook delivery (the notification style).
    pub notify: NotifyConfig,
    /// Group mode.
    pub groups: GroupConfig,
    /// The AIFlowy chat door.
    pub aiflowy: AiflowyConfig,
    /// The MCP door.
    pub mcp: McpConfig,
    /// The operator's admin token (`None`: read `{data}/operator-token`, made on first start).
    pub operator_token: Option<String>,
    /// Quotas of tenants created without their own.
    pub tenant_quotas: Quotas,
    /// How often tenants' stored bytes are measured.
    pub storage_meter: std::time::Duration,
    /// Serve HTTPS (and accept client certificates) instead of plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Timeouts of slow or idle clients and the connection cap.
    pub http: HttpLimits,
    /// What is kept of partners' log lines, and how fast they may log.
    pub partner_logs: PartnerLogConfig,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field("agent_dirs", &self.agent_dirs)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("public_url", &self.public_url)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .field("store_cache_bytes", &self.store_cache_bytes)
            .field("store_reserve_bytes", &self.store_reserve_bytes)
            .field("tasks", &self.tasks)
            .field("runtime", &self.runtime)
            .field("notify", &self.notify)
            .field("groups", &self.groups)
            .field("aiflowy", &self.aiflowy)
            .field("mcp", &self.mcp)
            .field(
                "operator_token",
                &crate::redact::Redacted::of(&self.operator_token),
            )
            .field("tenant_quotas", &self.tenant_quotas)
            .field("storage_meter", &self.storage_meter)
            .field("tls", &self.tls)
            .field("http", &self.http)
            .field("partner_logs", &self.partner_logs)
            .finish()
    }
}

impl ServerConfig {
    /// Defaults for everything but where to listen, where to keep data and what to host.
    pub fn new(listen: SocketAddr, data_dir: PathBuf, agent_dirs: Vec<PathBuf>) -> Self {
        ServerConfig {
            listen,
            runtime: RuntimeConfig::with_data_dir(&data_dir),
            data_dir,
            agent_dirs,
            operator_partners: OperatorPolicy::default(),
            max_body_bytes: 4 * 1024 * 1024,
            public_url: None,
            sse_keep_alive: std::time::Duration::from_secs(15),
            store_cache_bytes: crate::store::DEFAULT_CACHE_BYTES,
            store_reserve_bytes: crate::store::DEFAULT_RESERVE_BYTES,
            tasks: TaskDefaults::default(),
            notify: NotifyConfig::default(),
            groups: GroupConfig::default(),
            aiflowy: AiflowyConfig::default(),
            mcp: McpConfig::default(),
            operator_token: None,
            tenant_quotas: Quotas::default(),
            storage_meter: std::time::Duration::from_secs(10),
            tls: None,
            http: HttpLimits::default(),
            partner_logs: PartnerLogConfig::default(),
        }
    }
}

/// Why a host could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data directory could not be created.
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        /// The data directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The store could not be opened (or read at start-up).
    #[error("cannot open the store: {0}")]
    Store(#[from] StoreError),
    /// The store lost data: the host does not start on what is left until told to.
    #[error("{source} (aiphost store accept-loss {data_dir})")]
    StoreDamaged {
        /// The data directory.
        data_dir: String,
        /// What the store lost ([`StoreError::Damaged`]).
        source: StoreError,
    },
    /// Tasks interrupted by the last stop could not be failed.
    #[error("cannot recover the tasks interrupted by the last stop: {0}")]
    Recover(#[from] crate::task::EngineError),
    /// The partner runtime could not be built.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// An operator's bundle could not be hosted.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// Tenancy (tenants, published partners, keys) could not be loaded.
    #[error("cannot open tenancy: {0}")]
    Tenancy(#[from] TenancyError),
    /// The TLS certificate, key or client CA could not be used.
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    /// The operator token file could not be read or made.
    #[error("the operator token file {path}: {source}")]
    OperatorToken {
        /// The token file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The thread that compiles partners could not be started.
    #[error("cannot start the thread that compiles partners: {source}")]
    Compile {
        /// Why.
        source: std::io::Error,
    },
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {}", listen_words(cause))]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why (not a `source`: its words are said here, with the hint that fixes it).
        cause: std::io::Error,
    },
}

/// A host serving HTTP until [`Server::shutdown`].
pub struct Server {
    scheme: &'static str,
    agents: Arc<Registry>,
    addr: SocketAddr,
    engine: TaskEngine,
    groups: Groups,
    stop: CancellationToken,
    serving: JoinHandle<()>,
}

impl Server {
    /// Bind the port, open the store, read the partners, re-arm timers and start serving; the
    /// partners' components compile in the background, each serving once it is ready.
    pub async fn start(config: ServerConfig) -> Result<Self, ServerError> {
        // First, so a busy port is said at once rather than after everything else.
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|cause| ServerError::Listen {
                addr: config.listen,
                cause,
            })?;
        let addr = listener.local_addr().map_err(|cause| ServerError::Listen {
            addr: config.listen,
            cause,
        })?;
        // Then the TLS files: a wrong path or key is said before anything is opened.
        let tls = match &config.tls {
            Some(files) => Some(transport::tls::server_config(files)?),
            None => None,
        };
        std::fs::create_dir_all(&config.data_dir).map_err(|source| ServerError::DataDir {
            path: config.data_dir.display().to_string(),
            source,
        })?;
        let store =
            Store::open_with_cache(&config.data_dir.join("store"), config.store_cache_bytes)
                .map_err(|e| match e {
                    StoreError::Damaged { .. } => ServerError::StoreDamaged {
                        data_dir: config.data_dir.display().to_string(),
                        source: e,
                    },
                    e => ServerError::Store(e),
                })?;
        store.set_disk_reserve(config.store_reserve_bytes);
        let mut runtime_config = config.runtime.clone();
        if crate::telemetry::exporting() {
            // Partners' outbound requests carry the trace on (their invocation's span).
            Arc::make_mut(&mut runtime_config.outbound).trace_context =
                Some(crate::telemetry::inject);
        }
        let runtime = Arc::new(Runtime::new(runtime_config)?);
        let (agents, mut compiles) =
            Registry::load_dirs(&runtime, &config.agent_dirs, &config.operator_partners)?;
        let agents = Arc::new(agents);
        if agents.is_empty() {
            tracing::warn!(dirs = ?config.agent_dirs, "no partner bundles found; serving no agents");
        }
        let notifier = Notifier::new(store.clone(), config.notify.clone());
        let metrics = HostMetrics::new(agents.clone());
        store.observe_commits(Arc::new(StoreTiming::new(&metrics.metrics)));
        let links = Arc::new(GroupLinks::default());
        let logs = Arc::new(PartnerLogs::new(config.partner_logs.clone()));
        let engine = TaskEngine::start(
            store.clone(),
            Arc::new(LoggingRunner {
                runtime: runtime.clone(),
                logs: logs.clone(),
            }),
            agents.clone(),
            // Where a webhook may point: the notifier's rule, checked by the engine when a config
            // is made (whatever door) and by the notifier at every delivery.
            TaskDefaults {
                webhook_targets: TargetPolicy {
                    allow_private: config.notify.allow_private,
                },
                ..config.tasks.clone()
            },
            Arc::new(Deliverers {
                notifier: notifier.clone(),
                groups: links.clone(),
            }),
            metrics.partners.clone(),
        )?;
        let pending = notifier.resume()?;
        if pending > 0 {
            tracing::info!(tasks = pending, "resuming undelivered notifications");
        }
        let (tenancy, published) = Tenancy::open(
            store.clone(),
            engine.clone(),
            runtime.clone(),
            agents.clone(),
            logs.clone(),
            &config.data_dir,
            TenancyConfig {
                operator_token: operator_token(&config)?,
                default_quotas: config.tenant_quotas.clone(),
            },
        )?;
        compiles.extend(published);
        let stop = CancellationToken::new();
        // Compiles take cores, not the runtime's threads: the host serves meanwhile.
        {
            let runtime = runtime.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("aiphost-compile".into())
                .spawn(move || Registry::compile_all(&runtime, compiles, &|| stop.is_cancelled()))
                .map_err(|source| ServerError::Compile { source })?;
        }
        let mut group_config = config.groups.clone();
        if let Some(broker) = &group_config.inbox_broker {
            // Groups invited through the inbox live on the operator's own broker.
            group_config.brokers.push(broker.listed());
        }
        let groups = Groups::new(engine.clone(), store, agents.clone(), links, group_config);
        let resumed = groups.resume()?;
        if resumed > 0 {
            tracing::info!(memberships = resumed, "resuming group memberships");
        }
        if let Some(broker) = &config.groups.inbox_broker {
            crate::transport::group::inbox::spawn(
                groups.clone(),
                agents.clone(),
                broker.clone(),
                stop.clone(),
            );
        }
        // After the memberships are live, so a failed task's group hears of it too.
        let failed = engine.recover_interrupted().await?;
        if failed > 0 {
            tracing::warn!(
                tasks = failed,
                "failed the tasks whose invocation was running when the host stopped"
            );
        }
        let connections = Arc::new(ConnectionStats::default());
        let host = HostState::new(
            engine.clone(),
            agents.clone(),
            tenancy.clone(),
            HttpConfig {
                max_body_bytes: config.max_body_bytes,
                public_url: config.public_url.clone(),
                https: config.tls.is_some(),
                sse_keep_alive: config.sse_keep_alive,
            },
        );
        // The doors: AIP's `group` method joins through the group door's memberships.
        let doors: Arc<[Arc<dyn Door>]> = Arc::new([
            Arc::new(AipDoor::new(&host, Arc::new(groups.clone()))) as Arc<dyn Door>,
            Arc::new(A2aDoor),
            Arc::new(AgentApiDoor::new(&metrics.metrics)),
            Arc::new(AiflowyDoor::new(config.aiflowy.clone())),
            Arc::new(McpDoor::new(
                &host,
                config.mcp.clone(),
                stop.clone(),
                &metrics.metrics,
            )),
            Arc::new(GroupDoor::new(groups.clone(), &metrics.metrics)),
        ]);
        metrics.spawn_upkeep(stop.clone());
        crate::metrics::host::register(&metrics, &engine, &notifier, &connections);
        crate::metrics::host::register_partner_logs(&metrics, &logs, &agents);
        let endpoints = Endpoints::new(&host, notifier, groups.clone(), doors, logs, metrics);
        let app = host::router::router(host, endpoints);
        tenancy.spawn_storage_meter(config.storage_meter, stop.clone());
        let serving = tokio::spawn(transport::connections::serve(
            listener,
            tls,
            app,
            config.http.clone(),
            connections,
            stop.clone(),
        ));
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        tracing::info!(%addr, scheme, "aiphost is serving");
        Ok(Server {
            scheme,
            agents: agents.clone(),
            addr,
            engine,
            groups,
            stop,
            serving,
        })
    }

    /// Wait until every hosted partner's compile has ended (ready, or failed): what `/readyz`
    /// says with 200.
    pub async fn ready(&self) {
        self.agents.compiled().await;
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` with TLS.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Wait until the server stops (it stops only on [`Server::shutdown`] or an error).
    pub async fn wait(&mut self) {
        let _ = (&mut self.serving).await;
    }

    /// Stop accepting requests, finish those under way, flush the store.
    pub async fn shutdown(self) {
        self.stop.cancel();
        self.groups.shutdown();
        let _ = self.serving.await;
        if let Err(e) = self.engine.flush().await {
            tracing::error!(error = %e, "final flush failed");
        }
    }
}

/// The AIP door's `group` method, answered by the group door: the server is where the two meet,
/// so neither door names the other.
impl GroupInvitations for Groups {
    fn join<'a>(
        &'a self,
        agent: &'a Arc<crate::agent::Agent>,
        leader: Option<&'a str>,
        params: &'a serde_json::Value,
    ) -> futures::future::BoxFuture<'a, Result<serde_json::Value, crate::protocol::RpcError>> {
        Box::pin(Groups::join(self, agent, leader, params))
    }
}

/// Why an address cannot be listened on, with what to do about it.
fn listen_words(cause: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match cause.kind() {
        ErrorKind::AddrInUse => {
            "the address is already in use (another aiphost, or another server); stop it or choose another --listen".into()
        }
        ErrorKind::PermissionDenied => {
            "permission denied (ports below 1024 need privileges); choose another --listen".into()
        }
        ErrorKind::AddrNotAvailable => {
            "no network interface of this machine has that address; choose another --listen".into()
        }
        _ => cause.to_string(),
    }
}

/// The operator token: configured, or kept in `{data}/operator-token` (made on first start,
/// readable by its owner only).
fn operator_token(config: &ServerConfig) -> Result<String, ServerError> {
    if let Some(token) = &config.operator_token {
        return Ok(token.clone());
    }
    let path = config.data_dir.join("operator-token");
    let failed = |source| ServerError::OperatorToken {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(token) if !token.trim().is_empty() => return Ok(token.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(e)),
    }
    let token = format!(
        "aho.{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(failed)?;
    std::io::Write::write_all(&mut file, format!("{token}\n").as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    tracing::info!(path = %path.display(), "made the operator token");
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Secrets print redacted in `Debug` (issue 29 item 8): a config or credential in a log line
    /// or a panic message carries no token, key or secret value. (The client's `ClientConfig`
    /// is held to the same in the aiphost-client crate.)
    #[test]
    fn secrets_print_redacted() {
        const SECRET: &str = "aho.very-secret-value-0123456789";
        let mut config =
            ServerConfig::new("127.0.0.1:0".parse().unwrap(), "data".into(), Vec::new());
        config.operator_token = Some(SECRET.into());
        let tenancy = TenancyConfig {
            operator_token: SECRET.into(),
            default_quotas: Quotas::default(),
        };
        let header = crate::runtime::outbound::SecretHeader {
            host: "api.example".into(),
            header: "authorization".into(),
            value: SECRET.into(),
        };
        let notification = crate::model::notification::NotificationConfig {
            token: SECRET.into(),
            ..Default::default()
        };
        for shown in [
            format!("{config:?}"),
            format!("{tenancy:?}"),
            format!("{header:?}"),
            format!("{notification:?}"),
        ] {
            assert!(!shown.contains(SECRET), "{shown}");
            assert!(
                shown.contains("redacted") || shown.contains("hidden"),
                "{shown}"
            );
        }
    }
}
