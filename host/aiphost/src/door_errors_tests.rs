//! Every engine error as each door answers it, byte for byte: the JSON-RPC error of the AIP
//! doors (code, message, data) and the A2A error (kind and metadata). The expectations are what
//! the host answered when the engine still built JSON-RPC errors itself (issue 30): an A2A
//! error then was the AIP one turned into A2A by `A2aError::from(RpcError)`, so each A2A
//! expectation is that conversion of the literal AIP one.
//!
//! The chat doors (issue 32) answer the same refusals as HTTP statuses and JSON bodies (the
//! kit's `refusals.rs`): the table ([`AGENT_API`]) pins the status and code of each kind of
//! refusal, and their bodies carry the refusal's facts (`refusal.rs`, which AIP's `data` and
//! A2A's metadata carry too), its `reason` as `message`. The Agent API door is pinned in full;
//! the AIFlowy door answers the same table and the same bodies.
//!
//! The MCP door (issue 33) answers them in two places: inside a `tools/call` as an `isError`
//! result whose `structuredContent.error` is the Agent API's error object (the start's
//! `dataItems[n]` said as `arguments[n]`), the host's own fault as JSON-RPC -32603; before a
//! request is read (its entry) as the Agent API's HTTP status and headers with a JSON-RPC error
//! body (`id: null`, -32600 for a 4xx, -32603 for a 5xx, `data` the error object).

use crate::aip_error;
use crate::model::depth::TooDeep;
use crate::model::{CommandKind, InvalidField, TaskState};
use crate::net_policy::TargetError;
use crate::protocol::RpcError;
use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::quota::QuotaError;
use crate::refusal::{self, Kind};
use crate::store::StoreError;
use crate::task::{ConfigRef, EngineError};
use crate::transport::a2a::errors as a2a_errors;
use crate::transport::agent_api::errors as agent_api_errors;
use crate::transport::aiflowy::errors as aiflowy_errors;
use crate::transport::kit::body::BodyError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use crate::transport::mcp::errors as mcp_errors;
use axum::http::header;
use axum::response::Response;
use serde_json::{Value, json};
use std::time::Duration;

/// A builder of the error (errors are not `Clone`), today's JSON-RPC error, today's A2A kind.
type Case = (fn() -> EngineError, Value, A2aErrorKind);

