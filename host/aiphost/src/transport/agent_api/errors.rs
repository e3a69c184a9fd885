//! The Agent API door's errors: the one place where what the request, the engine and the
//! quotas refuse becomes an HTTP status and a JSON body `{"error": {"code", "message", …}}` —
//! the status and code of the refusal's kind, its facts (`refusal.rs`, the same AIP and A2A
//! send) beside them, so a wrong form answer names its `field` and `errors`.

use crate::model::InvalidField;
use crate::refusal::{self, Kind, Refusal};
use crate::task::EngineError;
use crate::transport::kit::body::BodyError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// A refused request: its status and its `error` object.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    error: Map<String, Value>,
}

impl ApiError {
    /// `status` with `code`, `message` and the other `facts` (an object's fields; its `reason`
    /// is the message).
    fn new(status: StatusCode, code: &str, facts: Value) -> Self {
        let mut error = Map::new();
        error.insert("code".into(), json!(code));
        if let Value::Object(facts) = facts {
            for (k, v) in facts {
                let key = if k == "reason" {
                    "message".to_string()
                } else {
                    k
                };
                error.insert(key, v);
            }
        }
        error.entry("message").or_insert_with(|| json!(code));
        ApiError { status, error }
    }

    /// A field of the request that is wrong: 400 `INVALID_REQUEST` naming it.
    pub(super) fn invalid(e: InvalidField) -> Self {
        let message = if e.field.is_empty() {
            e.reason.clone()
        } else {
            format!("{} {}", e.field, e.reason)
        };
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_REQUEST",
            json!({"field": e.field, "message": message}),
        )
    }

    /// No task of the session runs: 404 `NO_RUNNING_TASK`.
    pub(super) fn no_running_task(session_id: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NO_RUNNING_TASK",
            json!({
                "sessionId": session_id,
                "reason": format!("session {session_id:?} has no running task to stop"),
            }),
        )
    }

    /// The host failed: 500 `INTERNAL` with `reason`.
    pub(super) fn internal(reason: &str) -> Self {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            json!({"reason": reason}),
        )
    }

    /// Its HTTP status.
    pub(super) fn status(&self) -> StatusCode {
        self.status
    }

    /// The HTTP answer: the JSON body; `WWW-Authenticate` on a 401; `Retry-After` (whole
    /// seconds, as HTTP clients and proxies read it) on a quota or a full disk that says when.
    pub(crate) fn response(&self) -> Response {
        let body = json!({"error": self.error});
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        let retry_after_ms = self.error.get("retryAfterMs").and_then(Value::as_u64);
        if let (StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE, Some(ms)) =
            (self.status, retry_after_ms)
        {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(ms.div_ceil(1000).max(1)),
            );
        }
        response
    }
}

/// The error of an engine failure; store details stay in the log.
pub(crate) fn engine(e: EngineError) -> ApiError {
    of_refusal(refusal::engine(e))
}

/// The error of an engine failure on a turn's command, its `field` (or, for a content of a
/// type no skill takes, its `dataItem`) about the command's items (`dataItems[n]…`) said as the
/// request's path (`input[k].content[n]…`, `contents`): the items are the turn's contents one
/// for one, so a client sees which of its contents is wrong.
pub(crate) fn engine_on_turn(e: EngineError, contents: &str) -> ApiError {
    let mut refusal = refusal::engine(e);
    for key in ["field", "dataItem"] {
        if let Some(path) = refusal.facts.get_mut(key)
            && let Some(rest) = path.as_str().and_then(|f| f.strip_prefix("dataItems"))
        {
            *path = json!(format!("{contents}{rest}"));
        }
    }
    of_refusal(refusal)
}

/// The kit's refusal of a caller: 404 for a partner not hosted, else 401/403/500.
pub(crate) fn caller(e: CallerError) -> ApiError {
    match e {
        CallerError::NotHosted { .. } => ApiError::new(
            StatusCode::NOT_FOUND,
            "AGENT_NOT_FOUND",
            json!({"reason": e.to_string()}),
        ),
        CallerError::Refused(e) => of_refusal(refusal::leader_auth(&e)),
    }
}

/// A body refused before it was parsed: 415 (not JSON by its type), 413/408/400 (its limit,
/// its deadline, unreadable), 400 (not JSON).
pub(crate) fn body(e: BodyRefused) -> ApiError {
    match e {
        BodyRefused::ContentType { given } => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
            json!({
                "reason": "an Agent API request body must be sent as `Content-Type: application/json`",
                "contentType": given,
            }),
        ),
        BodyRefused::Read(e) => {
            let status = match e {
                BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                BodyError::TimedOut { .. } => StatusCode::REQUEST_TIMEOUT,
                BodyError::Read(_) => StatusCode::BAD_REQUEST,
            };
            ApiError::new(status, "INVALID_REQUEST", e.details())
        }
        e @ BodyRefused::NotJson(_) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_REQUEST",
            json!({"reason": e.to_string()}),
        ),
    }
}

/// A refusal as this door says it: the status and code of its kind, its facts beside them.
fn of_refusal(refusal: Refusal) -> ApiError {
    let (status, code) = match refusal.kind {
        Kind::InvalidParams => (StatusCode::BAD_REQUEST, "INVALID_REQUEST"),
        Kind::Unsupported => (StatusCode::BAD_REQUEST, "UNSUPPORTED"),
        Kind::ContentType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_CONTENT"),
        Kind::TaskNotFound => (StatusCode::NOT_FOUND, "TASK_NOT_FOUND"),
        Kind::NotCancelable => (StatusCode::CONFLICT, "NOT_CANCELABLE"),
        Kind::Unauthenticated | Kind::InvalidCredential => {
            (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED")
        }
        Kind::NotAllowed => (StatusCode::FORBIDDEN, "PERMISSION_DENIED"),
        Kind::Quota => (StatusCode::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED"),
        Kind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        Kind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
    };
    ApiError::new(status, code, refusal.facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_field_is_400_naming_it_and_a_reason_is_the_message() {
        let e = ApiError::invalid(InvalidField::new("input[0].role", "is wrong"));
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.error["code"], "INVALID_REQUEST");
        assert_eq!(e.error["field"], "input[0].role");
        let e = ApiError::new(StatusCode::NOT_FOUND, "X", json!({"reason": "why"}));
        assert_eq!(e.error["message"], "why");
        assert!(!e.error.contains_key("reason"));
    }
}
