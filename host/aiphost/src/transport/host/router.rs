//! The host's router: its own endpoints, merged with the routes of each door it is given, behind
//! the gate, inside the access layer (each request's span and access line).

use super::endpoints::Endpoints;
use super::{
    access, admin, console, gate, index, logs, metrics, partner_stats, readiness, reports, tasks,
    timeline,
};
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
        .route("/console", get(console::index))
        .route("/console/", get(console::slash))
        .route("/console/{*file}", get(console::file))
        .route("/agents", get(index::list_agents))
        .route("/admin/notifications/given-up", get(reports::given_up))
        .route("/admin/groups", get(reports::group_memberships))
        .route("/admin/agents/{agent}/logs", get(logs::partner_logs))
        .route("/admin/agents/{agent}/stats", get(partner_stats::stats))
        .merge(admin::routes())
        .merge(tasks::routes())
        .merge(timeline::routes())
        .with_state(endpoints);
    let mut router = own;
    for door in doors.iter() {
        tracing::debug!(door = door.name(), "serving a door");
        router = router.merge(door.routes());
    }
    // One `layer` call for the three: axum boxes a route once per call, and every box is cloned,
    // with all it holds, for each request (issue 35). Outermost first, each route's (after
    // routing): the access layer (the span and the line know the matched route and cover the
    // gate's refusals too), the gate, then the extension every door's request span counts and
    // times with (`kit/span.rs`).
    router
        .layer((
            access::AccessLayer,
            gate::GateLayer(Arc::<Registry>::from_ref(&host)),
            Extension(requests),
        ))
        .with_state(host)
}
