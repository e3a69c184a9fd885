//! A2A errors (spec 3.3.2, 5.4): one [`A2aError`] per failure, rendered as a JSON-RPC error or
//! an HTTP+JSON (AIP-193) error, each carrying a `google.rpc.ErrorInfo` with the A2A reason.

use crate::jsonrpc::RpcError;
use serde_json::{Map, Value, json};

/// What went wrong, as A2A names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum A2aErrorKind {
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: not a valid JSON-RPC request (or an HTTP body that is not a request object).
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: a parameter is wrong; the metadata names it.
    InvalidParams,
    /// -32603: the host failed.
    Internal,
    /// -32001: no such task for this client.
    TaskNotFound,
    /// -32002: the task cannot be canceled (it has ended).
    TaskNotCancelable,
    /// -32003: push notifications are not offered.
    PushNotificationNotSupported,
    /// -32004: the operation (or this use of it) is not supported.
    UnsupportedOperation,
    /// -32005: a media type (or the request's `Content-Type`) is not accepted.
    ContentTypeNotSupported,
    /// -32006: the partner answered with something that is not a valid response.
    InvalidAgentResponse,
    /// -32007: there is no extended agent card.
    ExtendedAgentCardNotConfigured,
    /// -32009: the `A2A-Version` asked for is not served.
    VersionNotSupported,
    /// The request needs a credential and has none, or a wrong one (HTTP 401).
    Unauthenticated,
    /// The credential does not allow this (HTTP 403).
    PermissionDenied,
    /// A quota of the partner's tenant is reached: its request rate (try again after
    /// `retryAfterMs`) or its stored bytes (HTTP 429).
    ResourceExhausted,
    /// The host cannot take the request now (its disk is full): retry after `retryAfterMs`
    /// (HTTP 503; JSON-RPC -32000, as AIP says it).
    Unavailable,
}

impl A2aErrorKind {
    /// The JSON-RPC code. A2A leaves authentication and authorization errors to each server
    /// ("a custom error", spec 3.3.2): they take -32040 and -32041, and a quota -32042, clear of
    /// every code A2A and JSON-RPC assign.
    pub fn jsonrpc_code(self) -> i64 {
        use A2aErrorKind::*;
        match self {
            ParseError => -32700,
            InvalidRequest => -32600,
            MethodNotFound => -32601,
            InvalidParams => -32602,
            Internal => -32603,
            TaskNotFound => -32001,
            TaskNotCancelable => -32002,
            PushNotificationNotSupported => -32003,
            UnsupportedOperation => -32004,
            ContentTypeNotSupported => -32005,
            InvalidAgentResponse => -32006,
            ExtendedAgentCardNotConfigured => -32007,
            VersionNotSupported => -32009,
            Unauthenticated => -32040,
            PermissionDenied => -32041,
            ResourceExhausted => -32042,
            Unavailable => -32000,
        }
    }

    /// The HTTP status of the HTTP+JSON binding, and its canonical gRPC status name.
    ///
    /// The A2A errors follow the table of spec 5.4 (v1.0). The official Python SDK (1.3.0,
    /// `a2a.utils.errors.A2A_ERROR_MAPPING`) differs, and the spec wins: TaskNotCancelable is 409
    /// here (400 there), UnsupportedOperation, PushNotificationNotSupported and
    /// VersionNotSupported are `UNIMPLEMENTED` here (`FAILED_PRECONDITION` there),
    /// ContentTypeNotSupported is 415 (400) and InvalidAgentResponse 502 (500). Its client
    /// tells errors apart by the `ErrorInfo` reason, which both agree on, so it reads either.
    /// The errors A2A leaves to servers take their AIP-193 pairs: 401 `UNAUTHENTICATED`, 403
    /// `PERMISSION_DENIED`, and 429 `RESOURCE_EXHAUSTED` for a quota.
    pub fn http_status(self) -> (u16, &'static str) {
        use A2aErrorKind::*;
        match self {
            ParseError | InvalidRequest | InvalidParams => (400, "INVALID_ARGUMENT"),
            MethodNotFound => (404, "NOT_FOUND"),
            Internal => (500, "INTERNAL"),
            TaskNotFound => (404, "NOT_FOUND"),
            TaskNotCancelable => (409, "FAILED_PRECONDITION"),
            PushNotificationNotSupported | UnsupportedOperation | VersionNotSupported => {
                (400, "UNIMPLEMENTED")
            }
            ContentTypeNotSupported => (415, "INVALID_ARGUMENT"),
            InvalidAgentResponse => (502, "INTERNAL"),
            ExtendedAgentCardNotConfigured => (400, "FAILED_PRECONDITION"),
            Unauthenticated => (401, "UNAUTHENTICATED"),
            PermissionDenied => (403, "PERMISSION_DENIED"),
            ResourceExhausted => (429, "RESOURCE_EXHAUSTED"),
            Unavailable => (503, "UNAVAILABLE"),
        }
    }

