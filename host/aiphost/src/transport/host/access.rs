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

use crate::transport::kit::span::{self, Served};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tracing::Instrument;

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

/// Serve `request` in its span and write its access line.
pub(super) async fn layer(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = RequestId::next();
    let id = id.as_str();
    let method = request.method().clone();
    let route = span::route(&request).to_string();
    let request_span = span::open(&request, id);
    let response = next.run(request).instrument(request_span.clone()).await;
    let status = response.status().as_u16();
    request_span.record("status", status);
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let served = response.extensions().get::<Served>();
    tracing::info!(
        target: "access",
        method = %method,
        route = %route,
        status,
        latency_ms = format_args!("{latency_ms:.3}"),
        door = %served.map_or("-", |s| s.door),
        agent = %served.map(|s| s.agent.as_str()).filter(|a| !a.is_empty()).unwrap_or("-"),
        request = %id,
    );
    response
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