fn cases() -> Vec<Case> {
    use A2aErrorKind as K;
    vec![
        (
            || EngineError::task_not_found("t-1"),
            json!({"code": -32001, "message": "Task not found", "data": {
                "taskId": "t-1", "details": "no task with this id exists for this agent"}}),
            K::TaskNotFound,
        ),
        (
            || EngineError::EventsGone {
                task_id: "t-1".into(),
                last_event_seq: 3,
                oldest_available_seq: Some(7),
            },
            json!({"code": -32001, "message": "Task not found", "data": {
                "taskId": "t-1", "lastEventSeq": 3, "oldestAvailableSeq": 7,
                "details": "the events after lastEventSeq are no longer stored (retention); get the task instead"}}),
            K::TaskNotFound,
        ),
        (
            || EngineError::EventsGone {
                task_id: "t-1".into(),
                last_event_seq: 3,
                oldest_available_seq: None,
            },
            json!({"code": -32001, "message": "Task not found", "data": {
                "taskId": "t-1", "lastEventSeq": 3, "oldestAvailableSeq": null,
                "details": "the events after lastEventSeq are no longer stored (retention); get the task instead"}}),
            K::TaskNotFound,
        ),
        (
            || EngineError::ReStreamNotStreamed,
            json!({"code": -32004, "message": "This operation is not supported", "data": {
                "command": "re-stream",
                "reason": "re-stream reconnects a stream; send it with the `stream` method"}}),
            K::UnsupportedOperation,
        ),
        (
            || EngineError::TaskEnded {
                task_id: "t-1".into(),
                state: TaskState::Completed,
                command: CommandKind::Cancel,
            },
            json!({"code": -32002, "message": "Task cannot be canceled", "data": {
                "taskId": "t-1", "state": "completed", "command": "cancel",
                "reason": "the task has ended; an ended task does not change again"}}),
            K::TaskNotCancelable,
        ),
        (
            || EngineError::TaskEnded {
                task_id: "t-1".into(),
                state: TaskState::Canceled,
                command: CommandKind::Continue,
            },
            json!({"code": -32004, "message": "This operation is not supported", "data": {
                "taskId": "t-1", "state": "canceled", "command": "continue",
                "reason": "the task has ended; an ended task does not change again"}}),
            K::UnsupportedOperation,
        ),
        (
            || EngineError::OtherSession {
                task_id: "t-1".into(),
                session_id: "s-2".into(),
                task_session_id: Some("s-1".into()),
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "sessionId", "reason": "the command names another session than its task's",
                "taskId": "t-1", "sessionId": "s-2", "taskSessionId": "s-1"}}),
            K::InvalidParams,
        ),
        (
            || EngineError::OtherSession {
                task_id: "t-1".into(),
                session_id: "s-2".into(),
                task_session_id: None,
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "sessionId", "reason": "the command names another session than its task's",
                "taskId": "t-1", "sessionId": "s-2", "taskSessionId": null}}),
            K::InvalidParams,
        ),
        (
            || {
                InvalidField::new(
                    "commandParams.lastEventSeq",
                    "must be a non-negative whole number or null",
                )
                .into()
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "commandParams.lastEventSeq",
                "reason": "must be a non-negative whole number or null"}}),
            K::InvalidParams,
        ),
        (
            || {
                EngineError::TooDeep(TooDeep {
                    path: "commandParams.a.b".into(),
                })
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "commandParams.a.b",
                "reason": "commandParams.a.b nests deeper than 64 levels (the most the host stores)",
                "maxDepth": 64}}),
            K::InvalidParams,
        ),
        (
            || EngineError::ContentTypeNotAccepted {
                item: 1,
                mime_type: "image/png".into(),
                accepted: vec!["application/json".into(), "text/plain".into()],
            },
            json!({"code": -32005, "message": "Incompatible content types", "data": {
                "dataItem": "dataItems[1]", "mimeType": "image/png",
                "accepted": ["application/json", "text/plain"]}}),
            K::ContentTypeNotSupported,
        ),
        (
            || EngineError::NotTheLeader {
                sender_id: "other".into(),
                leader: "me".into(),
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "the command's senderId is not the authenticated Leader",
                "senderId": "other", "authenticated": "me"}}),
            K::PermissionDenied,
        ),
        (
            || EngineError::TooManyLiveTasks {
                task_id: "t-1".into(),
                limit: 2,
                live: 2,
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "the Leader has as many tasks with this partner that have not ended as it may; complete or cancel some first",
                "quota": "maxLiveTasks", "limit": 2, "liveTasks": 2, "taskId": "t-1"}}),
            K::ResourceExhausted,
        ),
        (
            || EngineError::TooManyConfigs {
                task_id: "t-1".into(),
                limit: 16,
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "the task has as many notification configs as it may; replace one by its id or delete one",
                "quota": "notificationConfigsPerTask", "limit": 16, "taskId": "t-1"}}),
            K::ResourceExhausted,
        ),
        (
            || EngineError::TooManyWaitingConfigs {
                task_id: "t-1".into(),
                limit: 1024,
                ttl_seconds: 600,
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "this namespace holds as many notification configs of tasks that have not started as it may; start those tasks, delete configs, or wait until they expire (waitingConfigTtlSeconds after they were made)",
                "quota": "waitingNotificationConfigs", "limit": 1024, "taskId": "t-1",
                "waitingConfigTtlSeconds": 600}}),
            K::ResourceExhausted,
        ),
        (
            || EngineError::UnknownConfig {
                task_id: "t-1".into(),
                config_id: "c-9".into(),
                named_by: ConfigRef::Replace,
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "params.id",
                "reason": "no notification config \"c-9\" for task \"t-1\"; omit the id to create one"}}),
            K::InvalidParams,
        ),
        (
            || EngineError::UnknownConfig {
                task_id: "t-1".into(),
                config_id: "c-9".into(),
                named_by: ConfigRef::Lookup,
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "params.notificationConfigId",
                "reason": "no notification config \"c-9\" for task \"t-1\""}}),
            K::InvalidParams,
        ),
        (
            || EngineError::UnknownConfig {
                task_id: "t-1".into(),
                config_id: "c-9".into(),
                named_by: ConfigRef::Subscription,
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "commandParams.notificationConfigId",
                "reason": "no notification config \"c-9\" for task \"t-1\"; make one with notification/set"}}),
            K::InvalidParams,
        ),
        (
            || EngineError::TargetRefused {
                with_command: false,
                reason: TargetError::Scheme("ftp".into()),
            },
            json!({"code": -32602, "message": "Invalid method parameters", "data": {
                "field": "params.url",
                "reason": "the scheme must be http or https, not \"ftp\""}}),
            K::InvalidParams,
        ),
        (
            || EngineError::PartnerVersionUnavailable { version: 3 },
            json!({"code": -32603, "message": "Internal server error", "data": {
                "reason": "version 3 of the partner, which this task runs on, cannot be loaded"}}),
            K::Internal,
        ),
        (
            || EngineError::Internal("get was not answered"),
            json!({"code": -32603, "message": "Internal server error", "data": {
                "reason": "get was not answered"}}),
            K::Internal,
        ),
        (
            || {
                EngineError::Store(StoreError::Full {
                    path: "/data".into(),
                    free: 10,
                    reserve: 100,
                })
            },
            json!({"code": -32000, "message": "Service unavailable, retry later", "data": {
                "error": "store-full",
                "reason": "the host's disk is full; nothing was stored, retry later",
                "retryable": true, "retryAfterMs": 5000, "freeBytes": 10, "reserveBytes": 100}}),
            K::Unavailable,
        ),
        (
            || EngineError::Store(StoreError::Corrupt("bad bytes".into())),
            json!({"code": -32603, "message": "Internal server error", "data": {
                "reason": "the host could not store the task; the command may not have taken effect, retry it"}}),
            K::Internal,
        ),
        (
            || {
                EngineError::Quota(QuotaError::RequestRate {
                    tenant: "acme".into(),
                    limit: 1,
                    retry_after_ms: 800,
                })
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "the partner's tenant has reached its requestsPerSecond quota",
                "tenant": "acme", "quota": "requestsPerSecond", "limit": 1, "retryAfterMs": 800}}),
            K::ResourceExhausted,
        ),
        (
            || {
                EngineError::Quota(QuotaError::StoredBytes {
                    tenant: "acme".into(),
                    limit: 100,
                    stored: 120,
                })
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "the partner's tenant has reached its maxStoredBytes quota",
                "tenant": "acme", "quota": "maxStoredBytes", "limit": 100, "storedBytes": 120}}),
            K::ResourceExhausted,
        ),
        (
            || {
                EngineError::Quota(QuotaError::PartnerRate {
                    agent: "p".into(),
                    limit: 5,
                    retry_after_ms: 200,
                })
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "the partner has reached the rate of requests the operator allows it (5 a second)",
                "agent": "p", "quota": "requestsPerSecond", "limit": 5, "retryAfterMs": 200}}),
            K::ResourceExhausted,
        ),
    ]
}

