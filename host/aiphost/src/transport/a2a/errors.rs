//! The A2A door's errors: the one place where what the engine and the quotas refuse becomes an
//! [`A2aError`] — the kind of the refusal's kind (and so its JSON-RPC code and HTTP status), its
//! facts (`refusal.rs`, the same the AIP door puts in `data`) as the `ErrorInfo` metadata.

use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::quota::QuotaError;
use crate::refusal::{self, Kind, Refusal};
use crate::task::EngineError;
use crate::tenant::LeaderAuthError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use serde_json::json;

/// The A2A error of an engine failure; store details stay in the log.
pub(crate) fn engine(e: EngineError) -> A2aError {
    a2a(refusal::engine(e))
}

/// Unauthenticated (no credential, or one that is not valid), PermissionDenied (a Leader the
/// partner does not take) or Internal (the host could not check).
pub(crate) fn leader_auth(e: &LeaderAuthError) -> A2aError {
    a2a(refusal::leader_auth(e))
}

/// The kit's refusal of a caller: InvalidRequest for a partner not hosted, else as
/// [`leader_auth`].
pub(crate) fn caller(e: CallerError) -> A2aError {
    match e {
        CallerError::NotHosted { .. } => A2aError::new(
            A2aErrorKind::InvalidRequest,
            json!({"reason": e.to_string()}),
        ),
        CallerError::Refused(e) => leader_auth(&e),
    }
}

/// A body refused before it was parsed: ContentTypeNotSupported, InvalidRequest (with the
/// limit or timeout it ran into) or ParseError.
pub(crate) fn body(e: BodyRefused) -> A2aError {
    match e {
        BodyRefused::ContentType { given } => A2aError::new(
            A2aErrorKind::ContentTypeNotSupported,
            json!({
                "reason": "an A2A request body must be sent as `Content-Type: application/json`",
                "contentType": given,
            }),
        ),
        BodyRefused::Read(e) => A2aError::new(A2aErrorKind::InvalidRequest, e.details()),
        e @ BodyRefused::NotJson(_) => {
            A2aError::new(A2aErrorKind::ParseError, json!({"reason": e.to_string()}))
        }
    }
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
