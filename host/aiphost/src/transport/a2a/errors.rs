//! The A2A door's errors: the one place where what the engine and the tenants' quotas refuse
//! (typed, in their own words) becomes an [`A2aError`] — its kind (and so its JSON-RPC code and
//! HTTP status) and its `ErrorInfo` metadata: the facts, and what went wrong in words as
//! `reason`. Each field is the one the AIP door puts in its `data`, so a client reads the same
//! facts through either door.

use crate::aip_error::{STORE_FULL_RETRY_MS, config_field, config_reason};
use crate::protocol::CommandKind;
use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::protocol::depth::MAX_JSON_DEPTH;
use crate::quota::QuotaError;
use crate::store::StoreError;
use crate::task::EngineError;
use serde_json::json;

/// The A2A error of an engine failure; store details stay in the log.
pub(crate) fn engine(e: EngineError) -> A2aError {
    use A2aErrorKind::*;
    let words = e.to_string();
    match e {
        EngineError::TaskNotFound { task_id } => {
            A2aError::new(TaskNotFound, json!({"taskId": task_id, "reason": words}))
        }
        EngineError::EventsGone {
            task_id,
            last_event_seq,
            oldest_available_seq,
        } => A2aError::new(
            TaskNotFound,
            json!({
                "taskId": task_id,
                "lastEventSeq": last_event_seq,
                "oldestAvailableSeq": oldest_available_seq,
                "reason": words,
            }),
        ),
        EngineError::ReStreamNotStreamed => A2aError::new(
            UnsupportedOperation,
            json!({"command": CommandKind::ReStream, "reason": words}),
        ),
        EngineError::TaskEnded {
            task_id,
            state,
            command,
        } => A2aError::new(
            if command == CommandKind::Cancel {
                TaskNotCancelable
            } else {
                UnsupportedOperation
            },
            json!({"taskId": task_id, "state": state, "command": command, "reason": words}),
        ),
        EngineError::OtherSession {
            task_id,
            session_id,
            task_session_id,
        } => A2aError::new(
            InvalidParams,
            json!({
                "field": "sessionId",
                "reason": words,
                "taskId": task_id,
                "sessionId": session_id,
                "taskSessionId": task_session_id,
            }),
        ),
        EngineError::InvalidInput(field) => field.into(),
        EngineError::TooDeep(too_deep) => A2aError::new(
            InvalidParams,
            json!({"field": too_deep.path, "reason": words, "maxDepth": MAX_JSON_DEPTH}),
        ),
        EngineError::ContentTypeNotAccepted {
            item,
            mime_type,
            accepted,
        } => A2aError::new(
            ContentTypeNotSupported,
            json!({
                "dataItem": format!("dataItems[{item}]"),
                "mimeType": mime_type,
                "accepted": accepted,
            }),
        ),
        EngineError::NotTheLeader { sender_id, leader } => A2aError::new(
            PermissionDenied,
            json!({"reason": words, "senderId": sender_id, "authenticated": leader}),
        ),
        EngineError::TooManyLiveTasks {
            task_id,
            limit,
            live,
        } => A2aError::new(
            ResourceExhausted,
            json!({
                "reason": words,
                "quota": "maxLiveTasks",
                "limit": limit,
                "liveTasks": live,
                "taskId": task_id,
            }),
        ),
        EngineError::TooManyConfigs { task_id, limit } => A2aError::new(
            ResourceExhausted,
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
        } => A2aError::new(
            ResourceExhausted,
            json!({
                "reason": words,
                "quota": "waitingNotificationConfigs",
                "limit": limit,
                "taskId": task_id,
                "waitingConfigTtlSeconds": ttl_seconds,
            }),
        ),
        // The config ids of A2A's push methods reach the engine where AIP's `notification/*`
        // params would: the field named is AIP's, as it always was.
        EngineError::UnknownConfig { named_by, .. } => {
            A2aError::invalid_params(config_field(named_by), config_reason(named_by, words))
        }
        // A config by itself is `params`; one sent with a message is in its configuration.
        EngineError::TargetRefused { with_command, .. } => {
            let field = if with_command {
                "configuration.taskPushNotificationConfig.url"
            } else {
                "params.url"
            };
            A2aError::invalid_params(field, words)
        }
        EngineError::PartnerVersionUnavailable { .. } | EngineError::Internal(_) => {
            A2aError::new(Internal, json!({"reason": words}))
        }
        EngineError::Quota(e) => quota(&e),
        EngineError::Store(StoreError::Full { free, reserve, .. }) => A2aError::new(
            Unavailable,
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
            A2aError::new(
                Internal,
                json!({"reason": "the host could not store the task; the command may not have taken effect, retry it"}),
            )
        }
    }
}

/// ResourceExhausted with the quota, its limit and when to retry.
pub(crate) fn quota(e: &QuotaError) -> A2aError {
    let reason = format!("the partner's tenant has reached its {} quota", e.quota());
    let metadata = match e {
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
        // Publishing is not an A2A request; said for completeness.
        QuotaError::PublishesAtOnce { tenant, limit }
        | QuotaError::PublishRate { tenant, limit, .. } => json!({
            "reason": reason, "tenant": tenant, "quota": e.quota(), "limit": limit,
            "retryAfterMs": e.retry_after_ms(),
        }),
    };
    A2aError::new(A2aErrorKind::ResourceExhausted, metadata)
}
