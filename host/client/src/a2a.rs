//! A client of any A2A (v1.0) agent over the JSON-RPC binding (spec 9): what
//! `aiphost call --protocol a2a` uses, and handy in tests.
//!
//! Every request is a JSON-RPC 2.0 POST to the agent's endpoint (for a partner of this host,
//! `http://HOST/agents/{id}/a2a`; [`endpoint`] derives it from the base URL) with
//! `A2A-Version: 1.0`. `SendStreamingMessage` and `SubscribeToTask` answer with Server-Sent
//! Events, each a JSON-RPC response whose `result` is a `StreamResponse`; an A2A error, before
//! the stream or in it, is an [`A2aClientError::Rpc`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), aiphost_client::a2a::A2aClientError> {
//! use aiphost_client::a2a::{A2aClient, Part, endpoint, user_message};
//! let client = A2aClient::new(endpoint("http://127.0.0.1:8080/agents/echo"));
//! let sent = client
//!     .send_message(user_message(&[Part::Text("hello".into())], None, None), None)
//!     .await?;
//! println!("{}", sent["task"]["status"]["state"]);
//! # Ok(()) }
//! ```

use crate::{ClientConfig, SseFrames, TlsError, Transport, TransportError, Until};
use serde_json::{Map, Value, json};
use std::ops::ControlFlow;

/// The A2A version this client speaks (sent as `A2A-Version`).
pub const VERSION: &str = "1.0";

/// The task states after which nothing more happens to a task.
const TERMINAL_STATES: &[&str] = &[
    "TASK_STATE_COMPLETED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_FAILED",
    "TASK_STATE_REJECTED",
];
/// The task states that wait for the client.
const INTERRUPTED_STATES: &[&str] = &["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"];

/// What went wrong with an A2A call.
#[derive(Debug, thiserror::Error)]
pub enum A2aClientError {
    /// The request could not be sent, or its answer not read.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The client's TLS files cannot be used.
    #[error("cannot set up TLS")]
    Tls(#[from] TlsError),
    /// The agent answered with an HTTP status other than success, and no JSON-RPC error.
    #[error("the agent answered HTTP {status}: {body}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The answer's body, as text.
        body: String,
    },
    /// The agent answered with a JSON-RPC error (an A2A error carries a
    /// `google.rpc.ErrorInfo` in `data`).
    #[error("A2A error {code} {}", describe(.message, .data))]
    Rpc {
        /// The JSON-RPC error code (0 when the error has none).
        code: i64,
        /// The error's message.
        message: String,
        /// The error's `data` (`null` when it has none).
        data: Value,
    },
    /// The answer is not what A2A says the method answers.
    #[error("invalid A2A response: {0}")]
    InvalidResponse(String),
}

impl A2aClientError {
    /// The A2A error's name (`TASK_NOT_FOUND`): the `reason` of its `google.rpc.ErrorInfo`.
    pub fn reason(&self) -> Option<&str> {
        match self {
            A2aClientError::Rpc { data, .. } => error_info(data)
                .and_then(|info| info.get("reason"))
                .and_then(Value::as_str),
            _ => None,
        }
    }
}

/// The `google.rpc.ErrorInfo` among an error's details.
fn error_info(data: &Value) -> Option<&Map<String, Value>> {
    data.as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|d| {
            d.get("@type").and_then(Value::as_str)
                == Some("type.googleapis.com/google.rpc.ErrorInfo")
        })
}

/// An error's message, its A2A reason and what its metadata says in words.
fn describe(message: &str, data: &Value) -> String {
    let mut out = message.to_string();
    if let Some(info) = error_info(data) {
        if let Some(reason) = info.get("reason").and_then(Value::as_str) {
            out.push_str(&format!(" ({reason})"));
        }
        let metadata = info.get("metadata").and_then(Value::as_object);
        let words = ["reason", "details", "detail"]
            .iter()
            .find_map(|k| metadata.and_then(|m| m.get(*k)).and_then(Value::as_str));
        if let Some(words) = words {
            out.push_str(&format!(": {words}"));
        }
        if let Some(field) = metadata
            .and_then(|m| m.get("field"))
            .and_then(Value::as_str)
        {
            out.push_str(&format!(" [field {field}]"));
        }
    }
    out
}

