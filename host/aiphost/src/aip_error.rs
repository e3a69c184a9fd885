//! The AIP door's errors: the one place where what the engine, the tenancy and the quotas refuse
//! becomes a JSON-RPC error — AIP's code for the refusal's kind, its facts (`refusal.rs`) in
//! `data`. Every AIP door (rpc, stream, notification, group) answers through these; the A2A door
//! maps the same refusals to its own in `transport/a2a/errors.rs`.

use crate::protocol::{ErrorCode, RpcError};
use crate::quota::QuotaError;
use crate::refusal::{self, Kind, Refusal};
use crate::task::EngineError;
use crate::tenant::LeaderAuthError;
use serde_json::Value;

/// The JSON-RPC error for an engine failure, its facts in `data`; store details stay in the log.
pub fn engine(e: EngineError) -> RpcError {
    rpc(refusal::engine(e))
}

/// -32009 with the quota, its limit and what to do about it.
pub fn quota(e: &QuotaError) -> RpcError {
    rpc(refusal::quota(e))
}

/// A refusal as AIP says it: the code of its kind, its facts as `data`.
fn rpc(refusal: Refusal) -> RpcError {
    let Refusal { kind, mut facts } = refusal;
    let code = match kind {
        Kind::TaskNotFound => ErrorCode::TaskNotFound,
        Kind::NotCancelable => ErrorCode::TaskNotCancelable,
        Kind::Unsupported => ErrorCode::UnsupportedOperation,
        Kind::InvalidParams => ErrorCode::InvalidParams,
        Kind::Unauthenticated => ErrorCode::AuthenticationRequired,
        Kind::InvalidCredential => ErrorCode::AccessTokenInvalid,
        Kind::ContentType => ErrorCode::ContentTypeNotSupported,
        // AIP has no code of its own for a quota: -32009, with the `quota` in its data.
        Kind::NotAllowed | Kind::Quota => ErrorCode::AuthorizationFailed,
        Kind::Unavailable => ErrorCode::Unavailable,
        Kind::Internal => ErrorCode::InternalError,
    };
    // AIP's -32001 says what happened as `details` (the spec's example).
    if code == ErrorCode::TaskNotFound
        && let Value::Object(map) = &mut facts
        && let Some(words) = map.remove("reason")
    {
        map.insert("details".into(), words);
    }
    RpcError::new(code, facts)
}

/// -32008 (no credential), -32010 (a credential that is not valid), -32009 (a Leader that may
/// not call this partner) or -32603 (the host could not check).
pub fn leader_auth(e: &LeaderAuthError) -> RpcError {
    rpc(refusal::leader_auth(e))
}
