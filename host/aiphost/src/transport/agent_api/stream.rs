//! A turn's events: the task's event feed rendered by the protocol's [`Turn`] through the kit's
//! turn stream (`kit/turn_stream.rs`), after the response's opening `created` and
//! `in_progress`, ending with the event after which `Turn` says the response ended.

use crate::model::TaskEvent;
use crate::protocol::agent_api::Turn;
use crate::task::EventFeed;
use crate::transport::kit::sessions::HeldSession;
use crate::transport::kit::turn_stream::{self, ChatTurn};
use futures::stream::BoxStream;
use serde_json::Value;

/// A stream of Agent API events (each one `data:` line of SSE).
pub(super) type Events = BoxStream<'static, Value>;

/// The response's events: `turn`'s opening, then `feed`'s events as `turn` renders them. The
/// session stays `held` until the feed's first event.
pub(super) fn events(mut turn: Turn, feed: EventFeed, held: Option<HeldSession>) -> Events {
    let opening = turn.begin();
    turn_stream::events(opening, turn, feed, held)
}

/// A response that cannot go on ends as refused (`rejected`), with why.
impl ChatTurn for Turn {
    type Event = Value;

    const STREAM: &'static str = "an Agent API stream";

    fn render(&mut self, event: &TaskEvent) -> (Vec<Value>, bool) {
        self.event(event)
    }

    fn refuse(&mut self, code: &str, message: &str) -> Vec<Value> {
        self.refused(code, message)
    }
}
