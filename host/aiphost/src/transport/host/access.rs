//! The access layer, around every route: it opens the request's span ([`span::open`]) and, once
//! the response's head is ready, writes one `info` line, target `access`:
//!
//! ```text
//! INFO access: method=POST route=/agents/{agent}/rpc status=200 latency_ms=1.234 door=aip agent=echo request=4f0c2a9e1b7d
//! ```
//!
//! The route is the matched template (`-` for none), so no task id, key or query string reaches
//! the line, and no header is logged (an `Authorization` token never is). `latency_ms` runs to
//! the response's head: an event stream's life is not in it.
//!
//! Written here rather than with tower-http's `TraceLayer`: its response hook sees the response
//! and a span only, so the method, route and id would reach the line through span fields,
//! which a log filter (`--log warn,access=info`) drops with the span.

use crate::transport::kit::span;
use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::response::Response;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

/// A request's id in its span and access line: 12 hex digits.
///
/// The ids of one process follow a random start drawn once, so they are unique within a run and
/// unlikely to repeat across runs; making one takes no system call and no allocation (a random
/// id per request cost a `getrandom` call and a string: issue 35 decision 4).
struct RequestId([u8; 12]);

impl RequestId {
    fn next() -> Self {
        static NEXT: LazyLock<AtomicU64> =
            LazyLock::new(|| AtomicU64::new(uuid::Uuid::new_v4().as_u64_pair().0));
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut digits = [0u8; 12];
        for (i, digit) in digits.iter_mut().enumerate() {
            let nibble = (n >> (4 * (11 - i))) & 0xf;
            *digit = b"0123456789abcdef"[nibble as usize];
        }
        RequestId(digits)
    }

    fn as_str(&self) -> &str {
        // Hex digits only: always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or("-")
    }
}

/// The access layer, outermost around every route (a plain tower service: no boxed future and
/// no clone of the route per request, as axum's `from_fn` takes; issue 35).
#[derive(Clone, Copy, Debug)]
pub(super) struct AccessLayer;

impl<S> Layer<S> for AccessLayer {
    type Service = Access<S>;

    fn layer(&self, inner: S) -> Access<S> {
        Access(inner)
    }
}

/// A route under the access layer.
#[derive(Clone, Debug)]
pub(super) struct Access<S>(S);

impl<S> Service<Request> for Access<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Serving<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    /// Serve `request` in its span: the layers inside are called, and the answer polled, in it.
    fn call(&mut self, request: Request) -> Self::Future {
        let started = Instant::now();
        let id = RequestId::next();
        let method = request.method().clone();
        let route = request.extensions().get::<MatchedPath>().cloned();
        let span = span::open(&request, id.as_str());
        let inner = span.in_scope(|| self.0.call(request));
        Serving {
            inner,
            span,
            started,
            id,
            method,
            route,
        }
    }
}

pin_project! {
    /// A request being served; its access line is written once the response's head is ready.
    pub(super) struct Serving<F> {
        #[pin]
        inner: F,
        span: tracing::Span,
        started: Instant,
        id: RequestId,
        method: Method,
        route: Option<MatchedPath>,
    }
}

impl<F, E> Future for Serving<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let polled = {
            let _in = this.span.enter();
            this.inner.poll(cx)
        };
        // The line is written outside the span, as its own event: its fields are all there.
        let response = ready!(polled)?;
        let status = response.status().as_u16();
        this.span.record("status", status);
        let latency_ms = this.started.elapsed().as_secs_f64() * 1000.0;
        let served = response.extensions().get::<span::Served>();
        tracing::info!(
            target: "access",
            method = %this.method,
            route = %span::route(this.route.as_ref()),
            status,
            latency_ms = format_args!("{latency_ms:.3}"),
            door = %served.map_or("-", |s| s.door),
            agent = %served.map(|s| s.agent.as_str()).filter(|a| !a.is_empty()).unwrap_or("-"),
            request = %this.id.as_str(),
        );
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::RequestId;

    #[test]
    fn request_ids_are_twelve_hex_digits_and_differ() {
        let (a, b) = (RequestId::next(), RequestId::next());
        for id in [a.as_str(), b.as_str()] {
            assert_eq!(id.len(), 12);
            assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
        }
        assert_ne!(a.as_str(), b.as_str());
    }
}
