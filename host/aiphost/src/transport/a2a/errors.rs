//! The A2A door's errors: the one place where what the engine and the quotas refuse becomes an
//! [`A2aError`] — the kind of the refusal's kind (and so its JSON-RPC code and HTTP status), its
//! facts (`refusal.rs`, the same the AIP door puts in `data`) as the `ErrorInfo` metadata.

use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::quota::QuotaError;
use crate::refusal::{self, Kind, Refusal};
use crate::task::EngineError;
use crate::tenant::LeaderAuthError;

/// The A2A error of an engine failure; store details stay in the log.
pub(crate) fn engine(e: EngineError) -> A2aError {
    a2a(refusal::engine(e))
}

/// Unauthenticated (no credential, or one that is not valid), PermissionDenied (a Leader the
/// partner does not take) or Internal (the host could not check).
pub(crate) fn leader_auth(e: &LeaderAuthError) -> A2aError {
    a2a(refusal::leader_auth(e))
}

/// ResourceExhausted with the quota, its limit and when to retry.
pub(crate) fn quota(e: &QuotaError) -> A2aError {
    a2a(refusal::quota(e))
}

/// A refusal as A2A says it: the kind (and so the JSON-RPC code and HTTP status) of its kind,
/// its facts as the `ErrorInfo` metadata.
fn a2a(refusal: Refusal) -> A2aError {
    use A2aErrorKind::*;
    let kind = match refusal.kind {
        Kind::TaskNotFound => TaskNotFound,
        Kind::NotCancelable => TaskNotCancelable,
        Kind::Unsupported => UnsupportedOperation,
        Kind::InvalidParams => InvalidParams,
        Kind::Unauthenticated | Kind::InvalidCredential => Unauthenticated,
        Kind::ContentType => ContentTypeNotSupported,
        Kind::NotAllowed => PermissionDenied,
        // A quota is not a denied permission here.
        Kind::Quota => ResourceExhausted,
        Kind::Unavailable => Unavailable,
        Kind::Internal => Internal,
    };
    A2aError::new(kind, refusal.facts)
}