/// The JSON-RPC endpoint of an agent, from the URL forms `aiphost call` accepts for AIP: the
/// partner's base URL (`http://HOST/agents/echo`), its AIP `rpc` or `stream` endpoint, its
/// card's URL, or the A2A endpoint itself (`…/a2a`, also `…/a2a/rest`).
pub fn endpoint(url: &str) -> String {
    let mut base = url.trim_end_matches('/');
    for suffix in [
        "/.well-known/agent-card.json",
        "/a2a/rest",
        "/a2a",
        "/rpc",
        "/stream",
    ] {
        if let Some(stripped) = base.strip_suffix(suffix) {
            base = stripped;
            break;
        }
    }
    format!("{}/a2a", base.trim_end_matches('/'))
}

/// One part of a message (A2A v1.0 `Part`, which holds exactly one of `text`, `raw`, `url` and
/// `data`).
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// `{"text": …}`.
    Text(String),
    /// `{"data": …}`: any JSON value.
    Data(Value),
    /// `{"url": …}`: a file by reference.
    Url(String),
}

impl Part {
    /// The part as A2A's ProtoJSON.
    pub fn to_json(&self) -> Value {
        match self {
            Part::Text(text) => json!({"text": text}),
            Part::Data(data) => json!({"data": data}),
            Part::Url(url) => json!({"url": url}),
        }
    }
}

/// A client's message (`ROLE_USER`, a fresh `messageId`) with `parts`. Without `task_id` it
/// starts a new task (in the context `context_id`, or one the agent makes up); with it, it
/// continues that task.
pub fn user_message(parts: &[Part], task_id: Option<&str>, context_id: Option<&str>) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("ROLE_USER"));
    message.insert(
        "messageId".into(),
        json!(format!("msg-{}", uuid::Uuid::new_v4())),
    );
    message.insert(
        "parts".into(),
        Value::Array(parts.iter().map(Part::to_json).collect()),
    );
    if let Some(task) = task_id {
        message.insert("taskId".into(), json!(task));
    }
    if let Some(context) = context_id {
        message.insert("contextId".into(), json!(context));
    }
    Value::Object(message)
}

/// The filters and page of a `ListTasks` request (spec 3.1.4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state: `TASK_STATE_WORKING`, or `working`, `input-required`, ….
    pub status: Option<String>,
    /// Only tasks whose status changed after this ISO 8601 instant.
    pub status_timestamp_after: Option<String>,
    /// At most this many tasks (the agent's default when `None`).
    pub page_size: Option<u64>,
    /// The `nextPageToken` of the page before.
    pub page_token: Option<String>,
    /// At most this many history messages per task.
    pub history_length: Option<u64>,
    /// Include each task's artifacts.
    pub include_artifacts: bool,
}

impl TaskQuery {
    /// The request's `params`.
    pub fn params(&self) -> Value {
        let mut params = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                params.insert(key.into(), v);
            }
        };
        put("contextId", self.context_id.as_ref().map(|c| json!(c)));
        put(
            "status",
            self.status.as_deref().map(|s| json!(state_name(s))),
        );
        put(
            "statusTimestampAfter",
            self.status_timestamp_after.as_ref().map(|t| json!(t)),
        );
        put("pageSize", self.page_size.map(|n| json!(n)));
        put("pageToken", self.page_token.as_ref().map(|t| json!(t)));
        put("historyLength", self.history_length.map(|n| json!(n)));
        put(
            "includeArtifacts",
            self.include_artifacts.then_some(json!(true)),
        );
        Value::Object(params)
    }
}

/// A task state's A2A name: `input-required` and `TASK_STATE_INPUT_REQUIRED` alike become the
/// latter.
pub fn state_name(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        state.to_string()
    } else {
        format!(
            "TASK_STATE_{}",
            state.to_ascii_uppercase().replace(['-', ' '], "_")
        )
    }
}

