//! The host's router: its own endpoints, merged with the routes of each door it is given, behind
//! the gate.

use super::endpoints::Endpoints;
use super::{admin, gate, index, metrics, partner_stats, readiness, reports};
use crate::agent::Registry;
use crate::transport::kit::state::HostState;
use axum::extract::FromRef;
use axum::routing::get;
use axum::{Extension, Router};
use std::sync::Arc;

/// The router of a host: `endpoints`, then every door of `endpoints.doors`, behind the gate.
pub fn router(host: HostState, endpoints: Endpoints) -> Router {
    let doors = endpoints.doors.clone();
    let requests = endpoints.metrics.requests.clone();
    let own: Router<HostState> = Router::new()
        .route("/", get(index::home))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readiness::readyz))
        .route("/agents/{agent}", get(index::agent_summary))
        .route("/metrics", get(metrics::metrics))
        .route("/agents", get(index::list_agents))
        .route("/admin/notifications/given-up", get(reports::given_up))
        .route("/admin/groups", get(reports::group_memberships))
        .route("/admin/agents/{agent}/stats", get(partner_stats::stats))
        .merge(admin::routes())
        .with_state(endpoints);
    let mut router = own;
    for door in doors.iter() {
        tracing::debug!(door = door.name(), "serving a door");
        router = router.merge(door.routes());
    }
    router
        // Every door's request span counts and times it (`kit/span.rs`).
        .layer(Extension(requests))
        .layer(axum::middleware::from_fn_with_state(
            Arc::<Registry>::from_ref(&host),
            gate::partner,
        ))
        .with_state(host)
}
