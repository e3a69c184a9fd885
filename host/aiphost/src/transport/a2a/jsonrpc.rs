//! The JSON-RPC binding (spec 9): one POST per request, JSON-RPC errors with HTTP 200, and
//! SSE streams whose every event is a JSON-RPC response carrying a `StreamResponse`.

use super::events::{Events, sse};
use super::{Caller, caller, check_json_body, check_version, operations, push};
use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::protocol::jsonrpc;
use crate::transport::AppState;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tracing::Instrument;

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
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let span = tracing::info_span!("a2a", agent = %agent_id, request = %&request_id[..12]);
    async move {
        if let Err(error) = check_json_body(&headers).and_then(|()| check_version(&headers)) {
            return json_response(&error.to_jsonrpc_response(&Value::Null));
        }
        let bytes = match crate::transport::body::read(body, app.config.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(e) => {
                let error = A2aError::new(A2aErrorKind::InvalidRequest, e.details());
                return json_response(&error.to_jsonrpc_response(&Value::Null));
            }
        };
        let request = match jsonrpc::parse_request(&bytes) {
            Ok(request) => request,
            Err(rejected) => {
                let error = A2aError::from(rejected.error);
                return json_response(&error.to_jsonrpc_response(&rejected.id));
            }
        };
        let id = request.id.clone();
        let answer = match caller(&app, &agent_id, &headers, &peer) {
            Ok(caller) => dispatch(&app, &caller, &request.method, &request.params).await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(Answer::Result(result)) => json_response(&jsonrpc::success(&id, result)),
            Ok(Answer::Stream(events)) => {
                sse(events, app.config.sse_keep_alive, move |item| match item {
                    Ok(response) => jsonrpc::success(&id, response),
                    Err(error) => error.to_jsonrpc_response(&id),
                })
            }
            Err(error) => {
                tracing::debug!(code = error.kind.jsonrpc_code(), "A2A request refused");
                json_response(&error.to_jsonrpc_response(&id))
            }
        }
    }
    .instrument(span)
    .await
}

async fn dispatch(
    app: &AppState,
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
