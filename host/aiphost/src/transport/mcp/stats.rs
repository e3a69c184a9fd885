//! The MCP door's counters, on the host's metrics: its requests by method and outcome, the requests
//! its entry refused by HTTP status, and the 2025-11-25 sessions open. The tasks its calls run
//! show in the engine's counters; these say what only this door knows: how a call was answered
//! (a result, a tool error the model reads, a question, a task handle) and how many requests
//! never reached `rmcp`.
//!
//! The handler counts each request it answers (`handler.rs`): `tools/list`, `tools/call`, the
//! tasks extension's three methods, and as `other` the handshake it serves (`initialize`,
//! `server/discover`). What `rmcp` answers without the handler (a malformed message, a missing
//! MCP header, prompts and resources, which this door does not serve) is not counted here.

use super::sessions::Sessions;
use crate::metrics::{LabelValue, Labels, Metrics};
use metrics::Counter;
use rmcp::ErrorData;
use rmcp::model::CallToolResponse;
use std::sync::Arc;

/// The methods counted, as `/metrics` labels them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Method {
    ToolsList,
    ToolsCall,
    TasksGet,
    TasksUpdate,
    TasksCancel,
    /// The handshake: `initialize`, `server/discover`.
    Other,
}

const METHODS: [Method; 6] = [
    Method::ToolsList,
    Method::ToolsCall,
    Method::TasksGet,
    Method::TasksUpdate,
    Method::TasksCancel,
    Method::Other,
];

impl Method {
    fn label(self) -> &'static str {
        match self {
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
            Method::Other => "other",
        }
    }

    /// The outcomes a request of this method can have (only a call has more than two).
    fn outcomes(self) -> &'static [Outcome] {
        match self {
            Method::ToolsCall => &OUTCOMES,
            _ => &[Outcome::Ok, Outcome::Error],
        }
    }
}

/// How a request was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A result (for a call: its task's, not an error).
    Ok,
    /// A JSON-RPC error.
    Error,
    /// A call's result with `isError: true` (the partner failed, wrong arguments, a quota…).
    ToolError,
    /// A call answered with a question (MRTR `input_required`).
    InputRequired,
    /// A call answered with a task handle (the tasks extension).
    Task,
}

const OUTCOMES: [Outcome; 5] = [
    Outcome::Ok,
    Outcome::Error,
    Outcome::ToolError,
    Outcome::InputRequired,
    Outcome::Task,
];

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::ToolError => "tool_error",
            Outcome::InputRequired => "input_required",
            Outcome::Task => "task",
        }
    }

    /// The outcome of a `tools/call` answered with `answer`.
    fn of_call(answer: &Result<CallToolResponse, ErrorData>) -> Self {
        match answer {
            Err(_) => Outcome::Error,
            Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
                Outcome::ToolError
            }
            Ok(CallToolResponse::Complete(_)) => Outcome::Ok,
            Ok(CallToolResponse::InputRequired(_)) => Outcome::InputRequired,
            Ok(CallToolResponse::Task(_)) => Outcome::Task,
            // A kind of answer a later `rmcp` adds: a result all the same.
            Ok(_) => Outcome::Ok,
        }
    }
}

const REQUESTS: &str = "aiphost_mcp_requests_total";
const REQUESTS_HELP: &str = "MCP requests answered, by method and outcome: ok (a result), error (a JSON-RPC error), tool_error (a call's result with isError), input_required (a call answered with a question), task (a call answered with a task handle); other: initialize and server/discover";

/// The door's counters, on the host's metrics.
pub(super) struct Stats {
    metrics: Arc<Metrics>,
    /// Requests, by method and outcome (indexed as [`METHODS`] and [`OUTCOMES`]; `None`: an
    /// outcome the method cannot have).
    requests: [[Option<Counter>; 5]; 6],
}

