//! The JSON-RPC binding (spec 9): one POST per request, JSON-RPC errors with HTTP 200, and
//! SSE streams whose every event is a JSON-RPC response carrying a `StreamResponse`.
//!
//! It also answers A2A v0.3's methods (`message/send`, `tasks/get`, ...), told apart by their
//! names: such a request is upgraded to the v1.0 request it means, runs as that, and its answer
//! (each stream event, every error) goes back in v0.3's shapes ([`v03`]).

use super::entry::{Caller, body_bytes, caller, check_version};
use super::events::{Events, sse};
use super::state::A2aState;
use super::{operations, push};
use crate::protocol::a2a::{A2aError, A2aErrorKind, v03};
use crate::protocol::jsonrpc;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The methods of this binding.
const METHODS: &[&str] = &[
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
];

/// What a method answers.
enum Answer {
    Result(Value),
    Stream(Events),
}

fn json_response(body: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `POST /agents/{agent}/a2a`.
pub(super) async fn handle(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Before the body is read, its content type (see the kit's `json_body`); the version is
    // checked once the method says which version the request is in.
    let bytes = match body_bytes(&app, &headers, body).await {
        Ok(bytes) => bytes,
        Err(error) => return json_response(&error.to_jsonrpc_response(&Value::Null)),
    };
    let request = match jsonrpc::parse_request(&bytes) {
        Ok(request) => request,
        Err(rejected) => {
            let error = A2aError::from(rejected.error);
            return json_response(&error.to_jsonrpc_response(&rejected.id));
        }
    };
    let id = request.id.clone();
    let v03 = v03::is_v03_method(&request.method);
    // Refusals from here on are in the request's version. Those above, made before the
    // method was known, are in v1.0's form: their codes are v0.3's too.
    let refuse = move |error: &A2aError, id: &Value| {
        if v03 {
            v03::error_response(error, id)
        } else {
            error.to_jsonrpc_response(id)
        }
    };
    // The answer goes back in v0.3's shapes when the request came in them.
    let mut downgrade = None;
    let answer = async {
        if v03 {
            check_version_v03(&headers)?;
        } else {
            check_version(&headers)?;
        }
        let caller = Caller {
            v03,
            ..caller(&app, &agent_id, &headers, &peer)?
        };
        if !v03 {
            return dispatch(&app, &caller, &request.method, &request.params).await;
        }
        let upgraded = v03::upgrade_request(&request.method, &request.params)?;
        downgrade = Some(upgraded.downgrade);
        dispatch(&app, &caller, upgraded.method, &upgraded.params).await
    }
    .await;
    let answer = match (answer, &downgrade) {
        (Ok(Answer::Result(result)), Some(d)) => d.downgrade_result(result).map(Answer::Result),
        (answer, _) => answer,
    };
    match answer {
        Ok(Answer::Result(result)) => json_response(&jsonrpc::success(&id, result)),
        Ok(Answer::Stream(events)) => {
            sse(events, app.http.sse_keep_alive, move |item| match item {
                Ok(response) => {
                    let response = match &downgrade {
                        Some(d) => d.downgrade_stream_item(response),
                        None => response,
                    };
                    jsonrpc::success(&id, response)
                }
                Err(error) => refuse(&error, &id),
            })
        }
        Err(error) => {
            tracing::debug!(code = error.kind.jsonrpc_code(), v03, "A2A request refused");
            json_response(&refuse(&error, &id))
        }
    }
}

/// VersionNotSupported unless a v0.3 request asks for v0.3 (or no version, which v1.0 3.6.2
/// reads as 0.3).
fn check_version_v03(headers: &HeaderMap) -> Result<(), A2aError> {
    let asked = headers
        .get("a2a-version")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if v03::accepts_version(&asked) {
        return Ok(());
    }
    Err(A2aError::new(
        A2aErrorKind::VersionNotSupported,
        json!({
            "requested": asked.trim(),
            "supported": v03::VERSION,
            "reason": format!(
                "v0.3 method names are served as A2A {}; under A2A {} use the v1.0 methods ({})",
                v03::VERSION,
                crate::protocol::a2a::VERSION,
                METHODS.join(", "),
            ),
        }),
    ))
}

async fn dispatch(
    app: &A2aState,
    caller: &Caller,
    method: &str,
    params: &Value,
) -> Result<Answer, A2aError> {
    Ok(match method {
        "SendMessage" => Answer::Result(operations::send(app, caller, params).await?),
        "SendStreamingMessage" => {
            Answer::Stream(operations::send_streaming(app, caller, params).await?)
        }
        "GetTask" => Answer::Result(operations::get(app, caller, params).await?),
        "ListTasks" => Answer::Result(operations::list(app, caller, params).await?),
        "CancelTask" => Answer::Result(operations::cancel(app, caller, params).await?),
        "SubscribeToTask" => Answer::Stream(operations::subscribe(app, caller, params).await?),
        "CreateTaskPushNotificationConfig" => {
            Answer::Result(push::create(app, caller, params, None).await?)
        }
        "GetTaskPushNotificationConfig" => Answer::Result(push::get(app, caller, params).await?),
        "ListTaskPushNotificationConfigs" => Answer::Result(push::list(app, caller, params).await?),
        "DeleteTaskPushNotificationConfig" => {
            Answer::Result(push::delete(app, caller, params).await?)
        }
        "GetExtendedAgentCard" => return Err(operations::no_extended_card()),
        other => {
            return Err(A2aError::new(
                A2aErrorKind::MethodNotFound,
                json!({"method": other, "supported": METHODS}),
            ));
        }
    })
}
