//! A task's events as A2A `StreamResponse`s, through the kit's feed loop (`kit/sse.rs`: its event
//! log read a batch at a time, so a slow client costs one batch of memory), ending when the task
//! does — or, for a message's stream, when it needs input (A2A's interrupted states end a
//! message's stream). Everything a stream sends goes through its [`SentArtifacts`], so `append`
//! only ever extends an artifact that stream has sent. The admin timeline's `wire=a2a` is the
//! same rendering ([`Timeline`]).

use crate::model::event::EventKind;
use crate::model::{TaskEvent, TaskState};
use crate::protocol::a2a::{self, A2aError, A2aErrorKind, SentArtifacts, StreamContext};
use crate::task::{EventFeed, FeedError};
use crate::transport::kit::door::RenderEvent;
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
        self.respond(event, &ctx)
    }

    fn failed(&mut self, e: &FeedError, feed: &EventFeed) -> Self::Item {
        failed(e, feed)
    }
}

impl Responses {
    /// The item of `event` in the stream of `ctx`'s task, and whether the stream ends with it.
    fn respond(
        &mut self,
        event: &TaskEvent,
        ctx: &StreamContext<'_>,
    ) -> Option<(Result<Value, A2aError>, bool)> {
        let task_id = ctx.task_id;
        if let EventKind::Created {
            plain_reply: true, ..
        } = &event.kind
        {
            self.replying = true;
        }
        if self.replying {
            return match &event.kind {
                EventKind::Status { status } if event.is_terminal() => {
                    let message = a2a::render_reply(task_id, ctx.context_id, &status.data_items);
                    Some((Ok(json!({"message": message})), true))
                }
                _ => None,
            };
        }
        let mut rendered = a2a::render_event(event, ctx)?;
        self.sent.settle(&mut rendered);
        let waits = matches!(
            &event.kind,
            EventKind::Status { status }
                if matches!(status.state, TaskState::AwaitingInput | TaskState::AwaitingCompletion)
        );
        let last = event.is_terminal() || (self.close == Close::WhenInterrupted && waits);
        Some((Ok(rendered), last))
    }
}

/// The admin timeline's `wire=a2a`: the `StreamResponse`s a `SubscribeToTask` stream that
/// followed the task from its start sends.
pub(super) struct Timeline {
    responses: Responses,
    task_id: String,
    context_id: Option<String>,
    completes_on_result: bool,
}

impl Timeline {
    /// The timeline of `task`.
    pub(super) fn of(task: &crate::model::Task) -> Self {
        Timeline {
            responses: Responses {
                sent: SentArtifacts::default(),
                close: Close::WhenEnded,
                replying: false,
            },
            task_id: task.id.clone(),
            context_id: task.session_id.clone(),
            completes_on_result: task.completes_on_result,
        }
    }
}

impl RenderEvent for Timeline {
    fn render_event(&mut self, event: &TaskEvent) -> Vec<Value> {
        let ctx = StreamContext {
            task_id: &self.task_id,
            context_id: self.context_id.as_deref(),
            completes_on_result: self.completes_on_result,
        };
        match self.responses.respond(event, &ctx) {
            Some((Ok(response), _)) => vec![response],
            _ => Vec::new(),
        }
    }
}

/// The last item of a stream whose feed failed.
fn failed(e: &FeedError, feed: &EventFeed) -> Result<Value, A2aError> {
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
