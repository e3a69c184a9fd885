//! One loop from an engine event feed to an SSE answer, for every door that streams.
//!
//! The loop reads the task's event log a batch at a time up to the durable watermark, and asks
//! for the next batch only once the client has taken the last: a slow client costs one batch
//! of memory, however far behind it is. Everything is freed as soon as the client goes away.
//! The door renders each event (or skips it) and says which one ends its stream; a feed that
//! fails (an expired position to resume from, a store error) ends the stream with the door's
//! error frame. Each frame is one `data:` line, with an `id:` when the door makes it resumable
//! ([`Frame`]: the event's seq, which a reconnecting client names in `Last-Event-ID`, read by
//! [`resume_after`]) and an `event:` when its protocol names events; an idle stream gets a
//! `keep-alive` comment.

use crate::model::TaskEvent;
use crate::task::{EventFeed, FeedError};
use axum::http::HeaderMap;
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

/// One SSE frame: compact JSON on one `data:` line; when a door makes its stream resumable, the
/// `id:` a reconnecting client names in `Last-Event-ID` (the seq of the event it carries); when
/// its protocol names events (AIFlowy's `message`/`error`/`done`), the `event:` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The frame's JSON.
    pub data: Value,
    /// Its event's seq, sent as the SSE `id` (`None`: no id).
    pub id: Option<u64>,
    /// The SSE event name (`None`: no `event:` line, the default `message` of SSE).
    pub event: Option<&'static str>,
}

impl From<Value> for Frame {
    fn from(data: Value) -> Self {
        Frame {
            data,
            id: None,
            event: None,
        }
    }
}

/// The SSE answer of `frames`: each one compact JSON `data:` line (and its `id:` and `event:` if
/// it has them), a `keep-alive` comment every `keep_alive` while nothing else is sent.
pub fn respond<F: Into<Frame>>(
    frames: impl Stream<Item = F> + Send + 'static,
    keep_alive: Duration,
) -> Response {
    let events = frames.map(|frame| {
        let frame = frame.into();
        // The name first, as SSE streams are usually written (a reader takes any order).
        let mut event = Event::default();
        if let Some(name) = frame.event {
            event = event.event(name);
        }
        event = event.data(frame.data.to_string());
        if let Some(id) = frame.id {
            event = event.id(id.to_string());
        }
        Ok::<Event, Infallible>(event)
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}

/// A `Last-Event-ID` that names no event of this host's streams.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "Last-Event-ID must be the id of an event this stream sent (a whole number), not {given:?}"
)]
pub struct LastEventIdError {
    /// What the header said (lossily decoded).
    pub given: String,
}

/// Where a reconnecting client asks its stream to resume: after the event whose id its
/// `Last-Event-ID` names (`None` without the header, so from the start).
pub fn resume_after(headers: &HeaderMap) -> Result<Option<u64>, LastEventIdError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let given = String::from_utf8_lossy(value.as_bytes()).into_owned();
    given
        .trim()
        .parse::<u64>()
        .map(Some)
        .map_err(|_| LastEventIdError { given })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use http_body_util::BodyExt;
    use serde_json::json;

    async fn body_of(response: Response) -> String {
        let bytes = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn ids_and_event_names_only_where_a_door_gives_them() {
        let frames = stream::iter([
            Frame::from(json!({"n": 1})),
            Frame {
                data: json!({"n": 2}),
                id: Some(7),
                event: None,
            },
            Frame {
                data: json!({"n": 3}),
                id: None,
                event: Some("done"),
            },
        ]);
        let text = body_of(respond(frames, Duration::from_secs(60))).await;
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3, "{text:?}");
        // A frame of AIP or A2A (no id, no name) is exactly one data line, as it always was.
        assert_eq!(events[0], "data: {\"n\":1}");
        let mut second: Vec<&str> = events[1].lines().collect();
        second.sort();
        assert_eq!(second, ["data: {\"n\":2}", "id: 7"]);
        assert_eq!(events[2], "event: done\ndata: {\"n\":3}");
    }

    #[test]
    fn last_event_id_is_read_as_a_seq_or_refused_with_what_it_said() {
        let mut headers = HeaderMap::new();
        assert_eq!(resume_after(&headers), Ok(None));
        headers.insert("last-event-id", HeaderValue::from_static(" 41 "));
        assert_eq!(resume_after(&headers), Ok(Some(41)));
        headers.insert("last-event-id", HeaderValue::from_static("-1"));
        assert_eq!(
            resume_after(&headers),
            Err(LastEventIdError { given: "-1".into() })
        );
    }
}