#[test]
fn the_aip_doors_answer_engine_errors_as_before() {
    for (build, expected, _) in cases() {
        let e = build();
        let said = format!("{e:?}");
        let rpc = serde_json::to_value(aip_error::engine(e)).unwrap();
        assert_eq!(rpc, expected, "{said}");
    }
}

#[test]
fn the_a2a_door_answers_engine_errors_as_before() {
    for (build, expected, kind) in cases() {
        let e = build();
        let said = format!("{e:?}");
        let today = RpcError {
            code: expected["code"].as_i64().unwrap(),
            message: expected["message"].as_str().unwrap().to_string(),
            data: expected["data"].clone(),
        };
        let a2a = a2a_errors::engine(e);
        assert_eq!(a2a.kind, kind, "{said}");
        assert_eq!(a2a, A2aError::from(today), "{said}");
    }
}

/// A config sent with an A2A message is refused at the field of the message it was in, as the
/// door named it when it checked the URL itself.
#[test]
fn a_refused_target_sent_with_a_message_names_the_message_field() {
    let e = EngineError::TargetRefused {
        with_command: true,
        reason: TargetError::NoHost,
    };
    assert_eq!(
        a2a_errors::engine(e),
        A2aError::invalid_params(
            "configuration.taskPushNotificationConfig.url",
            "the URL has no host"
        )
    );
}

