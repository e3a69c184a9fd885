//! A task's events as A2A `StreamResponse`s, through the kit's feed loop (`kit/sse.rs`: its event
//! log read a batch at a time, so a slow client costs one batch of memory), ending when the task
//! does — or, for a message's stream, when it needs input (A2A's interrupted states end a
//! message's stream). Everything a stream sends goes through its [`SentArtifacts`], so `append`
//! only ever extends an artifact that stream has sent.

use crate::model::event::EventKind;
use crate::model::{TaskEvent, TaskState};
use crate::protocol::a2a::{self, A2aError, A2aErrorKind, SentArtifacts, StreamContext};
use crate::task::{EventFeed, FeedError};
use crate::transport::kit::sse::{self, FeedRender};
use axum::response::Response;
use futures::StreamExt;
use futures::stream::{self as streams, BoxStream};
use serde_json::{Value, json};
use std::time::Duration;

/// A stream of `StreamResponse`s; an error ends it.
pub(super) type Events = BoxStream<'static, Result<Value, A2aError>>;

/// The SSE answer of `events`: one `data:` line per item as the binding wraps it (`wrap`),
/// keep-alive comments every `keep_alive` while the task is quiet.
pub(super) fn sse(
    events: Events,
    keep_alive: Duration,
    wrap: impl Fn(Result<Value, A2aError>) -> Value + Send + 'static,
) -> Response {
    sse::respond(events.map(wrap), keep_alive)
}

/// When a stream closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Close {
    /// After the event that ends the task (`SubscribeToTask`).
    WhenEnded,
    /// Also after a status that waits for the client (`SendStreamingMessage`).
    WhenInterrupted,
}

/// `first` (the task, when the feed does not begin with it), then the feed's events.
pub(super) fn events(first: Option<Value>, feed: EventFeed, close: Close) -> Events {
    let mut render = Responses {
        sent: SentArtifacts::default(),
        close,
        replying: false,
    };
    let first = first.map(|mut first| {
        render.sent.settle(&mut first);
        Ok(first)
    });
    streams::iter(first).chain(sse::items(feed, render)).boxed()
}

/// A2A's items of one stream.
struct Responses {
    sent: SentArtifacts,
    close: Close,
    /// The task is the record of a plain reply: its events are not sent; the reply is, as one
    /// `message`, when the task completes (in the same write as its creation, so at once).
    replying: bool,
}

impl FeedRender for Responses {
    type Item = Result<Value, A2aError>;

    fn event(&mut self, event: &TaskEvent, feed: &EventFeed) -> Option<(Self::Item, bool)> {
        let task_id = feed.key().task.clone();
        let ctx = StreamContext {
            task_id: &task_id,
            context_id: feed.session_id(),
            completes_on_result: feed.completes_on_result(),
        };
        if let EventKind::Created {
            plain_reply: true, ..
        } = &event.kind
        {
            self.replying = true;
        }
        if self.replying {
            return match &event.kind {
                EventKind::Status { status } if event.is_terminal() => {
                    let message = a2a::render_reply(&task_id, ctx.context_id, &status.data_items);
                    Some((Ok(json!({"message": message})), true))
                }
                _ => None,
            };
        }
        let mut rendered = a2a::render_event(event, &ctx)?;
        self.sent.settle(&mut rendered);
        let waits = matches!(
            &event.kind,
            EventKind::Status { status }
                if matches!(status.state, TaskState::AwaitingInput | TaskState::AwaitingCompletion)
        );
        let last = event.is_terminal() || (self.close == Close::WhenInterrupted && waits);
        Some((Ok(rendered), last))
    }

    fn failed(&mut self, e: &FeedError, feed: &EventFeed) -> Self::Item {
        Err(match e {
            FeedError::Expired { wanted, oldest } => A2aError::new(
                A2aErrorKind::TaskNotFound,
                json!({
                    "taskId": feed.key().task,
                    "reason": e.to_string(),
                    "wantedSeq": wanted,
                    "oldestAvailableSeq": oldest,
                }),
            ),
            FeedError::Store(err) => {
                tracing::error!(error = %err, "an A2A stream could not read its events");
                A2aError::new(
                    A2aErrorKind::Internal,
                    json!({"reason": "the host could not read the task's events; subscribe again"}),
                )
            }
        })
    }
}
