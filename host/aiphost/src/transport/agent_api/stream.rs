//! A turn's events: the task's event feed rendered by the protocol's [`Turn`] through the kit's
//! feed loop (`kit/sse.rs`: the event log read a batch at a time, so a slow client costs one
//! batch of memory), after the response's opening `created` and `in_progress`, ending with the
//! event after which `Turn` says the response ended.

use crate::model::TaskEvent;
use crate::protocol::agent_api::Turn;
use crate::task::{EventFeed, FeedError};
use crate::transport::kit::sessions::HeldSession;
use crate::transport::kit::sse::{self, FeedRender};
use futures::StreamExt;
use futures::stream::{self as streams, BoxStream};
use serde_json::Value;

/// A stream of Agent API events (each one `data:` line of SSE).
pub(super) type Events = BoxStream<'static, Value>;

/// The response's events: `turn`'s opening, then `feed`'s events as `turn` renders them. The
/// session stays `held` until the feed's first event: a start's task is only recorded when its
/// partner has decided, so until then another request of the session would not find it.
pub(super) fn events(mut turn: Turn, feed: EventFeed, held: Option<HeldSession>) -> Events {
    let opening = turn.begin();
    let rest = sse::items(feed, Render { turn, held })
        .flat_map(streams::iter)
        .boxed();
    streams::iter(opening).chain(rest).boxed()
}

/// The kit's feed loop's view of a [`Turn`]: the events of one task event go out together.
struct Render {
    turn: Turn,
    /// The session, until the first event (dropped with the stream if none comes).
    held: Option<HeldSession>,
}

impl FeedRender for Render {
    type Item = Vec<Value>;

    fn event(&mut self, event: &TaskEvent, _feed: &EventFeed) -> Option<(Self::Item, bool)> {
        self.held = None;
        let (out, ended) = self.turn.event(event);
        if out.is_empty() && !ended {
            return None;
        }
        Some((out, ended))
    }

    fn failed(&mut self, error: &FeedError, feed: &EventFeed) -> Self::Item {
        // The response cannot go on: it ends as refused, with why (an expired position, or a
        // store error whose details stay in the log).
        let message = match error {
            FeedError::Expired { .. } => error.to_string(),
            FeedError::Store(err) => {
                tracing::error!(error = %err, task = %feed.key().task, "an Agent API stream could not read its events");
                "the host could not read the task's events".to_string()
            }
        };
        self.turn.refused("EVENTS_UNAVAILABLE", &message)
    }
}