/// A Leader's authentication refused, as each door answered it before (the A2A error was the
/// AIP one turned into A2A).
#[test]
fn both_doors_answer_a_refused_authentication_as_before() {
    use crate::tenant::{LeaderAuthError, Scheme};
    let cases: Vec<(LeaderAuthError, Value, A2aErrorKind)> = vec![
        (
            LeaderAuthError::Missing {
                scheme: Scheme::Bearer,
                reason: "send an API key",
            },
            json!({"code": -32008, "message": "Authentication required", "data": {
                "reason": "send an API key", "scheme": "bearer"}}),
            A2aErrorKind::Unauthenticated,
        ),
        (
            LeaderAuthError::Invalid {
                scheme: Scheme::Mtls,
                reason: "unknown key",
            },
            json!({"code": -32010, "message": "Invalid access token", "data": {
                "reason": "unknown key", "scheme": "mtls"}}),
            A2aErrorKind::Unauthenticated,
        ),
        (
            LeaderAuthError::NotAllowed {
                leader: "L".into(),
                reason: "not on the list",
            },
            json!({"code": -32009, "message": "Authorization failed", "data": {
                "reason": "not on the list", "leader": "L"}}),
            A2aErrorKind::PermissionDenied,
        ),
        (
            LeaderAuthError::Unavailable,
            json!({"code": -32603, "message": "Internal server error", "data": {
                "reason": "the host could not check the API key; retry"}}),
            A2aErrorKind::Internal,
        ),
    ];
    for (e, expected, kind) in cases {
        let rpc = aip_error::leader_auth(&e);
        assert_eq!(serde_json::to_value(&rpc).unwrap(), expected, "{e:?}");
        let a2a = a2a_errors::leader_auth(&e);
        assert_eq!(a2a.kind, kind, "{e:?}");
        assert_eq!(a2a, A2aError::from(rpc), "{e:?}");
    }
}

/// The Agent API door's answer to each kind of refusal: HTTP status and `error.code`.
const AGENT_API: &[(Kind, u16, &str)] = &[
    (Kind::InvalidParams, 400, "INVALID_REQUEST"),
    (Kind::Unsupported, 400, "UNSUPPORTED"),
    (Kind::ContentType, 415, "UNSUPPORTED_CONTENT"),
    (Kind::TaskNotFound, 404, "TASK_NOT_FOUND"),
    (Kind::NotCancelable, 409, "NOT_CANCELABLE"),
    (Kind::Unauthenticated, 401, "UNAUTHENTICATED"),
    (Kind::InvalidCredential, 401, "UNAUTHENTICATED"),
    (Kind::NotAllowed, 403, "PERMISSION_DENIED"),
    (Kind::Quota, 429, "RESOURCE_EXHAUSTED"),
    (Kind::Unavailable, 503, "UNAVAILABLE"),
    (Kind::Internal, 500, "INTERNAL"),
];

fn agent_api_row(kind: Kind) -> (u16, &'static str) {
    let row = AGENT_API.iter().find(|(k, _, _)| *k == kind);
    let (_, status, code) = row.unwrap_or_else(|| panic!("no Agent API row for {kind:?}"));
    (*status, code)
}

/// An Agent API answer as a test reads it: status, body, and the headers that say more.
struct Answer {
    status: u16,
    body: Value,
    retry_after: Option<String>,
    www_authenticate: Option<String>,
}

async fn answer(response: Response) -> Answer {
    let status = response.status().as_u16();
    let header = |name: header::HeaderName| {
        let value = response.headers().get(name);
        value.map(|v| v.to_str().unwrap().to_string())
    };
    let retry_after = header(header::RETRY_AFTER);
    let www_authenticate = header(header::WWW_AUTHENTICATE);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "application/json",
        "every refusal is JSON"
    );
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    Answer {
        status,
        body: serde_json::from_slice(&bytes).unwrap(),
        retry_after,
        www_authenticate,
    }
}

