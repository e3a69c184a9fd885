//! The streaming style (spec 6.2): `text/event-stream` answers whose every event is one compact
//! JSON-RPC response `{eventSeq, eventData}` on one `data:` line.
//!
//! A stream reads its task's event log up to the durable watermark, so it never holds more than a
//! batch in memory however slowly its client reads; it ends after the event that ends the task,
//! and frees everything as soon as the client goes away.

use crate::agent::Agent;
use crate::protocol::aip::dialect::{Dialect, render_task};
use crate::protocol::aip::event::{EventContext, render_event};
use crate::protocol::jsonrpc;
use crate::protocol::{ErrorCode, RpcError};
use crate::task::{EventFeed, FeedError, StreamStart};
use crate::transport::AppState;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

/// Answer a `stream` request: errors found before the stream starts come back as a JSON-RPC
/// error (like any other method); after that, everything is an SSE event.
pub async fn stream(
    app: &AppState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    id: Value,
    params: &Value,
) -> Result<Response, RpcError> {
    let inbound = super::command::parse_command_of(owner, params)?;
    let dialect = Dialect::of(inbound.form.as_ref());
    let start = app
        .engine
        .stream(agent, inbound, None)
        .await
        .map_err(crate::aip_error::engine)?;
    let aic = agent.aic().to_string();
    let events: BoxStream<'static, Result<Event, Infallible>> = match start {
        StreamStart::Snapshot { reply, seq } => {
            let data = render_task(&reply.task, dialect, &aic, reply.history.as_ref());
            let response = jsonrpc::success(&id, json!({"eventSeq": seq, "eventData": data}));
            stream::once(async move { Ok(sse(&response)) }).boxed()
        }
        StreamStart::Events(feed) => events(feed, id, dialect, aic),
    };
    let keep_alive = KeepAlive::new()
        .interval(app.config.sse_keep_alive)
        .text("keep-alive");
    Ok(Sse::new(events).keep_alive(keep_alive).into_response())
}

fn sse(response: &Value) -> Event {
    Event::default().data(response.to_string())
}

/// The SSE events of a feed, rendered in `dialect`; a feed error becomes a final error event.
fn events(
    feed: EventFeed,
    id: Value,
    dialect: Dialect,
    aic: String,
) -> BoxStream<'static, Result<Event, Infallible>> {
    struct State {
        feed: EventFeed,
        queue: VecDeque<crate::model::TaskEvent>,
        id: Value,
        aic: String,
    }
    let state = State {
        feed,
        queue: VecDeque::new(),
        id,
        aic,
    };
    stream::unfold(Some(state), move |state| async move {
        let mut state = state?;
        loop {
            if let Some(event) = state.queue.pop_front() {
                let task_id = state.feed.key().task.clone();
                let ctx = EventContext {
                    task_id: &task_id,
                    session_id: state.feed.session_id(),
                    group_id: state.feed.group_id(),
                    partner_aic: &state.aic,
                };
                let response = jsonrpc::success(&state.id, render_event(&event, &ctx, dialect));
                return Some((Ok(sse(&response)), Some(state)));
            }
            match state.feed.next_batch().await {
                Ok(batch) if batch.is_empty() => return None,
                Ok(batch) => state.queue.extend(batch),
                Err(e) => {
                    let error = match &e {
                        FeedError::Expired { wanted, oldest } => RpcError::new(
                            ErrorCode::TaskNotFound,
                            json!({
                                "taskId": state.feed.key().task,
                                "details": e.to_string(),
                                "wantedSeq": wanted,
                                "oldestAvailableSeq": oldest,
                            }),
                        ),
                        FeedError::Store(err) => {
                            tracing::error!(error = %err, "a stream could not read its events");
                            RpcError::internal(
                                "the host could not read the task's events; re-stream to resume",
                            )
                        }
                    };
                    return Some((Ok(sse(&jsonrpc::failure(&state.id, &error))), None));
                }
            }
        }
    })
    .boxed()
}
