//! `POST /agents/{agent}/process/stop` `{"session_id"}`: cancel the session's newest task if it
//! is accepted, working or awaiting input (the turn's open stream then ends with `response
//! canceled`). None → 404 `NO_RUNNING_TASK`; ended meanwhile → 409 from the engine.

use super::entry;
use super::errors::{self, ApiError};
use super::state::AgentApiState;
use super::stats::{Outcome, Route, Stats};
use crate::protocol::agent_api::parse_stop;
use crate::transport::kit::sessions;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// The handler.
pub(super) async fn handle(
    State(app): State<AgentApiState>,
    Extension(stats): Extension<Arc<Stats>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match stop(&app, &agent, &headers, &peer, body).await {
        Ok(response) => {
            stats.answered(Outcome::Stopped);
            response
        }
        Err(e) => {
            stats.refused(Route::Stop, e.status().as_u16());
            e.response()
        }
    }
}

async fn stop(
    app: &AgentApiState,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<Response, ApiError> {
    let (body, caller) = entry::enter(app, agent, headers, peer, body).await?;
    let session_id = parse_stop(&body).map_err(ApiError::invalid)?;
    let Some(task) = sessions::stop(&app.engine, &caller, &session_id)
        .await
        .map_err(errors::engine)?
    else {
        return Err(ApiError::no_running_task(&session_id));
    };
    let body = json!({"session_id": session_id, "task_id": task.id, "status": "canceled"});
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response())
}
