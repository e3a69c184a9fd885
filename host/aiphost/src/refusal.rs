//! What a refusal says, whatever door answers it: the facts of an engine error or a quota as one
//! JSON object — what went wrong in words as `reason`, beside the typed facts (`taskId`,
//! `field`, `limit`, …) — and the kind of refusal it is.
//!
//! Each door turns a [`Refusal`] into its own wire error in one place (AIP's JSON-RPC codes in
//! `aip_error.rs`, A2A's kinds in `transport/a2a/errors.rs`) by its kind alone, so a client reads
//! the same facts through AIP's `data` and A2A's `ErrorInfo.metadata`, and no door imports
//! another's errors.

use crate::model::CommandKind;
use crate::model::depth::MAX_JSON_DEPTH;
use crate::quota::QuotaError;
use crate::store::StoreError;
use crate::task::forms::FormError;
use crate::task::{ConfigRef, EngineError};
use crate::tenant::LeaderAuthError;
use serde_json::{Value, json};

/// How long a client is asked to wait before retrying on a full disk: the host takes new work
/// again at its first request after space returns, so this is only a pace.
pub const STORE_FULL_RETRY_MS: u64 = 5_000;

/// The kinds of refusal the doors tell apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No such task (or its events are gone).
    TaskNotFound,
    /// A cancel of a task that has ended.
    NotCancelable,
    /// A command this task or method does not take.
    Unsupported,
    /// A parameter is wrong; `field` names it.
    InvalidParams,
    /// The caller needs a credential and sent none.
    Unauthenticated,
    /// The caller's credential is not valid.
    InvalidCredential,
    /// A data item of a type no skill accepts.
    ContentType,
    /// The caller may not do this.
    NotAllowed,
    /// A quota or cap is reached.
    Quota,
    /// The host cannot take it now; retry (a full disk).
    Unavailable,
    /// The host failed.
    Internal,
}

/// A refusal: its kind and its facts.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// Which kind of refusal.
    pub kind: Kind,
    /// The facts, with `reason` in words (a content-type refusal names the item instead).
    pub facts: Value,
}

impl Refusal {
    fn new(kind: Kind, facts: Value) -> Self {
        Refusal { kind, facts }
    }
}

/// The refusal of an engine error; store details stay in the log.
pub fn engine(e: EngineError) -> Refusal {
    use Kind::*;
    let words = e.to_string();
    match e {
        EngineError::TaskNotFound { task_id } => {
            Refusal::new(TaskNotFound, json!({"taskId": task_id, "reason": words}))
        }
        EngineError::EventsGone {
            task_id,
            last_event_seq,
            oldest_available_seq,
        } => Refusal::new(
            TaskNotFound,
            json!({
                "taskId": task_id,
                "lastEventSeq": last_event_seq,
                "oldestAvailableSeq": oldest_available_seq,
                "reason": words,
            }),
        ),
        EngineError::ReStreamNotStreamed => Refusal::new(
            Unsupported,
            json!({"command": CommandKind::ReStream, "reason": words}),
        ),
        EngineError::TaskEnded {
            task_id,
            state,
            command,
        } => Refusal::new(
            if command == CommandKind::Cancel {
                NotCancelable
            } else {
                Unsupported
            },
            json!({"taskId": task_id, "state": state, "command": command, "reason": words}),
        ),
        EngineError::OtherSession {
            task_id,
            session_id,
            task_session_id,
        } => Refusal::new(
            InvalidParams,
            json!({
                "field": "sessionId",
                "reason": words,
                "taskId": task_id,
                "sessionId": session_id,
                "taskSessionId": task_session_id,
            }),
        ),
        EngineError::InvalidInput(field) => Refusal::new(
            InvalidParams,
            json!({"field": field.field, "reason": field.reason}),
        ),
        EngineError::Form(FormError::Invalid {
            request_id,
            item,
            errors,
        }) => Refusal::new(
            InvalidParams,
            json!({
                "field": format!("dataItems[{item}].data"),
                "reason": words,
                "requestId": request_id,
                "errors": errors
                    .iter()
                    .map(|e| json!({"path": e.path, "message": e.message}))
                    .collect::<Vec<_>>(),
            }),
        ),
        EngineError::Form(FormError::OtherForm { request_id, named }) => Refusal::new(
            InvalidParams,
            json!({"field": "dataItems", "reason": words, "requestId": request_id, "named": named}),
        ),
        EngineError::Form(FormError::Ambiguous { request_id }) => Refusal::new(
            InvalidParams,
            json!({"field": "dataItems", "reason": words, "requestId": request_id}),
        ),
        EngineError::TooDeep(too_deep) => Refusal::new(
            InvalidParams,
            json!({"field": too_deep.path, "reason": words, "maxDepth": MAX_JSON_DEPTH}),
        ),
        EngineError::ContentTypeNotAccepted {
            item,
            mime_type,
            accepted,
        } => Refusal::new(
            ContentType,
            json!({
                "dataItem": format!("dataItems[{item}]"),
                "mimeType": mime_type,
                "accepted": accepted,
            }),
        ),
        EngineError::NotTheLeader { sender_id, leader } => Refusal::new(
            NotAllowed,
            json!({"reason": words, "senderId": sender_id, "authenticated": leader}),
        ),
        EngineError::TooManyLiveTasks {
            task_id,
            limit,
            live,
        } => Refusal::new(
            Quota,
            json!({
                "reason": words,
                "quota": "maxLiveTasks",
                "limit": limit,
                "liveTasks": live,
                "taskId": task_id,
            }),
        ),
        EngineError::TooManyConfigs { task_id, limit } => Refusal::new(
            Quota,
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
        } => Refusal::new(
            Quota,
            json!({
                "reason": words,
                "quota": "waitingNotificationConfigs",
                "limit": limit,
                "taskId": task_id,
                "waitingConfigTtlSeconds": ttl_seconds,
            }),
        ),
        // The config ids of A2A's push methods reach the engine where AIP's `notification/*`
        // params would: the field named is AIP's, in both doors, as it always was.
        EngineError::UnknownConfig { named_by, .. } => Refusal::new(
            InvalidParams,
            json!({"field": config_field(named_by), "reason": config_reason(named_by, words)}),
        ),
        // A config by itself names its URL as `params.url` (AIP's `notification/set`, A2A's
        // push methods); one sent with an A2A message is in the message's configuration.
        EngineError::TargetRefused { with_command, .. } => {
            let field = if with_command {
                "configuration.taskPushNotificationConfig.url"
            } else {
                "params.url"
            };
            Refusal::new(InvalidParams, json!({"field": field, "reason": words}))
        }
        EngineError::PartnerVersionUnavailable { .. } | EngineError::Internal(_) => {
            Refusal::new(Internal, json!({"reason": words}))
        }
        EngineError::Quota(e) => quota(&e),
        EngineError::Store(StoreError::Full { free, reserve, .. }) => Refusal::new(
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
            Refusal::new(
                Internal,
                json!({"reason": "the host could not store the task; the command may not have taken effect, retry it"}),
            )
        }
    }
}

