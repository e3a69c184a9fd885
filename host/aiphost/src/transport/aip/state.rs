//! What the AIP door holds: the engine, the hosted partners (for ACS documents), its callers'
//! authentication, the HTTP settings, and whoever answers `group` invitations.

use super::invitations::GroupInvitations;
use crate::agent::Registry;
use crate::task::TaskEngine;
use crate::transport::kit::caller::Callers;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use std::sync::Arc;

/// The AIP door's state.
#[derive(Clone)]
pub(super) struct AipState {
    pub(super) engine: TaskEngine,
    pub(super) agents: Arc<Registry>,
    pub(super) callers: Callers,
    pub(super) http: Arc<HttpConfig>,
    pub(super) invitations: Arc<dyn GroupInvitations>,
}

impl AipState {
    /// Its parts drawn from `host`; `invitations` is not the host's but the server's wiring.
    pub(super) fn new(host: &HostState, invitations: Arc<dyn GroupInvitations>) -> Self {
        AipState {
            engine: TaskEngine::from_ref(host),
            agents: Arc::from_ref(host),
            callers: Callers::from_ref(host),
            http: Arc::from_ref(host),
            invitations,
        }
    }
}
