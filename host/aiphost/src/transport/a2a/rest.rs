//! The HTTP+JSON binding (spec 11): resources under the partner's REST URL, AIP-193 error
//! bodies with the A2A status codes, and SSE streams of bare `StreamResponse`s.
//!
//! A task's actions are custom methods on its path (`/tasks/{id}:cancel`,
//! `/tasks/{id}:subscribe`); the route takes the whole segment and splits the verb off here.
//! Subscribing is a GET in the spec; POST is accepted too (clients send both).

use super::entry::{Caller, body_value, caller, check_version};
use super::events::Events;
use super::state::A2aState;
use super::{operations, push};
use crate::protocol::a2a::{A2aError, A2aErrorKind};
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// An A2A error as an HTTP response.
fn error_response(error: &A2aError) -> Response {
    let (status, body) = error.to_http();
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    // A quota that refills, or a full disk, says when, in whole seconds, as HTTP clients and proxies read it.
    let retry_after_ms = error.metadata.get("retryAfterMs").and_then(Value::as_u64);
    if let (StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE, Some(ms)) =
        (status, retry_after_ms)
    {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(ms.div_ceil(1000).max(1)),
        );
    }
    response
}

fn ok_json(body: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A stream of bare `StreamResponse`s; an error ends it with its AIP-193 body.
fn sse(app: &A2aState, events: Events) -> Response {
    super::events::sse(events, app.http.sse_keep_alive, |item| match item {
        Ok(response) => response,
        Err(error) => error.to_http().1,
    })
}

/// The caller, after the version check.
fn enter(
    app: &A2aState,
    agent: &str,
    headers: &HeaderMap,
    peer: &Peer,
) -> Result<Caller, A2aError> {
    check_version(headers)?;
    caller(app, agent, headers, peer)
}

/// Query parameters (and the path's task id) as one params object of strings.
fn params(query: HashMap<String, String>, id: Option<&str>) -> Value {
    let mut params: Map<String, Value> = query
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    if let Some(id) = id {
        params.insert("id".into(), Value::String(id.to_string()));
    }
    Value::Object(params)
}

/// `POST /message:send`.
pub(super) async fn send(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let body = body_value(&app, &headers, body).await?;
        let caller = enter(&app, &agent, &headers, &peer)?;
        operations::send(&app, &caller, &body).await
    }
    .await;
    match result {
        Ok(answer) => ok_json(&answer),
        Err(e) => error_response(&e),
    }
}

/// `POST /message:stream`.
pub(super) async fn send_streaming(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let body = body_value(&app, &headers, body).await?;
        let caller = enter(&app, &agent, &headers, &peer)?;
        operations::send_streaming(&app, &caller, &body).await
    }
    .await;
    match result {
        Ok(events) => sse(&app, events),
        Err(e) => error_response(&e),
    }
}

/// `GET /tasks`.
pub(super) async fn list(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let caller = enter(&app, &agent, &headers, &peer)?;
        operations::list(&app, &caller, &params(query, None)).await
    }
    .await;
    match result {
        Ok(answer) => ok_json(&answer),
        Err(e) => error_response(&e),
    }
}

/// A task path segment: the id, and the custom verb after its last `:` if it is one of ours.
fn split_verb(segment: &str) -> (&str, Option<&str>) {
    match segment.rsplit_once(':') {
        Some((id, verb)) if matches!(verb, "cancel" | "subscribe") => (id, Some(verb)),
        _ => (segment, None),
    }
}

