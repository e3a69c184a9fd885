//! What every AIFlowy request goes through first: its query (the `wire` to answer in), its JSON
//! body (through the kit, its content type checked before it is read) and who is calling (the
//! kit's caller: API keys, mTLS or an open partner, as at every door).

use super::errors;
use super::state::AiflowyState;
use crate::protocol::aiflowy::{AiflowyError, Wire};
use crate::transport::kit::caller::Caller;
use crate::transport::kit::json_body;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::http::HeaderMap;
use serde_json::Value;
use std::collections::HashMap;

/// The media types an AIFlowy body may be sent as.
const MEDIA: &[&str] = &["application/json"];

/// A request's query parameters, as axum read them.
pub(super) type QueryParams = Result<Query<HashMap<String, String>>, QueryRejection>;

/// The query's parameters and the wire they ask for (`?wire=aiflowy`; the seed's by default).
pub(super) fn query(params: QueryParams) -> Result<(HashMap<String, String>, Wire), AiflowyError> {
    let Query(params) = params.map_err(errors::query)?;
    let wire =
        Wire::from_param(params.get("wire").map(String::as_str)).map_err(AiflowyError::invalid)?;
    Ok((params, wire))
}

/// The body as JSON, then the caller: a body that is not JSON is refused whoever sends it.
pub(super) async fn enter(
    app: &AiflowyState,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
    body: Body,
) -> Result<(Value, Caller), AiflowyError> {
    let body = json_body::value(headers, body, MEDIA, app.http.max_body_bytes)
        .await
        .map_err(errors::body)?;
    Ok((body, caller(app, agent, headers, peer)?))
}

/// Who is calling (a request without a body).
pub(super) fn caller(
    app: &AiflowyState,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
) -> Result<Caller, AiflowyError> {
    app.callers
        .caller(agent, headers, peer)
        .map_err(errors::caller)
}

/// Count a request that reaches no command (the events route, a refused submit) against the
/// partner's rate; a command counts in the engine, as at every door.
pub(super) fn admit_read(caller: &Caller) -> Result<(), AiflowyError> {
    caller.agent.admit_request().map_err(|e| errors::quota(&e))
}
