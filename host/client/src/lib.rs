//! A Leader-side AIP client, in either dialect: what `aiphost call` uses, and handy in tests.
//! [`a2a`] is its A2A (v1.0, JSON-RPC binding) counterpart, for `aiphost call --protocol a2a`.
//!
//! It speaks to a host only over the wire, so it depends on `aiphost-protocol` and on no crate
//! of the host itself: a Leader's tool can use it without building wasmtime.
//!
//! ```no_run
//! # async fn demo() -> Result<(), aiphost_client::ClientError> {
//! use aiphost_client::Client;
//! use aiphost_model::{CommandKind, DataItem};
//! use aiphost_protocol::aip::Dialect;
//! let client = Client::new("http://127.0.0.1:8080/agents/echo/rpc", Dialect::V2, "1.2.156.3088.1.1.DEMO.LEADER.1.0000");
//! let task = client
//!     .send(CommandKind::Start, Some("task-1"), Some("session-1"), vec![DataItem::text("hello")], Default::default())
//!     .await?;
//! println!("{}", task["status"]["state"]);
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod a2a;
pub mod tls;

use aiphost_model::{CommandKind, DataItem, JsonObject, TaskState, Timestamp};
use aiphost_protocol::aip::Dialect;
use bytes::Bytes;
use serde_json::{Value, json};
use std::ops::ControlFlow;
use std::time::Duration;
pub use tls::{ClientTls, TlsError};

/// How a client reaches a partner: the Leader's credentials and how long it waits. Both the
/// AIP [`Client`] and the [`a2a::A2aClient`] take one; `aiphost call` fills it from its flags.
#[derive(Clone)]
pub struct ClientConfig {
    /// An API key, sent as `Authorization: Bearer KEY` (for partners whose Leaders need one).
    pub api_key: Option<String>,
    /// The longest connecting may take.
    pub connect_timeout: Duration,
    /// The longest a request that is not a stream may take, answer included.
    pub request_timeout: Duration,
    /// A stream that sends nothing at all (not even a keep-alive comment) for this long is
    /// given up. A stream has no limit as a whole: it lasts as long as the task it follows.
    /// Longer than the host's keep-alive (15 s by default), so a quiet task is not given up.
    pub stream_idle_timeout: Duration,
    /// For `https://` URLs: the Leader's client certificate, and the CA to trust.
    pub tls: ClientTls,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            // Never the key itself (issue 29 item 8): a config in a log line or a panic message
            // would carry it.
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("tls", &self.tls)
            .finish()
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
            stream_idle_timeout: Duration::from_secs(120),
            tls: ClientTls::default(),
        }
    }
}

/// How requests go out: reqwest for `http://`, [`tls::Https`] for `https://` (with the
/// Leader's client certificate, if any), with the credentials and timeouts of a
/// [`ClientConfig`].
#[derive(Clone)]
pub(crate) struct Transport {
    plain: reqwest::Client,
    https: Result<tls::Https, std::sync::Arc<TlsError>>,
    config: ClientConfig,
}

