//! The AIP entry: every AIP path accepts any method; the method picks the door (`rpc`, `stream`,
//! `notification/*`, `group`). Errors are JSON-RPC errors with HTTP 200 (the reference SDK raises
//! on any other status), but for -32000 (unavailable: a full disk), which is a 503 too.

use super::state::AipState;
use super::{notification, rpc, stream};
use crate::aip_error;
use crate::protocol::jsonrpc::{self, Request};
use crate::protocol::{ErrorCode, RpcError};
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::{self, BodyRefused};
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Methods this host knows, for `-32601` answers.
const METHODS: &[&str] = &[
    "rpc",
    "stream",
    "notification/set",
    "notification/get",
    "notification/delete",
    "notification/start",
    "group",
];

/// What a method answers: a JSON-RPC result, a task (rendered straight to bytes), or a stream
/// of events. The task is whatever the methods answer it as: the entry only serializes it, so
/// it does not name the command layer below the methods.
enum Answer<T> {
    Result(Value),
    Task(T),
    Stream(Response),
}

/// The media types an AIP request body may be sent as.
const MEDIA: &[&str] = &["application/json"];

/// `POST /agents/{agent}/...`: read, dispatch, answer.
pub(super) async fn handle(
    State(app): State<AipState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let reply = match json_body::bytes(&headers, body, MEDIA, app.http.max_body_bytes).await {
        Err(refused) => {
            let error = body_refused(refused);
            tracing::debug!(data = %error.data, "request refused");
            failure(&Value::Null, &error)
        }
        Ok(bytes) => match jsonrpc::parse_request(&bytes) {
            Err(rejected) => failure(&rejected.id, &rejected.error),
            Ok(request) => {
                let id = request.id.clone();
                match dispatch(&app, &agent_id, &headers, &peer, request).await {
                    Ok(Answer::Stream(response)) => return response,
                    Ok(Answer::Result(result)) => jsonrpc::Success::new(&id, result).to_bytes(),
                    Ok(Answer::Task(task)) => jsonrpc::Success::new(&id, &task).to_bytes(),
                    Err(error) => {
                        tracing::debug!(code = error.code, data = %error.data, "request refused");
                        if error.code == ErrorCode::Unavailable.code() {
                            return unavailable(&jsonrpc::failure(&id, &error), &error);
                        }
                        failure(&id, &error)
                    }
                }
            }
        },
    };
    ([(header::CONTENT_TYPE, "application/json")], reply).into_response()
}

/// A JSON-RPC error response's bytes.
fn failure(id: &Value, error: &RpcError) -> Vec<u8> {
    jsonrpc::failure(id, error).to_string().into_bytes()
}

/// A body refused before it was parsed, as AIP says it: -32600 (Invalid Request), with the
/// content type sent and the one expected, or the limit or timeout the body ran into.
fn body_refused(refused: BodyRefused) -> RpcError {
    let data = match refused {
        BodyRefused::ContentType { given } => json!({
            "reason": "an AIP request must be sent with `Content-Type: application/json`",
            "contentType": given,
            "expected": "application/json",
        }),
        BodyRefused::Read(e) => e.details(),
        BodyRefused::NotJson(e) => json!({"reason": e.to_string()}),
    };
    RpcError::new(ErrorCode::InvalidRequest, data)
}

/// The kit's refusal of a caller in AIP's words.
fn caller_refused(e: CallerError) -> RpcError {
    match e {
        CallerError::NotHosted { .. } => RpcError::invalid_request(e.to_string()),
        CallerError::Refused(e) => aip_error::leader_auth(&e),
    }
}

async fn dispatch(
    app: &AipState,
    agent_id: &str,
    headers: &HeaderMap,
    peer: &Peer,
    request: Request,
) -> Result<Answer<impl serde::Serialize>, RpcError> {
    let agent = app.callers.partner(agent_id).map_err(caller_refused)?;
    // A command counts against the partner's rate (its tenant's quota, or the operator's
    // `--requests-per-second`) in the engine, whatever door it comes through; every other
    // request counts here, before the Leader is authenticated.
    let command = matches!(
        request.method.as_str(),
        "rpc" | "stream" | "notification/start"
    );
    if !command {
        agent.admit_request().map_err(|e| aip_error::quota(&e))?;
    }
    let caller = app
        .callers
        .authenticate(agent, headers, peer)
        .map_err(caller_refused)?;
    let (agent, owner) = (&caller.agent, caller.owner.as_deref());
    let Request { id, method, params } = request;
    match method.as_str() {
        "rpc" => rpc::rpc(app, agent, owner, params).await.map(Answer::Task),
        "stream" => stream::stream(app, agent, owner, id, params)
            .await
            .map(Answer::Stream),
        "notification/set" => notification::set(app, agent, owner, &params)
            .await
            .map(Answer::Result),
        "notification/get" => notification::get(app, agent, owner, &params).map(Answer::Result),
        "notification/delete" => notification::delete(app, agent, owner, &params)
            .await
            .map(Answer::Result),
        "notification/start" => notification::start(app, agent, owner, params)
            .await
            .map(Answer::Task),
        "group" | "group/rpc" => app
            .invitations
            .join(agent, owner, &params)
            .await
            .map(Answer::Result),
        other => Err(RpcError::new(
            ErrorCode::MethodNotFound,
            json!({"method": other, "supported": METHODS}),
        )),
    }
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
