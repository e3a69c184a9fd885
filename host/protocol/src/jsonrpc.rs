//! The JSON-RPC 2.0 envelope and the AIP error codes (spec section 5).

use aiphost_model::InvalidField;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt;

/// The error codes AIP uses: the JSON-RPC standard ones and AIP's own (spec 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: the body is not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: the params are wrong; `data.field` names where.
    InvalidParams,
    /// -32603: the host failed (also a group invitation it could not act on).
    InternalError,
    /// -32001: no such task for this agent.
    TaskNotFound,
    /// -32002: the task cannot be canceled.
    TaskNotCancelable,
    /// -32003: the notification style is not supported.
    NotificationNotSupported,
    /// -32004: the operation is not supported.
    UnsupportedOperation,
    /// -32005: a DataItem's type is one no skill accepts.
    ContentTypeNotSupported,
    /// -32006: the agent's response is of an invalid type.
    InvalidAgentResponse,
    /// -32007: group mode is not supported (or not over the invitation's protocol).
    GroupNotSupported,
    /// -32008: the request needs a credential and has none.
    AuthenticationRequired,
    /// -32009: the credential does not allow this.
    AuthorizationFailed,
    /// -32010: the access token is not valid.
    AccessTokenInvalid,
    /// -32000 (JSON-RPC's implementation-defined server errors; neither AIP nor A2A has one):
    /// the host cannot take the request now — a partner still compiling, a full disk — and
    /// says when to retry (`data.retryAfterMs`); over HTTP it is a 503 with `Retry-After`.
    Unavailable,
}

impl ErrorCode {
    /// The numeric code.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::TaskNotFound => -32001,
            ErrorCode::TaskNotCancelable => -32002,
            ErrorCode::NotificationNotSupported => -32003,
            ErrorCode::UnsupportedOperation => -32004,
            ErrorCode::ContentTypeNotSupported => -32005,
            ErrorCode::InvalidAgentResponse => -32006,
            ErrorCode::GroupNotSupported => -32007,
            ErrorCode::AuthenticationRequired => -32008,
            ErrorCode::AuthorizationFailed => -32009,
            ErrorCode::AccessTokenInvalid => -32010,
            ErrorCode::Unavailable => -32000,
        }
    }

    /// The message the spec's tables give for the code.
    pub fn message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Invalid JSON payload",
            ErrorCode::InvalidRequest => "Invalid JSON-RPC Request",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid method parameters",
            ErrorCode::InternalError => "Internal server error",
            ErrorCode::TaskNotFound => "Task not found",
            ErrorCode::TaskNotCancelable => "Task cannot be canceled",
            ErrorCode::NotificationNotSupported => "Notification is not supported",
            ErrorCode::UnsupportedOperation => "This operation is not supported",
            ErrorCode::ContentTypeNotSupported => "Incompatible content types",
            ErrorCode::InvalidAgentResponse => "Invalid agent response type",
            ErrorCode::GroupNotSupported => "Group communication is not supported",
            ErrorCode::AuthenticationRequired => "Authentication required",
            ErrorCode::AuthorizationFailed => "Authorization failed",
            ErrorCode::AccessTokenInvalid => "Invalid access token",
            ErrorCode::Unavailable => "Service unavailable, retry later",
        }
    }
}

/// A JSON-RPC error object, always with a `data` that says what exactly was wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcError {
    /// The numeric code ([`ErrorCode::code`]).
    pub code: i64,
    /// The spec's message for the code ([`ErrorCode::message`]).
    pub message: String,
    /// What exactly was wrong, e.g. `{"field", "reason"}` for -32602.
    pub data: Value,
}

impl RpcError {
    /// An error of `code` with `data`.
    pub fn new(code: ErrorCode, data: Value) -> Self {
        RpcError {
            code: code.code(),
            message: code.message().to_string(),
            data,
        }
    }

    /// -32602 naming the offending field (a dotted path such as `params.message.taskId`).
    pub fn invalid_params(field: &str, reason: impl Into<String>) -> Self {
        RpcError::new(
            ErrorCode::InvalidParams,
            json!({"field": field, "reason": reason.into()}),
        )
    }

    /// -32600 with a reason.
    pub fn invalid_request(reason: impl Into<String>) -> Self {
        RpcError::new(ErrorCode::InvalidRequest, json!({"reason": reason.into()}))
    }

    /// -32603 with a reason. Internal details that could help an attacker stay in the log.
    pub fn internal(reason: impl Into<String>) -> Self {
        RpcError::new(ErrorCode::InternalError, json!({"reason": reason.into()}))
    }

    /// -32001 for `task_id`.
    pub fn task_not_found(task_id: &str) -> Self {
        RpcError::new(
            ErrorCode::TaskNotFound,
            json!({"taskId": task_id, "details": "no task with this id exists for this agent"}),
        )
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.message, self.data)
    }
}

impl std::error::Error for RpcError {}

impl From<InvalidField> for RpcError {
    /// -32602 naming the field.
    fn from(e: InvalidField) -> Self {
        RpcError::invalid_params(&e.field, e.reason)
    }
}

/// A request whose envelope is valid. `params` is left for the method to read.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// `null` when the request had none (a JSON-RPC notification; we answer anyway, over HTTP).
    pub id: Value,
    /// The method's name, never empty.
    pub method: String,
    /// An object or an array; `{}` when absent or `null`.
    pub params: Value,
}

