//! A stream's frames: the task's event feed rendered by the protocol's [`Turn`] through the kit's
//! turn stream (`kit/turn_stream.rs`), each envelope one `data:` line under its `event:` name,
//! after the stream's opening, ending with the event after which `Turn` says the stream ended.

use crate::model::TaskEvent;
use crate::protocol::aiflowy::{Event, Turn, Ui, Wire};
use crate::task::EventFeed;
use crate::transport::kit::sessions::HeldSession;
use crate::transport::kit::sse::{self, Frame};
use crate::transport::kit::turn_stream::{self, ChatTurn};
use futures::StreamExt;
use futures::stream as streams;
use std::time::Duration;

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
/// stays `held` until the feed's first event.
pub(super) fn respond(
    opening: Vec<Event>,
    turn: Turn,
    feed: EventFeed,
    held: Option<HeldSession>,
    keep_alive: Duration,
) -> axum::response::Response {
    let frames = turn_stream::events(opening, turn, feed, held).map(frame);
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

/// A stream that cannot go on ends with an error saying why (retryable: the events may be
/// read again).
impl ChatTurn for Turn {
    type Event = Event;

    const STREAM: &'static str = "an AIFlowy stream";

    fn render(&mut self, event: &TaskEvent) -> (Vec<Event>, bool) {
        self.event(event)
    }

    fn refuse(&mut self, code: &str, message: &str) -> Vec<Event> {
        self.refused(code, message, true)
    }
}