/// Which kind of stream a request opened: it decides which event is its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// `SendStreamingMessage`: ends with a message, or when its task ends or waits for the
    /// client (the client must send again).
    Message,
    /// `SubscribeToTask`: ends when its task ends.
    Subscription,
}

/// Whether `event` (a `StreamResponse`) says its task waits for the client (input or auth
/// required) or has ended. A `task` event of a `SendStreamingMessage` stream is the task as it
/// was before the message, so it says nothing of where the message leaves it.
pub fn rests(event: &Value, kind: StreamKind) -> bool {
    let state = match (event.get("task"), event.get("statusUpdate")) {
        (Some(_), _) if kind == StreamKind::Message => return false,
        (Some(task), _) => &task["status"]["state"],
        (None, Some(update)) => &update["status"]["state"],
        (None, None) => return false,
    };
    state
        .as_str()
        .is_some_and(|s| TERMINAL_STATES.contains(&s) || INTERRUPTED_STATES.contains(&s))
}

/// Whether `event` (a `StreamResponse`) is the last of a stream of `kind`. The agent closes the
/// stream there; the client stops reading there too, so that an agent that keeps it open does
/// not keep it waiting. (The task a stream begins with does not end it for waiting: a message
/// that continues a task waiting for input begins with the task as it was.)
pub fn ends_stream(event: &Value, kind: StreamKind) -> bool {
    if event.get("message").is_some() {
        return true;
    }
    if let Some(task) = event.get("task") {
        return task["status"]["state"]
            .as_str()
            .is_some_and(|s| TERMINAL_STATES.contains(&s));
    }
    if let Some(update) = event.get("statusUpdate") {
        let state = update["status"]["state"].as_str().unwrap_or_default();
        return TERMINAL_STATES.contains(&state)
            || (kind == StreamKind::Message && INTERRUPTED_STATES.contains(&state));
    }
    false
}

/// A client for one A2A agent's JSON-RPC endpoint.
#[derive(Clone)]
pub struct A2aClient {
    transport: Transport,
    url: String,
}

impl A2aClient {
    /// A client for the JSON-RPC endpoint at `url` (see [`endpoint`]).
    pub fn new(url: impl Into<String>) -> Self {
        let config = ClientConfig::default();
        // The default configuration names no TLS files: nothing in it can fail.
        let transport = Transport::new(config.clone()).unwrap_or_else(|_| Transport {
            plain: reqwest::Client::new(),
            https: Err(std::sync::Arc::new(TlsError::Config("unavailable".into()))),
            config,
        });
        A2aClient {
            transport,
            url: url.into(),
        }
    }

    /// [`A2aClient::new`] with `config`: credentials and timeouts.
    pub fn with_config(
        url: impl Into<String>,
        config: ClientConfig,
    ) -> Result<Self, A2aClientError> {
        Ok(A2aClient {
            transport: Transport::new(config)?,
            url: url.into(),
        })
    }