/// The parameter that named a notification config that does not exist.
fn config_field(named_by: ConfigRef) -> &'static str {
    match named_by {
        ConfigRef::Replace => "params.id",
        ConfigRef::Lookup => "params.notificationConfigId",
        ConfigRef::Subscription => "commandParams.notificationConfigId",
    }
}

/// The engine's words for a config that does not exist, with what to do about it.
fn config_reason(named_by: ConfigRef, words: String) -> String {
    match named_by {
        ConfigRef::Replace => format!("{words}; omit the id to create one"),
        ConfigRef::Lookup => words,
        ConfigRef::Subscription => format!("{words}; make one with notification/set"),
    }
}

/// The refusal of a quota: which, its limit, and when to retry where it refills.
pub fn quota(e: &QuotaError) -> Refusal {
    let reason = format!("the partner's tenant has reached its {} quota", e.quota());
    let facts = match e {
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
        // Publishing is not a door's request; said for completeness.
        QuotaError::PublishesAtOnce { tenant, limit }
        | QuotaError::PublishRate { tenant, limit, .. } => json!({
            "reason": reason, "tenant": tenant, "quota": e.quota(), "limit": limit,
            "retryAfterMs": e.retry_after_ms(),
        }),
    };
    Refusal::new(Kind::Quota, facts)
}

/// The refusal of a Leader's authentication: no credential, one that is not valid, a Leader
/// the partner does not take, or a check the host could not make.
pub fn leader_auth(e: &LeaderAuthError) -> Refusal {
    match e {
        LeaderAuthError::Missing { scheme, reason } => Refusal::new(
            Kind::Unauthenticated,
            json!({"reason": reason, "scheme": scheme.as_str()}),
        ),
        LeaderAuthError::Invalid { scheme, reason } => Refusal::new(
            Kind::InvalidCredential,
            json!({"reason": reason, "scheme": scheme.as_str()}),
        ),
        LeaderAuthError::NotAllowed { leader, reason } => Refusal::new(
            Kind::NotAllowed,
            json!({"reason": reason, "leader": leader}),
        ),
        LeaderAuthError::Unavailable => Refusal::new(
            Kind::Internal,
            json!({"reason": "the host could not check the API key; retry"}),
        ),
    }
}
