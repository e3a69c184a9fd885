//! What the Agent API door holds: the engine, its callers' authentication and the HTTP
//! settings — all drawn from the host's state.

use crate::task::TaskEngine;
use crate::transport::kit::caller::Callers;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use std::sync::Arc;

/// The Agent API door's state.
#[derive(Clone)]
pub(super) struct AgentApiState {
    pub(super) engine: TaskEngine,
    pub(super) callers: Callers,
    pub(super) http: Arc<HttpConfig>,
}

impl FromRef<HostState> for AgentApiState {
    fn from_ref(host: &HostState) -> Self {
        AgentApiState {
            engine: TaskEngine::from_ref(host),
            callers: Callers::from_ref(host),
            http: Arc::from_ref(host),
        }
    }
}