    /// The endpoint this client calls.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON-RPC request of `method` with `params`, with a fresh id.
    pub fn request(&self, method: &str, params: Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": method,
            "params": params,
        })
    }

    /// Call `method` with `params` and return its `result`, whatever it is.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, A2aClientError> {
        let request = self.request(method, params);
        let (status, text) = self
            .transport
            .post_and_read(&self.url, &headers("application/json"), &request)
            .await?;
        read_answer(&request["id"], status, text)
    }

    /// `SendMessage`: send `message` (see [`user_message`]) with an optional
    /// `SendMessageConfiguration`. Returns the `SendMessageResponse`: `{"task": …}` or
    /// `{"message": …}`.
    pub async fn send_message(
        &self,
        message: Value,
        configuration: Option<Map<String, Value>>,
    ) -> Result<Value, A2aClientError> {
        let result = self
            .call("SendMessage", send_params(message, configuration))
            .await?;
        match (result.get("task"), result.get("message")) {
            (Some(task), None) => check_task(task)?,
            (None, Some(Value::Object(_))) => {}
            _ => {
                return Err(A2aClientError::InvalidResponse(format!(
                    "SendMessage answers with a task or a message, not {result}"
                )));
            }
        }
        Ok(result)
    }

    /// `SendStreamingMessage`: send `message` and hand each `StreamResponse` to `on_event` as
    /// it arrives, until the stream's last event (see [`ends_stream`]), the agent closes it or
    /// `on_event` breaks off. Returns the last event handed on (`None` when there was none).
    pub async fn send_streaming_message(
        &self,
        message: Value,
        configuration: Option<Map<String, Value>>,
        on_event: impl FnMut(&Value) -> ControlFlow<()>,
    ) -> Result<Option<Value>, A2aClientError> {
        self.stream(
            "SendStreamingMessage",
            send_params(message, configuration),
            StreamKind::Message,
            Until::Rests,
            on_event,
        )
        .await
    }

    /// `GetTask`: the task `id`, with at most `history_length` history messages.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<u64>,
    ) -> Result<Value, A2aClientError> {
        let mut params = json!({"id": id});
        if let Some(n) = history_length {
            params["historyLength"] = json!(n);
        }
        let task = self.call("GetTask", params).await?;
        check_task(&task)?;
        Ok(task)
    }

    /// `ListTasks`: a page of the tasks `query` selects (`{tasks, nextPageToken, …}`).
    pub async fn list_tasks(&self, query: &TaskQuery) -> Result<Value, A2aClientError> {
        let page = self.call("ListTasks", query.params()).await?;
        match page.get("tasks").and_then(Value::as_array) {
            Some(tasks) => tasks.iter().try_for_each(check_task)?,
            None => {
                return Err(A2aClientError::InvalidResponse(format!(
                    "ListTasks answers with a list of tasks, not {page}"
                )));
            }
        }
        Ok(page)
    }

    /// `CancelTask`: cancel the task `id`; returns it as it is now.
    pub async fn cancel_task(&self, id: &str) -> Result<Value, A2aClientError> {
        let task = self.call("CancelTask", json!({"id": id})).await?;
        check_task(&task)?;
        Ok(task)
    }

    /// `SubscribeToTask`: hand the task `id` as it is, then each of its events, to `on_event`
    /// as they arrive, until it rests or ends (as `until` says) or `on_event` breaks off.
    /// Returns the last event handed on.
    pub async fn subscribe_to_task(
        &self,
        id: &str,
        until: Until,
        on_event: impl FnMut(&Value) -> ControlFlow<()>,
    ) -> Result<Option<Value>, A2aClientError> {
        self.stream(
            "SubscribeToTask",
            json!({"id": id}),
            StreamKind::Subscription,
            until,
            on_event,
        )
        .await
    }

    async fn stream(
        &self,
        method: &str,
        params: Value,
        kind: StreamKind,
        until: Until,
        mut on_event: impl FnMut(&Value) -> ControlFlow<()>,
    ) -> Result<Option<Value>, A2aClientError> {
        let request = self.request(method, params);
        let mut answer = self
            .transport
            .post(&self.url, &headers("text/event-stream"), &request)
            .await?;
        let status = answer.status;
        if !(200..300).contains(&status) || !answer.is_sse() {
            // An error before the stream is answered as plain JSON.
            let text = answer.text().await?;
            read_answer(&request["id"], status, text)?;
            return Err(A2aClientError::InvalidResponse(format!(
                "{method} answered without a stream"
            )));
        }
        let mut frames = SseFrames::default();
        let mut seen = None;
        while let Some(chunk) = answer.chunk().await? {
            for data in frames.push(&chunk) {
                let answer: Value = serde_json::from_str(&data).map_err(|e| {
                    A2aClientError::InvalidResponse(format!("an event is not JSON ({e}): {data}"))
                })?;
                let event = check_response(&request["id"], answer)?;
                if !["task", "message", "statusUpdate", "artifactUpdate"]
                    .iter()
                    .any(|k| event.get(*k).is_some_and(Value::is_object))
                {
                    return Err(A2aClientError::InvalidResponse(format!(
                        "an event is not a StreamResponse: {event}"
                    )));
                }
                let flow = on_event(&event);
                let last = flow.is_break()
                    || ends_stream(&event, kind)
                    || (until == Until::Rests && rests(&event, kind));
                if last {
                    return Ok(Some(event));
                }
                seen = Some(event);
            }
        }
        Ok(seen)
    }
}

