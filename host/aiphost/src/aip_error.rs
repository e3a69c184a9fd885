//! The AIP door's errors: the one place where what the engine, the tenancy and the quotas refuse
//! (typed, in their own words) becomes a JSON-RPC error with AIP's code and its facts in `data`.
//! Every AIP door (rpc, stream, notification, group) answers through these; the A2A door maps
//! the same errors to its own in `transport/a2a/errors.rs`.

use crate::protocol::depth::MAX_JSON_DEPTH;
use crate::protocol::{CommandKind, ErrorCode, RpcError};
use crate::quota::QuotaError;
use crate::store::StoreError;
use crate::task::{ConfigRef, EngineError};
use crate::tenant::LeaderAuthError;
use serde_json::json;

/// How long a client is asked to wait before retrying on a full disk: the host takes new work
/// again at its first request after space returns, so this is only a pace.
pub const STORE_FULL_RETRY_MS: u64 = 5_000;

/// The JSON-RPC error for an engine failure, its facts in `data`; store details stay in the log.
pub fn engine(e: EngineError) -> RpcError {
    // What the engine says in words is the `reason` (the `details` of a -32001, as AIP's example
    // has it).
    let words = e.to_string();
    match e {
        EngineError::TaskNotFound { task_id } => RpcError::task_not_found(&task_id),
        EngineError::EventsGone {
            task_id,
            last_event_seq,
            oldest_available_seq,
        } => RpcError::new(
            ErrorCode::TaskNotFound,
            json!({
                "taskId": task_id,
                "lastEventSeq": last_event_seq,
                "oldestAvailableSeq": oldest_available_seq,
                "details": words,
            }),
        ),
        EngineError::ReStreamNotStreamed => RpcError::new(
            ErrorCode::UnsupportedOperation,
            json!({"command": CommandKind::ReStream, "reason": words}),
        ),
        EngineError::TaskEnded {
            task_id,
            state,
            command,
        } => RpcError::new(
            if command == CommandKind::Cancel {
                ErrorCode::TaskNotCancelable
            } else {
                ErrorCode::UnsupportedOperation
            },
            json!({"taskId": task_id, "state": state, "command": command, "reason": words}),
        ),
        EngineError::OtherSession {
            task_id,
            session_id,
            task_session_id,
        } => RpcError::new(
            ErrorCode::InvalidParams,
            json!({
                "field": "sessionId",
                "reason": words,
                "taskId": task_id,
                "sessionId": session_id,
                "taskSessionId": task_session_id,
            }),
        ),
        EngineError::InvalidInput(field) => field.into(),
        EngineError::TooDeep(too_deep) => RpcError::new(
            ErrorCode::InvalidParams,
            json!({"field": too_deep.path, "reason": words, "maxDepth": MAX_JSON_DEPTH}),
        ),
        EngineError::ContentTypeNotAccepted {
            item,
            mime_type,
            accepted,
        } => RpcError::new(
            ErrorCode::ContentTypeNotSupported,
            json!({
                "dataItem": format!("dataItems[{item}]"),
                "mimeType": mime_type,
                "accepted": accepted,
            }),
        ),
        EngineError::NotTheLeader { sender_id, leader } => RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({"reason": words, "senderId": sender_id, "authenticated": leader}),
        ),
        EngineError::TooManyLiveTasks {
            task_id,
            limit,
            live,
        } => RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({
                "reason": words,
                "quota": "maxLiveTasks",
                "limit": limit,
                "liveTasks": live,
                "taskId": task_id,
            }),
        ),
        EngineError::TooManyConfigs { task_id, limit } => RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({
                "reason": words,
                "quota": "notificationConfigsPerTask",
                "limit": limit,
                "taskId": task_id,
            }),
        ),
        EngineError::TooManyWaitingConfigs {
            task_id,
            limit,
            ttl_seconds,
        } => RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({
                "reason": words,
                "quota": "waitingNotificationConfigs",
                "limit": limit,
                "taskId": task_id,
                "waitingConfigTtlSeconds": ttl_seconds,
            }),
        ),
        EngineError::UnknownConfig { named_by, .. } => {
            RpcError::invalid_params(config_field(named_by), config_reason(named_by, words))
        }
        // AIP's configs come by themselves, `notification/set`'s `params.url`.
        EngineError::TargetRefused { .. } => RpcError::invalid_params("params.url", words),
        EngineError::PartnerVersionUnavailable { .. } | EngineError::Internal(_) => {
            RpcError::internal(words)
        }
        EngineError::Quota(e) => quota(&e),
        EngineError::Store(StoreError::Full { free, reserve, .. }) => RpcError::new(
            ErrorCode::Unavailable,
            json!({
                "error": "store-full",
                "reason": "the host's disk is full; nothing was stored, retry later",
                "retryable": true,
                "retryAfterMs": STORE_FULL_RETRY_MS,
                "freeBytes": free,
                "reserveBytes": reserve,
            }),
        ),
        EngineError::Store(e) => {
            tracing::error!(error = %e, "store failure while handling a command");
            RpcError::internal(
                "the host could not store the task; the command may not have taken effect, retry it",
            )
        }
    }
}

