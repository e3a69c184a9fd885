//! A Leader-side AIP client, in either dialect: what `aiphost call` uses, and handy in tests.
//! [`a2a`] is its A2A (v1.0, JSON-RPC binding) counterpart, for `aiphost call --protocol a2a`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), aiphost::client::ClientError> {
//! use aiphost::client::Client;
//! use aiphost::protocol::{CommandKind, DataItem, Dialect};
//! let client = Client::new("http://127.0.0.1:8080/agents/echo/rpc", Dialect::V2, "1.2.156.3088.1.1.DEMO.LEADER.1.0000");
//! let task = client
//!     .send(CommandKind::Start, Some("task-1"), Some("session-1"), vec![DataItem::text("hello")], Default::default())
//!     .await?;
//! println!("{}", task["status"]["state"]);
//! # Ok(()) }
//! ```

pub mod a2a;

use crate::protocol::{CommandKind, DataItem, Dialect, JsonObject, Timestamp};
use serde_json::{Value, json};
use std::time::Duration;

/// What went wrong with a call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request could not be sent, or its answer not read.
    #[error("HTTP request failed: {0}")]
    Http(#[from] reqwest::Error),
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
    http: reqwest::Client,
    url: String,
    dialect: Dialect,
    leader_id: String,
}

impl Client {
    /// A client for the partner endpoint at `url` (its `rpc` URL), speaking `dialect` as the
    /// Leader whose AIC is `leader_id`. Each request may take at most 120 s.
    pub fn new(url: impl Into<String>, dialect: Dialect, leader_id: impl Into<String>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap_or_default();
        Client {
            http,
            url: url.into(),
            dialect,
            leader_id: leader_id.into(),
        }
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
    /// event — a JSON-RPC response `{eventSeq, eventData}` — to `on_event` as it arrives. Returns
    /// when the partner closes the stream. An error answered before the stream started, or sent
    /// as an event, is returned as [`ClientError::Rpc`].
    pub async fn stream(
        &self,
        command: CommandKind,
        task_id: Option<&str>,
        session_id: Option<&str>,
        data_items: Vec<DataItem>,
        params: JsonObject,
        mut on_event: impl FnMut(&Value),
    ) -> Result<(), ClientError> {
        let request = self.request_for("stream", command, task_id, session_id, data_items, params);
        let url = match self.url.strip_suffix("/rpc") {
            Some(base) => format!("{base}/stream"),
            None => self.url.clone(),
        };
        let response = self.http.post(&url).json(&request).send().await?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !status.is_success() || !is_sse {
            let text = response.text().await?;
            if !status.is_success() {
                return Err(ClientError::Status {
                    status: status.as_u16(),
                    body: text,
                });
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
        let mut body = response.bytes_stream();
        use futures::StreamExt;
        while let Some(chunk) = body.next().await {
            for data in frames.push(&chunk?) {
                let event: Value = serde_json::from_str(&data).map_err(|e| {
                    ClientError::InvalidResponse(format!("an event is not JSON ({e}): {data}"))
                })?;
                check_response(&request["id"], event.clone())?;
                on_event(&event);
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
        let response = self.http.post(&self.url).json(body).send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            return Err(ClientError::Status {
                status: status.as_u16(),
                body: text,
            });
        }
        serde_json::from_str(&text)
            .map_err(|e| ClientError::InvalidResponse(format!("not JSON ({e}): {text}")))
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
