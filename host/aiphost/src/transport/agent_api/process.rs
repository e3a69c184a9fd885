//! `POST /agents/{agent}/process`: one turn of a session. The request's last user message is a
//! `start` of a new task, or the `continue` of the session's task that awaits input (a form's
//! answer, checked by the engine against the form); a session whose task still runs is refused
//! with one `SESSION_BUSY` event. The turn goes through the engine's stream, as every door's
//! does, and is answered as SSE, or folded into the last `AgentResponse` with `stream: false`.

use super::entry;
use super::errors::{self, ApiError};
use super::sessions::{self, Next, POLICY};
use super::state::AgentApiState;
use super::stream::{self, Events};
use crate::model::{CommandKind, HistoryFilter, Inbound, LeaderCommand, Timestamp};
use crate::protocol::agent_api::{AgentApiRequest, Turn, parse_request};
use crate::task::StreamStart;
use crate::transport::kit::caller::Caller;
use crate::transport::kit::sessions::SessionGuard;
use crate::transport::kit::sse;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream as streams;
use serde_json::{Map, Value, json};

/// The handler.
pub(super) async fn handle(
    State(app): State<AgentApiState>,
    Extension(guard): Extension<SessionGuard>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match process(&app, &guard, &agent, &headers, &peer, body).await {
        Ok(response) => response,
        Err(e) => e.response(),
    }
}

async fn process(
    app: &AgentApiState,
    guard: &SessionGuard,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<Response, ApiError> {
    let (body, caller) = entry::enter(app, agent, headers, peer, body).await?;
    let request = parse_request(&body).map_err(ApiError::invalid)?;
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
    let held = guard.hold(&caller, &session_id);
    let next = if held.is_some() {
        sessions::turn(app, &caller, &session_id).await?
    } else {
        Next::Starting
    };
    let task_id = match next {
        Next::Start => None,
        Next::Continue(task) => Some(task.id),
        Next::Busy(task) => {
            let turn = Turn::new(&response_id, &session_id, &task.id, created_at);
            let message = format!(
                "session {session_id} has task {} working; stop it or wait",
                task.id
            );
            return Ok(busy(app, request.stream, turn, &message).await);
        }
        Next::Starting => {
            // No task yet to name.
            let turn = Turn::new(&response_id, &session_id, "", created_at);
            let message = format!("session {session_id} is starting a turn; wait for it");
            return Ok(busy(app, request.stream, turn, &message).await);
        }
    };
    let stream = request.stream;
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
    Ok(answer(app, stream, stream::events(turn, feed, held)).await)
}

/// The answer to a turn in a busy session: one `rejected` response, `SESSION_BUSY`.
async fn busy(app: &AgentApiState, stream: bool, mut turn: Turn, message: &str) -> Response {
    let events = turn.refused("SESSION_BUSY", message);
    answer(app, stream, streams::iter(events).boxed()).await
}

/// The engine's command of a turn: a start (no `task_id`) or the continue of `task_id`, in
/// `session_id`, the options under `commandParams.agentApi`.
fn inbound(
    caller: &Caller,
    request: AgentApiRequest,
    task_id: Option<String>,
    session_id: &str,
) -> Inbound {
    let command = if task_id.is_some() {
        CommandKind::Continue
    } else {
        CommandKind::Start
    };
    let mut params = Map::new();
    if !request.options.is_empty() {
        params.insert("agentApi".into(), Value::Object(request.options));
    }
    Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            id: format!("agent-api-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command,
            params,
            data_items: request.items,
            task_id,
            session_id: Some(session_id.to_string()),
            group_id: None,
            mentions: None,
        },
        owner: caller.owner.clone(),
        policy: POLICY,
    }
}

/// `events` as SSE, or (`stream: false`) folded: the last event, the final `AgentResponse`
/// with its `output`, as JSON.
async fn answer(app: &AgentApiState, stream: bool, events: Events) -> Response {
    if stream {
        return sse::respond(events, app.http.sse_keep_alive);
    }
    let last = events.fold(None, |_, e| async move { Some(e) }).await;
    let body = last.unwrap_or_else(|| {
        json!({"object": "response", "status": "failed",
               "error": {"code": "INTERNAL", "message": "the turn ended without a response"}})
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
