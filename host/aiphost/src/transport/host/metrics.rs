//! `GET /metrics`, in Prometheus' text format, rendered by the host's
//! [`crate::metrics::Metrics`] (the host's own series: `crate::metrics::host`).

use super::endpoints::Endpoints;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

/// `GET /metrics`.
pub(super) async fn metrics(State(state): State<Endpoints>) -> Response {
    let text = state.metrics.metrics.render();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
