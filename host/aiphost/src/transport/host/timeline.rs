//! `GET /admin/agents/{agent}/tasks/{task}/events?leader=L[&wire=W]`: a task's timeline over
//! SSE, for the operator or the partner's tenant. Every event of the task from the first kept
//! (or after the seq a reconnecting client names in `Last-Event-ID`), then live, each as
//! `event: task` with `id:` its seq and data `{"seq", "kind", "time", "event"[, "wire"]}`:
//! `kind` says what it is (`status`, `form`, `text`, `reasoning`, `product`, `tool_call`,
//! `tool_result`, `usage`), `event` is the engine's event, and with `wire=` `wire` holds the
//! frames that door's stream sends for it (the door's own rendering, [`EventWire`]; an array,
//! empty when the door sends nothing for it). The stream ends with `event: end` once the task
//! has ended (an `event: error` if its events cannot be read).
//!
//! The feed loop is the kit's (`kit/sse.rs`): a batch of the event log at a time, so a slow
//! client costs one batch of memory.

use super::admin::{AdminError, AdminPath, principal};
use super::endpoints::Endpoints;
use super::tasks::{Params, bad_request, engine_error, leader_param, params, visible_agent};
use crate::model::activity::{Activity, Channel, InputRequest, kind_of};
use crate::model::event::EventKind;
use crate::model::{TaskEvent, TaskState};
use crate::task::{EventFeed, FeedError};
use crate::transport::kit::door::RenderEvent;
use crate::transport::kit::sse::{self, FeedRender, Frame};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

/// The timeline's route.
pub(super) fn routes() -> axum::Router<Endpoints> {
    axum::Router::new().route(
        "/admin/agents/{agent}/tasks/{task}/events",
        axum::routing::get(events),
    )
}

/// The handler.
async fn events(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, task)): AdminPath<(String, String)>,
    query: Params,
) -> Result<Response, AdminError> {
    let who = principal(&state.tenancy, &headers)?;
    let params = params(query, &["leader", "wire"])?;
    let agent = visible_agent(&state, &who, &agent)?;
    let wires: Vec<_> = state.doors.iter().filter_map(|d| d.event_wire()).collect();
    let wire = match params.get("wire").filter(|w| !w.is_empty()) {
        None => None,
        Some(name) => Some(wires.iter().find(|w| w.wire() == name).ok_or_else(|| {
            let known: Vec<&str> = wires.iter().map(|w| w.wire()).collect();
            bad_request(format!(
                "unknown wire {name:?}; the wires are {}",
                known.join(", ")
            ))
        })?),
    };
    let after = sse::resume_after(&headers).map_err(|e| bad_request(e.to_string()))?;
    let leader = leader_param(&params);
    let (view, feed) = state
        .engine
        .follow_from(&agent, leader.as_deref(), &task, after.unwrap_or(0))
        .await
        .map_err(|e| engine_error(e, &task))?;
    let render = Timeline {
        wire: wire.map(|w| w.renderer(&agent, &view)),
    };
    // A feed whose task had ended before it begins sends nothing: the end is said at once.
    let over = feed.is_over().then(|| vec![end_frame()]);
    let frames = futures::StreamExt::flat_map(
        futures::StreamExt::chain(sse::items(feed, render), futures::stream::iter(over)),
        futures::stream::iter,
    );
    Ok(sse::respond(frames, state.http.sse_keep_alive))
}

fn end_frame() -> Frame {
    Frame {
        data: json!({}),
        id: None,
        event: Some("end"),
    }
}

/// The timeline's rendering of the feed.
struct Timeline {
    wire: Option<Box<dyn RenderEvent>>,
}

impl FeedRender for Timeline {
    type Item = Vec<Frame>;

    fn event(&mut self, event: &TaskEvent, _feed: &EventFeed) -> Option<(Vec<Frame>, bool)> {
        let mut data = json!({
            "seq": event.seq,
            "kind": kind(event),
            "time": event.at.to_utc_z(),
            "event": event,
        });
        if let Some(wire) = &mut self.wire {
            data["wire"] = Value::Array(wire.render_event(event));
        }
        let mut frames = vec![Frame {
            data,
            id: Some(event.seq),
            event: Some("task"),
        }];
        // The feed ends after the event that ends the task.
        if event.is_terminal() {
            frames.push(end_frame());
        }
        Some((frames, false))
    }

    fn failed(&mut self, error: &FeedError, feed: &EventFeed) -> Vec<Frame> {
        let message = match error {
            FeedError::Expired { .. } => error.to_string(),
            FeedError::Store(e) => {
                tracing::error!(error = %e, task = %feed.key().task, "a timeline could not read its events");
                "the host could not read the task's events; reconnect to resume".into()
            }
        };
        vec![Frame {
            data: json!({"error": {"code": "events-unavailable", "message": message}}),
            id: None,
            event: Some("error"),
        }]
    }
}

/// What an event is, door-neutral: a status (`form` when it asks for input), a product chunk
/// (`text` or `reasoning` when it is a delta of that channel), or an activity.
fn kind(event: &TaskEvent) -> &'static str {
    match &event.kind {
        EventKind::Created { .. } => "status",
        EventKind::Status { status } => {
            if status.state == TaskState::AwaitingInput
                && InputRequest::of(&status.data_items).is_some()
            {
                "form"
            } else {
                "status"
            }
        }
        EventKind::Chunk { chunk } => {
            let channels: Vec<Option<Channel>> = chunk
                .product
                .data_items
                .iter()
                .map(|item| kind_of(item).and_then(Channel::of_kind))
                .collect();
            match channels.first() {
                Some(Some(Channel::Answer)) if all_same(&channels) => "text",
                Some(Some(Channel::Reasoning)) if all_same(&channels) => "reasoning",
                _ => "product",
            }
        }
        EventKind::Activity { activity } => match activity {
            Activity::ToolCall(_) => "tool_call",
            Activity::ToolResult(_) => "tool_result",
            Activity::Usage(_) => "usage",
        },
    }
}

fn all_same(channels: &[Option<Channel>]) -> bool {
    channels.windows(2).all(|w| w[0] == w[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::activity::TextDelta;
    use crate::model::{DataItem, Product, ProductChunk, TaskStatus, Timestamp};

    fn event(kind: EventKind) -> TaskEvent {
        TaskEvent {
            seq: 1,
            at: Timestamp::now(),
            kind,
        }
    }

    #[test]
    fn events_are_named_by_what_they_are() {
        let delta = |channel| TextDelta {
            product_id: "p".into(),
            channel,
            text: "hi".into(),
            last: false,
        };
        let chunk = |chunk: ProductChunk| event(EventKind::Chunk { chunk });
        assert_eq!(kind(&chunk(delta(Channel::Answer).into_chunk())), "text");
        assert_eq!(
            kind(&chunk(delta(Channel::Reasoning).into_chunk())),
            "reasoning"
        );
        let plain = ProductChunk {
            product: Product {
                id: "p".into(),
                name: None,
                description: None,
                data_items: vec![DataItem::text("a file's worth")],
            },
            append: false,
            last_chunk: true,
        };
        assert_eq!(kind(&chunk(plain)), "product");
        let status = |state| {
            event(EventKind::Status {
                status: TaskStatus::now(state, Vec::new()),
            })
        };
        assert_eq!(kind(&status(TaskState::Working)), "status");
        // Awaiting input without a form is a status; with one, a form.
        assert_eq!(kind(&status(TaskState::AwaitingInput)), "status");
    }
}
