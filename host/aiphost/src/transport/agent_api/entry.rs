//! What every Agent API request goes through first: its JSON body (through the kit, its content
//! type checked before it is read) and who is calling (the kit's caller: API keys, mTLS or an
//! open partner, as at every door).

use super::errors::{self, ApiError};
use super::state::AgentApiState;
use crate::transport::kit::caller::Caller;
use crate::transport::kit::json_body;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::http::HeaderMap;
use serde_json::Value;

/// The media types an Agent API body may be sent as.
const MEDIA: &[&str] = &["application/json"];

/// The body as JSON, then the caller: a body that is not JSON is refused whoever sends it.
pub(super) async fn enter(
    app: &AgentApiState,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<(Value, Caller), ApiError> {
    let body = json_body::value(headers, body, MEDIA, app.http.max_body_bytes)
        .await
        .map_err(errors::body)?;
    let caller = app
        .callers
        .caller(agent, headers, peer)
        .map_err(errors::caller)?;
    Ok((body, caller))
}
