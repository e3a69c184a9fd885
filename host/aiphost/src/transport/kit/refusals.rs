//! A chat door's refusals as HTTP: the status and code of each kind of refusal, the refusals of
//! a caller and of a body, and the answer that carries them (`Content-Type: application/json`,
//! `WWW-Authenticate` on a 401, `Retry-After` on a 429 or 503 that says when). The Agent API
//! and AIFlowy doors answer a refused request this way (their `errors.rs` build their bodies
//! with it; the MCP door's entry wraps the same in a JSON-RPC error, [`respond_json_rpc`]); AIP
//! and A2A have their own error envelopes.

use crate::refusal::{self, Kind, Refusal};
use crate::transport::kit::body::BodyError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A refusal as a chat door says it: its HTTP status, its code, its facts (`reason` is the
/// message).
#[derive(Debug)]
pub struct HttpRefusal {
    /// The HTTP status.
    pub status: u16,
    /// The `error.code`.
    pub code: &'static str,
    /// The facts beside the code.
    pub facts: Value,
}

/// The status and code of a refusal's kind.
pub fn status_and_code(kind: Kind) -> (u16, &'static str) {
    match kind {
        Kind::InvalidParams => (400, "INVALID_REQUEST"),
        Kind::Unsupported => (400, "UNSUPPORTED"),
        Kind::ContentType => (415, "UNSUPPORTED_CONTENT"),
        Kind::TaskNotFound => (404, "TASK_NOT_FOUND"),
        Kind::NotCancelable => (409, "NOT_CANCELABLE"),
        Kind::Unauthenticated | Kind::InvalidCredential => (401, "UNAUTHENTICATED"),
        Kind::NotAllowed => (403, "PERMISSION_DENIED"),
        Kind::Quota => (429, "RESOURCE_EXHAUSTED"),
        Kind::Unavailable => (503, "UNAVAILABLE"),
        Kind::Internal => (500, "INTERNAL"),
    }
}

/// A refusal with the status and code of its kind.
pub fn of(refusal: Refusal) -> HttpRefusal {
    let (status, code) = status_and_code(refusal.kind);
    HttpRefusal {
        status,
        code,
        facts: refusal.facts,
    }
}

/// The kit's refusal of a caller: 404 for a partner not hosted, else 401/403/500.
pub fn caller(e: CallerError) -> HttpRefusal {
    match e {
        CallerError::NotHosted { .. } => HttpRefusal {
            status: 404,
            code: "AGENT_NOT_FOUND",
            facts: json!({"reason": e.to_string()}),
        },
        CallerError::Refused(e) => of(refusal::leader_auth(&e)),
    }
}

/// A body refused before it was parsed: 415 (not JSON by its type; `door` names the door in
/// the message), 413/408/400 (its limit, its deadline, unreadable), 400 (not JSON).
pub fn body(e: BodyRefused, door: &str) -> HttpRefusal {
    match e {
        BodyRefused::ContentType { given } => HttpRefusal {
            status: 415,
            code: "UNSUPPORTED_MEDIA_TYPE",
            facts: json!({
                "reason": format!("an {door} request body must be sent as `Content-Type: application/json`"),
                "contentType": given,
            }),
        },
        BodyRefused::Read(e) => HttpRefusal {
            status: match e {
                BodyError::TooLarge { .. } => 413,
                BodyError::TimedOut { .. } => 408,
                BodyError::Read(_) => 400,
            },
            code: "INVALID_REQUEST",
            facts: e.details(),
        },
        e @ BodyRefused::NotJson(_) => HttpRefusal {
            status: 400,
            code: "INVALID_REQUEST",
            facts: json!({"reason": e.to_string()}),
        },
    }
}

/// The HTTP answer of a refusal whose JSON `body` is `{"error": error}`: `WWW-Authenticate` on
/// a 401; `Retry-After` (whole seconds, as HTTP clients and proxies read it, never 0) on a 429
/// or 503 whose `error.retryAfterMs` says when.
pub fn respond(status: u16, error: &serde_json::Map<String, Value>) -> Response {
    with_headers(status, json!({ "error": error }), error)
}

/// The same refusal for a JSON-RPC door that refuses before any request is read (the MCP
/// door's entry): the HTTP status and headers of [`respond`], the body a JSON-RPC error with
/// `id: null` — `-32600` for a 4xx, `-32603` for a 5xx —, its `message` the refusal's and its
/// `data` the whole `error` object (`code` and the facts).
pub fn respond_json_rpc(status: u16, error: &serde_json::Map<String, Value>) -> Response {
    let rpc_code = if status >= 500 { -32603 } else { -32600 };
    let message = error.get("message").cloned().unwrap_or(Value::Null);
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": rpc_code, "message": message, "data": error},
    });
    with_headers(status, body, error)
}

/// `body` answered with `status`, and the headers `error` calls for.
fn with_headers(status: u16, body: Value, error: &serde_json::Map<String, Value>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    let retry_after_ms = error.get("retryAfterMs").and_then(Value::as_u64);
    if let (StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE, Some(ms)) =
        (status, retry_after_ms)
    {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(ms.div_ceil(1000).max(1)),
        );
    }
    response
}