/// The headers of an A2A request that accepts `accept`.
fn headers(accept: &str) -> [(&'static str, String); 2] {
    [("a2a-version", VERSION.into()), ("accept", accept.into())]
}

fn send_params(message: Value, configuration: Option<Map<String, Value>>) -> Value {
    let mut params = json!({"message": message});
    if let Some(c) = configuration.filter(|c| !c.is_empty()) {
        params["configuration"] = Value::Object(c);
    }
    params
}

/// The result of a JSON answer: a JSON-RPC error whatever the HTTP status, else an HTTP error
/// status, else the result.
fn read_answer(id: &Value, status: u16, text: String) -> Result<Value, A2aClientError> {
    let checked = serde_json::from_str::<Value>(&text).map(|answer| check_response(id, answer));
    match (checked, (200..300).contains(&status)) {
        (Ok(Err(e @ A2aClientError::Rpc { .. })), _) => Err(e),
        (_, false) => Err(A2aClientError::Status { status, body: text }),
        (Ok(result), true) => result,
        (Err(e), true) => Err(A2aClientError::InvalidResponse(format!(
            "not JSON ({e}): {text}"
        ))),
    }
}

/// A task has an id and a status with a state.
fn check_task(task: &Value) -> Result<(), A2aClientError> {
    if task["id"].as_str().is_some() && task["status"]["state"].as_str().is_some() {
        Ok(())
    } else {
        Err(A2aClientError::InvalidResponse(format!(
            "expected a task with an id and a status, got {task}"
        )))
    }
}

/// Check a JSON-RPC response to the request with `id`; return its result.
fn check_response(id: &Value, response: Value) -> Result<Value, A2aClientError> {
    if response["jsonrpc"] != "2.0" {
        return Err(A2aClientError::InvalidResponse(format!(
            "not a JSON-RPC 2.0 response: {response}"
        )));
    }
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        return Err(A2aClientError::Rpc {
            code: error["code"].as_i64().unwrap_or(0),
            message: error["message"].as_str().unwrap_or_default().to_string(),
            data: error.get("data").cloned().unwrap_or(Value::Null),
        });
    }
    if &response["id"] != id {
        return Err(A2aClientError::InvalidResponse(format!(
            "the response id {} does not match the request id {id}",
            response["id"]
        )));
    }
    response.get("result").cloned().ok_or_else(|| {
        A2aClientError::InvalidResponse("a response with neither result nor error".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{CommandKind, DataItem};
    use aiphost_protocol::a2a::parse_send;

    #[test]
    fn the_endpoint_comes_from_any_form_of_the_partners_url() {
        for url in [
            "http://h/agents/echo",
            "http://h/agents/echo/",
            "http://h/agents/echo/rpc",
            "http://h/agents/echo/stream",
            "http://h/agents/echo/a2a",
            "http://h/agents/echo/a2a/",
            "http://h/agents/echo/a2a/rest",
            "http://h/agents/echo/.well-known/agent-card.json",
        ] {
            assert_eq!(endpoint(url), "http://h/agents/echo/a2a", "{url}");
        }
    }

    /// What the client sends is what this host's A2A door reads: a start without a task, a
    /// continue with one, every kind of part.
    #[test]
    fn messages_are_what_the_server_reads() {
        let parts = [
            Part::Text("hi".into()),
            Part::Data(json!({"k": 1})),
            Part::Data(json!([1, 2])),
            Part::Url("https://example.com/a.txt".into()),
        ];
        let sent = parse_send(&send_params(
            user_message(&parts, None, Some("ctx-1")),
            Some(Map::from_iter([(
                "returnImmediately".to_string(),
                json!(true),
            )])),
        ))
        .unwrap();
        assert_eq!(sent.command.command, CommandKind::Start);
        assert_eq!(sent.command.session_id.as_deref(), Some("ctx-1"));
        assert!(sent.return_immediately);
        assert_eq!(sent.command.data_items[0], DataItem::text("hi"));
        assert!(
            matches!(&sent.command.data_items[1], DataItem::Data { data, .. } if data["k"] == 1)
        );
        assert!(
            matches!(&sent.command.data_items[3], DataItem::File { uri: Some(u), .. } if u == "https://example.com/a.txt")
        );
        let more = parse_send(&send_params(
            user_message(&parts[..1], Some("t-1"), None),
            None,
        ))
        .unwrap();
        assert_eq!(more.command.command, CommandKind::Continue);
        assert_eq!(more.command.task_id.as_deref(), Some("t-1"));
    }

    #[test]
    fn streams_end_where_their_kind_says() {
        let update = |state: &str| json!({"statusUpdate": {"status": {"state": state}}});
        let task = |state: &str| json!({"task": {"id": "t", "status": {"state": state}}});
        use StreamKind::*;
        assert!(ends_stream(&update("TASK_STATE_COMPLETED"), Subscription));
        assert!(ends_stream(&update("TASK_STATE_INPUT_REQUIRED"), Message));
        assert!(!ends_stream(
            &update("TASK_STATE_INPUT_REQUIRED"),
            Subscription
        ));
        assert!(!ends_stream(&update("TASK_STATE_WORKING"), Message));
        assert!(!ends_stream(&task("TASK_STATE_INPUT_REQUIRED"), Message));
        assert!(ends_stream(&task("TASK_STATE_FAILED"), Message));
        assert!(ends_stream(&json!({"message": {}}), Message));
        assert!(!ends_stream(&json!({"artifactUpdate": {}}), Message));
    }

    #[test]
    fn a_task_rests_where_it_waits_for_the_client_or_ends() {
        let update = |state: &str| json!({"statusUpdate": {"status": {"state": state}}});
        let task = |state: &str| json!({"task": {"id": "t", "status": {"state": state}}});
        use StreamKind::*;
        assert!(rests(&update("TASK_STATE_INPUT_REQUIRED"), Subscription));
        assert!(rests(&update("TASK_STATE_COMPLETED"), Message));
        assert!(!rests(&update("TASK_STATE_WORKING"), Subscription));
        // A subscription begins with the task as it is; a message's stream with the task as it
        // was before the message.
        assert!(rests(&task("TASK_STATE_INPUT_REQUIRED"), Subscription));
        assert!(!rests(&task("TASK_STATE_INPUT_REQUIRED"), Message));
        assert!(!rests(&json!({"artifactUpdate": {}}), Subscription));
    }

    #[test]
    fn errors_say_their_a2a_reason() {
        let e = check_response(
            &json!("1"),
            json!({"jsonrpc": "2.0", "id": "1", "error": {
                "code": -32001, "message": "Task not found",
                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                          "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
                          "metadata": {"taskId": "t", "details": "no such task"}}]}}),
        )
        .unwrap_err();
        assert_eq!(e.reason(), Some("TASK_NOT_FOUND"));
        assert_eq!(
            e.to_string(),
            "A2A error -32001 Task not found (TASK_NOT_FOUND): no such task"
        );
        let plain = check_response(
            &json!(1),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}),
        )
        .unwrap_err();
        assert_eq!(plain.reason(), None);
        assert_eq!(plain.to_string(), "A2A error -32601 Method not found");
        assert!(matches!(
            check_response(&json!(1), json!({"jsonrpc": "2.0", "id": 2, "result": {}})),
            Err(A2aClientError::InvalidResponse(_))
        ));
    }

    #[test]
    fn list_queries_name_states_as_a2a_does() {
        let query = TaskQuery {
            context_id: Some("c".into()),
            status: Some("input-required".into()),
            page_size: Some(5),
            include_artifacts: true,
            ..TaskQuery::default()
        };
        assert_eq!(
            query.params(),
            json!({"contextId": "c", "status": "TASK_STATE_INPUT_REQUIRED", "pageSize": 5,
                   "includeArtifacts": true})
        );
        assert_eq!(TaskQuery::default().params(), json!({}));
    }
}