impl Stats {
    /// The door's counters, registered on `metrics` (at zero); `sessions` says how many
    /// 2025-11-25 sessions are open, read when scraped.
    pub(super) fn new(metrics: &Arc<Metrics>, sessions: Arc<Sessions>) -> Self {
        let requests = METHODS.map(|method| {
            OUTCOMES.map(|outcome| {
                method.outcomes().contains(&outcome).then(|| {
                    metrics.counter(
                        REQUESTS,
                        REQUESTS_HELP,
                        Labels::none()
                            .with("method", method.label())
                            .with("outcome", outcome.label()),
                    )
                })
            })
        });
        let open = metrics.gauge(
            "aiphost_mcp_sessions",
            "2025-11-25 MCP sessions open (2026-07-28 requests open none)",
            Labels::none(),
        );
        metrics.on_scrape(move || open.set(sessions.open_count() as f64));
        Stats {
            metrics: metrics.clone(),
            requests,
        }
    }

    /// Count a request of `method` answered with `outcome`.
    fn count(&self, method: Method, outcome: Outcome) {
        let m = METHODS.iter().position(|x| *x == method).unwrap_or(5);
        let o = OUTCOMES.iter().position(|x| *x == outcome).unwrap_or(1);
        if let Some(counter) = &self.requests[m][o] {
            counter.increment(1);
        }
    }

    /// Count a request of `method` (not a call) answered with `answer`.
    pub(super) fn answered<T>(&self, method: Method, answer: &Result<T, ErrorData>) {
        let outcome = if answer.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.count(method, outcome);
    }

    /// Count a `tools/call` answered with `answer`.
    pub(super) fn called(&self, answer: &Result<CallToolResponse, ErrorData>) {
        self.count(Method::ToolsCall, Outcome::of_call(answer));
    }

    /// Count a request the entry refused with HTTP `status` (few distinct ones: a series each,
    /// made at its first refusal).
    pub(super) fn refused(&self, status: u16) {
        self.metrics
            .counter(
                "aiphost_mcp_refusals_total",
                "MCP requests refused at the door's entry (Origin, authentication, request rate, body, sessions), by HTTP status",
                Labels::none().with("status", LabelValue::code(status.into())),
            )
            .increment(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock};
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

    #[test]
    fn counts_show_by_label() {
        let metrics = Metrics::new();
        let stats = Stats::new(
            &metrics,
            Arc::new(Sessions::new(Arc::new(LocalSessionManager::default()), 8)),
        );
        stats.called(&Ok(
            CallToolResult::success(vec![ContentBlock::text("hi")]).into()
        ));
        stats.called(&Ok(
            CallToolResult::error(vec![ContentBlock::text("no")]).into()
        ));
        stats.called(&Ok(
            CallToolResult::error(vec![ContentBlock::text("no")]).into()
        ));
        stats.called(&Err(ErrorData::invalid_params("unknown tool", None)));
        stats.answered(Method::TasksGet, &Ok(()));
        stats.answered::<()>(
            Method::ToolsList,
            &Err(ErrorData::invalid_params("cursor", None)),
        );
        stats.answered(Method::Other, &Ok(()));
        stats.refused(401);
        stats.refused(401);
        stats.refused(403);
        let text = metrics.render();
        for line in [
            "aiphost_mcp_requests_total{method=\"tools/call\",outcome=\"ok\"} 1",
            "aiphost_mcp_requests_total{method=\"tools/call\",outcome=\"tool_error\"} 2",
            "aiphost_mcp_requests_total{method=\"tools/call\",outcome=\"error\"} 1",
            "aiphost_mcp_requests_total{method=\"tools/call\",outcome=\"task\"} 0",
            "aiphost_mcp_requests_total{method=\"tools/call\",outcome=\"input_required\"} 0",
            "aiphost_mcp_requests_total{method=\"tasks/get\",outcome=\"ok\"} 1",
            "aiphost_mcp_requests_total{method=\"tools/list\",outcome=\"error\"} 1",
            "aiphost_mcp_requests_total{method=\"other\",outcome=\"ok\"} 1",
            "aiphost_mcp_requests_total{method=\"tasks/cancel\",outcome=\"ok\"} 0",
            "aiphost_mcp_refusals_total{status=\"401\"} 2",
            "aiphost_mcp_refusals_total{status=\"403\"} 1",
            "aiphost_mcp_sessions 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        // A method has only the outcomes it can have.
        assert!(
            !text.contains("method=\"tasks/get\",outcome=\"task\""),
            "{text}"
        );
    }
}
