//! Whether the host is ready to take work: `GET /readyz`.

use super::endpoints::Endpoints;
use crate::agent::code::Readiness;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `GET /readyz`: 200 once every hosted partner is ready and the store's disk has room for new
/// work; 503 while any partner compiles or while the disk is below its reserve (new work is
/// refused then: take the host out of rotation). Each partner's readiness and the store's state
/// either way. (`/healthz` says only that the process answers.)
pub(super) async fn readyz(State(state): State<Endpoints>) -> Response {
    let mut partners = serde_json::Map::new();
    let mut compiling = 0;
    let mut failed = 0;
    for agent in state.agents.list() {
        let readiness = agent.code.readiness();
        match readiness {
            Readiness::Ready => {}
            Readiness::Compiling => compiling += 1,
            Readiness::Failed(_) => failed += 1,
        }
        partners.insert(agent.id().to_string(), json!(readiness.as_str()));
    }
    let disk = state.engine.disk();
    let store_ok = disk.state == crate::store::DiskState::Ok;
    let status = if compiling > 0 || !store_ok {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = json!({
        "ready": compiling == 0 && store_ok,
        "compiling": compiling,
        "failed": failed,
        "partners": partners,
        "store": {
            "disk": disk.state.as_str(),
            "freeBytes": disk.free,
            "reserveBytes": disk.reserve,
        },
    });
    (status, axum::Json(body)).into_response()
}
