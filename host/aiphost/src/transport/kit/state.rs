//! The server's state, split: [`HostState`] is what the server assembles once; a door takes
//! only the parts it needs (axum's `FromRef`): the engine, the hosted partners, its callers'
//! authentication ([`Callers`]), the HTTP settings. No door sees the whole of it.

use super::caller::Callers;
use super::http_config::HttpConfig;
use crate::agent::Registry;
use crate::task::TaskEngine;
use crate::tenant::Tenancy;
use axum::extract::FromRef;
use std::sync::Arc;

/// What the server shares with every door and with its own endpoints. Its fields are private:
/// a part is drawn from it by type (`State<TaskEngine>`, `State<Callers>`, ... or a door's own
/// state built from those).
#[derive(Clone)]
pub struct HostState {
    engine: TaskEngine,
    agents: Arc<Registry>,
    tenancy: Arc<Tenancy>,
    http: Arc<HttpConfig>,
}

impl HostState {
    /// The state of a host serving `agents` through `engine`, authenticating with `tenancy`.
    pub fn new(
        engine: TaskEngine,
        agents: Arc<Registry>,
        tenancy: Arc<Tenancy>,
        http: HttpConfig,
    ) -> Self {
        HostState {
            engine,
            agents,
            tenancy,
            http: Arc::new(http),
        }
    }
}

/// The engine's API: every command, read and stream of a door.
impl FromRef<HostState> for TaskEngine {
    fn from_ref(host: &HostState) -> Self {
        host.engine.clone()
    }
}

/// The hosted partners (documents about them: ACS, cards, the host's listing).
impl FromRef<HostState> for Arc<Registry> {
    fn from_ref(host: &HostState) -> Self {
        host.agents.clone()
    }
}

/// Tenancy as a whole: the admin endpoints (not a door's).
impl FromRef<HostState> for Arc<Tenancy> {
    fn from_ref(host: &HostState) -> Self {
        host.tenancy.clone()
    }
}

/// The HTTP settings.
impl FromRef<HostState> for Arc<HttpConfig> {
    fn from_ref(host: &HostState) -> Self {
        host.http.clone()
    }
}

/// Who calls a partner: the part of tenancy a door may use.
impl FromRef<HostState> for Callers {
    fn from_ref(host: &HostState) -> Self {
        Callers::new(host.agents.clone(), host.tenancy.clone())
    }
}
