//! What the operator (or a tenant, of its own partners) reads about the host's outward links:
//! group memberships (`GET /admin/groups`) and notifications given up on
//! (`GET /admin/notifications/given-up`).

use super::admin;
use super::endpoints::Endpoints;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The hosted partners' current group memberships: all for the operator, a tenant's own for it.
pub(super) async fn group_memberships(
    State(state): State<Endpoints>,
    headers: HeaderMap,
) -> Response {
    let who = match admin::principal(&state.tenancy, &headers) {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    let list: Vec<_> = state
        .groups
        .list()
        .into_iter()
        .filter(|m| admin::may_see(&state.tenancy, &who, &m.agent))
        .collect();
    axum::Json(json!({ "memberships": list })).into_response()
}

/// Notifications the host gave up on (newest last); tokens are not shown. All for the operator,
/// a tenant's own partners' for it.
pub(super) async fn given_up(State(state): State<Endpoints>, headers: HeaderMap) -> Response {
    let who = match admin::principal(&state.tenancy, &headers) {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    match state.notifier.given_up(1000) {
        Ok(list) => {
            let list: Vec<_> = list
                .into_iter()
                .filter(|g| admin::may_see(&state.tenancy, &who, &g.agent))
                .collect();
            axum::Json(json!({ "givenUp": list })).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot list given-up notifications");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(json!({"error": "the store could not be read"})),
            )
                .into_response()
        }
    }
}
