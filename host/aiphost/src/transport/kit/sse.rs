//! One loop from an engine event feed to an SSE answer, for every door that streams.
//!
//! The loop reads the task's event log a batch at a time up to the durable watermark, and asks
//! for the next batch only once the client has taken the last: a slow client costs one batch
//! of memory, however far behind it is. Everything is freed as soon as the client goes away.
//! The door renders each event (or skips it) and says which one ends its stream; a feed that
//! fails (an expired position to resume from, a store error) ends the stream with the door's
//! error frame. Each frame is one `data:` line; an idle stream gets a `keep-alive` comment.

use crate::model::TaskEvent;
use crate::task::{EventFeed, FeedError};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

/// How a door renders a feed.
pub trait FeedRender: Send + 'static {
    /// What the stream carries (a frame, or something a binding wraps into one).
    type Item: Send + 'static;

    /// `event` as the door sends it (`None`: not sent), and whether the stream ends after it.
    fn event(&mut self, event: &TaskEvent, feed: &EventFeed) -> Option<(Self::Item, bool)>;

    /// The last item of a stream whose feed failed.
    fn failed(&mut self, error: &FeedError, feed: &EventFeed) -> Self::Item;
}

/// The items of `feed`, rendered by `render`, until the feed ends, the door says so, or the
/// feed fails.
pub fn items<R: FeedRender>(feed: EventFeed, render: R) -> BoxStream<'static, R::Item> {
    struct State<R> {
        feed: EventFeed,
        render: R,
        queue: VecDeque<TaskEvent>,
        done: bool,
    }
    let state = State {
        feed,
        render,
        queue: VecDeque::new(),
        done: false,
    };
    stream::unfold(state, |mut state| async move {
        loop {
            if state.done {
                return None;
            }
            if let Some(event) = state.queue.pop_front() {
                let Some((item, last)) = state.render.event(&event, &state.feed) else {
                    continue;
                };
                state.done = last;
                return Some((item, state));
            }
            match state.feed.next_batch().await {
                Ok(batch) if batch.is_empty() => return None,
                Ok(batch) => state.queue.extend(batch),
                Err(e) => {
                    state.done = true;
                    let item = state.render.failed(&e, &state.feed);
                    return Some((item, state));
                }
            }
        }
    })
    .boxed()
}

/// The SSE answer of `frames`: each one compact JSON `data:` line, a `keep-alive` comment every
/// `keep_alive` while nothing else is sent.
pub fn respond(
    frames: impl Stream<Item = Value> + Send + 'static,
    keep_alive: Duration,
) -> Response {
    let events =
        frames.map(|frame| Ok::<Event, Infallible>(Event::default().data(frame.to_string())));
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}
