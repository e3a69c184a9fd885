//! `POST /agents/{agent}/aiflowy/chat/stop[?wire=aiflowy]` `{conversation_id}`: the stop button of
//! a chat front end. The seed names no route for it (AIFlowy's UI aborts its fetch, which stops
//! nothing here: a client that goes away cancels nothing), so this is the Agent API's
//! `process/stop` at this door: cancel the conversation's newest task while it is accepted,
//! working or awaiting input. Its open turn stream then says `system/status canceled` and `done`,
//! its follow stream `form_cancel` (reason `canceled`) for a waiting form. Nothing under way:
//! 404 `CONVERSATION_IDLE`; ended meanwhile: the engine's 409.

use super::entry::{self, QueryParams};
use super::errors;
use super::state::AiflowyState;
use crate::protocol::aiflowy::{AiflowyError, Wire, parse_stop};
use crate::transport::kit::sessions;
use crate::transport::tls::Peer;
use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The handler.
pub(super) async fn handle(
    State(app): State<AiflowyState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    params: QueryParams,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match stop(&app, &agent, params, &headers, &peer, body).await {
        Ok(response) => response,
        Err(e) => errors::response(&e),
    }
}

async fn stop(
    app: &AiflowyState,
    agent: &str,
    params: QueryParams,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<Response, AiflowyError> {
    let (_, wire) = entry::query(params)?;
    let (body, caller) = entry::enter(app, agent, headers, peer, body).await?;
    let conversation = parse_stop(&body).map_err(AiflowyError::invalid)?;
    let task = sessions::stop(&app.engine, &caller, &conversation)
        .await
        .map_err(errors::engine)?
        .ok_or_else(|| AiflowyError::conversation_idle(&conversation))?;
    // The envelope's spelling of the two ids, so a client reads them as it reads its stream's.
    let (conversation_key, message_key) = match wire {
        Wire::Seed => ("conversation_id", "message_id"),
        Wire::Aiflowy => ("conversationId", "messageId"),
    };
    let answer = json!({
        conversation_key: conversation, message_key: task.id, "status": "canceled",
    });
    Ok(Json(answer).into_response())
}
