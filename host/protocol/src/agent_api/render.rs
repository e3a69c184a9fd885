//! One turn's answer as the Agent API streams it: the task's events rendered as `AgentResponse`,
//! `Message` and `Content` events, in the order `agentscope-runtime`'s `Runner.stream_query`
//! sends them, numbered by one `sequence_number` from 0 without gaps.
//!
//! [`Turn`] is the state of one response: the message being streamed (a delta extends it; another
//! channel, a tool call or the end closes it), the messages completed so far (the final
//! response's `output`), the usage summed, and whether the task is the record of a plain reply
//! (its own events are not shown; the reply is one message). Pure: the door feeds it the events
//! and sends what it returns.

use aiphost_model::activity::{self, Activity, Channel, Failure, InputRequest, ToolOutput};
use aiphost_model::event::EventKind;
use aiphost_model::{DataItem, JsonObject, ProductChunk, TaskEvent, TaskState, TaskStatus};
use serde_json::{Value, json};
use std::collections::HashMap;

use super::content::render_content;

/// The message a turn is streaming.
#[derive(Clone, Debug)]
struct Open {
    id: String,
    /// `message`, `reasoning`, or a product's plain message.
    kind: &'static str,
    /// The product it streams.
    product: String,
    /// Delta text so far (one text content), or the product's completed contents.
    text: Option<String>,
    contents: Vec<Value>,
}

/// The state of one Agent API response.
#[derive(Clone, Debug)]
pub struct Turn {
    response_id: String,
    session_id: String,
    created_at: i64,
    task_id: String,
    seq: u64,
    messages: u64,
    open: Option<Open>,
    output: Vec<Value>,
    usage: JsonObject,
    tool_names: HashMap<String, String>,
    completes_on_result: bool,
    replying: bool,
}

impl Turn {
    /// A turn answering with the response `response_id` in `session_id` about `task_id`, created
    /// at `created_at` (Unix seconds).
    pub fn new(response_id: &str, session_id: &str, task_id: &str, created_at: i64) -> Self {
        Turn {
            response_id: response_id.to_string(),
            session_id: session_id.to_string(),
            created_at,
            task_id: task_id.to_string(),
            seq: 0,
            messages: 0,
            open: None,
            output: Vec::new(),
            usage: JsonObject::new(),
            tool_names: HashMap::new(),
            completes_on_result: true,
            replying: false,
        }
    }

    /// Whether the task's awaiting-completion status is followed at once by its completion (then
    /// it is not the turn's end: the completion is).
    pub fn completing_on_result(mut self, completes: bool) -> Self {
        self.completes_on_result = completes;
        self
    }

    /// The response's first two events: `created`, then `in_progress`.
    pub fn begin(&mut self) -> Vec<Value> {
        vec![
            self.response("created", None),
            self.response("in_progress", None),
        ]
    }

    /// The events of one task event, and whether the response ended with them.
    pub fn event(&mut self, event: &TaskEvent) -> (Vec<Value>, bool) {
        let mut out = Vec::new();
        let ended = match &event.kind {
            EventKind::Created {
                status,
                plain_reply,
            } => {
                self.replying |= *plain_reply;
                status.state == TaskState::Rejected && self.end(status, &mut out)
            }
            EventKind::Status { status } => self.status(status, &mut out),
            EventKind::Chunk { chunk } if !self.replying => {
                self.chunk(chunk, &mut out);
                false
            }
            EventKind::Activity { activity } if !self.replying => {
                self.activity(activity, &mut out);
                false
            }
            _ => false,
        };
        (out, ended)
    }

    /// A response refused before any task moved: `rejected` with `code` (a busy session, say).
    pub fn refused(&mut self, code: &str, message: &str) -> Vec<Value> {
        let error = json!({"code": code, "message": message});
        vec![self.response("rejected", Some(("error", error)))]
    }

    fn status(&mut self, status: &TaskStatus, out: &mut Vec<Value>) -> bool {
        match status.state {
            TaskState::Accepted | TaskState::Working => false,
            TaskState::AwaitingCompletion if self.completes_on_result || self.replying => false,
            _ => self.end(status, out),
        }
    }

