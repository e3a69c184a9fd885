//! What the MCP door holds: the engine, its callers' authentication, the HTTP settings, its
//! own, its 2025-11-25 sessions and its counters — drawn from the host's state when the door
//! is built (`rmcp` needs its handler's state up front, not per request).

use super::config::McpConfig;
use super::sessions::Sessions;
use super::stats::Stats;
use crate::metrics::Metrics;
use crate::task::TaskEngine;
use crate::transport::kit::caller::Callers;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::sync::Arc;

/// The MCP door's state.
#[derive(Clone)]
pub(super) struct McpState {
    pub(super) engine: TaskEngine,
    pub(super) callers: Callers,
    pub(super) http: Arc<HttpConfig>,
    pub(super) config: Arc<McpConfig>,
    pub(super) sessions: Arc<Sessions>,
    pub(super) stats: Arc<Stats>,
}

impl McpState {
    /// The state of a door of `host`'s partners with `config`, its counters on `metrics`.
    pub(super) fn new(host: &HostState, config: McpConfig, metrics: &Arc<Metrics>) -> Self {
        let sessions = Arc::new(Sessions::new(
            Arc::new(LocalSessionManager::default()),
            config.max_sessions,
        ));
        McpState {
            engine: TaskEngine::from_ref(host),
            callers: Callers::from_ref(host),
            http: Arc::from_ref(host),
            stats: Arc::new(Stats::new(metrics, sessions.clone())),
            sessions,
            config: Arc::new(config),
        }
    }
}