    /// The `ErrorInfo.reason`: the A2A error's name in UPPER_SNAKE_CASE without `Error`.
    pub fn reason(self) -> &'static str {
        use A2aErrorKind::*;
        match self {
            ParseError => "PARSE_ERROR",
            InvalidRequest => "INVALID_REQUEST",
            MethodNotFound => "METHOD_NOT_FOUND",
            InvalidParams => "INVALID_PARAMS",
            Internal => "INTERNAL",
            TaskNotFound => "TASK_NOT_FOUND",
            TaskNotCancelable => "TASK_NOT_CANCELABLE",
            PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            VersionNotSupported => "VERSION_NOT_SUPPORTED",
            Unauthenticated => "UNAUTHENTICATED",
            PermissionDenied => "PERMISSION_DENIED",
            ResourceExhausted => "RESOURCE_EXHAUSTED",
            Unavailable => "UNAVAILABLE",
        }
    }

    /// The standard message.
    pub fn message(self) -> &'static str {
        use A2aErrorKind::*;
        match self {
            ParseError => "Invalid JSON payload",
            InvalidRequest => "Request payload validation error",
            MethodNotFound => "Method not found",
            InvalidParams => "Invalid parameters",
            Internal => "Internal error",
            TaskNotFound => "Task not found",
            TaskNotCancelable => "Task cannot be canceled",
            PushNotificationNotSupported => "Push notifications are not supported",
            UnsupportedOperation => "This operation is not supported",
            ContentTypeNotSupported => "Content type not supported",
            InvalidAgentResponse => "Invalid agent response",
            ExtendedAgentCardNotConfigured => "No extended agent card is configured",
            VersionNotSupported => "A2A version not supported",
            Unauthenticated => "Authentication required",
            PermissionDenied => "Permission denied",
            ResourceExhausted => "Quota exceeded",
            Unavailable => "Service unavailable, retry later",
        }
    }
}

/// An A2A error with what exactly was wrong (`ErrorInfo.metadata`: string values only). What
/// went wrong in words is always `reason`, beside the facts (`taskId`, `field`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct A2aError {
    /// What went wrong.
    pub kind: A2aErrorKind,
    /// Context: the field, the task id, the reason in words.
    pub metadata: Map<String, Value>,
}

impl A2aError {
    /// An error of `kind` with `metadata` (an object; other values are put under `detail`).
    pub fn new(kind: A2aErrorKind, metadata: Value) -> Self {
        let metadata = match metadata {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => Map::from_iter([("detail".to_string(), other)]),
        };
        A2aError { kind, metadata }
    }

    /// -32602 naming `field`.
    pub fn invalid_params(field: &str, reason: impl Into<String>) -> Self {
        A2aError::new(
            A2aErrorKind::InvalidParams,
            json!({"field": field, "reason": reason.into()}),
        )
    }

    /// TaskNotFound for `task_id`.
    pub fn task_not_found(task_id: &str) -> Self {
        A2aError::new(A2aErrorKind::TaskNotFound, json!({"taskId": task_id}))
    }

    /// The `google.rpc.ErrorInfo` of this error. Its metadata is a map of strings: other values
    /// are given as their compact JSON.
    pub fn error_info(&self) -> Value {
        let metadata: Map<String, Value> = self
            .metadata
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), Value::String(text))
            })
            .collect();
        json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
            "metadata": metadata,
        })
    }

    /// The JSON-RPC `error` object: `code`, `message`, `data: [ErrorInfo]`.
    pub fn to_jsonrpc(&self) -> Value {
        json!({
            "code": self.kind.jsonrpc_code(),
            "message": self.kind.message(),
            "data": [self.error_info()],
        })
    }

    /// A whole JSON-RPC error response to request `id`.
    pub fn to_jsonrpc_response(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": self.to_jsonrpc()})
    }

    /// The HTTP+JSON error: its status and the AIP-193 body.
    pub fn to_http(&self) -> (u16, Value) {
        let (status, name) = self.kind.http_status();
        (
            status,
            json!({"error": {
                "code": status,
                "status": name,
                "message": self.kind.message(),
                "details": [self.error_info()],
            }}),
        )
    }
}

impl From<aiphost_model::InvalidField> for A2aError {
    /// InvalidParams naming the field.
    fn from(e: aiphost_model::InvalidField) -> Self {
        A2aError::invalid_params(&e.field, e.reason)
    }
}