impl Transport {
    /// Fails only for TLS files that cannot be used; without any, an unusable system bundle
    /// is reported when an `https://` URL is called.
    pub(crate) fn new(config: ClientConfig) -> Result<Transport, TlsError> {
        let https = tls::Https::new(&config.tls);
        let wanted = config.tls.cert.is_some() || config.tls.ca.is_some();
        let https = match https {
            Err(e) if wanted => return Err(e),
            other => other.map_err(std::sync::Arc::new),
        };
        // Deliberately no whole-request timeout here (it would end every stream of a task that
        // rests); requests that are not streams are bounded by `request_timeout` each.
        let plain = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.stream_idle_timeout)
            .build()
            .unwrap_or_default();
        Ok(Transport {
            plain,
            https,
            config,
        })
    }

    /// POST `body` as JSON to `url` with `headers` and the Leader's credentials; the answer's
    /// head, with its body to read.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<Answer, TransportError> {
        let mut headers = headers.to_vec();
        headers.push(("content-type", "application/json".into()));
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        if url.starts_with("https://") {
            let https = self
                .https
                .as_ref()
                .map_err(|e| TransportError::NoTls(e.clone()))?;
            let response = https
                .post(
                    url,
                    &headers,
                    body.to_string().into_bytes(),
                    self.config.connect_timeout,
                )
                .await?;
            return Ok(Answer {
                status: response.status().as_u16(),
                content_type: content_type(response.headers()),
                body: AnswerBody::Tls(response.into_body()),
                idle: self.config.stream_idle_timeout,
            });
        }
        let mut request = self.plain.post(url).json(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request.send().await?;
        Ok(Answer {
            status: response.status().as_u16(),
            content_type: content_type(response.headers()),
            body: AnswerBody::Plain(response),
            idle: self.config.stream_idle_timeout,
        })
    }

    /// POST `body` and read the whole answer, within `request_timeout`: `(status, text)`.
    pub(crate) async fn post_and_read(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<(u16, String), TransportError> {
        let limit = self.config.request_timeout;
        tokio::time::timeout(limit, async {
            let answer = self.post(url, headers, body).await?;
            let status = answer.status;
            Ok((status, answer.text().await?))
        })
        .await
        .map_err(|_| TransportError::Timeout(limit))?
    }
}

fn content_type(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// An answer's head, and its body to read on.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    body: AnswerBody,
    idle: Duration,
}

enum AnswerBody {
    Plain(reqwest::Response),
    Tls(hyper::body::Incoming),
}