/// The AIP parameter that named a notification config that does not exist.
pub fn config_field(named_by: ConfigRef) -> &'static str {
    match named_by {
        ConfigRef::Replace => "params.id",
        ConfigRef::Lookup => "params.notificationConfigId",
        ConfigRef::Subscription => "commandParams.notificationConfigId",
    }
}

/// The engine's words for a config that does not exist, with what to do in AIP's methods.
pub fn config_reason(named_by: ConfigRef, words: String) -> String {
    match named_by {
        ConfigRef::Replace => format!("{words}; omit the id to create one"),
        ConfigRef::Lookup => words,
        ConfigRef::Subscription => format!("{words}; make one with notification/set"),
    }
}

/// -32009 with the quota, its limit and what to do about it.
pub fn quota(e: &QuotaError) -> RpcError {
    let reason = format!("the partner's tenant has reached its {} quota", e.quota());
    let data = match e {
        QuotaError::RequestRate {
            tenant,
            limit,
            retry_after_ms,
        } => json!({
            "reason": reason, "tenant": tenant, "quota": e.quota(), "limit": limit,
            "retryAfterMs": retry_after_ms,
        }),
        QuotaError::StoredBytes {
            tenant,
            limit,
            stored,
        } => json!({
            "reason": reason, "tenant": tenant, "quota": e.quota(), "limit": limit,
            "storedBytes": stored,
        }),
        QuotaError::PartnerRate {
            agent,
            limit,
            retry_after_ms,
        } => json!({
            "reason": format!("the partner has reached the rate of requests the operator allows it ({limit} a second)"),
            "agent": agent, "quota": e.quota(), "limit": limit, "retryAfterMs": retry_after_ms,
        }),
        // Publishing is not an AIP request; said for completeness.
        QuotaError::PublishesAtOnce { tenant, limit }
        | QuotaError::PublishRate { tenant, limit, .. } => {
            json!({
                "reason": reason, "tenant": tenant, "quota": e.quota(), "limit": limit,
                "retryAfterMs": e.retry_after_ms(),
            })
        }
    };
    RpcError::new(ErrorCode::AuthorizationFailed, data)
}

/// -32008 (no credential), -32010 (a credential that is not valid), -32009 (a Leader that may
/// not call this partner) or -32603 (the host could not check).
pub fn leader_auth(e: &LeaderAuthError) -> RpcError {
    match e {
        LeaderAuthError::Missing { scheme, reason } => RpcError::new(
            ErrorCode::AuthenticationRequired,
            json!({"reason": reason, "scheme": scheme.as_str()}),
        ),
        LeaderAuthError::Invalid { scheme, reason } => RpcError::new(
            ErrorCode::AccessTokenInvalid,
            json!({"reason": reason, "scheme": scheme.as_str()}),
        ),
        LeaderAuthError::NotAllowed { leader, reason } => RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({"reason": reason, "leader": leader}),
        ),
        LeaderAuthError::Unavailable => {
            RpcError::internal("the host could not check the API key; retry")
        }
    }
}