/// `GET /tasks/{id}` and `GET /tasks/{id}:subscribe`.
pub(super) async fn task_get(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path((agent, segment)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let (id, verb) = split_verb(&segment);
    let caller = match enter(&app, &agent, &headers, &peer) {
        Ok(c) => c,
        Err(e) => return error_response(&e),
    };
    let params = params(query, Some(id));
    match verb {
        None => match operations::get(&app, &caller, &params).await {
            Ok(task) => ok_json(&task),
            Err(e) => error_response(&e),
        },
        Some("subscribe") => match operations::subscribe(&app, &caller, &params).await {
            Ok(events) => sse(&app, events),
            Err(e) => error_response(&e),
        },
        Some(other) => error_response(&not_this_verb(other, "GET")),
    }
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`. Their bodies carry nothing this
/// host reads (a cancel's `metadata` at most), so they are not read.
pub(super) async fn task_post(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path((agent, segment)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let (id, verb) = split_verb(&segment);
    let caller = match enter(&app, &agent, &headers, &peer) {
        Ok(c) => c,
        Err(e) => return error_response(&e),
    };
    let params = params(HashMap::new(), Some(id));
    match verb {
        Some("cancel") => match operations::cancel(&app, &caller, &params).await {
            Ok(task) => ok_json(&task),
            Err(e) => error_response(&e),
        },
        Some("subscribe") => match operations::subscribe(&app, &caller, &params).await {
            Ok(events) => sse(&app, events),
            Err(e) => error_response(&e),
        },
        _ => error_response(&not_this_verb(verb.unwrap_or(""), "POST")),
    }
}

fn not_this_verb(verb: &str, method: &str) -> A2aError {
    A2aError::new(
        A2aErrorKind::MethodNotFound,
        serde_json::json!({
            "reason": format!("{method} /tasks/{{id}}{} is not an operation", if verb.is_empty() { String::new() } else { format!(":{verb}") }),
            "operations": ["GET /tasks/{id}", "POST /tasks/{id}:cancel", "GET|POST /tasks/{id}:subscribe"],
        }),
    )
}

/// `POST /tasks/{task}/pushNotificationConfigs` (create, the body a config) and `GET` (list).
pub(super) async fn push_configs(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path((agent, task)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        match method {
            Method::POST => {
                let body = body_value(&app, &headers, body).await?;
                let caller = enter(&app, &agent, &headers, &peer)?;
                push::create(&app, &caller, &body, Some(&task)).await
            }
            Method::GET => {
                let caller = enter(&app, &agent, &headers, &peer)?;
                let mut params = params(query, None);
                params["taskId"] = Value::String(task);
                push::list(&app, &caller, &params).await
            }
            other => Err(not_this_method(
                &other,
                "/tasks/{id}/pushNotificationConfigs",
            )),
        }
    }
    .await;
    match result {
        Ok(answer) => ok_json(&answer),
        Err(e) => error_response(&e),
    }
}

/// `GET` and `DELETE /tasks/{task}/pushNotificationConfigs/{config}`.
pub(super) async fn push_config(
    State(app): State<A2aState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path((agent, task, config)): Path<(String, String, String)>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let params = serde_json::json!({"taskId": task, "id": config});
        match method {
            Method::GET => {
                let caller = enter(&app, &agent, &headers, &peer)?;
                push::get(&app, &caller, &params).await
            }
            Method::DELETE => {
                let caller = enter(&app, &agent, &headers, &peer)?;
                push::delete(&app, &caller, &params).await
            }
            other => Err(not_this_method(
                &other,
                "/tasks/{id}/pushNotificationConfigs/{configId}",
            )),
        }
    }
    .await;
    match result {
        Ok(answer) => ok_json(&answer),
        Err(e) => error_response(&e),
    }
}

fn not_this_method(method: &Method, path: &str) -> A2aError {
    A2aError::new(
        A2aErrorKind::MethodNotFound,
        serde_json::json!({
            "reason": format!("{method} {path} is not an operation"),
            "operations": [
                "POST /tasks/{id}/pushNotificationConfigs",
                "GET /tasks/{id}/pushNotificationConfigs",
                "GET /tasks/{id}/pushNotificationConfigs/{configId}",
                "DELETE /tasks/{id}/pushNotificationConfigs/{configId}",
            ],
        }),
    )
}

/// `GET /extendedAgentCard`.
pub(super) async fn extended_card(headers: HeaderMap) -> Response {
    match check_version(&headers) {
        Err(e) => error_response(&e),
        Ok(()) => error_response(&operations::no_extended_card()),
    }
}

#[cfg(test)]
mod tests {
    use super::split_verb;

    #[test]
    fn verbs_split_off_at_the_last_colon() {
        assert_eq!(split_verb("t-1:cancel"), ("t-1", Some("cancel")));
        assert_eq!(split_verb("a:b:subscribe"), ("a:b", Some("subscribe")));
        assert_eq!(split_verb("a:b"), ("a:b", None));
        assert_eq!(split_verb("t-1"), ("t-1", None));
    }
}
