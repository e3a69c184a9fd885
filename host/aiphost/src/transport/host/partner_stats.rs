//! `GET /admin/agents/{agent}/stats`: a hosted partner's readiness and its invocations since
//! the host started, with p50/p99 of their time (estimated over the histogram's buckets as
//! PromQL's `histogram_quantile` does). The operator may ask of any partner, a tenant of its
//! own only: another's is 404, as one not hosted, so its existence does not show.

use super::admin::{AdminError, AdminPath, principal};
use super::endpoints::Endpoints;
use crate::tenant::{Principal, TenancyError};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The partner's stats.
pub(super) async fn stats(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
) -> Result<Response, AdminError> {
    let who = principal(&state.tenancy, &headers)?;
    let not_found = || {
        AdminError::from(TenancyError::NotFound {
            what: "partner",
            id: agent.clone(),
        })
    };
    let hosted = state.agents.get(&agent).ok_or_else(not_found)?;
    let tenant = hosted.tenant.as_ref().map(|t| t.id.clone());
    if let Principal::Tenant(caller) = &who
        && tenant.as_ref() != Some(caller)
    {
        return Err(not_found());
    }
    let stats = state
        .metrics
        .partners
        .get(&agent)
        .map(|m| m.stats())
        .unwrap_or_default();
    Ok(Json(json!({
        "agent": hosted.id(),
        "tenant": tenant,
        "readiness": hosted.code.readiness().as_str(),
        "invocations": stats.invocations,
        "failures": stats.failures,
        "p50_seconds": stats.p50_seconds,
        "p99_seconds": stats.p99_seconds,
    }))
    .into_response())
}