impl From<RpcError> for A2aError {
    /// The A2A error for an error of the engine (whose codes are AIP's): the task errors and
    /// the JSON-RPC ones keep their meaning; AIP's authentication codes become A2A's. AIP has
    /// no code of its own for a quota (it says -32009, with the `quota` in its data): here it
    /// is ResourceExhausted, not a denied permission. AIP's TaskNotFound says what happened as
    /// `details` (the AIP spec's example); here, as in every A2A error, that is `reason`.
    fn from(e: RpcError) -> Self {
        use A2aErrorKind::*;
        let mut data = e.data;
        if let Value::Object(map) = &mut data
            && !map.contains_key("reason")
            && map.get("details").is_some_and(Value::is_string)
            && let Some(details) = map.remove("details")
        {
            map.insert("reason".into(), details);
        }
        let kind = match e.code {
            -32700 => ParseError,
            -32600 => InvalidRequest,
            -32601 => MethodNotFound,
            -32602 => InvalidParams,
            -32001 => TaskNotFound,
            -32002 => TaskNotCancelable,
            -32003 => PushNotificationNotSupported,
            -32004 | -32007 => UnsupportedOperation,
            -32005 => ContentTypeNotSupported,
            -32006 => InvalidAgentResponse,
            -32008 | -32010 => Unauthenticated,
            -32009 if data.get("quota").is_some_and(Value::is_string) => ResourceExhausted,
            -32009 => PermissionDenied,
            -32000 => Unavailable,
            _ => Internal,
        };
        A2aError::new(kind, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn jsonrpc_and_http_shapes_carry_error_info() {
        let e = A2aError::task_not_found("t-1");
        let rpc = e.to_jsonrpc();
        assert_eq!(rpc["code"], -32001);
        assert_eq!(rpc["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(rpc["data"][0]["domain"], "a2a-protocol.org");
        assert_eq!(rpc["data"][0]["metadata"]["taskId"], "t-1");
        let (status, body) = e.to_http();
        assert_eq!(status, 404);
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(
            body["error"]["details"][0]["@type"],
            "type.googleapis.com/google.rpc.ErrorInfo"
        );
    }

    #[test]
    fn engine_errors_keep_their_meaning_and_metadata_is_strings() {
        let e: A2aError = RpcError::new(
            ErrorCode::ContentTypeNotSupported,
            json!({"mimeType": "image/png", "accepted": ["text/plain"]}),
        )
        .into();
        assert_eq!(e.kind, A2aErrorKind::ContentTypeNotSupported);
        let info = e.error_info();
        assert_eq!(info["metadata"]["mimeType"], "image/png");
        assert_eq!(info["metadata"]["accepted"], "[\"text/plain\"]");
        let auth: A2aError = RpcError::new(ErrorCode::AuthenticationRequired, json!({})).into();
        assert_eq!(auth.kind.http_status().0, 401);
        assert_eq!(auth.kind.jsonrpc_code(), -32040);
    }

    #[test]
    fn http_statuses_follow_the_spec_table() {
        use A2aErrorKind::*;
        // Spec 5.4, row by row.
        for (kind, code, status, name) in [
            (TaskNotFound, -32001, 404, "NOT_FOUND"),
            (TaskNotCancelable, -32002, 409, "FAILED_PRECONDITION"),
            (PushNotificationNotSupported, -32003, 400, "UNIMPLEMENTED"),
            (UnsupportedOperation, -32004, 400, "UNIMPLEMENTED"),
            (ContentTypeNotSupported, -32005, 415, "INVALID_ARGUMENT"),
            (InvalidAgentResponse, -32006, 502, "INTERNAL"),
            (
                ExtendedAgentCardNotConfigured,
                -32007,
                400,
                "FAILED_PRECONDITION",
            ),
            (VersionNotSupported, -32009, 400, "UNIMPLEMENTED"),
        ] {
            assert_eq!(kind.jsonrpc_code(), code, "{kind:?}");
            assert_eq!(kind.http_status(), (status, name), "{kind:?}");
        }
    }

    #[test]
    fn every_error_says_what_happened_as_reason() {
        let e: A2aError = RpcError::task_not_found("t-1").into();
        assert_eq!(e.kind, A2aErrorKind::TaskNotFound);
        assert_eq!(e.metadata["taskId"], "t-1");
        assert!(e.metadata["reason"].is_string(), "{e:?}");
        assert!(!e.metadata.contains_key("details"), "{e:?}");
        // A `details` that is not words stays what it is.
        let nested: A2aError =
            RpcError::new(ErrorCode::InternalError, json!({"details": {"host": "h"}})).into();
        assert_eq!(nested.metadata["details"]["host"], "h");
    }

    #[test]
    fn a_quota_is_resource_exhausted_and_a_denied_leader_is_not() {
        let rate: A2aError = RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({"reason": "the partner's tenant has reached its requestsPerSecond quota",
                   "quota": "requestsPerSecond", "limit": 1, "retryAfterMs": 800}),
        )
        .into();
        assert_eq!(rate.kind, A2aErrorKind::ResourceExhausted);
        assert_eq!(rate.kind.http_status(), (429, "RESOURCE_EXHAUSTED"));
        assert_eq!(rate.to_jsonrpc()["code"], -32042);
        assert_eq!(rate.error_info()["metadata"]["retryAfterMs"], "800");
        let denied: A2aError = RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({"reason": "this Leader may not call this partner", "leader": "x"}),
        )
        .into();
        assert_eq!(denied.kind, A2aErrorKind::PermissionDenied);
    }
}
