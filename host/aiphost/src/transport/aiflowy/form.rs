//! `POST /agents/{agent}/aiflowy/form[?wire=aiflowy]` `{conversation_id, form_id, values}`: the
//! submit of a form a conversation's task asked (seed §12, whose route the seed leaves open).
//!
//! The door checks the form itself before the engine checks the values: the engine's form
//! check lets an answer tagged for another form through to its partner unvalidated, so a
//! submit naming a form the task does not wait on must stop here — `FORM_CLOSED` when the task
//! asked it before (answered or canceled since), else `FORM_UNKNOWN` (also in another
//! Leader's conversation, which is not the caller's). Values that do not satisfy the schema
//! are `FORM_INVALID` with their paths, nothing stored. A submit that goes through answers
//! with a new SSE stream: `system/status resumed`, then the task until its next rest.

use super::config::AiflowyConfig;
use super::entry::{self, QueryParams};
use super::errors;
use super::state::AiflowyState;
use super::stream;
use crate::model::activity::{self, InputRequest};
use crate::model::{DataItem, JsonObject, Task, TaskState, Timestamp};
use crate::protocol::aiflowy::{AiflowyError, parse_form};
use crate::task::StreamStart;
use crate::transport::kit::sessions::{self, SessionGuard};
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
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
    match submit(&app, &guard, &config, &agent, params, &headers, &peer, body).await {
        Ok(response) => response,
        Err(e) => errors::response(&e),
    }
}

#[allow(clippy::too_many_arguments)]
async fn submit(
    app: &AiflowyState,
    guard: &SessionGuard,
    config: &AiflowyConfig,
    agent: &str,
    params: QueryParams,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<Response, AiflowyError> {
    let (_, wire) = entry::query(params)?;
    let (body, caller) = entry::enter(app, agent, headers, peer, body).await?;
    let submit = parse_form(&body).map_err(AiflowyError::invalid)?;
    let (conversation, form_id) = (&submit.conversation_id, &submit.form_id);
    let started = Timestamp::now_ms();
    // Under the guard: a chat turn of the conversation starting now would race the submit.
    let held = guard
        .hold(&caller, conversation)
        .ok_or_else(|| AiflowyError::conversation_busy(conversation))?;
    let newest = sessions::newest(&app.engine, &caller, conversation)
        .await
        .map_err(errors::engine)?;
    let task = match newest {
        Some(task) if awaits(&task, form_id) => task,
        // Refused before any command: the look-up counts against the partner's rate here.
        Some(task) if asked(&task, form_id) => {
            entry::admit_read(&caller)?;
            return Err(AiflowyError::form_closed(conversation, form_id));
        }
        _ => {
            entry::admit_read(&caller)?;
            return Err(AiflowyError::form_unknown(conversation, form_id));
        }
    };
    let answer = DataItem::Data {
        data: submit.values.clone(),
        metadata: Some(activity::answer_metadata(form_id)),
    };
    let inbound = sessions::inbound(
        &caller,
        "aiflowy",
        vec![answer],
        Some(task.id),
        conversation,
        JsonObject::new(),
    );
    let start = app
        .engine
        .stream(&caller.agent, inbound, None)
        .await
        .map_err(|e| errors::engine_on_submit(e, conversation, form_id))?;
    let StreamStart::Events(feed) = start else {
        return Err(AiflowyError::new(
            500,
            "INTERNAL",
            serde_json::json!({"reason": "a submit was answered without its task's events"}),
        ));
    };
    let mut turn = stream::renderer(wire, conversation, &feed, started, &config.ui);
    let opening = turn.resumed();
    Ok(stream::respond(
        opening,
        turn,
        feed,
        Some(held),
        app.http.sse_keep_alive,
    ))
}

/// Whether `task` waits on the form `form_id` now.
fn awaits(task: &Task, form_id: &str) -> bool {
    task.status.state == TaskState::AwaitingInput
        && InputRequest::of(&task.status.data_items).is_some_and(|f| f.request_id == form_id)
}

/// Whether `task` asked the form `form_id` at some time.
fn asked(task: &Task, form_id: &str) -> bool {
    task.status_history
        .iter()
        .chain(std::iter::once(&task.status))
        .any(|s| InputRequest::of(&s.data_items).is_some_and(|f| f.request_id == form_id))
}
