//! The request span: every request of a door runs in one, naming the door, the partner and a
//! short request id, so each log line of a request says whose it is; and where each is counted
//! and timed ([`Requests`]).

use crate::metrics::requests::Requests;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Run `request` in its span (a door's route layer: `from_fn(|r, n| span::request("aip", r, n))`).
pub async fn request(door: &'static str, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let agent = path
        .strip_prefix("/agents/")
        .map(|rest| rest.split('/').next().unwrap_or(rest))
        .unwrap_or("")
        .to_string();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let span = tracing::info_span!("request", door, agent = %agent, request = %&id[..12]);
    // Counted and timed here, where every door's request passes.
    let requests = request.extensions().get::<Arc<Requests>>().cloned();
    let began = Instant::now();
    let response = next.run(request).instrument(span).await;
    if let Some(requests) = requests {
        requests.observe(door, &agent, response.status(), began.elapsed());
    }
    response
}
