//! What every Agent API request goes through first: its JSON body (through the kit, its content
//! type checked before it is read) and who is calling (the kit's caller: API keys, mTLS or an
//! open partner, as at every door); and whether the client takes a JSON answer.

use super::errors::{self, ApiError};
use super::state::AgentApiState;
use crate::transport::kit::caller::Caller;
use crate::transport::kit::json_body;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::http::{HeaderMap, header};
use serde_json::Value;

/// The media types an Agent API body may be sent as.
const MEDIA: &[&str] = &["application/json"];

/// The body as JSON, then the caller: a body that is not JSON is refused whoever sends it.
pub(super) async fn enter(
    app: &AgentApiState,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<(Value, Caller), ApiError> {
    let body = json_body::value(headers, body, MEDIA, app.http.max_body_bytes)
        .await
        .map_err(errors::body)?;
    let caller = app
        .callers
        .caller(agent, headers, peer)
        .map_err(errors::caller)?;
    Ok((body, caller))
}

/// Whether the client takes a JSON answer (`stream: false`'s): no `Accept`, or one naming
/// `application/json`, `application/*` or `*/*` without `q=0`. agentscope-runtime's
/// `HTTPAgentAPIClient` sends `Accept: text/event-stream` alone and reads only SSE, whatever its
/// request's `stream` says.
pub(super) fn accepts_json(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            !refused && matches!(media.as_str(), "application/json" | "application/*" | "*/*")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accepting(values: &[&'static str]) -> bool {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT, HeaderValue::from_static(v));
        }
        accepts_json(&headers)
    }

    #[test]
    fn json_is_taken_unless_the_client_names_only_other_types() {
        assert!(accepting(&[]));
        assert!(accepting(&["*/*"]));
        assert!(accepting(&["application/json"]));
        assert!(accepting(&["text/event-stream, application/json;q=0.5"]));
        assert!(accepting(&["text/event-stream", "Application/*"]));
        assert!(!accepting(&["text/event-stream"]));
        assert!(!accepting(&["text/event-stream, application/json;q=0"]));
        assert!(!accepting(&["text/html;q=0.9, text/event-stream"]));
    }
}
