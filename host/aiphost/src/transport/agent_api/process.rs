//! `POST /agents/{agent}/process`: one turn of a session. The request's last user message is a
//! `start` of a new task, or the `continue` of the session's task that awaits input (a form's
//! answer, checked by the engine against the form); a session whose task still runs is refused
//! with one `SESSION_BUSY` event. The turn goes through the engine's stream, as every door's
//! does, and is answered as SSE, or folded into the last `AgentResponse` with `stream: false`
//! ([`super::answer`]; folded only for a client that takes JSON).

use super::answer::answer;
use super::entry;
use super::errors::{self, ApiError};
use super::state::AgentApiState;
use super::stats::{Outcome, Route, Stats};
use super::stream;
use crate::model::{Inbound, Timestamp};
use crate::protocol::agent_api::{AgentApiRequest, Turn, parse_request};
use crate::task::StreamStart;
use crate::transport::kit::caller::Caller;
use crate::transport::kit::sessions::{self, Next, SessionGuard};
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use futures::stream as streams;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The handler.
pub(super) async fn handle(
    State(app): State<AgentApiState>,
    Extension(guard): Extension<SessionGuard>,
    Extension(stats): Extension<Arc<Stats>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match process(&app, &guard, &stats, &agent, &headers, &peer, body).await {
        Ok((response, outcome)) => {
            stats.answered(outcome);
            response
        }
        Err(e) => {
            stats.refused(Route::Process, e.status().as_u16());
            e.response()
        }
    }
}

async fn process(
    app: &AgentApiState,
    guard: &SessionGuard,
    stats: &Arc<Stats>,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<(Response, Outcome), ApiError> {
    let (body, caller) = entry::enter(app, agent, headers, peer, body).await?;
    let request = parse_request(&body).map_err(ApiError::invalid)?;
    // Folded only for a client that takes JSON: one that takes only SSE (agentscope-runtime's
    // own client, which reads nothing else) gets the turn streamed, as AgentApp always does.
    let stream = request.stream || !entry::accepts_json(headers);
    // No session: a new conversation, under an id made up here and sent back on every event.
    let session_id = request
        .session_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let response_id = request
        .request_id
        .clone()
        .unwrap_or_else(|| format!("response_{}", uuid::Uuid::new_v4()));
    let created_at = Timestamp::now_ms() / 1000;
    // Held until the turn's task exists (its first event), so that the next request finds it.
    let Some(held) = guard.hold(&caller, &session_id) else {
        // Another request of the session is starting its turn right now: no task yet to name.
        let turn = Turn::new(&response_id, &session_id, "", created_at);
        let message = format!("session {session_id} is starting a turn; wait for it");
        return Ok(busy(app, stats, stream, turn, &message).await);
    };
    let next = sessions::turn(&app.engine, &caller, &session_id)
        .await
        .map_err(errors::engine)?;
    let task_id = match next {
        Next::Start => None,
        Next::Continue(task) => Some(task.id),
        Next::Busy(task) => {
            let turn = Turn::new(&response_id, &session_id, &task.id, created_at);
            let message = format!(
                "session {session_id} has task {} working; stop it or wait",
                task.id
            );
            return Ok(busy(app, stats, stream, turn, &message).await);
        }
    };
    let outcome = match task_id {
        Some(_) => Outcome::Continue,
        None => Outcome::Start,
    };
    // The turn is the last message of `input` (parse_request checked there is one).
    let last = body["input"]
        .as_array()
        .map_or(0, |i| i.len().saturating_sub(1));
    let contents = format!("input[{last}].content");
    let inbound = inbound(&caller, request, task_id, &session_id);
    let start = app
        .engine
        .stream(&caller.agent, inbound, None)
        .await
        .map_err(|e| errors::engine_on_turn(e, &contents))?;
    let StreamStart::Events(feed) = start else {
        return Err(ApiError::internal(
            "a turn was answered without its task's events",
        ));
    };
    let turn = Turn::new(&response_id, &session_id, &feed.key().task, created_at)
        .completing_on_result(feed.completes_on_result());
    let within = feed.response_timeout();
    let events = stream::events(turn, feed, Some(held));
    Ok((answer(app, stats, stream, events, within).await, outcome))
}

/// The answer to a turn in a busy session: one `rejected` response, `SESSION_BUSY`.
async fn busy(
    app: &AgentApiState,
    stats: &Arc<Stats>,
    stream: bool,
    mut turn: Turn,
    message: &str,
) -> (Response, Outcome) {
    let events = streams::iter(turn.refused("SESSION_BUSY", message)).boxed();
    // One event, there at once: the bound is never reached.
    let answer = answer(app, stats, stream, events, Duration::from_secs(1)).await;
    (answer, Outcome::Busy)
}

/// The engine's command of a turn: a start (no `task_id`) or the continue of `task_id`, in
/// `session_id`, the options under `commandParams.agentApi`.
fn inbound(
    caller: &Caller,
    request: AgentApiRequest,
    task_id: Option<String>,
    session_id: &str,
) -> Inbound {
    let mut params = Map::new();
    if !request.options.is_empty() {
        params.insert("agentApi".into(), Value::Object(request.options));
    }
    sessions::inbound(
        caller,
        "agent-api",
        request.items,
        task_id,
        session_id,
        params,
    )
}
