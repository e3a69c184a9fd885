//! A2A v1.0 helpers: the JSON-RPC endpoint of a hosted partner and its requests, v1.0 user
//! messages, the `ErrorInfo` reason of an error, the HTTP+JSON binding and agent cards.
//!
//! An error's code is [`crate::error_code`], as for AIP. v0.3's shapes (kinds, lowercase roles,
//! its errors' `data`) are `tests/all/a2a_v03.rs`'s own.

use crate::{TestHost, assert_json, post};
use serde_json::{Value, json};

/// `agent`'s A2A JSON-RPC endpoint.
pub fn endpoint(host: &TestHost, agent: &str) -> String {
    format!("{}/agents/{agent}/a2a", host.url)
}

/// `agent`'s A2A HTTP+JSON base URL.
pub fn rest_base(host: &TestHost, agent: &str) -> String {
    format!("{}/agents/{agent}/a2a/rest", host.url)
}

/// A JSON-RPC request of the A2A binding (id 1).
pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// POST a JSON-RPC request to `agent`'s A2A endpoint.
pub async fn call(host: &TestHost, agent: &str, method: &str, params: Value) -> Value {
    post(&endpoint(host, agent), &request(method, params)).await
}

/// A v1.0 user message with one text part.
pub fn message(id: &str, text: &str) -> Value {
    json!({"role": "ROLE_USER", "messageId": id, "parts": [{"text": text}]})
}

/// A v1.0 user message with one text part that continues task `task`.
pub fn message_to(task: &str, id: &str, text: &str) -> Value {
    let mut message = message(id, text);
    message["taskId"] = json!(task);
    message
}

/// The reason of a JSON-RPC error's first detail (its `ErrorInfo`); empty if there is none.
pub fn reason(answer: &Value) -> &str {
    answer["error"]["data"][0]["reason"]
        .as_str()
        .unwrap_or_default()
}

/// A request of the HTTP+JSON binding: `(HTTP status, JSON answer)`, asserting a JSON content
/// type.
pub async fn rest(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    assert_json(&response);
    (status, response.json().await.expect("JSON"))
}

/// `agent`'s agent card.
pub async fn card(host: &TestHost, agent: &str) -> Value {
    reqwest::get(format!(
        "{}/agents/{agent}/.well-known/agent-card.json",
        host.url
    ))
    .await
    .expect("request")
    .json()
    .await
    .expect("JSON")
}
