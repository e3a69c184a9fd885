//! What the host's own endpoints hold: the host's parts, the notifier (its given-up list), the
//! group memberships (their listing), the doors, the host's metrics (`/metrics`, a partner's
//! stats) and the partners' logs.

use crate::agent::Registry;
use crate::metrics::HostMetrics;
use crate::notify::Notifier;
use crate::partner_logs::PartnerLogs;
use crate::task::TaskEngine;
use crate::tenant::Tenancy;
use crate::transport::group::groups::Groups;
use crate::transport::kit::door::Door;
use crate::transport::kit::http_config::HttpConfig;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use std::sync::Arc;

/// The state of the host's own endpoints.
#[derive(Clone)]
pub struct Endpoints {
    pub(super) engine: TaskEngine,
    pub(super) agents: Arc<Registry>,
    pub(super) tenancy: Arc<Tenancy>,
    pub(super) http: Arc<HttpConfig>,
    pub(super) notifier: Arc<Notifier>,
    pub(super) groups: Groups,
    pub(super) doors: Arc<[Arc<dyn Door>]>,
    pub(super) logs: Arc<PartnerLogs>,
    pub(super) metrics: HostMetrics,
}

impl Endpoints {
    /// The endpoints of `host`, with what only they need.
    pub fn new(
        host: &HostState,
        notifier: Arc<Notifier>,
        groups: Groups,
        doors: Arc<[Arc<dyn Door>]>,
        logs: Arc<PartnerLogs>,
        metrics: HostMetrics,
    ) -> Self {
        Endpoints {
            engine: TaskEngine::from_ref(host),
            agents: Arc::from_ref(host),
            tenancy: Arc::from_ref(host),
            http: Arc::from_ref(host),
            notifier,
            groups,
            doors,
            logs,
            metrics,
        }
    }
}