    /// The turn's end at `status`: what the partner said with it as a message, then the final
    /// response.
    fn end(&mut self, status: &TaskStatus, out: &mut Vec<Value>) -> bool {
        let state = status.state;
        let failing = matches!(
            state,
            TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        );
        self.close(if failing { "incomplete" } else { "completed" }, out);
        let said = activity::said(&status.data_items);
        match state {
            TaskState::AwaitingInput => {
                let mut contents: Vec<DataItem> = said.into_iter().cloned().collect();
                let mut metadata = JsonObject::new();
                if let Some(form) = InputRequest::of(&status.data_items) {
                    metadata.insert(activity::KIND.into(), json!("input-request"));
                    contents.push(DataItem::Data {
                        data: form_data(&form),
                        metadata: None,
                    });
                }
                self.whole_message("message", &contents, metadata, out);
                out.push(self.final_response("completed"));
            }
            TaskState::Completed | TaskState::AwaitingCompletion => {
                if !said.is_empty() {
                    let items: Vec<DataItem> = said.into_iter().cloned().collect();
                    self.whole_message("message", &items, JsonObject::new(), out);
                }
                out.push(self.final_response("completed"));
            }
            TaskState::Failed => {
                let error = match Failure::of(&status.data_items) {
                    Some(f) => json!({"code": f.code, "message": f.message}),
                    None => json!({"code": "PARTNER_FAILED", "message": activity::text_of(&said)}),
                };
                out.push(self.response("failed", Some(("error", error))));
            }
            TaskState::Canceled => {
                let error = json!({"code": "CANCELED", "message": activity::text_of(&said)});
                out.push(self.response("canceled", Some(("error", error))));
            }
            TaskState::Rejected => {
                let error = json!({"code": "REJECTED", "message": activity::text_of(&said)});
                out.push(self.response("rejected", Some(("error", error))));
            }
            TaskState::Accepted | TaskState::Working => return false,
        }
        true
    }

    fn chunk(&mut self, chunk: &ProductChunk, out: &mut Vec<Value>) {
        let product = &chunk.product.id;
        for item in &chunk.product.data_items {
            let channel = activity::kind_of(item).and_then(Channel::of_kind);
            match (channel, item) {
                (Some(channel), DataItem::Text { text, .. }) => {
                    let kind = match channel {
                        Channel::Answer => "message",
                        Channel::Reasoning => "reasoning",
                    };
                    // An empty delta (the SDK's close of a product, maybe after another product
                    // streamed) adds nothing: it opens no message.
                    if text.is_empty() {
                        continue;
                    }
                    self.open_for(kind, product, true, out);
                    if let Some(open) = self.open.as_mut() {
                        open.text.get_or_insert_with(String::new).push_str(text);
                        let id = open.id.clone();
                        out.push(self.numbered(json!({
                            "object": "content", "type": "text", "text": text, "delta": true,
                            "index": 0, "msg_id": id, "status": "in_progress",
                        })));
                    }
                }
                _ => {
                    self.open_for("message", product, false, out);
                    if let Some(open) = self.open.as_mut() {
                        let content = render_content(item, open.contents.len(), &open.id);
                        open.contents.push(content.clone());
                        out.push(self.numbered(content));
                    }
                }
            }
        }
        // A product's last chunk closes its own message only (another may be open by now).
        if chunk.last_chunk && self.open.as_ref().is_some_and(|o| &o.product == product) {
            self.close("completed", out);
        }
    }

    fn activity(&mut self, activity: &Activity, out: &mut Vec<Value>) {
        match activity {
            Activity::ToolCall(call) => {
                self.tool_names
                    .insert(call.call_id.clone(), call.name.clone());
                let data = json!({
                    "call_id": call.call_id, "name": call.name,
                    "arguments": Value::Object(call.arguments.clone()).to_string(),
                });
                self.tool_message("plugin_call", "assistant", data, None, out);
            }
            Activity::ToolResult(result) => {
                let output = match &result.output {
                    ToolOutput::Json(v) => v.to_string(),
                    ToolOutput::Text(t) => t.clone(),
                };
                let data = json!({
                    "call_id": result.call_id,
                    "name": self.tool_names.get(&result.call_id),
                    "output": output,
                });
                let error = result.is_error.then_some("TOOL_ERROR");
                self.tool_message("plugin_call_output", "tool", data, error, out);
            }
            Activity::Usage(usage) => usage.add_to(
                &mut self.usage,
                ["input_tokens", "output_tokens", "reasoning_tokens"],
            ),
        }
    }

