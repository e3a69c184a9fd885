//! The Agent API door's counters, for `/metrics`: its requests by route and outcome (a turn
//! started, a task continued, a busy session, a stop, a refusal), its refusals by HTTP status,
//! and the final responses its turns were answered with, by status. The AIP and A2A doors'
//! work shows in the engine's counters; these say what only this door knows: how a session's
//! turn went (busy sessions above all, which the engine never sees).

use crate::transport::kit::metrics;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// The door's counters.
#[derive(Default)]
pub(super) struct Stats {
    start: AtomicU64,
    continued: AtomicU64,
    busy: AtomicU64,
    stopped: AtomicU64,
    /// Refused requests, by route and HTTP status (few distinct ones: a map under a lock).
    refused: Mutex<BTreeMap<(Route, u16), u64>>,
    /// Final responses, by status, in the order of [`RESPONSE_STATUSES`].
    responses: [AtomicU64; 5],
}

impl Stats {
    /// Count a request answered with `outcome`.
    pub(super) fn answered(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Start => &self.start,
            Outcome::Continue => &self.continued,
            Outcome::Busy => &self.busy,
            Outcome::Stopped => &self.stopped,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a request of `route` refused with HTTP `status`.
    pub(super) fn refused(&self, route: Route, status: u16) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        *refused.entry((route, status)).or_default() += 1;
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
            self.responses[at].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The door's lines of `/metrics`.
    pub(super) fn write(&self, text: &mut String) {
        let requests = "aiphost_agent_api_requests_total";
        metrics::family(
            text,
            requests,
            "Agent API requests by route and outcome: a turn that started or continued a task, a turn refused because the session's task still runs (busy), a stop, a request refused with an HTTP error",
            "counter",
        );
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        let refused_on = |route: Route| -> u64 {
            refused
                .iter()
                .filter(|((r, _), _)| *r == route)
                .map(|(_, n)| n)
                .sum()
        };
        for (route, outcome, n) in [
            ("process", "start", self.start.load(Ordering::Relaxed)),
            (
                "process",
                "continue",
                self.continued.load(Ordering::Relaxed),
            ),
            ("process", "busy", self.busy.load(Ordering::Relaxed)),
            ("process", "refused", refused_on(Route::Process)),
            ("stop", "stopped", self.stopped.load(Ordering::Relaxed)),
            ("stop", "refused", refused_on(Route::Stop)),
        ] {
            text.push_str(&format!(
                "{requests}{{route=\"{route}\",outcome=\"{outcome}\"}} {n}\n"
            ));
        }
        let refusals = "aiphost_agent_api_refusals_total";
        metrics::family(
            text,
            refusals,
            "Agent API requests refused before a turn, by route and HTTP status",
            "counter",
        );
        for ((route, status), n) in refused.iter() {
            text.push_str(&format!(
                "{refusals}{{route=\"{}\",status=\"{status}\"}} {n}\n",
                route.label()
            ));
        }
        let responses = "aiphost_agent_api_responses_total";
        metrics::family(
            text,
            responses,
            "Final Agent API responses sent, by status (a stream a client left before its end is not counted; in_progress: a stream:false turn still running at its responseTimeout)",
            "counter",
        );
        for (status, n) in RESPONSE_STATUSES.iter().zip(&self.responses) {
            text.push_str(&format!(
                "{responses}{{status=\"{status}\"}} {}\n",
                n.load(Ordering::Relaxed)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_show_by_label() {
        let stats = Stats::default();
        stats.answered(Outcome::Start);
        stats.answered(Outcome::Busy);
        stats.answered(Outcome::Busy);
        stats.refused(Route::Process, 400);
        stats.refused(Route::Stop, 404);
        stats.sent(&json!({"object": "response", "status": "in_progress"}));
        stats.sent(&json!({"object": "message", "status": "completed"}));
        stats.sent(&json!({"object": "response", "status": "completed"}));
        stats.responded(&json!({"object": "response", "status": "in_progress"}));
        let mut text = String::new();
        stats.write(&mut text);
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
