//! A task's events as A2A `StreamResponse`s, read from its event log like an AIP stream (so a
//! slow client costs one batch of memory), ending when the task does — or, for a message's
//! stream, when it needs input (A2A's interrupted states end a message's stream). Everything a
//! stream sends goes through its [`SentArtifacts`], so `append` only ever extends an artifact
//! that stream has sent.

use crate::model::{EventKind, TaskState};
use crate::protocol::a2a::{self, A2aError, A2aErrorKind, SentArtifacts, StreamContext};
use crate::task::{EventFeed, FeedError};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
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
    let events = events
        .map(move |item| Ok::<Event, Infallible>(Event::default().data(wrap(item).to_string())));
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
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
    struct State {
        first: Option<Value>,
        feed: EventFeed,
        queue: VecDeque<crate::model::TaskEvent>,
        sent: SentArtifacts,
        done: bool,
    }
    let state = State {
        first,
        feed,
        queue: VecDeque::new(),
        sent: SentArtifacts::default(),
        done: false,
    };
    stream::unfold(state, move |mut state| async move {
        if let Some(mut first) = state.first.take() {
            state.sent.settle(&mut first);
            return Some((Ok(first), state));
        }
        loop {
            if state.done {
                return None;
            }
            if let Some(event) = state.queue.pop_front() {
                let task_id = state.feed.key().task.clone();
                let ctx = StreamContext {
                    task_id: &task_id,
                    context_id: state.feed.session_id(),
                    completes_on_result: state.feed.completes_on_result(),
                };
                let Some(mut rendered) = a2a::render_event(&event, &ctx) else {
                    continue;
                };
                state.sent.settle(&mut rendered);
                let waits = matches!(
                    &event.kind,
                    EventKind::Status { status }
                        if matches!(status.state, TaskState::AwaitingInput | TaskState::AwaitingCompletion)
                );
                state.done = event.is_terminal() || (close == Close::WhenInterrupted && waits);
                return Some((Ok(rendered), state));
            }
            match state.feed.next_batch().await {
                Ok(batch) if batch.is_empty() => return None,
                Ok(batch) => state.queue.extend(batch),
                Err(e) => {
                    state.done = true;
                    let error = match &e {
                        FeedError::Expired { wanted, oldest } => A2aError::new(
                            A2aErrorKind::TaskNotFound,
                            json!({
                                "taskId": state.feed.key().task,
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
                    };
                    return Some((Err(error), state));
                }
            }
        }
    })
    .boxed()
}
