//! The request span: every request runs in one, naming its method, its route (the matched
//! template, never an id), a short request id and, once known, the door, the partner and its
//! tenant, so each log line of a request says whose it is. When spans are exported
//! ([`crate::telemetry`]), it continues the trace of the request's W3C `traceparent`. A door's
//! requests are also counted and timed here ([`Requests`]), where every one of them passes.
//!
//! [`open`] makes it (the host's access layer, around every route); [`request`], a door's route
//! layer, names the door in it and counts the request. Both are plain tower services: axum's
//! `from_fn` boxes a future and clones the route it wraps for every request (issue 35).

use crate::metrics::requests::Requests;
use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;
use tower_layer::Layer;
use tower_service::Service;
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

/// The route template a request matched (`matched`, its `MatchedPath`), or [`UNMATCHED`].
pub fn route(matched: Option<&MatchedPath>) -> &str {
    matched.map_or(UNMATCHED, MatchedPath::as_str)
}

/// The span of `request`, whose id is `id`: `door`, `agent`, `tenant` and `status` are
/// recorded later, by the door, the gate and the access layer.
pub fn open(request: &Request, id: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        route = %route(request.extensions().get()),
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

/// A door's route layer (`.route_layer(span::request("aip"))`): name the door in the request's
/// span, count and time the request, and tell the access line the door and the partner.
pub fn request(door: &'static str) -> DoorLayer {
    DoorLayer { door }
}

/// The layer [`request`] makes.
#[derive(Clone, Copy, Debug)]
pub struct DoorLayer {
    door: &'static str,
}

impl<S> Layer<S> for DoorLayer {
    type Service = DoorService<S>;

    fn layer(&self, inner: S) -> DoorService<S> {
        DoorService {
            door: self.door,
            inner,
        }
    }
}

/// A door's route under its [`DoorLayer`].
#[derive(Clone, Debug)]
pub struct DoorService<S> {
    door: &'static str,
    inner: S,
}

impl<S> Service<Request> for DoorService<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = DoorFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let agent = request
            .uri()
            .path()
            .strip_prefix("/agents/")
            .map(|rest| rest.split('/').next().unwrap_or(rest))
            .unwrap_or("")
            .to_string();
        // The gate has named the partner (a hosted one) and its tenant.
        tracing::Span::current().record("door", self.door);
        let requests = request.extensions().get::<Arc<Requests>>().cloned();
        DoorFuture {
            inner: self.inner.call(request),
            door: self.door,
            agent,
            requests,
            began: Instant::now(),
        }
    }
}

pin_project! {
    /// The answer of a door's route, counted and marked with the door once it is ready.
    pub struct DoorFuture<F> {
        #[pin]
        inner: F,
        door: &'static str,
        agent: String,
        requests: Option<Arc<Requests>>,
        began: Instant,
    }
}

impl<F, E> Future for DoorFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if let Some(requests) = this.requests.take() {
            requests.observe(
                this.door,
                this.agent,
                response.status(),
                this.began.elapsed(),
            );
        }
        response.extensions_mut().insert(Served {
            door: this.door,
            agent: std::mem::take(this.agent),
        });
        Poll::Ready(Ok(response))
    }
}
