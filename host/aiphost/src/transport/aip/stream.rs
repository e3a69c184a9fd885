//! The streaming style (spec 6.2): `text/event-stream` answers whose every event is one compact
//! JSON-RPC response `{eventSeq, eventData}` on one `data:` line.
//!
//! The feed-to-SSE loop is the kit's (`kit/sse.rs`: a batch at a time, so a slow client costs
//! one batch of memory); this file renders AIP's frames: each event in the caller's dialect, and
//! a feed that fails (a position to resume from that has expired, a store error) as a final
//! JSON-RPC error. A stream ends after the event that ends its task. The same frames render the
//! admin timeline's `wire=aip` ([`Frames::timeline`]).

use super::state::AipState;
use crate::agent::Agent;
use crate::model::TaskEvent;
use crate::protocol::aip::dialect::{Dialect, render_task};
use crate::protocol::aip::event::{EventContext, render_event};
use crate::protocol::jsonrpc;
use crate::protocol::{ErrorCode, RpcError};
use crate::task::{EventFeed, FeedError, StreamStart};
use crate::transport::kit::door::RenderEvent;
use crate::transport::kit::sse::{self, FeedRender};
use axum::response::Response;
use futures::stream;
use serde_json::{Value, json};
use std::sync::Arc;

/// Answer a `stream` request: errors found before the stream starts come back as a JSON-RPC
/// error (like any other method); after that, everything is an SSE event.
pub(super) async fn stream(
    app: &AipState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    id: Value,
    params: Value,
) -> Result<Response, RpcError> {
    let inbound = super::command::parse_command_of(owner, params)?;
    let dialect = Dialect::of(inbound.form.as_ref());
    let start = app
        .engine
        .stream(agent, inbound, None)
        .await
        .map_err(crate::aip_error::engine)?;
    let aic = agent.aic().to_string();
    let keep_alive = app.http.sse_keep_alive;
    Ok(match start {
        StreamStart::Snapshot { reply, seq } => {
            let data = render_task(&reply.task, dialect, &aic, reply.history.as_ref());
            let response = jsonrpc::success(&id, json!({"eventSeq": seq, "eventData": data}));
            sse::respond(stream::once(async move { response }), keep_alive)
        }
        StreamStart::Events(feed) => {
            let frames = sse::items(
                feed,
                Frames {
                    id,
                    dialect,
                    aic,
                    ids: None,
                },
            );
            sse::respond(frames, keep_alive)
        }
    })
}

/// AIP's frames of one stream: JSON-RPC responses to request `id`, in `dialect`.
pub(super) struct Frames {
    id: Value,
    dialect: Dialect,
    aic: String,
    /// The task's ids, for a stream rendered without a feed (the admin timeline).
    ids: Option<(String, Option<String>, Option<String>)>,
}

impl Frames {
    /// The frames of a stream of `task` in its Leader's dialect, to no request (id `null`).
    pub(super) fn timeline(agent: &Agent, task: &crate::task::TaskView) -> Self {
        Frames {
            id: Value::Null,
            dialect: Dialect::of(task.form.as_ref()),
            aic: agent.aic().to_string(),
            ids: Some((
                task.task.id.clone(),
                task.task.session_id.clone(),
                task.task.group_id.clone(),
            )),
        }
    }

    fn frame(&self, event: &TaskEvent, ctx: &EventContext<'_>) -> Value {
        jsonrpc::success(&self.id, render_event(event, ctx, self.dialect))
    }
}

impl RenderEvent for Frames {
    fn render_event(&mut self, event: &TaskEvent) -> Vec<Value> {
        let Some((task_id, session_id, group_id)) = &self.ids else {
            return Vec::new();
        };
        let ctx = EventContext {
            task_id,
            session_id: session_id.as_deref(),
            group_id: group_id.as_deref(),
            partner_aic: &self.aic,
        };
        vec![self.frame(event, &ctx)]
    }
}

impl FeedRender for Frames {
    type Item = Value;

    fn event(&mut self, event: &TaskEvent, feed: &EventFeed) -> Option<(Value, bool)> {
        let task_id = feed.key().task.clone();
        let ctx = EventContext {
            task_id: &task_id,
            session_id: feed.session_id(),
            group_id: feed.group_id(),
            partner_aic: &self.aic,
        };
        // The feed itself ends after the event that ends the task.
        Some((self.frame(event, &ctx), false))
    }

    fn failed(&mut self, e: &FeedError, feed: &EventFeed) -> Value {
        let error = match e {
            FeedError::Expired { wanted, oldest } => RpcError::new(
                ErrorCode::TaskNotFound,
                json!({
                    "taskId": feed.key().task,
                    "details": e.to_string(),
                    "wantedSeq": wanted,
                    "oldestAvailableSeq": oldest,
                }),
            ),
            FeedError::Store(err) => {
                tracing::error!(error = %err, "a stream could not read its events");
                RpcError::internal("the host could not read the task's events; re-stream to resume")
            }
        };
        jsonrpc::failure(&self.id, &error)
    }
}
