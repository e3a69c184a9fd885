//! What the AIFlowy door holds: the engine, its callers' authentication and the HTTP settings —
//! all drawn from the host's state. Its own settings and its busy guard travel as request
//! extensions, set once where its routes are made.

use crate::task::TaskEngine;
use crate::transport::kit::caller::Callers;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use std::sync::Arc;

/// The AIFlowy door's state.
#[derive(Clone)]
pub(super) struct AiflowyState {
    pub(super) engine: TaskEngine,
    pub(super) callers: Callers,
    pub(super) http: Arc<HttpConfig>,
}

impl FromRef<HostState> for AiflowyState {
    fn from_ref(host: &HostState) -> Self {
        AiflowyState {
            engine: TaskEngine::from_ref(host),
            callers: Callers::from_ref(host),
            http: Arc::from_ref(host),
        }
    }
}