/// The Agent API body of a refusal with `facts`: the code, then the facts, `reason` said as
/// `message` (the code when there is none).
fn agent_api_body(code: &str, facts: &Value) -> Value {
    let mut error = serde_json::Map::new();
    error.insert("code".into(), json!(code));
    for (k, v) in facts.as_object().unwrap() {
        let key = if k == "reason" { "message" } else { k };
        error.insert(key.into(), v.clone());
    }
    error.entry("message").or_insert_with(|| json!(code));
    json!({ "error": error })
}

#[tokio::test]
async fn the_agent_api_door_answers_engine_errors_by_their_kind() {
    for (build, expected, _) in cases() {
        let said = format!("{:?}", build());
        let refusal = refusal::engine(build());
        let (status, code) = agent_api_row(refusal.kind);
        let got = answer(agent_api_errors::engine(build()).response()).await;
        assert_eq!(got.status, status, "{said}");
        assert_eq!(got.body, agent_api_body(code, &refusal.facts), "{said}");
        // A quota or a full disk that says when to retry says it as HTTP does too, in whole
        // seconds rounded up; nothing else does.
        let retry = expected["data"]["retryAfterMs"]
            .as_u64()
            .filter(|_| matches!(status, 429 | 503))
            .map(|ms| ms.div_ceil(1000).max(1).to_string());
        assert_eq!(got.retry_after, retry, "{said}");
        assert_eq!(got.www_authenticate, None, "{said}");
    }
}

/// The table holds every kind, and the engine errors above reach each kind but the ones only
/// authentication makes (pinned below).
#[test]
fn the_agent_api_table_has_every_kind() {
    let reached: Vec<Kind> = cases()
        .into_iter()
        .map(|(build, _, _)| refusal::engine(build()).kind)
        .collect();
    for (kind, _, _) in AGENT_API {
        let by_auth = matches!(kind, Kind::Unauthenticated | Kind::InvalidCredential);
        assert!(
            reached.contains(kind) || by_auth,
            "no case reaches {kind:?}"
        );
    }
    assert_eq!(AGENT_API.len(), 11);
}

#[tokio::test]
async fn the_agent_api_door_answers_retry_after_in_seconds() {
    // 800 ms is asked as 1 s (never 0: a client would retry at once), 5 s as 5.
    let quota = || {
        EngineError::Quota(QuotaError::RequestRate {
            tenant: "acme".into(),
            limit: 1,
            retry_after_ms: 800,
        })
    };
    let got = answer(agent_api_errors::engine(quota()).response()).await;
    assert_eq!((got.status, got.retry_after.as_deref()), (429, Some("1")));
    let full = || {
        EngineError::Store(StoreError::Full {
            path: "/data".into(),
            free: 10,
            reserve: 100,
        })
    };
    let got = answer(agent_api_errors::engine(full()).response()).await;
    assert_eq!((got.status, got.retry_after.as_deref()), (503, Some("5")));
    assert_eq!(got.body["error"]["retryAfterMs"], 5000);
}

/// A Leader's authentication refused: 401 with `WWW-Authenticate: Bearer` (no credential, or
/// one not valid), 403 (a Leader the partner does not take), 500 (the host could not check).
#[tokio::test]
async fn the_agent_api_door_answers_a_refused_authentication() {
    use crate::tenant::{LeaderAuthError, Scheme};
    let cases: Vec<(LeaderAuthError, u16, Value)> = vec![
        (
            LeaderAuthError::Missing {
                scheme: Scheme::Bearer,
                reason: "send an API key",
            },
            401,
            json!({"error": {"code": "UNAUTHENTICATED", "message": "send an API key", "scheme": "bearer"}}),
        ),
        (
            LeaderAuthError::Invalid {
                scheme: Scheme::Mtls,
                reason: "unknown key",
            },
            401,
            json!({"error": {"code": "UNAUTHENTICATED", "message": "unknown key", "scheme": "mtls"}}),
        ),
        (
            LeaderAuthError::NotAllowed {
                leader: "L".into(),
                reason: "not on the list",
            },
            403,
            json!({"error": {"code": "PERMISSION_DENIED", "message": "not on the list", "leader": "L"}}),
        ),
        (
            LeaderAuthError::Unavailable,
            500,
            json!({"error": {"code": "INTERNAL", "message": "the host could not check the API key; retry"}}),
        ),
    ];
    for (e, status, body) in cases {
        let said = format!("{e:?}");
        let got = answer(agent_api_errors::caller(CallerError::Refused(e)).response()).await;
        assert_eq!((got.status, &got.body), (status, &body), "{said}");
        let challenge = (status == 401).then(|| "Bearer".to_string());
        assert_eq!(got.www_authenticate, challenge, "{said}");
        assert_eq!(got.retry_after, None, "{said}");
    }
}

