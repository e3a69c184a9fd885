//! `GET /agents/{agent}/aiflowy/chat/events?conversation_id=C[&wire=aiflowy]`: follow the
//! conversation's newest task that has not ended. The seed has a form withdrawn by
//! `form_cancel` on "an open stream", but a chat stream closes at `done` once the form is
//! asked; this is the stream that stays with the conversation meanwhile.
//!
//! A task waiting on a form first shows the form again and `suspended` (a reloaded page can
//! show it), a running one `running`; then its events: a submit elsewhere as `resumed` … `done`,
//! the form's timeout or a cancel as `form_cancel` (reason `timeout` or `canceled`) and `done`.
//! No such task: 404 `CONVERSATION_IDLE`.

use super::config::AiflowyConfig;
use super::entry::{self, QueryParams};
use super::errors;
use super::state::AiflowyState;
use super::stream;
use crate::model::Timestamp;
use crate::protocol::aiflowy::{AiflowyError, parse_conversation};
use crate::transport::kit::sessions;
use crate::transport::tls::Peer;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use std::sync::Arc;

/// The handler.
pub(super) async fn handle(
    State(app): State<AiflowyState>,
    Extension(config): Extension<Arc<AiflowyConfig>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    params: QueryParams,
    headers: HeaderMap,
) -> Response {
    match follow(&app, &config, &agent, params, &headers, &peer).await {
        Ok(response) => response,
        Err(e) => errors::response(&e),
    }
}

async fn follow(
    app: &AiflowyState,
    config: &AiflowyConfig,
    agent: &str,
    params: QueryParams,
    headers: &HeaderMap,
    peer: &Peer,
) -> Result<Response, AiflowyError> {
    let (params, wire) = entry::query(params)?;
    let named = params
        .get("conversation_id")
        .or_else(|| params.get("conversationId"));
    let conversation =
        parse_conversation(named.map(String::as_str)).map_err(AiflowyError::invalid)?;
    let caller = entry::caller(app, agent, headers, peer)?;
    entry::admit_read(&caller)?;
    let idle = || AiflowyError::conversation_idle(&conversation);
    let task = sessions::newest(&app.engine, &caller, &conversation)
        .await
        .map_err(errors::engine)?
        .filter(|t| !t.status.state.is_terminal())
        .ok_or_else(idle)?;
    let (reply, feed) = app
        .engine
        .subscribe(&caller.agent, caller.owner.as_deref(), &task.id)
        .await
        .map_err(errors::engine)?;
    // Ended between the look-up and the subscription: nothing to follow any more.
    if reply.task.status.state.is_terminal() {
        return Err(idle());
    }
    let mut turn = stream::renderer(wire, &conversation, &feed, Timestamp::now_ms(), &config.ui);
    let opening = turn.prime(&reply.task);
    Ok(stream::respond(
        opening,
        turn,
        feed,
        None,
        app.http.sse_keep_alive,
    ))
}
