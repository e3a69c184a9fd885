//! `POST /agents/{agent}/aiflowy/chat[?wire=aiflowy]`: one turn of a conversation. The prompt
//! (and its attachments) is the `start` of a new task, or the `continue` of the conversation's
//! task that awaits input (a question answered in words; a form is answered by its submit,
//! `form.rs`); a conversation whose task still runs is refused with one `CONVERSATION_BUSY`
//! error event. The turn goes through the engine's stream, as every door's does, and is
//! answered as SSE (`event: message|error|done`).

use super::config::AiflowyConfig;
use super::entry::{self, QueryParams};
use super::errors;
use super::state::AiflowyState;
use super::stream;
use crate::model::{DataItem, JsonObject, Timestamp};
use crate::protocol::aiflowy::{AiflowyError, Turn, parse_chat};
use crate::task::{EngineError, EventFeed, StreamStart};
use crate::transport::kit::caller::Caller;
use crate::transport::kit::sessions::{self, Next, SessionGuard};
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;

/// The handler.
#[allow(clippy::too_many_arguments)]
pub(super) async fn handle(
    State(app): State<AiflowyState>,
    Extension(guard): Extension<SessionGuard>,
    Extension(config): Extension<Arc<AiflowyConfig>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    params: QueryParams,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let door = Door {
        app: &app,
        guard: &guard,
        config: &config,
    };
    match door.chat(&agent, params, &headers, &peer, body).await {
        Ok(response) => response,
        Err(e) => errors::response(&e),
    }
}

/// What a chat request works with.
struct Door<'a> {
    app: &'a AiflowyState,
    guard: &'a SessionGuard,
    config: &'a AiflowyConfig,
}

impl Door<'_> {
    async fn chat(
        &self,
        agent: &str,
        params: QueryParams,
        headers: &HeaderMap,
        peer: &Peer,
        body: Body,
    ) -> Result<Response, AiflowyError> {
        let (_, wire) = entry::query(params)?;
        let (body, caller) = entry::enter(self.app, agent, headers, peer, body).await?;
        let request = parse_chat(&body).map_err(AiflowyError::invalid)?;
        let started = Timestamp::now_ms();
        let keep_alive = self.app.http.sse_keep_alive;
        // No conversation: a new one, under an id made up here and sent on every event; it has
        // no task to look up.
        let (conversation, fresh) = match request.conversation_id {
            Some(c) => (c, false),
            None => (uuid::Uuid::new_v4().to_string(), true),
        };
        // Held until the turn's task exists (its first event), so that the next request finds it.
        let Some(held) = self.guard.hold(&caller, &conversation) else {
            let mut turn = Turn::new(wire, &conversation, None, started);
            let message = format!("conversation {conversation} is starting a turn; wait for it");
            let events = turn.refused("CONVERSATION_BUSY", &message, true);
            return Ok(stream::respond_with(events, keep_alive));
        };
        let next = if fresh {
            Next::Start
        } else {
            sessions::turn(&self.app.engine, &caller, &conversation)
                .await
                .map_err(errors::engine)?
        };
        let task_id = match next {
            Next::Start => None,
            Next::Continue(task) => Some(task.id),
            Next::Busy(task) => {
                let mut turn = Turn::new(wire, &conversation, Some(&task.id), started);
                let message = format!(
                    "conversation {conversation} has task {} working; wait for it",
                    task.id
                );
                let events = turn.refused("CONVERSATION_BUSY", &message, true);
                return Ok(stream::respond_with(events, keep_alive));
            }
        };
        let continues = task_id.is_some();
        let (feed, continued) = match self
            .turn(&caller, request.items.clone(), task_id, &conversation)
            .await
        {
            Ok(feed) => (feed, continues),
            // The question timed out in between: the prompt starts the next task.
            Err(EngineError::TaskEnded { .. }) if continues => {
                let feed = self
                    .turn(&caller, request.items, None, &conversation)
                    .await
                    .map_err(errors::engine_on_chat)?;
                (feed, false)
            }
            Err(e) => return Err(errors::engine_on_chat(e)),
        };
        let mut turn = stream::renderer(wire, &conversation, &feed, started, &self.config.ui);
        let opening = if continued {
            turn.resumed()
        } else {
            Vec::new()
        };
        Ok(stream::respond(opening, turn, feed, Some(held), keep_alive))
    }

    /// The turn through the engine's stream: a start (with the door's form timeout) or the
    /// continue of `task_id`.
    async fn turn(
        &self,
        caller: &Caller,
        items: Vec<DataItem>,
        task_id: Option<String>,
        conversation: &str,
    ) -> Result<EventFeed, EngineError> {
        let mut params = JsonObject::new();
        if task_id.is_none()
            && let Some(timeout) = self.config.form_timeout
        {
            params.insert(
                "awaitingInputTimeout".into(),
                json!(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
            );
        }
        let inbound = sessions::inbound(caller, "aiflowy", items, task_id, conversation, params);
        match self.app.engine.stream(&caller.agent, inbound, None).await? {
            StreamStart::Events(feed) => Ok(feed),
            StreamStart::Snapshot { .. } => Err(EngineError::Internal(
                "a turn was answered without its task's events",
            )),
        }
    }
}