    /// A tool message, whole: `in_progress`, its one data content, `completed`.
    fn tool_message(
        &mut self,
        kind: &'static str,
        role: &str,
        data: Value,
        error: Option<&str>,
        out: &mut Vec<Value>,
    ) {
        self.close("completed", out);
        let id = self.next_message_id();
        let mut message = self.message(&id, kind, role, "in_progress");
        out.push(self.numbered(message.clone()));
        let mut content = json!({"object": "content", "type": "data", "data": data, "index": 0,
            "delta": false, "msg_id": id, "status": "completed"});
        content = self.numbered(content);
        out.push(content.clone());
        message["status"] = json!("completed");
        message["content"] = json!([strip(content)]);
        if let Some(code) = error {
            message["code"] = json!(code);
            message["message"] = json!("the tool failed");
        }
        let message = self.numbered(strip(message));
        self.output.push(strip(message.clone()));
        out.push(message);
    }

    /// A message of `items`, whole (a question, a plain reply, a status's words).
    fn whole_message(
        &mut self,
        kind: &'static str,
        items: &[DataItem],
        metadata: JsonObject,
        out: &mut Vec<Value>,
    ) {
        let id = self.next_message_id();
        let mut message = self.message(&id, kind, "assistant", "in_progress");
        if !metadata.is_empty()
            && let Some(m) = message["metadata"].as_object_mut()
        {
            m.extend(metadata);
        }
        out.push(self.numbered(message.clone()));
        let mut contents = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let content = self.numbered(render_content(item, i, &id));
            contents.push(strip(content.clone()));
            out.push(content);
        }
        message["status"] = json!("completed");
        message["content"] = json!(contents);
        let message = self.numbered(strip(message));
        self.output.push(strip(message.clone()));
        out.push(message);
    }

    /// Make sure the open message is `kind` of `product` (closing another first), opening one.
    fn open_for(&mut self, kind: &'static str, product: &str, delta: bool, out: &mut Vec<Value>) {
        if self
            .open
            .as_ref()
            .is_some_and(|o| o.kind == kind && o.product == product && o.text.is_some() == delta)
        {
            return;
        }
        self.close("completed", out);
        let id = self.next_message_id();
        let message = self.message(&id, kind, "assistant", "in_progress");
        out.push(self.numbered(message));
        self.open = Some(Open {
            id,
            kind,
            product: product.to_string(),
            text: delta.then(String::new),
            contents: Vec::new(),
        });
    }

    /// Close the open message, if any: its whole text as a completed content, then the message
    /// with its contents (`status`: `completed`, or `incomplete` when the turn failed).
    fn close(&mut self, status: &str, out: &mut Vec<Value>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let mut contents = open.contents;
        if let Some(text) = open.text {
            let content = self.numbered(render_content(&DataItem::text(text), 0, &open.id));
            contents.push(strip(content.clone()));
            out.push(content);
        }
        let mut message = self.message(&open.id, open.kind, "assistant", status);
        message["content"] = json!(contents);
        let message = self.numbered(message);
        if status == "completed" {
            self.output.push(strip(message.clone()));
        }
        out.push(message);
    }

    fn next_message_id(&mut self) -> String {
        self.messages += 1;
        format!("msg_{}_{}", self.task_id, self.messages)
    }

    fn message(&self, id: &str, kind: &str, role: &str, status: &str) -> Value {
        json!({"object": "message", "id": id, "type": kind, "role": role, "status": status,
               "metadata": {"aiphost.taskId": self.task_id}})
    }

    fn response(&mut self, status: &str, extra: Option<(&str, Value)>) -> Value {
        let mut r = json!({"object": "response", "id": self.response_id, "status": status,
            "created_at": self.created_at, "session_id": self.session_id});
        // A turn refused before its task was known names none (not an empty id).
        if !self.task_id.is_empty() {
            r["metadata"] = json!({"aiphost.taskId": self.task_id});
        }
        if let Some((key, value)) = extra {
            r[key] = value;
        }
        self.numbered(r)
    }

    fn final_response(&mut self, status: &str) -> Value {
        let mut r = self.response(status, None);
        r["completed_at"] = json!(aiphost_model::Timestamp::now().unix_millis() / 1000);
        r["output"] = json!(self.output);
        if !self.usage.is_empty() {
            r["usage"] = Value::Object(self.usage.clone());
        }
        r
    }

    fn numbered(&mut self, mut value: Value) -> Value {
        value["sequence_number"] = json!(self.seq);
        self.seq += 1;
        value
    }
}