impl Answer {
    /// Whether the answer is an event stream.
    pub(crate) fn is_sse(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|v| v.starts_with("text/event-stream"))
    }

    /// The next chunk of the body (`None` at its end); nothing for the idle timeout is an
    /// error.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, TransportError> {
        match &mut self.body {
            // reqwest's read timeout is the idle timeout.
            AnswerBody::Plain(response) => Ok(response.chunk().await?),
            AnswerBody::Tls(body) => tokio::time::timeout(self.idle, tls::next_chunk(body))
                .await
                .map_err(|_| TransportError::Timeout(self.idle))?
                .transpose()
                .map_err(TransportError::from),
        }
    }

    /// The whole body as text.
    pub(crate) async fn text(mut self) -> Result<String, TransportError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            bytes.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// Over `http://`. (What reqwest says is the error's source, not part of this text, so
    /// that a chain of causes names it once.)
    #[error("HTTP request failed")]
    Http(#[from] reqwest::Error),
    /// Over `https://`.
    #[error("HTTPS request failed")]
    Https(#[from] tls::HttpsError),
    /// An `https://` URL, and TLS could not be set up.
    #[error("HTTPS is not available")]
    NoTls(#[source] std::sync::Arc<TlsError>),
    /// Nothing came within the limit.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// How long a stream is followed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Until {
    /// Until the task rests (awaiting input or completion; over A2A, input or auth required)
    /// or ends. (A re-stream replays the task's earlier events: [`Client::stream`] takes the
    /// instant from which a rest counts.)
    #[default]
    Rests,
    /// Until the task ends (the partner closes the stream), however long it rests.
    Ends,
}

/// What went wrong with a call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request could not be sent, or its answer not read.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The client's TLS files cannot be used.
    #[error("cannot set up TLS")]
    Tls(#[from] TlsError),
    /// The partner answered with an HTTP status other than success.
    #[error("the partner answered HTTP {status}: {body}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The answer's body, as text.
        body: String,
    },
    /// The partner answered a JSON-RPC error.
    #[error("JSON-RPC error {code} {message}: {data}")]
    Rpc {
        /// The JSON-RPC error code (0 when the error has none).
        code: i64,
        /// The error's message.
        message: String,
        /// The error's `data` (`null` when it has none).
        data: Value,
    },
    /// The answer is not a valid AIP reply (the AIP InvalidAgentResponse case, -32006).
    #[error("invalid agent response: {0}")]
    InvalidResponse(String),
}

/// A client for one partner endpoint (its `rpc` URL).
#[derive(Clone)]
pub struct Client {
    transport: Transport,
    url: String,
    dialect: Dialect,
    leader_id: String,
}

impl Client {
    /// A client for the partner endpoint at `url` (its `rpc` URL), speaking `dialect` as the
    /// Leader whose AIC is `leader_id`, with the default [`ClientConfig`].
    pub fn new(url: impl Into<String>, dialect: Dialect, leader_id: impl Into<String>) -> Self {
        let config = ClientConfig::default();
        // The default configuration names no TLS files: nothing in it can fail.
        let transport = Transport::new(config.clone()).unwrap_or_else(|_| Transport {
            plain: reqwest::Client::new(),
            https: Err(std::sync::Arc::new(TlsError::Config("unavailable".into()))),
            config,
        });
        Client {
            transport,
            url: url.into(),
            dialect,
            leader_id: leader_id.into(),
        }
    }

    /// [`Client::new`] with `config`: credentials and timeouts.
    pub fn with_config(
        url: impl Into<String>,
        dialect: Dialect,
        leader_id: impl Into<String>,
        config: ClientConfig,
    ) -> Result<Self, ClientError> {
        Ok(Client {
            transport: Transport::new(config)?,
            url: url.into(),
            dialect,
            leader_id: leader_id.into(),
        })
    }

    /// The JSON-RPC request for a command, in this client's dialect, for the `rpc` method.
    pub fn request(
        &self,
        command: CommandKind,
        task_id: Option<&str>,
        session_id: Option<&str>,
        data_items: Vec<DataItem>,
        params: JsonObject,
    ) -> Value {
        self.request_for("rpc", command, task_id, session_id, data_items, params)
    }

    fn request_for(
        &self,
        method: &str,
        command: CommandKind,
        task_id: Option<&str>,
        session_id: Option<&str>,
        data_items: Vec<DataItem>,
        params: JsonObject,
    ) -> Value {
        let mut message = json!({
            "id": format!("msg-{}", uuid::Uuid::new_v4()),
            "sentAt": Timestamp::now(),
            "senderRole": "leader",
            "senderId": self.leader_id,
            "command": command,
            "dataItems": data_items,
        });
        // v2 keeps `params.message` for the stream method; only its rpc says `params.command`.
        let (kind, field) = match (self.dialect, method) {
            (Dialect::V1, _) => ("message", "message"),
            (Dialect::V2, "stream") => ("task-command", "message"),
            (Dialect::V2, _) => ("task-command", "command"),
        };
        message["type"] = json!(kind);
        // No Leader given: the host takes the authenticated one (the API key's or certificate's).
        if self.leader_id.is_empty()
            && let Some(m) = message.as_object_mut()
        {
            m.remove("senderId");
        }
        if let Some(t) = task_id {
            message["taskId"] = json!(t);
        }
        if let Some(s) = session_id {
            message["sessionId"] = json!(s);
        }
        if !params.is_empty() {
            message["commandParams"] = Value::Object(params);
        }
        json!({
            "jsonrpc": "2.0",
            "method": method,
            "id": uuid::Uuid::new_v4().to_string(),
            "params": { field: message },
        })
    }

    /// Send a command with the `stream` method (to the partner's `stream` endpoint) and hand each
    /// event — a JSON-RPC response `{eventSeq, eventData}` — to `on_event` as it arrives, until
    /// the task rests or ends, as `until` says, or `on_event` breaks off (its reader is gone).
    /// `since` is where the task stood before (for a re-stream, which replays earlier events:
    /// see [`Until::Rests`]). An error answered before the stream started, or sent as an
    /// event, is returned as [`ClientError::Rpc`].
    #[allow(clippy::too_many_arguments)]
    pub async fn stream(
        &self,
        command: CommandKind,
        task_id: Option<&str>,
        session_id: Option<&str>,
        data_items: Vec<DataItem>,
        params: JsonObject,
        until: Until,
        since: Option<Timestamp>,
        mut on_event: impl FnMut(&Value) -> ControlFlow<()>,
    ) -> Result<(), ClientError> {
        let request = self.request_for("stream", command, task_id, session_id, data_items, params);
        let url = match self.url.strip_suffix("/rpc") {
            Some(base) => format!("{base}/stream"),
            None => self.url.clone(),
        };
        let mut answer = self.transport.post(&url, &[], &request).await?;
        let status = answer.status;
        let success = (200..300).contains(&status);
        if !success || !answer.is_sse() {
            let text = answer.text().await?;
            if !success {
                return Err(status_error(status, text));
            }
            let answer: Value = serde_json::from_str(&text).map_err(|e| {
                ClientError::InvalidResponse(format!("neither SSE nor JSON ({e}): {text}"))
            })?;
            check_response(&request["id"], answer)?;
            return Err(ClientError::InvalidResponse(
                "a stream request answered without a stream".into(),
            ));
        }
        let mut frames = SseFrames::default();
        while let Some(chunk) = answer.chunk().await? {
            for data in frames.push(&chunk) {
                let event: Value = serde_json::from_str(&data).map_err(|e| {
                    ClientError::InvalidResponse(format!("an event is not JSON ({e}): {data}"))
                })?;
                check_response(&request["id"], event.clone())?;
                if on_event(&event).is_break()
                    || (until == Until::Rests && rests(&event, since.as_ref()))
                {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Send a command and return the task (a v1 `Task` or a v2 `TaskResult`).
    pub async fn send(
        &self,
        command: CommandKind,
        task_id: Option<&str>,
        session_id: Option<&str>,
        data_items: Vec<DataItem>,
        params: JsonObject,
    ) -> Result<Value, ClientError> {
        let request = self.request(command, task_id, session_id, data_items, params);
        let response = self.post(&request).await?;
        let result = check_response(&request["id"], response)?;
        let expected = match self.dialect {
            Dialect::V1 => "task",
            Dialect::V2 => "task-result",
        };
        if result["type"] != expected || result["status"]["state"].as_str().is_none() {
            return Err(ClientError::InvalidResponse(format!(
                "expected a {expected} with a status, got {result}"
            )));
        }
        Ok(result)
    }

    /// POST any JSON body and return the parsed JSON answer.
    pub async fn post(&self, body: &Value) -> Result<Value, ClientError> {
        let (status, text) = self.transport.post_and_read(&self.url, &[], body).await?;
        if !(200..300).contains(&status) {
            return Err(status_error(status, text));
        }
        serde_json::from_str(&text)
            .map_err(|e| ClientError::InvalidResponse(format!("not JSON ({e}): {text}")))
    }
}

/// Whether a stream event (`{eventSeq, eventData}`) says its task rests or has ended, in a
/// state entered no earlier than `since`.
pub fn rests(event: &Value, since: Option<&Timestamp>) -> bool {
    let status = &event["result"]["eventData"]["status"];
    let Some(state) = status["state"].as_str().and_then(TaskState::parse) else {
        return false;
    };
    if !state.is_resting() {
        return false;
    }
    match since {
        None => true,
        // A rest without a readable time is taken as current: stopping early is better than
        // following a resting task forever.
        Some(since) => serde_json::from_value::<Timestamp>(status["stateChangedAt"].clone())
            .map_or(true, |at| &at >= since),
    }
}

/// Splits an SSE byte stream into the `data` of its events (comments and other fields skipped).
#[derive(Default)]
pub struct SseFrames {
    buffer: Vec<u8>,
}

impl SseFrames {
    /// Add bytes; return the data of every event completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = find_blank_line(&self.buffer) {
            let frame: Vec<u8> = self.buffer.drain(..end.1).collect();
            let text = String::from_utf8_lossy(&frame[..end.0]);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                out.push(data.join("\n"));
            }
        }
        out
    }
}

/// The end of the first event in `buf`: (where its text ends, where the next begins).
fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    (0..buf.len()).find_map(|i| {
        if buf[i..].starts_with(b"\n\n") {
            Some((i, i + 2))
        } else if buf[i..].starts_with(b"\r\n\r\n") {
            Some((i, i + 4))
        } else {
            None
        }
    })
}

/// An HTTP error status: the JSON-RPC error its body carries if it is one (the host's 404 for a
/// partner it does not host, its 503 for one still compiling), else the status and the body.
fn status_error(status: u16, body: String) -> ClientError {
    match serde_json::from_str::<Value>(&body) {
        Ok(answer) if answer["jsonrpc"] == "2.0" && answer["error"].is_object() => {
            let id = answer["id"].clone();
            match check_response(&id, answer) {
                Err(e @ ClientError::Rpc { .. }) => e,
                _ => ClientError::Status { status, body },
            }
        }
        _ => ClientError::Status { status, body },
    }
}

/// Check a JSON-RPC response to the request with `id`; return its result.
pub fn check_response(id: &Value, response: Value) -> Result<Value, ClientError> {
    if response["jsonrpc"] != "2.0" {
        return Err(ClientError::InvalidResponse(format!(
            "not a JSON-RPC 2.0 response: {response}"
        )));
    }
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        return Err(ClientError::Rpc {
            code: error["code"].as_i64().unwrap_or(0),
            message: error["message"].as_str().unwrap_or_default().to_string(),
            data: error.get("data").cloned().unwrap_or(Value::Null),
        });
    }
    if &response["id"] != id {
        return Err(ClientError::InvalidResponse(format!(
            "the response id {} does not match the request id {id}",
            response["id"]
        )));
    }
    response.get("result").cloned().ok_or_else(|| {
        ClientError::InvalidResponse("a response with neither result nor error".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API key prints redacted in `Debug` (issue 29 item 8).
    #[test]
    fn the_api_key_prints_redacted() {
        const SECRET: &str = "aho.very-secret-value-0123456789";
        let config = ClientConfig {
            api_key: Some(SECRET.into()),
            ..Default::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }

    #[test]
    fn a_rest_counts_from_where_the_task_stands() {
        let event = |state: &str, at: &str| {
            json!({"result": {"eventSeq": 1, "eventData": {"type": "status-update",
                   "status": {"state": state, "stateChangedAt": at}}}})
        };
        let at = |t: &str| serde_json::from_value::<Timestamp>(json!(t)).unwrap();
        let waiting = event("awaiting-input", "2026-01-01T00:00:01Z");
        assert!(rests(&waiting, None));
        assert!(rests(&event("completed", "2026-01-01T00:00:01Z"), None));
        assert!(!rests(&event("working", "2026-01-01T00:00:01Z"), None));
        assert!(!rests(
            &json!({"result": {"eventData": {"type": "product-chunk"}}}),
            None
        ));
        // Replayed: a rest the task has since left does not end the stream.
        assert!(!rests(&waiting, Some(&at("2026-01-01T00:00:02Z"))));
        assert!(rests(&waiting, Some(&at("2026-01-01T00:00:01Z"))));
    }

    #[test]
    fn sse_frames_split_across_reads_and_skip_comments() {
        let mut frames = SseFrames::default();
        assert!(frames.push(b"data: {\"a\":").is_empty());
        assert_eq!(
            frames.push(b"1}\n\n: keep-alive\n\ndata: 2\r\n\r\n"),
            ["{\"a\":1}", "2"]
        );
        assert_eq!(frames.push(b": x\n\n"), Vec::<String>::new());
    }
}
