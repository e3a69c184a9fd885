//! The Agent API door's counters, on the host's metrics: its requests by route and outcome (a turn
//! started, a task continued, a busy session, a stop, a refusal), its refusals by HTTP status,
//! and the final responses its turns were answered with, by status. The AIP and A2A doors'
//! work shows in the engine's counters; these say what only this door knows: how a session's
//! turn went (busy sessions above all, which the engine never sees).

use crate::metrics::{LabelValue, Labels, Metrics};
use metrics::Counter;
use serde_json::Value;
use std::sync::Arc;

/// What became of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// `/process` started a new task.
    Start,
    /// `/process` continued the session's task awaiting input.
    Continue,
    /// `/process` was answered `SESSION_BUSY`: the session's task still runs.
    Busy,
    /// `/process/stop` canceled the session's task.
    Stopped,
}

/// The door's routes, as `/metrics` labels them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Route {
    Process,
    Stop,
}

impl Route {
    fn label(self) -> &'static str {
        match self {
            Route::Process => "process",
            Route::Stop => "stop",
        }
    }
}

/// The statuses a final `AgentResponse` of this door has (`in_progress`: a `stream: false`
/// turn still running at its `responseTimeout`).
const RESPONSE_STATUSES: [&str; 5] = ["completed", "failed", "canceled", "rejected", "in_progress"];

const REQUESTS: &str = "aiphost_agent_api_requests_total";
const REQUESTS_HELP: &str = "Agent API requests by route and outcome: a turn that started or continued a task, a turn refused because the session's task still runs (busy), a stop, a request refused with an HTTP error";
const REFUSALS: &str = "aiphost_agent_api_refusals_total";
const REFUSALS_HELP: &str = "Agent API requests refused before a turn, by route and HTTP status";

/// The door's counters, on the host's metrics.
pub(super) struct Stats {
    metrics: Arc<Metrics>,
    start: Counter,
    continued: Counter,
    busy: Counter,
    stopped: Counter,
    /// Refused requests, by [`Route`].
    refused_process: Counter,
    refused_stop: Counter,
    /// Final responses, by status, in the order of [`RESPONSE_STATUSES`].
    responses: [Counter; 5],
}

impl Stats {
    /// The door's counters, registered on `metrics` (at zero).
    pub(super) fn new(metrics: &Arc<Metrics>) -> Self {
        let request = |route: &'static str, outcome: &'static str| {
            metrics.counter(
                REQUESTS,
                REQUESTS_HELP,
                Labels::none().with("route", route).with("outcome", outcome),
            )
        };
        Stats {
            start: request("process", "start"),
            continued: request("process", "continue"),
            busy: request("process", "busy"),
            refused_process: request("process", "refused"),
            stopped: request("stop", "stopped"),
            refused_stop: request("stop", "refused"),
            responses: RESPONSE_STATUSES.map(|status| {
                metrics.counter(
                    "aiphost_agent_api_responses_total",
                    "Final Agent API responses sent, by status (a stream a client left before its end is not counted; in_progress: a stream:false turn still running at its responseTimeout)",
                    Labels::none().with("status", status),
                )
            }),
            metrics: metrics.clone(),
        }
    }

    /// Count a request answered with `outcome`.
    pub(super) fn answered(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Start => &self.start,
            Outcome::Continue => &self.continued,
            Outcome::Busy => &self.busy,
            Outcome::Stopped => &self.stopped,
        };
        counter.increment(1);
    }

    /// Count a request of `route` refused with HTTP `status` (few distinct ones: a series
    /// each, made at its first refusal).
    pub(super) fn refused(&self, route: Route, status: u16) {
        match route {
            Route::Process => self.refused_process.increment(1),
            Route::Stop => self.refused_stop.increment(1),
        }
        self.metrics
            .counter(
                REFUSALS,
                REFUSALS_HELP,
                Labels::none()
                    .with("route", route.label())
                    .with("status", LabelValue::code(status.into())),
            )
            .increment(1);
    }

    /// Count `event` if it is a turn's final response (a response in a final status; a
    /// `stream: false` answer counts its `in_progress` one too, through [`Stats::responded`]).
    pub(super) fn sent(&self, event: &Value) {
        if event["object"] == "response" && event["status"] != "in_progress" {
            self.responded(event);
        }
    }

    /// Count `response` as a turn's final response, whatever its status.
    pub(super) fn responded(&self, response: &Value) {
        let status = response["status"].as_str().unwrap_or_default();
        if let Some(at) = RESPONSE_STATUSES.iter().position(|s| *s == status) {
            self.responses[at].increment(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_show_by_label() {
        let metrics = Metrics::new();
        let stats = Stats::new(&metrics);
        stats.answered(Outcome::Start);
        stats.answered(Outcome::Busy);
        stats.answered(Outcome::Busy);
        stats.refused(Route::Process, 400);
        stats.refused(Route::Stop, 404);
        stats.sent(&json!({"object": "response", "status": "in_progress"}));
        stats.sent(&json!({"object": "message", "status": "completed"}));
        stats.sent(&json!({"object": "response", "status": "completed"}));
        stats.responded(&json!({"object": "response", "status": "in_progress"}));
        let text = metrics.render();
        for line in [
            "aiphost_agent_api_requests_total{route=\"process\",outcome=\"start\"} 1",
            "aiphost_agent_api_requests_total{route=\"process\",outcome=\"busy\"} 2",
            "aiphost_agent_api_requests_total{route=\"process\",outcome=\"refused\"} 1",
            "aiphost_agent_api_requests_total{route=\"stop\",outcome=\"stopped\"} 0",
            "aiphost_agent_api_requests_total{route=\"stop\",outcome=\"refused\"} 1",
            "aiphost_agent_api_refusals_total{route=\"process\",status=\"400\"} 1",
            "aiphost_agent_api_refusals_total{route=\"stop\",status=\"404\"} 1",
            "aiphost_agent_api_responses_total{status=\"completed\"} 1",
            "aiphost_agent_api_responses_total{status=\"in_progress\"} 1",
            "aiphost_agent_api_responses_total{status=\"failed\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
