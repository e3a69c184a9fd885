//! The gate in front of every partner's URLs (`/agents/{id}/...`), whatever the door: a partner
//! that is not hosted is a 404, one whose component is still compiling a retryable 503.
//!
//! Why one gate below the doors: whether a partner exists and can run is the registry's fact, not
//! a door's; each door used to answer an unknown partner in its own words (AIP with HTTP 200 and
//! -32600 "Invalid Request"). The body keeps the door's shape: a JSON-RPC error (id `null`, since
//! the body is not read) on the JSON-RPC endpoints, an AIP-193 error elsewhere.
//!
//! Documents about a partner (its ACS document, its A2A card) are served while it compiles: they
//! need only its manifest.

use crate::agent::Registry;
use crate::agent::code::Readiness;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::Either;
use serde_json::{Value, json};
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

/// How long a client is asked to wait before trying a compiling partner again, in seconds.
const RETRY_AFTER_S: u32 = 2;

/// The JSON-RPC code of "the partner cannot run now".
const UNAVAILABLE: i64 = crate::protocol::ErrorCode::Unavailable.code();
/// JSON-RPC's "Invalid Request": what AIP has always answered for a partner not hosted.
const INVALID_REQUEST: i64 = -32600;

/// The gate as a layer around every route (a plain tower service: no boxed future and no clone
/// of the route per request, as axum's `from_fn` takes; issue 35).
#[derive(Clone)]
pub(super) struct GateLayer(pub(super) Arc<Registry>);

impl<S> Layer<S> for GateLayer {
    type Service = Gate<S>;

    fn layer(&self, inner: S) -> Gate<S> {
        Gate {
            agents: self.0.clone(),
            inner,
        }
    }
}

/// A route behind the gate.
#[derive(Clone)]
pub(super) struct Gate<S> {
    agents: Arc<Registry>,
    inner: S,
}

impl<S> Service<Request> for Gate<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, Ready<Result<Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match refusal(&self.agents, request.uri().path()) {
            Some(refused) => Either::Right(ready(Ok(refused))),
            None => Either::Left(self.inner.call(request)),
        }
    }
}

/// The answer to a request for `path` when the partner it names is not hosted or cannot run
/// yet; `None` lets it through.
fn refusal(agents: &Registry, path: &str) -> Option<Response> {
    let rest = path.strip_prefix("/agents/")?;
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if id.is_empty() {
        return None;
    }
    let Some(agent) = agents.get(id) else {
        let message = format!("no agent {id:?} is hosted here; GET /agents lists them");
        return Some(refuse(
            StatusCode::NOT_FOUND,
            tail,
            INVALID_REQUEST,
            "unknown-agent",
            message,
            json!({"agent": id, "agents": "/agents"}),
        ));
    };
    // The request's span (the access layer's) names the partner and its tenant.
    let span = tracing::Span::current();
    span.record("agent", tracing::field::display(agent.id()));
    if let Some(tenant) = &agent.tenant {
        span.record("tenant", tracing::field::display(&tenant.id));
    }
    if tail.is_empty() || tail.starts_with(".well-known/") {
        return None;
    }
    match agent.code.readiness() {
        Readiness::Ready => None,
        Readiness::Compiling => {
            let message = format!(
                "partner {id:?} is still compiling (the host compiles partners in the background \
                 at start-up); try again in a few seconds"
            );
            let mut response = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                tail,
                UNAVAILABLE,
                "compiling",
                message,
                json!({"agent": id, "retryable": true, "retryAfterMs": RETRY_AFTER_S * 1000}),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
            Some(response)
        }
        Readiness::Failed(reason) => {
            let message = format!("partner {id:?} is not served: its component does not compile");
            Some(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                tail,
                UNAVAILABLE,
                "not-compiled",
                message,
                json!({"agent": id, "retryable": false, "cause": &*reason}),
            ))
        }
    }
}

/// Whether `tail` (the path after `/agents/{id}/`) is a JSON-RPC endpoint.
fn is_json_rpc(tail: &str) -> bool {
    let first = tail.split('/').next().unwrap_or("");
    matches!(first, "rpc" | "stream" | "notification" | "group")
        || matches!(tail.trim_end_matches('/'), "a2a" | "mcp")
}

fn refuse(
    status: StatusCode,
    tail: &str,
    rpc_code: i64,
    reason: &str,
    message: String,
    data: Value,
) -> Response {
    let body = if is_json_rpc(tail) {
        let mut data = data;
        data["reason"] = json!(message);
        data["error"] = json!(reason);
        json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": rpc_code, "message": message, "data": data},
        })
    } else {
        json!({
            "error": {
                "code": status.as_u16(),
                "status": if status == StatusCode::NOT_FOUND { "NOT_FOUND" } else { "UNAVAILABLE" },
                "message": message,
                "details": [{"reason": reason, "metadata": data}],
            }
        })
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON-RPC endpoints get a JSON-RPC error from the gate, the others an AIP-193 one.
    #[test]
    fn the_json_rpc_tails_are_named() {
        for tail in [
            "rpc",
            "stream",
            "notification",
            "group/x",
            "a2a",
            "a2a/",
            "mcp",
        ] {
            assert!(is_json_rpc(tail), "{tail}");
        }
        for tail in ["a2a/rest", "process", "aiflowy/chat", "mcp/x", ""] {
            assert!(!is_json_rpc(tail), "{tail}");
        }
    }
}
