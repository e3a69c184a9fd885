//! The AIP entry: every AIP path accepts any method; the method picks the door (`rpc`, `stream`,
//! `notification/*`, `group`). Errors are JSON-RPC errors with HTTP 200 (the reference SDK raises
//! on any other status), but for -32000 (unavailable: a full disk), which is a 503 too.

use super::{notification, rpc, stream};
use crate::aip_error;
use crate::protocol::jsonrpc::{self, Request};
use crate::protocol::{ErrorCode, RpcError};
use crate::transport::AppState;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tracing::Instrument;

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
        let reply = match crate::transport::body::read(body, app.config.max_body_bytes).await {
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
        .authenticate_leader(
            &agent,
            crate::transport::admin::bearer(headers),
            peer.certificate(),
        )
        .map_err(|e| aip_error::leader_auth(&e))?;
    let owner = owner.as_deref();
    let params = &request.params;
    match request.method.as_str() {
        "rpc" => rpc::rpc(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "stream" => stream::stream(app, &agent, owner, request.id.clone(), params)
            .await
            .map(Answer::Stream),
        "notification/set" => notification::set(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "notification/get" => notification::get(app, &agent, owner, params).map(Answer::Result),
        "notification/delete" => notification::delete(app, &agent, owner, params)
            .await
            .map(Answer::Result),
        "notification/start" => notification::start(app, &agent, owner, params)
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
