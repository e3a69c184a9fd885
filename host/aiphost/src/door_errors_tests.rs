//! Every engine error as each door answers it, byte for byte: the JSON-RPC error of the AIP
//! doors (code, message, data) and the A2A error (kind and metadata). The expectations are what
//! the host answered when the engine still built JSON-RPC errors itself (issue 30): an A2A
//! error then was the AIP one turned into A2A by `A2aError::from(RpcError)`, so each A2A
//! expectation is that conversion of the literal AIP one.

use crate::aip_error;
use crate::model::depth::TooDeep;
use crate::model::{CommandKind, InvalidField, TaskState};
use crate::net_policy::TargetError;
use crate::protocol::RpcError;
use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::quota::QuotaError;
use crate::store::StoreError;
use crate::task::{ConfigRef, EngineError};
use crate::transport::a2a::errors as a2a_errors;
use serde_json::{Value, json};

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
