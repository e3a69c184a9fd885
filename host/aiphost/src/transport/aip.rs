//! The AIP entry: every AIP path accepts any method; the method picks the door (`rpc`, `stream`,
//! `notification/*`, `group`). Errors are JSON-RPC errors with HTTP 200 (the reference SDK raises
//! on any other status).
//!
//! What the doors share is here too (parsing a command in the caller's namespace, carrying it out
//! and rendering the task, the wire error of an engine error), so no door imports another.

use super::AppState;
use super::tls::Peer;
use crate::agent::Agent;
use crate::aip_error;
use crate::protocol::dialect::{self, render_task};
use crate::protocol::jsonrpc::{self, Request};
use crate::protocol::{ErrorCode, Inbound, RpcError};
use crate::task::Subscribe;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use tracing::Instrument;

/// Methods this host knows, for `-32601` answers.
pub(super) const METHODS: &[&str] = &[
    "rpc",
    "stream",
    "notification/set",
    "notification/get",
    "notification/delete",
    "notification/start",
    "group",
];

/// What a method answers: a JSON-RPC result, or a stream of events.
enum Answer {
    Result(Value),
    Stream(Response),
}

/// `POST /agents/{agent}/...`: read, dispatch, answer.
pub async fn handle(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let span = tracing::info_span!("request", agent = %agent_id, request = %&request_id[..12]);
    async move {
        if let Err(error) = json_content_type(&headers) {
            tracing::debug!(data = %error.data, "request refused");
            let reply = jsonrpc::failure(&Value::Null, &error);
            return ([(header::CONTENT_TYPE, "application/json")], reply.to_string())
                .into_response();
        }
        let reply = match super::body::read(body, app.config.max_body_bytes).await {
            Err(e) => jsonrpc::failure(
                &Value::Null,
                &RpcError::new(ErrorCode::InvalidRequest, e.details()),
            ),
            Ok(bytes) => match jsonrpc::parse_request(&bytes) {
                Err(rejected) => jsonrpc::failure(&rejected.id, &rejected.error),
                Ok(request) => {
                    let id = request.id.clone();
                    match dispatch(&app, &agent_id, &headers, &peer, request).await {
                        Ok(Answer::Stream(response)) => return response,
                        Ok(Answer::Result(result)) => jsonrpc::success(&id, result),
                        Err(error) => {
                            tracing::debug!(code = error.code, data = %error.data, "request refused");
                            if error.code == ErrorCode::Unavailable.code() {
                                return unavailable(&jsonrpc::failure(&id, &error), &error);
                            }
                            jsonrpc::failure(&id, &error)
                        }
                    }
                }
            },
        };
        ([(header::CONTENT_TYPE, "application/json")], reply.to_string()).into_response()
    }
    .instrument(span)
    .await
}

/// -32600 unless the request says its body is JSON (`application/json`, any parameters).
///
/// A web page can make a browser POST `text/plain` (or a body with no type at all) to any URL
/// without asking first; only a JSON content type needs the target's consent (CORS). So a request
/// that does not say it is JSON is refused before its body is read, whatever it holds.
fn json_content_type(headers: &HeaderMap) -> Result<(), RpcError> {
    let given = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let is_json = given.as_deref().is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
    });
    if is_json {
        return Ok(());
    }
    Err(RpcError::new(
        ErrorCode::InvalidRequest,
        json!({
            "reason": "an AIP request must be sent with `Content-Type: application/json`",
            "contentType": given,
            "expected": "application/json",
        }),
    ))
}

async fn dispatch(
    app: &AppState,
    agent_id: &str,
    headers: &HeaderMap,
    peer: &Peer,
    request: Request,
) -> Result<Answer, RpcError> {
    let agent = app.agents.get(agent_id).ok_or_else(|| {
        RpcError::invalid_request(format!(
            "no agent {agent_id:?} is hosted here; GET /agents lists them"
        ))
    })?;
    // A command counts against the partner's rate (its tenant's quota, or the operator's
    // `--requests-per-second`) in the engine, whatever door it comes through; every other
    // request counts here.
    let command = matches!(
        request.method.as_str(),
        "rpc" | "stream" | "notification/start"
    );
    if !command {
        agent.admit_request().map_err(|e| aip_error::quota(&e))?;
    }
    let owner = app
        .tenancy
        .authenticate_leader(&agent, super::admin::bearer(headers), peer.certificate())
        .map_err(|e| aip_error::leader_auth(&e))?;
    let owner = owner.as_deref();
    let params = &request.params;
    match request.method.as_str() {
        "rpc" => super::rpc::rpc(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "stream" => super::stream::stream(app, &agent, owner, request.id.clone(), params)
            .await
            .map(Answer::Stream),
        "notification/set" => super::notification::set(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "notification/get" => {
            super::notification::get(app, &agent, owner, params).map(Answer::Result)
        }
        "notification/delete" => super::notification::delete(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "notification/start" => super::notification::start(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "group" | "group/rpc" => app
            .groups
            .join(&agent, owner, &request.params)
            .await
            .map(Answer::Result),
        other => Err(RpcError::new(
            ErrorCode::MethodNotFound,
            json!({"method": other, "supported": METHODS}),
        )),
    }
}

/// The Leader command in `params`, acting in `owner`'s task namespace (the authenticated Leader;
/// `None` for an open partner).
pub(super) fn parse_command_of(owner: Option<&str>, params: &Value) -> Result<Inbound, RpcError> {
    let mut inbound = dialect::parse_command(params)?;
    inbound.owner = owner.map(str::to_string);
    Ok(inbound)
}

/// Carry out a command and answer with the task in the caller's
/// dialect; `subscribe` for a `notification/start`.
pub(super) async fn command(
    app: &AppState,
    agent: &Arc<Agent>,
    inbound: Inbound,
    subscribe: Option<Subscribe>,
) -> Result<Value, RpcError> {
    let dialect = inbound.dialect;
    let reply = app
        .engine
        .command(agent, inbound, subscribe)
        .await
        .map_err(aip_error::engine)?;
    Ok(render_task(
        &reply.task,
        dialect,
        agent.aic(),
        reply.history.as_ref(),
    ))
}

/// A JSON-RPC "unavailable" (-32000: a full disk) as HTTP says it too: 503 with `Retry-After`,
/// so proxies and clients that read only the status retry as well.
fn unavailable(reply: &Value, error: &RpcError) -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        reply.to_string(),
    )
        .into_response();
    if let Some(ms) = error.data.get("retryAfterMs").and_then(Value::as_u64) {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(ms.div_ceil(1000).max(1)),
        );
    }
    response
}
