//! A chat door's turn as a stream: the task's event feed rendered by the door protocol's pure
//! turn renderer ([`ChatTurn`]) through the kit's feed loop ([`super::sse`]: the event log read
//! a batch at a time, so a slow client costs one batch of memory), after the turn's opening,
//! ending with the event after which the renderer says the turn ended.
//!
//! The session a request holds ([`HeldSession`]) is released at the feed's first event: a
//! start's task is only recorded when its partner has decided, so until then another request
//! of the session would not find it. A feed that fails ends the turn refused with
//! `EVENTS_UNAVAILABLE` and why (an expired position; a store error's details stay in the log).
//!
//! [`Timeline`] is the same renderer for the admin timeline's `wire=`: each event's frames as
//! JSON, the turn fed every event of the task.

use super::door::RenderEvent;
use super::sessions::HeldSession;
use super::sse::{self, FeedRender};
use crate::model::TaskEvent;
use crate::task::{EventFeed, FeedError};
use futures::StreamExt;
use futures::stream::{self as streams, BoxStream};
use serde_json::Value;

/// A chat protocol's renderer of one turn, as the feed loop drives it.
pub trait ChatTurn: Send + 'static {
    /// What the turn's stream carries (one protocol event).
    type Event: Send + 'static;

    /// How the log names the door's streams ("an AIFlowy stream").
    const STREAM: &'static str;

    /// The events of one task event, and whether the turn ended with them.
    fn render(&mut self, event: &TaskEvent) -> (Vec<Self::Event>, bool);

    /// The turn's end, refused with `code` and `message` (the last events of its stream).
    fn refuse(&mut self, code: &str, message: &str) -> Vec<Self::Event>;
}

/// `opening`, then `feed`'s events as `turn` renders them, until the turn ends; the session
/// stays `held` until the feed's first event.
pub fn events<T: ChatTurn>(
    opening: Vec<T::Event>,
    turn: T,
    feed: EventFeed,
    held: Option<HeldSession>,
) -> BoxStream<'static, T::Event> {
    let rest = sse::items(feed, Render { turn, held })
        .flat_map(streams::iter)
        .boxed();
    streams::iter(opening).chain(rest).boxed()
}

/// A chat door's turn rendering the admin timeline: its events, each as the JSON `frame` makes
/// of it.
pub struct Timeline<T: ChatTurn> {
    turn: T,
    frame: fn(T::Event) -> Value,
}

impl<T: ChatTurn> Timeline<T> {
    /// `turn`'s timeline, each event shown as `frame` makes it.
    pub fn new(turn: T, frame: fn(T::Event) -> Value) -> Self {
        Timeline { turn, frame }
    }
}

impl<T: ChatTurn> RenderEvent for Timeline<T> {
    fn render_event(&mut self, event: &TaskEvent) -> Vec<Value> {
        let (events, _) = self.turn.render(event);
        events.into_iter().map(self.frame).collect()
    }
}

/// The kit's feed loop's view of a [`ChatTurn`]: the events of one task event go out together.
struct Render<T> {
    turn: T,
    /// The session, until the first event (dropped with the stream if none comes).
    held: Option<HeldSession>,
}

impl<T: ChatTurn> FeedRender for Render<T> {
    type Item = Vec<T::Event>;

    fn event(&mut self, event: &TaskEvent, _feed: &EventFeed) -> Option<(Self::Item, bool)> {
        self.held = None;
        let (out, ended) = self.turn.render(event);
        if out.is_empty() && !ended {
            return None;
        }
        Some((out, ended))
    }

    fn failed(&mut self, error: &FeedError, feed: &EventFeed) -> Self::Item {
        // The turn cannot go on: it ends refused, with why (an expired position, or a store
        // error whose details stay in the log).
        let message = match error {
            FeedError::Expired { .. } => error.to_string(),
            FeedError::Store(err) => {
                tracing::error!(error = %err, task = %feed.key().task, "{} could not read its events", T::STREAM);
                "the host could not read the task's events".to_string()
            }
        };
        self.turn.refuse("EVENTS_UNAVAILABLE", &message)
    }
}