/// A value as it sits inside another (a message's contents, a response's output): without its
/// own `sequence_number`.
fn strip(mut value: Value) -> Value {
    if let Some(m) = value.as_object_mut() {
        m.remove("sequence_number");
    }
    value
}

/// A form as the Agent API shows it (snake case, as its other data).
fn form_data(form: &InputRequest) -> JsonObject {
    let mut data = JsonObject::new();
    data.insert("form_id".into(), json!(form.request_id));
    data.insert("title".into(), json!(form.title));
    if let Some(d) = &form.description {
        data.insert("description".into(), json!(d));
    }
    data.insert("schema".into(), Value::Object(form.schema.clone()));
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::Timestamp;
    use aiphost_model::activity::{TextDelta, ToolCall, ToolResult};

    fn ev(seq: u64, kind: EventKind) -> TaskEvent {
        TaskEvent {
            seq,
            at: Timestamp::now(),
            kind,
        }
    }

    fn status(state: TaskState, items: Vec<DataItem>) -> EventKind {
        EventKind::Status {
            status: TaskStatus::now(state, items),
        }
    }

    fn delta(channel: Channel, text: &str, last: bool) -> EventKind {
        let product = match channel {
            Channel::Answer => "answer",
            Channel::Reasoning => "reasoning",
        };
        EventKind::Chunk {
            chunk: TextDelta {
                product_id: product.into(),
                channel,
                text: text.into(),
                last,
            }
            .into_chunk(),
        }
    }

    #[test]
    fn a_refusal_names_the_task_only_when_there_is_one() {
        let busy = Turn::new("r", "s", "t", 1).refused("SESSION_BUSY", "t works");
        assert_eq!(busy[0]["metadata"]["aiphost.taskId"], "t", "{busy:?}");
        let starting = Turn::new("r", "s", "", 1).refused("SESSION_BUSY", "starting");
        assert_eq!(starting.len(), 1);
        assert_eq!(starting[0]["status"], "rejected");
        assert_eq!(starting[0]["error"]["code"], "SESSION_BUSY");
        assert!(starting[0].get("metadata").is_none(), "{starting:?}");
    }

    /// Everything a turn sends for `events`, and whether it ended.
    fn run(turn: &mut Turn, events: Vec<EventKind>) -> (Vec<Value>, bool) {
        let mut all = turn.begin();
        let mut ended = false;
        for (i, kind) in events.into_iter().enumerate() {
            let (out, end) = turn.event(&ev(i as u64 + 1, kind));
            all.extend(out);
            ended = end;
        }
        (all, ended)
    }

    #[test]
    fn products_closed_after_another_streamed_open_no_empty_messages() {
        let mut turn = Turn::new("response_1", "s", "t", 1);
        let (all, _) = run(
            &mut turn,
            vec![
                delta(Channel::Reasoning, "hm", false),
                delta(Channel::Answer, "yes", false),
                delta(Channel::Reasoning, "", true),
                delta(Channel::Answer, "", true),
            ],
        );
        let completed: Vec<&Value> = all
            .iter()
            .filter(|e| e["object"] == "message" && e["status"] == "completed")
            .collect();
        assert_eq!(completed.len(), 2, "{all:#?}");
        assert_eq!(completed[0]["type"], "reasoning");
        assert_eq!(completed[0]["content"][0]["text"], "hm");
        assert_eq!(completed[1]["type"], "message");
        assert_eq!(completed[1]["content"][0]["text"], "yes");
    }

    #[test]
    fn a_streamed_answer_after_reasoning_and_a_tool() {
        let mut turn = Turn::new("response_1", "s", "t", 1);
        let (events, ended) = run(
            &mut turn,
            vec![
                EventKind::Created {
                    status: TaskStatus::now(TaskState::Accepted, vec![]),
                    plain_reply: false,
                },
                status(TaskState::Working, vec![]),
                delta(Channel::Reasoning, "Let me ", false),
                delta(Channel::Reasoning, "think.", true),
                EventKind::Activity {
                    activity: Activity::ToolCall(ToolCall {
                        call_id: "c1".into(),
                        name: "lookup".into(),
                        arguments: json!({"query": "x"}).as_object().cloned().unwrap(),
                    }),
                },
                EventKind::Activity {
                    activity: Activity::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        output: ToolOutput::Json(json!({"found": "x"})),
                        is_error: false,
                    }),
                },
                delta(Channel::Answer, "found ", false),
                delta(Channel::Answer, "x", false),
                delta(Channel::Answer, "", true),
                status(TaskState::AwaitingCompletion, vec![]),
                status(TaskState::Completed, vec![]),
            ],
        );
        assert!(ended);
        let seqs: Vec<u64> = events
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
        let shape: Vec<String> = events
            .iter()
            .map(|e| {
                format!(
                    "{} {} {}",
                    e["object"].as_str().unwrap(),
                    e["type"].as_str().unwrap_or("-"),
                    e["status"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                "response - created",
                "response - in_progress",
                "message reasoning in_progress",
                "content text in_progress",
                "content text in_progress",
                "content text completed",
                "message reasoning completed",
                "message plugin_call in_progress",
                "content data completed",
                "message plugin_call completed",
                "message plugin_call_output in_progress",
                "content data completed",
                "message plugin_call_output completed",
                "message message in_progress",
                "content text in_progress",
                "content text in_progress",
                "content text completed",
                "message message completed",
                "response - completed",
            ]
        );
        let last = events.last().unwrap();
        let output = last["output"].as_array().unwrap();
        assert_eq!(output.len(), 4);
        assert_eq!(output[3]["content"][0]["text"], "found x");
        assert_eq!(events[8]["data"]["arguments"], r#"{"query":"x"}"#);
        assert_eq!(events[11]["data"]["name"], "lookup");
        assert_eq!(events[11]["data"]["output"], r#"{"found":"x"}"#);
    }

    #[test]
    fn a_form_a_failure_and_a_plain_reply_end_the_turn() {
        let form = InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: None,
            schema: json!({"type": "object"}).as_object().cloned().unwrap(),
        };
        let mut turn = Turn::new("r", "s", "t", 1);
        let (events, ended) = run(
            &mut turn,
            vec![status(TaskState::AwaitingInput, form.items())],
        );
        assert!(ended);
        let question = &events[events.len() - 2];
        assert_eq!(question["metadata"]["aiphost.kind"], "input-request");
        assert_eq!(question["content"][0]["text"], "Trip");
        assert_eq!(question["content"][1]["data"]["form_id"], "trip");
        assert_eq!(events.last().unwrap()["status"], "completed");

        let failure = Failure {
            code: "CONCIERGE_FAILED".into(),
            message: "no".into(),
            retryable: false,
            detail: None,
        };
        let mut turn = Turn::new("r", "s", "t", 1);
        let (events, _) = run(&mut turn, vec![status(TaskState::Failed, failure.items())]);
        let last = events.last().unwrap();
        assert_eq!(last["status"], "failed");
        assert_eq!(
            last["error"],
            json!({"code": "CONCIERGE_FAILED", "message": "no"})
        );

        let mut turn = Turn::new("r", "s", "t", 1);
        let (events, ended) = run(
            &mut turn,
            vec![
                EventKind::Created {
                    status: TaskStatus::now(TaskState::Accepted, vec![]),
                    plain_reply: true,
                },
                status(TaskState::Working, vec![]),
                EventKind::Chunk {
                    chunk: ProductChunk {
                        product: aiphost_model::Product {
                            id: "reply".into(),
                            name: None,
                            description: None,
                            data_items: vec![DataItem::text("hi")],
                        },
                        append: false,
                        last_chunk: true,
                    },
                },
                status(TaskState::AwaitingCompletion, vec![DataItem::text("hi")]),
                status(TaskState::Completed, vec![DataItem::text("hi")]),
            ],
        );
        assert!(ended);
        // The reply, once: begin (2), message in_progress, its content, message completed, response.
        assert_eq!(events.len(), 6, "{events:?}");
        assert_eq!(events[3]["text"], "hi");
    }

    #[test]
    fn a_busy_session_is_refused_in_one_event() {
        let mut turn = Turn::new("r", "s", "t", 1);
        let out = turn.refused("SESSION_BUSY", "session s has a task working");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["status"], "rejected");
        assert_eq!(out[0]["sequence_number"], 0);
    }
}
