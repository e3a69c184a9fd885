//! What the A2A door holds: the engine, the hosted partners (for cards), its callers'
//! authentication and the HTTP settings — all drawn from the host's state.

use crate::agent::Registry;
use crate::task::TaskEngine;
use crate::transport::kit::caller::Callers;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use std::sync::Arc;

/// The A2A door's state.
#[derive(Clone)]
pub(super) struct A2aState {
    pub(super) engine: TaskEngine,
    pub(super) agents: Arc<Registry>,
    pub(super) callers: Callers,
    pub(super) http: Arc<HttpConfig>,
}

impl FromRef<HostState> for A2aState {
    fn from_ref(host: &HostState) -> Self {
        A2aState {
            engine: TaskEngine::from_ref(host),
            agents: Arc::from_ref(host),
            callers: Callers::from_ref(host),
            http: Arc::from_ref(host),
        }
    }
}
