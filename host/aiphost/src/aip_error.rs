//! Domain errors in AIP's words: the one place where what the engine, the tenancy and the quotas
//! refuse becomes a JSON-RPC error. Every AIP door (rpc, stream, notification, group) answers
//! through these; another protocol's door maps the same errors to its own.

use crate::protocol::{ErrorCode, RpcError};
use crate::quota::QuotaError;
use crate::store::StoreError;
use crate::task::EngineError;
use crate::tenant::LeaderAuthError;
use serde_json::json;

/// How long a client is asked to wait before retrying on a full disk: the host takes new work
/// again at its first request after space returns, so this is only a pace.
pub const STORE_FULL_RETRY_MS: u64 = 5_000;

/// The JSON-RPC error for an engine failure; store details stay in the log.
pub fn engine(e: EngineError) -> RpcError {
    match e {
        EngineError::Rpc(e) => e,
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