/// A request that could not be read, with the id to answer with (`null` when it is unknown).
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// The request's id, to answer with.
    pub id: Value,
    /// Why the request was rejected.
    pub error: RpcError,
}

/// Read a JSON-RPC request body.
///
/// ```
/// use aiphost_protocol::jsonrpc::parse_request;
/// let req = parse_request(br#"{"jsonrpc":"2.0","method":"rpc","id":7,"params":{}}"#).unwrap();
/// assert_eq!(req.method, "rpc");
/// let bad = parse_request(b"{nope").unwrap_err();
/// assert_eq!(bad.error.code, -32700);
/// ```
pub fn parse_request(body: &[u8]) -> Result<Request, Rejected> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Rejected {
        id: Value::Null,
        error: RpcError::new(
            ErrorCode::ParseError,
            json!({"reason": e.to_string(), "line": e.line(), "column": e.column()}),
        ),
    })?;
    let Value::Object(mut obj) = value else {
        let reason = if value.is_array() {
            "batch requests are not supported; send one JSON-RPC request object per HTTP request"
        } else {
            "the request must be a JSON object"
        };
        return Err(Rejected {
            id: Value::Null,
            error: RpcError::invalid_request(reason),
        });
    };
    let id = match obj.remove("id") {
        None | Some(Value::Null) => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => {
            return Err(Rejected {
                id: Value::Null,
                error: RpcError::invalid_request("`id` must be a string, a number or null"),
            });
        }
    };
    let reject = |reason: &str| Rejected {
        id: id.clone(),
        error: RpcError::invalid_request(reason),
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(_) => return Err(reject("`jsonrpc` must be \"2.0\"")),
        None => return Err(reject("`jsonrpc` is missing; it must be \"2.0\"")),
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(_) => return Err(reject("`method` must be a non-empty string")),
        None => return Err(reject("`method` is missing")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return Err(reject("`params` must be an object or an array")),
    };
    Ok(Request { id, method, params })
}

/// A success response.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A success response borrowing its result, which a door serializes straight to bytes
/// ([`Success::to_bytes`]): no [`Value`] is built for a result that has a wire type.
#[derive(Serialize)]
pub struct Success<'a, T> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: T,
}

impl<'a, T: Serialize> Success<'a, T> {
    /// The response to the request `id` with `result`.
    pub fn new(id: &'a Value, result: T) -> Self {
        Success {
            jsonrpc: "2.0",
            id,
            result,
        }
    }

    /// Its bytes. A result that cannot be serialized (a map with keys that are not strings:
    /// none of the wire types has one) is answered as an internal error.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_else(|e| {
            failure(
                self.id,
                &RpcError::internal(format!("the result could not be written: {e}")),
            )
            .to_string()
            .into_bytes()
        })
    }
}

/// An error response.
pub fn failure(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(body: &str) -> (Value, i64) {
        let r = parse_request(body.as_bytes()).unwrap_err();
        (r.id, r.error.code)
    }

    #[test]
    fn envelope_errors() {
        assert_eq!(code_of("not json"), (Value::Null, -32700));
        assert_eq!(code_of("[1,2]"), (Value::Null, -32600));
        assert_eq!(code_of("42"), (Value::Null, -32600));
        assert_eq!(
            code_of(r#"{"jsonrpc":"1.0","method":"rpc","id":"a"}"#),
            (json!("a"), -32600)
        );
        assert_eq!(code_of(r#"{"jsonrpc":"2.0","id":3}"#), (json!(3), -32600));
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","method":5,"id":3}"#),
            (json!(3), -32600)
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","method":"rpc","id":{}}"#),
            (Value::Null, -32600)
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","method":"rpc","id":1,"params":"x"}"#),
            (json!(1), -32600)
        );
    }

    #[test]
    fn every_code_has_the_spec_number() {
        let codes = [
            (ErrorCode::ParseError, -32700),
            (ErrorCode::InvalidRequest, -32600),
            (ErrorCode::MethodNotFound, -32601),
            (ErrorCode::InvalidParams, -32602),
            (ErrorCode::InternalError, -32603),
            (ErrorCode::TaskNotFound, -32001),
            (ErrorCode::TaskNotCancelable, -32002),
            (ErrorCode::NotificationNotSupported, -32003),
            (ErrorCode::UnsupportedOperation, -32004),
            (ErrorCode::ContentTypeNotSupported, -32005),
            (ErrorCode::InvalidAgentResponse, -32006),
            (ErrorCode::GroupNotSupported, -32007),
            (ErrorCode::AuthenticationRequired, -32008),
            (ErrorCode::AuthorizationFailed, -32009),
            (ErrorCode::AccessTokenInvalid, -32010),
            (ErrorCode::Unavailable, -32000),
        ];
        for (code, n) in codes {
            assert_eq!(code.code(), n);
            assert!(!code.message().is_empty());
        }
    }

    #[test]
    fn responses() {
        let ok = success(&json!("1"), json!({"x": 1}));
        assert_eq!(ok, json!({"jsonrpc":"2.0","id":"1","result":{"x":1}}));
        let err = failure(&Value::Null, &RpcError::task_not_found("t"));
        assert_eq!(err["error"]["code"], -32001);
        assert_eq!(err["error"]["data"]["taskId"], "t");
    }
}
