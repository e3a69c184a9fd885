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

use crate::agent::{AgentError, Registry};
use crate::group::{GroupConfig, GroupLinks, Groups};
use crate::notify::{Notifier, NotifyConfig};
use crate::runtime::{Runtime, RuntimeConfig, RuntimeError};
use crate::store::{Store, StoreError};
use crate::task::{TaskDefaults, TaskEngine};
use crate::transport::{self, AppState, HttpConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Everything a host is configured with.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub agent_dirs: Vec<PathBuf>,
    pub max_body_bytes: usize,
    pub public_url: Option<String>,
    /// How often an idle stream gets a keep-alive comment.
    pub sse_keep_alive: std::time::Duration,
    /// sled's page cache, in bytes.
    pub store_cache_bytes: u64,
    pub tasks: TaskDefaults,
    pub runtime: RuntimeConfig,
    /// Webhook delivery (the notification style).
    pub notify: NotifyConfig,
    /// Group mode.
    pub groups: GroupConfig,
}

impl ServerConfig {
    /// Defaults for everything but where to listen, where to keep data and what to host.
    pub fn new(listen: SocketAddr, data_dir: PathBuf, agent_dirs: Vec<PathBuf>) -> Self {
        ServerConfig {
            listen,
            runtime: RuntimeConfig::with_data_dir(&data_dir),
            data_dir,
            agent_dirs,
            max_body_bytes: 4 * 1024 * 1024,
            public_url: None,
            sse_keep_alive: std::time::Duration::from_secs(15),
            store_cache_bytes: crate::store::DEFAULT_CACHE_BYTES,
            tasks: TaskDefaults::default(),
            notify: NotifyConfig::default(),
            groups: GroupConfig::default(),
        }
    }
}

/// Why a host could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot open the store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A host serving HTTP until [`Server::shutdown`].
pub struct Server {
    addr: SocketAddr,
    engine: TaskEngine,
    groups: Groups,
    stop: CancellationToken,
    serving: JoinHandle<()>,
}

impl Server {
    /// Open the store, load the partners, re-arm timers and start serving.
    pub async fn start(config: ServerConfig) -> Result<Self, ServerError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| ServerError::DataDir {
            path: config.data_dir.display().to_string(),
            source,
        })?;
        let store =
            Store::open_with_cache(&config.data_dir.join("store"), config.store_cache_bytes)?;
        let runtime = Arc::new(Runtime::new(config.runtime.clone())?);
        let agents = Arc::new(Registry::load_dirs(&runtime, &config.agent_dirs)?);
        if agents.is_empty() {
            tracing::warn!(dirs = ?config.agent_dirs, "no partner bundles found; serving no agents");
        }
        let notifier = Notifier::new(store.clone(), config.notify.clone());
        let links = Arc::new(GroupLinks::default());
        let engine = TaskEngine::start(
            store,
            runtime,
            agents.clone(),
            config.tasks.clone(),
            notifier,
            links.clone(),
        )?;
        let groups = Groups::new(engine.clone(), agents.clone(), links, config.groups.clone());
        let resumed = groups.resume()?;
        if resumed > 0 {
            tracing::info!(memberships = resumed, "resuming group memberships");
        }
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| ServerError::Listen {
                addr: config.listen,
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServerError::Listen {
                addr: config.listen,
                source,
            })?;
        let app = transport::router(AppState {
            engine: engine.clone(),
            groups: groups.clone(),
            agents,
            config: Arc::new(HttpConfig {
                max_body_bytes: config.max_body_bytes,
                public_url: config.public_url.clone(),
                sse_keep_alive: config.sse_keep_alive,
            }),
        });
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let serving = tokio::spawn(async move {
            let result = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
            if let Err(e) = result {
                tracing::error!(error = %e, "HTTP server failed");
            }
        });
        tracing::info!(%addr, "aiphost is serving");
        Ok(Server {
            addr,
            engine,
            groups,
            stop,
            serving,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
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
        if let Err(e) = self.engine.store().flush().await {
            tracing::error!(error = %e, "final flush failed");
        }
    }
}
