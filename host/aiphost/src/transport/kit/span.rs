//! The request span: every request runs in one, naming its method, its route (the matched
//! template, never an id), a short request id and, once known, the door, the partner and its
//! tenant, so each log line of a request says whose it is. When spans are exported
//! ([`crate::telemetry`]), it continues the trace of the request's W3C `traceparent`. A door's
//! requests are also counted and timed here ([`Requests`]), where every one of them passes.
//!
//! [`open`] makes it (the host's access layer, around every route); [`request`], a door's route
//! layer, names the door in it and counts the request.

use crate::metrics::requests::Requests;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use tracing::field::Empty;

/// The route of a request that matched none (a 404 from the fallback).
pub const UNMATCHED: &str = "-";

/// What a door tells the access line about the request it served (a response extension).
#[derive(Clone, Debug)]
pub struct Served {
    /// The door's name.
    pub door: &'static str,
    /// The partner named in the path (empty for a door's host-wide route, MCP's `/mcp`).
    pub agent: String,
}

/// The route template `request` matched, or [`UNMATCHED`].
pub fn route(request: &Request) -> &str {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
}

/// The span of `request`, whose id is `id`: `door`, `agent`, `tenant` and `status` are
/// recorded later, by the door, the gate and the access layer.
pub fn open(request: &Request, id: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        route = %route(request),
        door = Empty,
        agent = Empty,
        tenant = Empty,
        request = %id,
        status = Empty,
    );
    if crate::telemetry::exporting() {
        continue_trace(&span, request.headers());
    }
    span
}

/// Make `span` a child of the trace that the request's `traceparent` names (none: it starts
/// one). Only while the span has not been entered: after that its parent is fixed.
fn continue_trace(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&opentelemetry_http::HeaderExtractor(headers))
    });
    // A malformed `traceparent` extracts as an empty context: the span starts a trace.
    if let Err(e) = span.set_parent(parent) {
        tracing::debug!(error = ?e, "the request span could not continue the caller's trace");
    }
}

/// A door's route layer (`from_fn(|r, n| span::request("aip", r, n))`): name the door in the
/// request's span, count and time it, and tell the access line the door and the partner.
pub async fn request(door: &'static str, request: Request, next: Next) -> Response {
    let agent = request
        .uri()
        .path()
        .strip_prefix("/agents/")
        .map(|rest| rest.split('/').next().unwrap_or(rest))
        .unwrap_or("")
        .to_string();
    // The gate has named the partner (a hosted one) and its tenant.
    tracing::Span::current().record("door", door);
    let requests = request.extensions().get::<Arc<Requests>>().cloned();
    let began = Instant::now();
    let mut response = next.run(request).await;
    if let Some(requests) = requests {
        requests.observe(door, &agent, response.status(), began.elapsed());
    }
    response.extensions_mut().insert(Served { door, agent });
    response
}