/// A partner unpublished after the gate let the request in: 404, as the gate answers one never
/// hosted.
#[tokio::test]
async fn the_agent_api_door_answers_a_partner_not_hosted_404() {
    let e = CallerError::NotHosted {
        agent: "gone".into(),
    };
    let got = answer(agent_api_errors::caller(e).response()).await;
    assert_eq!(got.status, 404);
    assert_eq!(
        got.body,
        json!({"error": {"code": "AGENT_NOT_FOUND",
            "message": "no agent \"gone\" is hosted here; GET /agents lists them"}})
    );
}

/// A body refused before it was parsed: 415 (not sent as JSON), 413 (over the limit), 408 (too
/// slow), 400 (unreadable, or not JSON), each naming the limit or timeout it ran into.
#[tokio::test]
async fn the_agent_api_door_answers_refused_bodies() {
    let not_json = serde_json::from_slice::<Value>(b"{").unwrap_err();
    let cases: Vec<(BodyRefused, u16, Value)> = vec![
        (
            BodyRefused::ContentType {
                given: Some("text/plain".into()),
            },
            415,
            json!({"code": "UNSUPPORTED_MEDIA_TYPE", "contentType": "text/plain",
                "message": "an Agent API request body must be sent as `Content-Type: application/json`"}),
        ),
        (
            BodyRefused::Read(BodyError::TooLarge { limit: 1024 }),
            413,
            json!({"code": "INVALID_REQUEST", "limitBytes": 1024,
                "message": "the request body is larger than the 1024 bytes this host accepts here"}),
        ),
        (
            BodyRefused::Read(BodyError::TimedOut {
                timeout: Duration::from_millis(1500),
            }),
            408,
            json!({"code": "INVALID_REQUEST", "timeoutMs": 1500,
                "message": "the request body did not arrive within 1500 ms"}),
        ),
        (
            BodyRefused::Read(BodyError::Read("reset".into())),
            400,
            json!({"code": "INVALID_REQUEST",
                "message": "the request body could not be read: reset"}),
        ),
        (
            BodyRefused::NotJson(not_json),
            400,
            json!({"code": "INVALID_REQUEST",
                "message": "the body is not JSON: EOF while parsing an object at line 1 column 1"}),
        ),
    ];
    for (e, status, error) in cases {
        let said = format!("{e:?}");
        let got = answer(agent_api_errors::body(e).response()).await;
        assert_eq!(got.status, status, "{said}");
        assert_eq!(got.body, json!({ "error": error }), "{said}");
    }
}

/// A turn's refused content is named by the request's own path, whether the refusal names a
/// `field` (a wrong form answer) or a `dataItem` (a type no skill takes).
#[tokio::test]
async fn the_agent_api_door_names_a_turns_contents_by_the_requests_path() {
    let wrong_type = EngineError::ContentTypeNotAccepted {
        item: 1,
        mime_type: "image/png".into(),
        accepted: vec!["text/plain".into()],
    };
    let got =
        answer(agent_api_errors::engine_on_turn(wrong_type, "input[2].content").response()).await;
    assert_eq!(got.status, 415);
    assert_eq!(got.body["error"]["dataItem"], "input[2].content[1]");
    let deep = EngineError::TooDeep(TooDeep {
        path: "dataItems[0].data.a".into(),
    });
    let got = answer(agent_api_errors::engine_on_turn(deep, "input[0].content").response()).await;
    assert_eq!(got.status, 400);
    assert_eq!(got.body["error"]["field"], "input[0].content[0].data.a");
}

