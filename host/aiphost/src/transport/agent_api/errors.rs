//! The Agent API door's errors: the one place where what the request, the engine and the
//! quotas refuse becomes an HTTP status and a JSON body `{"error": {"code", "message", …}}` —
//! the status and code of the refusal's kind, its facts (`refusal.rs`, the same AIP and A2A
//! send) beside them, so a wrong form answer names its `field` and `errors`.

use crate::model::InvalidField;
use crate::protocol::error_object::{error_object, invalid_field};
use crate::refusal::{self, Refusal};
use crate::task::EngineError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use crate::transport::kit::refusals::{self, HttpRefusal};
use axum::http::StatusCode;
use axum::response::Response;
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
        ApiError {
            status,
            error: error_object(code, facts),
        }
    }

    /// A refusal the kit said as HTTP.
    fn from_kit(r: HttpRefusal) -> Self {
        let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, r.code, r.facts)
    }

    /// A field of the request that is wrong: 400 `INVALID_REQUEST` naming it.
    pub(super) fn invalid(e: InvalidField) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            error: invalid_field(e),
        }
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
        refusals::respond(self.status.as_u16(), &self.error)
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
    ApiError::from_kit(refusals::caller(e))
}

/// A body refused before it was parsed: 415, 413/408/400, 400 (the kit's).
pub(crate) fn body(e: BodyRefused) -> ApiError {
    ApiError::from_kit(refusals::body(e, "Agent API"))
}

/// A refusal as this door says it: the status and code of its kind, its facts beside them.
fn of_refusal(refusal: Refusal) -> ApiError {
    ApiError::from_kit(refusals::of(refusal))
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
