//! A stream's frames: the task's event feed rendered by the protocol's [`Turn`] through the kit's
//! feed loop (`kit/sse.rs`: the event log read a batch at a time, so a slow client costs one
//! batch of memory), each envelope one `data:` line under its `event:` name, after the stream's
//! opening, ending with the event after which `Turn` says the stream ended.

use crate::model::TaskEvent;
use crate::protocol::aiflowy::{Event, Turn, Ui, Wire};
use crate::task::{EventFeed, FeedError};
use crate::transport::kit::sessions::HeldSession;
use crate::transport::kit::sse::{self, FeedRender, Frame};
use futures::StreamExt;
use futures::stream::{self as streams, BoxStream};
use std::time::Duration;

/// A stream of AIFlowy frames.
type Frames = BoxStream<'static, Frame>;

/// The renderer of `feed`'s stream in `conversation`, begun at `started` (Unix ms).
pub(super) fn renderer(
    wire: Wire,
    conversation: &str,
    feed: &EventFeed,
    started: i64,
    ui: &Ui,
) -> Turn {
    Turn::new(wire, conversation, Some(&feed.key().task), started)
        .completing_on_result(feed.completes_on_result())
        .with_ui(ui.clone())
}

/// The SSE answer: `opening`, then `feed`'s events as `turn` renders them. The conversation
/// stays `held` until the feed's first event: a start's task is only recorded when its partner
/// has decided, so until then another request of the conversation would not find it.
pub(super) fn respond(
    opening: Vec<Event>,
    turn: Turn,
    feed: EventFeed,
    held: Option<HeldSession>,
    keep_alive: Duration,
) -> axum::response::Response {
    let rest = sse::items(feed, Render { turn, held })
        .flat_map(|events| streams::iter(events.into_iter().map(frame)))
        .boxed();
    let frames: Frames = streams::iter(opening.into_iter().map(frame))
        .chain(rest)
        .boxed();
    sse::respond(frames, keep_alive)
}

/// The SSE answer of `events` alone (a refusal in one event).
pub(super) fn respond_with(events: Vec<Event>, keep_alive: Duration) -> axum::response::Response {
    sse::respond(streams::iter(events.into_iter().map(frame)), keep_alive)
}

/// An event as the kit sends it: its envelope under its name.
fn frame(event: Event) -> Frame {
    Frame {
        data: event.data,
        id: None,
        event: Some(event.name.as_str()),
    }
}

/// The kit's feed loop's view of a [`Turn`]: the events of one task event go out together.
struct Render {
    turn: Turn,
    /// The conversation, until the first event (dropped with the stream if none comes).
    held: Option<HeldSession>,
}

impl FeedRender for Render {
    type Item = Vec<Event>;

    fn event(&mut self, event: &TaskEvent, _feed: &EventFeed) -> Option<(Self::Item, bool)> {
        self.held = None;
        let (out, ended) = self.turn.event(event);
        if out.is_empty() && !ended {
            return None;
        }
        Some((out, ended))
    }

    fn failed(&mut self, error: &FeedError, feed: &EventFeed) -> Self::Item {
        // The stream cannot go on: it ends with an error saying why (an expired position, or a
        // store error whose details stay in the log).
        let message = match error {
            FeedError::Expired { .. } => error.to_string(),
            FeedError::Store(err) => {
                tracing::error!(error = %err, task = %feed.key().task, "an AIFlowy stream could not read its events");
                "the host could not read the task's events".to_string()
            }
        };
        self.turn.refused("EVENTS_UNAVAILABLE", &message, true)
    }
}
