//! What every A2A request goes through first, whichever binding carries it: the version it asks
//! for, its JSON body (through the kit), and who is calling (the kit's caller, plus whether the
//! request is in v0.3's shapes).

use super::errors;
use super::state::A2aState;
use crate::agent::Agent;
use crate::protocol::a2a::{A2aError, A2aErrorKind, VERSION};
use crate::protocol::notice_format::NoticeFormat;
use crate::store::TaskKey;
use crate::transport::kit::json_body;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::Arc;

/// The media types an A2A request body may be sent as.
const MEDIA: &[&str] = &["application/json", "application/a2a+json"];

/// Who is calling, about which partner.
pub(super) struct Caller {
    /// The partner.
    pub(super) agent: Arc<Agent>,
    /// The authenticated Leader, whose task namespace the call acts in (`None`: an open
    /// partner's shared one).
    pub(super) owner: Option<String>,
    /// The request is in A2A v0.3's shapes (the JSON-RPC binding's v0.3 methods).
    pub(super) v03: bool,
}

impl Caller {
    /// What the notifications of a push config this caller makes look like.
    pub(super) fn notice_format(&self) -> NoticeFormat {
        if self.v03 {
            NoticeFormat::A2aV03
        } else {
            NoticeFormat::A2a
        }
    }

    /// Task `task` of this partner in the caller's namespace.
    pub(super) fn key(&self, task: &str) -> TaskKey {
        TaskKey::owned(self.agent.id(), self.owner.as_deref(), task)
    }
}

/// The partner `agent_id` and the Leader calling it, authenticated as over AIP (the kit's).
pub(super) fn caller(
    app: &A2aState,
    agent_id: &str,
    headers: &HeaderMap,
    peer: &Peer,
) -> Result<Caller, A2aError> {
    let caller = app
        .callers
        .caller(agent_id, headers, peer)
        .map_err(errors::caller)?;
    Ok(Caller {
        agent: caller.agent,
        owner: caller.owner,
        v03: false,
    })
}

/// VersionNotSupported unless the request asks for the version served here (or none).
pub(super) fn check_version(headers: &HeaderMap) -> Result<(), A2aError> {
    let asked = headers
        .get("a2a-version")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
        .unwrap_or_default();
    if asked.is_empty() || asked == VERSION || asked == "1" {
        return Ok(());
    }
    Err(A2aError::new(
        A2aErrorKind::VersionNotSupported,
        json!({"requested": asked, "supported": VERSION}),
    ))
}

/// The body's bytes (its content type checked before it is read: a body that is not JSON is
/// refused whoever sends it).
pub(super) async fn body_bytes(
    app: &A2aState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, A2aError> {
    json_body::bytes(headers, body, MEDIA, app.http.max_body_bytes)
        .await
        .map_err(errors::body)
}

/// The body as a JSON value (the HTTP+JSON binding).
pub(super) async fn body_value(
    app: &A2aState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value, A2aError> {
    json_body::value(headers, body, MEDIA, app.http.max_body_bytes)
        .await
        .map_err(errors::body)
}