/// The AIFlowy door answers every engine error, a refused caller and a refused body as the
/// Agent API door does (one table, the kit's), its message naming its own door.
#[tokio::test]
async fn the_aiflowy_door_answers_refusals_as_the_agent_api_door() {
    for (build, _, _) in cases() {
        let said = format!("{:?}", build());
        let ours = answer(aiflowy_errors::response(&aiflowy_errors::engine(build()))).await;
        let theirs = answer(agent_api_errors::engine(build()).response()).await;
        assert_eq!(ours.status, theirs.status, "{said}");
        assert_eq!(ours.body, theirs.body, "{said}");
        assert_eq!(ours.retry_after, theirs.retry_after, "{said}");
    }
    let missing = || {
        CallerError::Refused(crate::tenant::LeaderAuthError::Missing {
            scheme: crate::tenant::Scheme::Bearer,
            reason: "send an API key",
        })
    };
    let ours = answer(aiflowy_errors::response(&aiflowy_errors::caller(missing()))).await;
    let theirs = answer(agent_api_errors::caller(missing()).response()).await;
    assert_eq!((ours.status, &ours.body), (theirs.status, &theirs.body));
    assert_eq!(ours.www_authenticate.as_deref(), Some("Bearer"));
    let slow = || {
        BodyRefused::Read(BodyError::TimedOut {
            timeout: Duration::from_millis(1500),
        })
    };
    let ours = answer(aiflowy_errors::response(&aiflowy_errors::body(slow()))).await;
    assert_eq!(ours.status, 408);
    assert_eq!(
        ours.body,
        answer(agent_api_errors::body(slow()).response()).await.body
    );
    let typed = BodyRefused::ContentType { given: None };
    let ours = answer(aiflowy_errors::response(&aiflowy_errors::body(typed))).await;
    assert_eq!(ours.status, 415);
    assert_eq!(
        ours.body["error"]["message"],
        "an AIFlowy request body must be sent as `Content-Type: application/json`"
    );
}

/// The Agent API error object of a refusal with `facts` whose start's `dataItems` an MCP call
/// names as its `arguments`.
fn mcp_error_object(code: &str, facts: &Value) -> Value {
    let mut facts = facts.clone();
    for key in ["field", "dataItem"] {
        if let Some(path) = facts.get_mut(key)
            && let Some(rest) = path.as_str().and_then(|f| f.strip_prefix("dataItems"))
        {
            *path = json!(format!("arguments{rest}"));
        }
    }
    agent_api_body(code, &facts)["error"].clone()
}

/// Inside a call: every engine error an `isError` result by the Agent API's table (its code
/// first in the text), the host's fault -32603.
#[test]
fn the_mcp_door_answers_engine_errors_inside_a_call_by_their_kind() {
    for (build, _, _) in cases() {
        let said = format!("{:?}", build());
        let refusal = refusal::engine(build());
        match mcp_errors::engine(build()) {
            Err(e) => {
                assert_eq!(refusal.kind, Kind::Internal, "{said}");
                assert_eq!(e.code.0, -32603, "{said}");
                assert_eq!(
                    Some(e.message.as_ref()),
                    refusal.facts["reason"].as_str(),
                    "{said}"
                );
            }
            Ok(result) => {
                assert_ne!(refusal.kind, Kind::Internal, "{said}");
                let (_, code) = agent_api_row(refusal.kind);
                assert_eq!(result.is_error, Some(true), "{said}");
                let structured = result.structured_content.expect("structured content");
                let expected = mcp_error_object(code, &refusal.facts);
                assert_eq!(structured, json!({ "error": expected }), "{said}");
                let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
                assert_eq!(
                    text,
                    json!(format!("{code}: {}", expected["message"].as_str().unwrap())),
                    "{said}"
                );
            }
        }
    }
    // The start's items are the call's arguments.
    let wrong_type = EngineError::ContentTypeNotAccepted {
        item: 1,
        mime_type: "image/png".into(),
        accepted: vec!["text/plain".into()],
    };
    let result = mcp_errors::engine(wrong_type).expect("a tool error");
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["error"]["code"], "UNSUPPORTED_CONTENT");
    assert_eq!(structured["error"]["dataItem"], "arguments[1]");
}

