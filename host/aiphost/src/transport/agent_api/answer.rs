//! How a turn's events reach the client: as SSE, or (`stream: false`) folded into one JSON
//! `AgentResponse`, the turn's last, with its `output`.
//!
//! A folded answer holds its connection with no bytes until the turn rests, so it waits at most
//! the task's `responseTimeout` (`--response-timeout-ms` unless the task was started with its
//! own), as an AIP `start` does: a turn still running then is answered as it is — its response
//! `in_progress`, the messages completed so far as its `output`, the timeout in its
//! `metadata` — and goes on (the session is busy until it rests; the stop route cancels it).
//! The connection layer does not cut such a wait first: its idle timeout only runs while no
//! request is under way, and its write timeout only while writes are blocked.

use super::state::AgentApiState;
use super::stats::Stats;
use super::stream::Events;
use crate::transport::kit::sse;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// `events` as SSE, or (`stream: false`) folded, waiting at most `within`; each final
/// response counted in `stats`.
pub(super) async fn answer(
    app: &AgentApiState,
    stats: &Arc<Stats>,
    stream: bool,
    events: Events,
    within: Duration,
) -> Response {
    if stream {
        let stats = stats.clone();
        let events = events.inspect(move |e| stats.sent(e)).boxed();
        return sse::respond(events, app.http.sse_keep_alive);
    }
    let mut fold = Fold::default();
    let rested = tokio::time::timeout(within, fold.take(events))
        .await
        .is_ok();
    let body = if rested {
        fold.last.unwrap_or_else(|| {
            json!({"object": "response", "status": "failed",
                   "error": {"code": "INTERNAL", "message": "the turn ended without a response"}})
        })
    } else {
        fold.running(within)
    };
    stats.responded(&body);
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// What a folded answer has seen of its turn.
#[derive(Default)]
struct Fold {
    /// The last event (the final response, once the turn rests).
    last: Option<Value>,
    /// The newest response event (the opening `in_progress` one while the turn runs).
    response: Option<Value>,
    /// The messages completed so far, as a response's `output` holds them.
    output: Vec<Value>,
}

impl Fold {
    /// Take `events` until they end (the turn's final response, or the stream's end).
    async fn take(&mut self, mut events: Events) {
        while let Some(event) = events.next().await {
            match event["object"].as_str() {
                Some("response") => self.response = Some(event.clone()),
                Some("message") if event["status"] == "completed" => {
                    let mut message = event.clone();
                    if let Some(m) = message.as_object_mut() {
                        m.remove("sequence_number");
                    }
                    self.output.push(message);
                }
                _ => {}
            }
            self.last = Some(event);
        }
    }

    /// The turn as it is at its `responseTimeout` (`within`): its response, `in_progress`, with
    /// the messages completed so far, and the timeout that ran out in its metadata.
    fn running(self, within: Duration) -> Value {
        let mut response = self
            .response
            .unwrap_or_else(|| json!({"object": "response", "status": "in_progress"}));
        response["status"] = json!("in_progress");
        response["output"] = json!(self.output);
        let ms = u64::try_from(within.as_millis()).unwrap_or(u64::MAX);
        if !response["metadata"].is_object() {
            response["metadata"] = json!({});
        }
        response["metadata"]["aiphost.responseTimeoutMs"] = json!(ms);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn events(list: Vec<Value>) -> Events {
        stream::iter(list).boxed()
    }

    #[tokio::test]
    async fn a_turn_that_rests_is_its_last_event() {
        let mut fold = Fold::default();
        fold.take(events(vec![
            json!({"object": "response", "status": "in_progress", "sequence_number": 1}),
            json!({"object": "response", "status": "completed", "sequence_number": 2, "output": []}),
        ]))
        .await;
        assert_eq!(fold.last.unwrap()["status"], "completed");
    }

    #[tokio::test]
    async fn a_turn_still_running_is_its_response_in_progress_with_what_completed() {
        let mut fold = Fold::default();
        let running = events(vec![
            json!({"object": "response", "id": "r", "status": "in_progress", "sequence_number": 1,
                   "metadata": {"aiphost.taskId": "t"}}),
            json!({"object": "message", "id": "m1", "status": "completed", "sequence_number": 2}),
            json!({"object": "message", "id": "m2", "status": "in_progress", "sequence_number": 3}),
        ])
        .chain(stream::pending())
        .boxed();
        let within = Duration::from_millis(20);
        let timed_out = tokio::time::timeout(within, fold.take(running)).await;
        assert!(timed_out.is_err());
        let body = fold.running(within);
        assert_eq!(body["id"], "r");
        assert_eq!(body["status"], "in_progress");
        assert_eq!(
            body["output"],
            json!([{"object": "message", "id": "m1", "status": "completed"}])
        );
        assert_eq!(body["metadata"]["aiphost.taskId"], "t");
        assert_eq!(body["metadata"]["aiphost.responseTimeoutMs"], 20);
    }
}