/// A JSON-RPC answer of the MCP door's entry as a test reads it: the Agent API's status and
/// headers, its error object as the JSON-RPC error's `data`.
async fn mcp_entry(response: Response, agent_api: Response) {
    let got = answer(response).await;
    let theirs = answer(agent_api).await;
    assert_eq!(got.status, theirs.status);
    assert_eq!(got.www_authenticate, theirs.www_authenticate);
    assert_eq!(got.retry_after, theirs.retry_after);
    let rpc_code = if got.status >= 500 { -32603 } else { -32600 };
    let error = theirs.body["error"].clone();
    assert_eq!(
        got.body,
        json!({"jsonrpc": "2.0", "id": null,
               "error": {"code": rpc_code, "message": error["message"], "data": error}})
    );
}

/// Before a request is read: a refused caller, a refused body and a quota as the Agent API
/// door answers them, in a JSON-RPC body; an Origin not listed 403.
#[tokio::test]
async fn the_mcp_doors_entry_answers_refusals_as_json_rpc_errors() {
    use crate::tenant::{LeaderAuthError, Scheme};
    let auth = [
        LeaderAuthError::Missing {
            scheme: Scheme::Bearer,
            reason: "send an API key",
        },
        LeaderAuthError::Invalid {
            scheme: Scheme::Bearer,
            reason: "unknown key",
        },
        LeaderAuthError::NotAllowed {
            leader: "L".into(),
            reason: "the API key was issued for another partner",
        },
        LeaderAuthError::Unavailable,
    ];
    for e in auth {
        mcp_entry(
            mcp_errors::caller(CallerError::Refused(e.clone())).response(),
            agent_api_errors::caller(CallerError::Refused(e)).response(),
        )
        .await;
    }
    let gone = || CallerError::NotHosted {
        agent: "gone".into(),
    };
    mcp_entry(
        mcp_errors::caller(gone()).response(),
        agent_api_errors::caller(gone()).response(),
    )
    .await;
    let slow = || {
        BodyRefused::Read(BodyError::TimedOut {
            timeout: Duration::from_millis(1500),
        })
    };
    mcp_entry(
        mcp_errors::body(slow()).response(),
        agent_api_errors::body(slow()).response(),
    )
    .await;
    let big = || BodyRefused::Read(BodyError::TooLarge { limit: 1024 });
    mcp_entry(
        mcp_errors::body(big()).response(),
        agent_api_errors::body(big()).response(),
    )
    .await;
    let rate = QuotaError::RequestRate {
        tenant: "acme".into(),
        limit: 1,
        retry_after_ms: 800,
    };
    let got = answer(mcp_errors::quota(&rate).response()).await;
    assert_eq!((got.status, got.retry_after.as_deref()), (429, Some("1")));
    assert_eq!(got.body["error"]["code"], -32600);
    assert_eq!(got.body["error"]["data"]["code"], "RESOURCE_EXHAUSTED");
    // The same quota reached by a call at the host-level /mcp: a tool error with that code.
    let result = mcp_errors::quota_in_call(&rate);
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.structured_content.expect("structured")["error"],
        got.body["error"]["data"]
    );

    let got = answer(mcp_errors::origin("https://evil.example").response()).await;
    assert_eq!(got.status, 403);
    assert_eq!(got.body["id"], Value::Null);
    assert_eq!(got.body["error"]["code"], -32600);
    assert_eq!(got.body["error"]["data"]["code"], "ORIGIN_REFUSED");
    assert_eq!(got.body["error"]["data"]["origin"], "https://evil.example");
    assert_eq!(got.www_authenticate, None);
}

/// The JSON-RPC errors of a call that never reaches a partner: an unknown tool and a cursor
/// this door did not give are -32602 naming what was given.
#[test]
fn the_mcp_door_answers_unknown_tools_and_cursors_invalid_params() {
    for (e, key, given) in [
        (mcp_errors::unknown_tool("nope"), "tool", "nope"),
        (mcp_errors::unknown_host_tool("a__b"), "tool", "a__b"),
        (mcp_errors::bad_cursor("x"), "cursor", "x"),
    ] {
        assert_eq!(e.code.0, -32602, "{e:?}");
        assert_eq!(e.data, Some(json!({ key: given })), "{e:?}");
        assert!(e.message.contains(given), "{e:?}");
    }
}
