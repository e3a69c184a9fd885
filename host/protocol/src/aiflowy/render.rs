//! One AIFlowy chat stream: a task's events rendered as envelopes (seed §6–§13), each with its SSE
//! event name, numbered by one `index` from 0.
//!
//! [`Turn`] is the state of one stream: the wire it spells, the index, the usage summed for
//! `done`'s `meta`, the form the conversation waits on (so that its cancel is a `form_cancel`),
//! whether the stream has said `suspended` (so that the task moving on says `resumed`), and
//! whether the task is the record of a plain reply (its own events are not shown; the reply is
//! one message). Pure: the door feeds it events and sends what it returns.
//!
//! A stream ends with `event: done` after the turn rests (the answer complete, a form asked, the
//! task canceled), or with `event: error` alone when it failed or was refused (seed §14: an error
//! ends the stream).

use super::envelope::{Domain, Envelope, Kind, SseName, Wire};
use aiphost_model::activity::{self, Activity, Channel, Failure, InputRequest, ToolOutput};
use aiphost_model::cause::Cause;
use aiphost_model::event::EventKind;
use aiphost_model::{DataItem, JsonObject, ProductChunk, Task, TaskEvent, TaskState, TaskStatus};
use serde_json::{Value, json};

/// The texts of a form's buttons (seed §11.1 `ui`); the contract has no place for them, so the
/// operator chooses them for every form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ui {
    /// The submit button.
    pub submit_text: String,
    /// The cancel button.
    pub cancel_text: String,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            submit_text: "Submit".into(),
            cancel_text: "Cancel".into(),
        }
    }
}

/// One event of the stream: its SSE name and its envelope, spelled.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// `message`, `error` or `done`.
    pub name: SseName,
    /// The envelope.
    pub data: Value,
}

/// The state of one AIFlowy stream.
#[derive(Clone, Debug)]
pub struct Turn {
    wire: Wire,
    conversation_id: String,
    task_id: Option<String>,
    started_ms: i64,
    index: u64,
    usage: JsonObject,
    ui: Ui,
    /// The form the conversation waits on, once this stream has shown it.
    form: Option<String>,
    /// This stream has said `suspended` and not `resumed` since.
    suspended: bool,
    completes_on_result: bool,
    replying: bool,
}

impl Turn {
    /// A stream in `conversation_id` about `task_id` (`None`: no task yet) spelled for `wire`,
    /// begun at `started_ms` (Unix ms; `done`'s `latency_ms` counts from it).
    pub fn new(wire: Wire, conversation_id: &str, task_id: Option<&str>, started_ms: i64) -> Self {
        Turn {
            wire,
            conversation_id: conversation_id.to_string(),
            task_id: task_id.map(str::to_string),
            started_ms,
            index: 0,
            usage: JsonObject::new(),
            ui: Ui::default(),
            form: None,
            suspended: false,
            completes_on_result: true,
            replying: false,
        }
    }

    /// Whether the task's awaiting-completion status is followed at once by its completion (then
    /// it is not the stream's end: the completion is).
    pub fn completing_on_result(mut self, completes: bool) -> Self {
        self.completes_on_result = completes;
        self
    }

    /// The button texts of the forms this stream shows.
    pub fn with_ui(mut self, ui: Ui) -> Self {
        self.ui = ui;
        self
    }

    /// The opening of a stream that moves a suspended conversation on (a form submitted, a
    /// prompt answering a question): `system/status resumed`.
    pub fn resumed(&mut self) -> Vec<Event> {
        self.suspended = false;
        self.form = None;
        vec![self.status_event("resumed", None)]
    }

    /// The opening of a stream that joins `task` where it is (the events route): a task waiting
    /// on a form shows the form again and `suspended` (a reloaded page can show it); a running
    /// one `running`.
    pub fn prime(&mut self, task: &Task) -> Vec<Event> {
        let mut out = Vec::new();
        match task.status.state {
            TaskState::AwaitingInput => self.ask(&task.status, &mut out),
            TaskState::Accepted | TaskState::Working => {
                out.push(self.status_event("running", None));
            }
            _ => {}
        }
        out
    }

    /// The events of one task event, and whether the stream ended with them.
    pub fn event(&mut self, event: &TaskEvent) -> (Vec<Event>, bool) {
        let mut out = Vec::new();
        let ended = match &event.kind {
            EventKind::Created {
                status,
                plain_reply,
            } => {
                self.replying |= *plain_reply;
                if status.state == TaskState::Rejected {
                    self.end(status, event.at.unix_millis(), &mut out)
                } else {
                    out.push(self.status_event("running", None));
                    false
                }
            }
            EventKind::Status { status } => self.status(status, event.at.unix_millis(), &mut out),
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

    /// A stream refused before any task moved (a busy conversation, say): one `event: error`
    /// with `code`.
    pub fn refused(&mut self, code: &str, message: &str, retryable: bool) -> Vec<Event> {
        vec![self.error(Domain::System, code, message, retryable, JsonObject::new())]
    }

    fn status(&mut self, status: &TaskStatus, at_ms: i64, out: &mut Vec<Event>) -> bool {
        match status.state {
            TaskState::Accepted => false,
            TaskState::Working => {
                // Someone answered the question this stream showed (a submit elsewhere).
                if self.suspended {
                    out.extend(self.resumed());
                }
                false
            }
            TaskState::AwaitingCompletion if self.completes_on_result || self.replying => false,
            _ => self.end(status, at_ms, out),
        }
    }

    /// The stream's end at `status` (logged at `at_ms`).
    fn end(&mut self, status: &TaskStatus, at_ms: i64, out: &mut Vec<Event>) -> bool {
        let said = activity::said(&status.data_items);
        match status.state {
            TaskState::AwaitingInput => {
                self.ask(status, out);
                out.push(self.done(at_ms));
            }
            TaskState::Completed | TaskState::AwaitingCompletion => {
                for item in said {
                    out.push(self.whole(item));
                }
                out.push(self.done(at_ms));
            }
            TaskState::Failed => {
                let failure = Failure::of(&status.data_items).unwrap_or_else(|| Failure {
                    code: "PARTNER_FAILED".into(),
                    message: activity::text_of(&said),
                    retryable: false,
                    detail: None,
                });
                let detail = failure.detail.unwrap_or_default();
                out.push(self.error(
                    Domain::System,
                    &failure.code,
                    &failure.message,
                    failure.retryable,
                    detail,
                ));
            }
            TaskState::Rejected => {
                out.push(self.error(
                    Domain::Business,
                    "REJECTED",
                    &activity::text_of(&said),
                    false,
                    JsonObject::new(),
                ));
            }
            TaskState::Canceled => {
                match self.form.take().filter(|_| self.suspended) {
                    Some(form_id) => {
                        // The host's cancel at the awaiting-input timer (`engine/expiry.rs`) is
                        // the form's `timeout`; any other cancel its `canceled`.
                        let timed_out =
                            Cause::of(&status.data_items) == Some(Cause::AwaitingInputTimeout);
                        let reason = if timed_out { "timeout" } else { "canceled" };
                        let key = self.form_key();
                        let payload = object(json!({key: form_id, "reason": reason}));
                        out.push(self.message(Domain::Interaction, Kind::FormCancel, payload));
                    }
                    None => {
                        let text = activity::text_of(&said);
                        out.push(self.status_event("canceled", Some(&text)));
                    }
                }
                self.suspended = false;
                out.push(self.done(at_ms));
            }
            TaskState::Accepted | TaskState::Working => return false,
        }
        true
    }

    /// The question of an awaiting-input `status`: the form (or, from a partner without forms,
    /// its words), then `suspended`.
    fn ask(&mut self, status: &TaskStatus, out: &mut Vec<Event>) {
        match InputRequest::of(&status.data_items) {
            Some(form) => {
                let mut payload = JsonObject::new();
                payload.insert(self.form_key().into(), json!(form.request_id));
                payload.insert("title".into(), json!(form.title));
                if let Some(d) = &form.description {
                    payload.insert("description".into(), json!(d));
                }
                payload.insert("schema".into(), Value::Object(form.schema.clone()));
                payload.insert(
                    "ui".into(),
                    json!({"submit_text": self.ui.submit_text, "cancel_text": self.ui.cancel_text}),
                );
                out.push(self.message(Domain::Interaction, Kind::FormRequest, payload));
                self.form = Some(form.request_id);
            }
            None => {
                for item in activity::said(&status.data_items) {
                    out.push(self.whole(item));
                }
            }
        }
        self.suspended = true;
        out.push(self.status_event("suspended", Some("interaction")));
    }

    fn chunk(&mut self, chunk: &ProductChunk, out: &mut Vec<Event>) {
        for item in &chunk.product.data_items {
            let channel = activity::kind_of(item).and_then(Channel::of_kind);
            match (channel, item) {
                // An empty delta closes a product: nothing to show.
                (Some(_), DataItem::Text { text, .. }) if text.is_empty() => {}
                (Some(channel), DataItem::Text { text, .. }) => {
                    let kind = match channel {
                        Channel::Answer => Kind::Message,
                        Channel::Reasoning => Kind::Thinking,
                    };
                    let payload = self.llm_payload("delta", json!(text));
                    out.push(self.message(Domain::Llm, kind, payload));
                }
                _ => out.push(self.whole(item)),
            }
        }
    }

    fn activity(&mut self, activity: &Activity, out: &mut Vec<Event>) {
        match activity {
            Activity::ToolCall(call) => {
                let payload = object(json!({
                    "tool_call_id": call.call_id, "name": call.name, "arguments": call.arguments,
                }));
                out.push(self.message(Domain::Tool, Kind::ToolCall, payload));
            }
            Activity::ToolResult(result) => {
                let output = match &result.output {
                    ToolOutput::Json(v) => v.clone(),
                    ToolOutput::Text(t) => json!(t),
                };
                let status = if result.is_error { "error" } else { "success" };
                let payload = object(json!({
                    "tool_call_id": result.call_id, "status": status, "result": output,
                }));
                out.push(self.message(Domain::Tool, Kind::ToolResult, payload));
            }
            Activity::Usage(usage) => usage.add_to(
                &mut self.usage,
                ["prompt_tokens", "completion_tokens", "reasoning_tokens"],
            ),
        }
    }

    /// An item said whole (a product of a partner without deltas, a plain reply, a question's
    /// words) as `llm/message`: text as `content` (AIFlowy's UI reads only `delta`, so there it
    /// is the `delta`), data and files under their own keys.
    fn whole(&mut self, item: &DataItem) -> Event {
        let payload = match (self.wire, item) {
            (Wire::Seed, DataItem::Text { text, .. }) => object(json!({"content": text})),
            (Wire::Seed, DataItem::Data { data, .. }) => object(json!({"data": data})),
            (Wire::Seed, DataItem::File { .. }) => object(json!({"file": file_of(item)})),
            (Wire::Aiflowy, DataItem::Text { text, .. }) => self.llm_payload("delta", json!(text)),
            (Wire::Aiflowy, DataItem::Data { data, .. }) => {
                self.llm_payload("delta", json!(Value::Object(data.clone()).to_string()))
            }
            (Wire::Aiflowy, DataItem::File { name, uri, .. }) => {
                let shown = uri.as_ref().or(name.as_ref()).cloned().unwrap_or_default();
                let mut payload = self.llm_payload("delta", json!(shown));
                payload.insert("file".into(), file_of(item));
                payload
            }
        };
        self.message(Domain::Llm, Kind::Message, payload)
    }

    /// An `llm` payload with `key`: the seed's has only it; AIFlowy's also the conversation and
    /// the role, as its `ChatStreamListener` sends them.
    fn llm_payload(&self, key: &str, value: Value) -> JsonObject {
        let mut payload = JsonObject::new();
        if self.wire == Wire::Aiflowy {
            payload.insert("conversation_id".into(), json!(self.conversation_id));
            payload.insert("role".into(), json!("assistant"));
        }
        payload.insert(key.into(), value);
        payload
    }

    /// The key of a form's id: fastjson's `formId` on AIFlowy's wire, the seed's `form_id`.
    fn form_key(&self) -> &'static str {
        match self.wire {
            Wire::Seed => "form_id",
            Wire::Aiflowy => "formId",
        }
    }

    fn status_event(&mut self, state: &str, reason: Option<&str>) -> Event {
        let mut payload = object(json!({"state": state}));
        if let Some(reason) = reason {
            payload.insert("reason".into(), json!(reason));
        }
        self.message(Domain::System, Kind::Status, payload)
    }

    /// An `event: error`: on the seed's wire `domain/error` with the code; on AIFlowy's always
    /// `SYSTEM/ERROR` with code `SYSTEM_ERROR` (the only one its UI shows) and the real code in
    /// `detail.code`.
    fn error(
        &mut self,
        domain: Domain,
        code: &str,
        message: &str,
        retryable: bool,
        detail: JsonObject,
    ) -> Event {
        let payload = match self.wire {
            Wire::Seed => {
                let mut p =
                    object(json!({"code": code, "message": message, "retryable": retryable}));
                if domain == Domain::System {
                    p.insert("detail".into(), Value::Object(detail));
                }
                p
            }
            Wire::Aiflowy => {
                let mut detail = detail;
                detail.insert("code".into(), json!(code));
                object(json!({"code": "SYSTEM_ERROR", "message": message,
                              "retryable": retryable, "detail": detail}))
            }
        };
        let domain = match self.wire {
            Wire::Seed => domain,
            Wire::Aiflowy => Domain::System,
        };
        self.numbered(SseName::Error, domain, Kind::Error, payload, None)
    }

    /// `event: done`, with the latency and the usage summed.
    fn done(&mut self, at_ms: i64) -> Event {
        let mut meta = self.usage.clone();
        meta.insert(
            "latency_ms".into(),
            json!(at_ms.saturating_sub(self.started_ms).max(0)),
        );
        self.numbered(
            SseName::Done,
            Domain::System,
            Kind::Done,
            JsonObject::new(),
            Some(meta),
        )
    }

    fn message(&mut self, domain: Domain, kind: Kind, payload: JsonObject) -> Event {
        self.numbered(SseName::Message, domain, kind, payload, None)
    }

    fn numbered(
        &mut self,
        name: SseName,
        domain: Domain,
        kind: Kind,
        payload: JsonObject,
        meta: Option<JsonObject>,
    ) -> Event {
        let envelope = Envelope {
            domain,
            kind,
            conversation_id: self.conversation_id.clone(),
            message_id: self.task_id.clone(),
            index: self.index,
            payload,
            meta,
        };
        self.index += 1;
        Event {
            name,
            data: envelope.to_value(self.wire),
        }
    }
}

/// A file item as a payload shows it.
fn file_of(item: &DataItem) -> Value {
    let mut file = JsonObject::new();
    if let DataItem::File {
        name,
        mime_type,
        uri,
        bytes,
        ..
    } = item
    {
        for (key, value) in [
            ("name", name),
            ("mime_type", mime_type),
            ("uri", uri),
            ("bytes", bytes),
        ] {
            if let Some(v) = value {
                file.insert(key.into(), json!(v));
            }
        }
    }
    Value::Object(file)
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::Timestamp;
    use aiphost_model::activity::{TextDelta, ToolCall, ToolResult, Usage};

    fn ev(kind: EventKind) -> TaskEvent {
        TaskEvent {
            seq: 1,
            at: Timestamp::now(),
            kind,
        }
    }

    fn status(state: TaskState, items: Vec<DataItem>) -> EventKind {
        EventKind::Status {
            status: TaskStatus::now(state, items),
        }
    }

    fn created(plain_reply: bool) -> EventKind {
        EventKind::Created {
            status: TaskStatus::now(TaskState::Accepted, vec![]),
            plain_reply,
        }
    }

    fn delta(channel: Channel, text: &str, last: bool) -> EventKind {
        EventKind::Chunk {
            chunk: TextDelta {
                product_id: channel.as_str().into(),
                channel,
                text: text.into(),
                last,
            }
            .into_chunk(),
        }
    }

    fn trip() -> InputRequest {
        InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: Some("Where to?".into()),
            schema: object(json!({"type": "object", "required": ["city"]})),
        }
    }

    /// Everything a stream sends for `events` (after `opening`), whether it ended, checked:
    /// indexes 0.. without gaps, and nothing after the end.
    fn run(turn: &mut Turn, opening: Vec<Event>, events: Vec<EventKind>) -> (Vec<Event>, bool) {
        let mut all = opening;
        let mut ended = false;
        for kind in events {
            assert!(!ended, "an event after the end: {all:#?}");
            let (out, end) = turn.event(&ev(kind));
            all.extend(out);
            ended = end;
        }
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.data["index"], json!(i), "{all:#?}");
            assert_eq!(e.data["protocol"], "aiflowy-chat");
            assert_eq!(e.data["version"], "1.1");
        }
        (all, ended)
    }

    /// `name domain/type` of each event.
    fn shape(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                format!(
                    "{} {}/{}",
                    e.name.as_str(),
                    e.data["domain"].as_str().unwrap_or("-"),
                    e.data["type"].as_str().unwrap_or("-")
                )
            })
            .collect()
    }

    fn think_and_tool() -> Vec<EventKind> {
        vec![
            created(false),
            status(TaskState::Working, vec![]),
            delta(Channel::Reasoning, "Let me ", false),
            delta(Channel::Reasoning, "think.", false),
            EventKind::Activity {
                activity: Activity::ToolCall(ToolCall {
                    call_id: "lookup-1".into(),
                    name: "lookup".into(),
                    arguments: object(json!({"query": "x"})),
                }),
            },
            EventKind::Activity {
                activity: Activity::ToolResult(ToolResult {
                    call_id: "lookup-1".into(),
                    output: ToolOutput::Json(json!({"found": "x"})),
                    is_error: false,
                }),
            },
            EventKind::Activity {
                activity: Activity::Usage(Usage {
                    model: Some("m".into()),
                    input_tokens: Some(5),
                    output_tokens: Some(7),
                    reasoning_tokens: None,
                }),
            },
            delta(Channel::Answer, "found ", false),
            delta(Channel::Answer, "x", false),
            delta(Channel::Reasoning, "", true),
            delta(Channel::Answer, "", true),
            status(TaskState::AwaitingCompletion, vec![]),
            status(TaskState::Completed, vec![]),
        ]
    }

    #[test]
    fn a_turn_of_thinking_a_tool_and_an_answer_in_the_seeds_wire() {
        let mut turn = Turn::new(Wire::Seed, "c", Some("t"), 0);
        let (events, ended) = run(&mut turn, vec![], think_and_tool());
        assert!(ended);
        assert_eq!(
            shape(&events),
            [
                "message system/status",
                "message llm/thinking",
                "message llm/thinking",
                "message tool/tool_call",
                "message tool/tool_result",
                "message llm/message",
                "message llm/message",
                "done system/done",
            ]
        );
        assert_eq!(events[0].data["payload"], json!({"state": "running"}));
        assert_eq!(events[1].data["payload"], json!({"delta": "Let me "}));
        assert_eq!(events[1].data["conversation_id"], "c");
        assert_eq!(events[1].data["message_id"], "t");
        assert_eq!(
            events[3].data["payload"],
            json!({"tool_call_id": "lookup-1", "name": "lookup", "arguments": {"query": "x"}})
        );
        assert_eq!(
            events[4].data["payload"],
            json!({"tool_call_id": "lookup-1", "status": "success", "result": {"found": "x"}})
        );
        let done = &events[7].data;
        assert_eq!(done["payload"], json!({}));
        assert_eq!(done["meta"]["prompt_tokens"], 5);
        assert_eq!(done["meta"]["completion_tokens"], 7);
        assert_eq!(done["meta"]["model"], "m");
        assert!(done["meta"]["latency_ms"].as_u64().unwrap() > 0);
    }

    #[test]
    fn the_same_turn_in_aiflowys_wire() {
        let mut turn = Turn::new(Wire::Aiflowy, "42", Some("t"), 0);
        let (events, _) = run(&mut turn, vec![], think_and_tool());
        assert_eq!(
            shape(&events),
            [
                "message SYSTEM/STATUS",
                "message LLM/THINKING",
                "message LLM/THINKING",
                "message TOOL/TOOL_CALL",
                "message TOOL/TOOL_RESULT",
                "message LLM/MESSAGE",
                "message LLM/MESSAGE",
                "done SYSTEM/DONE",
            ]
        );
        let thinking = &events[1].data;
        assert_eq!(thinking["conversationId"], "42");
        assert_eq!(thinking["messageId"], "t");
        assert!(thinking.get("conversation_id").is_none());
        assert_eq!(
            thinking["payload"],
            json!({"conversation_id": "42", "role": "assistant", "delta": "Let me "})
        );
        assert_eq!(events[3].data["payload"]["tool_call_id"], "lookup-1");
    }

    #[test]
    fn a_form_suspends_and_its_submit_resumes() {
        for wire in [Wire::Seed, Wire::Aiflowy] {
            let mut turn = Turn::new(wire, "c", Some("t"), 0);
            let (events, ended) = run(
                &mut turn,
                vec![],
                vec![
                    created(false),
                    status(TaskState::Working, vec![]),
                    status(TaskState::AwaitingInput, trip().items()),
                ],
            );
            assert!(ended);
            let form = &events[1].data["payload"];
            let key = if wire == Wire::Seed {
                "form_id"
            } else {
                "formId"
            };
            assert_eq!(form[key], "trip", "{form}");
            assert_eq!(form["title"], "Trip");
            assert_eq!(form["description"], "Where to?");
            assert_eq!(form["schema"]["required"], json!(["city"]));
            assert_eq!(
                form["ui"],
                json!({"submit_text": "Submit", "cancel_text": "Cancel"})
            );
            assert_eq!(
                events[2].data["payload"],
                json!({"state": "suspended", "reason": "interaction"})
            );
            assert_eq!(events[3].name, SseName::Done);
            assert_eq!(events.len(), 4);

            // The submit's stream: resumed, then the answer.
            let mut turn = Turn::new(wire, "c", Some("t"), 0);
            let opening = turn.resumed();
            let (events, ended) = run(
                &mut turn,
                opening,
                vec![
                    status(TaskState::Working, vec![]),
                    delta(Channel::Answer, "Oslo", false),
                    status(TaskState::AwaitingCompletion, vec![]),
                    status(TaskState::Completed, vec![]),
                ],
            );
            assert!(ended);
            assert_eq!(events[0].data["payload"]["state"], "resumed");
            assert_eq!(events.len(), 3, "{events:#?}");
        }
    }

    #[test]
    fn a_primed_form_is_canceled_by_its_timeout_or_a_cancel() {
        let asking = TaskStatus::now(TaskState::AwaitingInput, trip().items());
        let task: Task = serde_json::from_value(json!({"id": "t", "status": asking})).unwrap();
        for (said, reason) in [
            (
                Cause::AwaitingInputTimeout.item("awaitingInputTimeout of 1000 ms expired"),
                "timeout",
            ),
            (DataItem::text("canceled by the Leader"), "canceled"),
            // The words alone are no timeout: a Leader's cancel may say anything.
            (
                DataItem::text("awaitingInputTimeout of 1000 ms expired"),
                "canceled",
            ),
        ] {
            let mut turn = Turn::new(Wire::Seed, "c", Some("t"), 0);
            let opening = turn.prime(&task);
            let (events, ended) = run(
                &mut turn,
                opening,
                vec![status(TaskState::Canceled, vec![said])],
            );
            assert!(ended);
            assert_eq!(
                shape(&events),
                [
                    "message interaction/form_request",
                    "message system/status",
                    "message interaction/form_cancel",
                    "done system/done",
                ]
            );
            assert_eq!(
                events[2].data["payload"],
                json!({"form_id": "trip", "reason": reason})
            );
        }
        // A submit elsewhere: the primed stream says resumed, then follows the answer.
        let mut turn = Turn::new(Wire::Seed, "c", Some("t"), 0);
        let opening = turn.prime(&task);
        let (events, _) = run(&mut turn, opening, vec![status(TaskState::Working, vec![])]);
        assert_eq!(events[2].data["payload"]["state"], "resumed");
    }

    #[test]
    fn a_cancel_while_working_is_a_canceled_status() {
        let mut turn = Turn::new(Wire::Seed, "c", Some("t"), 0);
        let (events, ended) = run(
            &mut turn,
            vec![],
            vec![
                created(false),
                delta(Channel::Answer, "1 ", false),
                status(TaskState::Canceled, vec![DataItem::text("stop")]),
            ],
        );
        assert!(ended);
        assert_eq!(
            events[2].data["payload"],
            json!({"state": "canceled", "reason": "stop"})
        );
        assert_eq!(events[3].name, SseName::Done);
    }

    #[test]
    fn failures_and_rejections_are_errors_that_end_the_stream() {
        let failure = Failure {
            code: "CONCIERGE_FAILED".into(),
            message: "no tea".into(),
            retryable: false,
            detail: Some(object(json!({"why": "empty"}))),
        };
        let mut turn = Turn::new(Wire::Seed, "c", Some("t"), 0);
        let (events, ended) = run(
            &mut turn,
            vec![],
            vec![created(false), status(TaskState::Failed, failure.items())],
        );
        assert!(ended);
        let error = events.last().unwrap();
        assert_eq!(error.name, SseName::Error);
        assert_eq!(error.data["domain"], "system");
        assert_eq!(
            error.data["payload"],
            json!({"code": "CONCIERGE_FAILED", "message": "no tea", "retryable": false,
                   "detail": {"why": "empty"}})
        );

        let mut turn = Turn::new(Wire::Aiflowy, "c", Some("t"), 0);
        let (events, _) = run(
            &mut turn,
            vec![],
            vec![status(TaskState::Failed, failure.items())],
        );
        assert_eq!(
            events[0].data["payload"],
            json!({"code": "SYSTEM_ERROR", "message": "no tea", "retryable": false,
                   "detail": {"why": "empty", "code": "CONCIERGE_FAILED"}})
        );
        assert_eq!(events[0].data["type"], "ERROR");

        // Without a coded failure (a trap, a restart): PARTNER_FAILED with the status's words.
        let mut turn = Turn::new(Wire::Seed, "c", Some("t"), 0);
        let (events, _) = run(
            &mut turn,
            vec![],
            vec![status(TaskState::Failed, vec![DataItem::text("trapped")])],
        );
        assert_eq!(events[0].data["payload"]["code"], "PARTNER_FAILED");
        assert_eq!(events[0].data["payload"]["message"], "trapped");

        let rejected = EventKind::Created {
            status: TaskStatus::now(TaskState::Rejected, vec![DataItem::text("not mine")]),
            plain_reply: false,
        };
        for (wire, domain, code) in [
            (Wire::Seed, "business", "REJECTED"),
            (Wire::Aiflowy, "SYSTEM", "SYSTEM_ERROR"),
        ] {
            let mut turn = Turn::new(wire, "c", Some("t"), 0);
            let (events, ended) = run(&mut turn, vec![], vec![rejected.clone()]);
            assert!(ended);
            assert_eq!(events.len(), 1);
            assert_eq!(events[0].name, SseName::Error);
            assert_eq!(events[0].data["domain"], domain);
            assert_eq!(events[0].data["payload"]["code"], code);
        }
    }

    #[test]
    fn a_plain_reply_is_one_whole_message() {
        let reply = EventKind::Chunk {
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
        };
        for (wire, payload) in [
            (Wire::Seed, json!({"content": "hi"})),
            (
                Wire::Aiflowy,
                json!({"conversation_id": "c", "role": "assistant", "delta": "hi"}),
            ),
        ] {
            let mut turn = Turn::new(wire, "c", Some("t"), 0);
            let (events, ended) = run(
                &mut turn,
                vec![],
                vec![
                    created(true),
                    status(TaskState::Working, vec![]),
                    reply.clone(),
                    status(TaskState::AwaitingCompletion, vec![DataItem::text("hi")]),
                    status(TaskState::Completed, vec![DataItem::text("hi")]),
                ],
            );
            assert!(ended);
            assert_eq!(events.len(), 3, "{events:#?}");
            assert_eq!(events[1].data["payload"], payload);
            assert_eq!(events[2].name, SseName::Done);
        }
    }

    #[test]
    fn a_busy_conversation_is_refused_in_one_error() {
        for (wire, code) in [
            (Wire::Seed, "CONVERSATION_BUSY"),
            (Wire::Aiflowy, "SYSTEM_ERROR"),
        ] {
            let mut turn = Turn::new(wire, "c", Some("t"), 0);
            let out = turn.refused("CONVERSATION_BUSY", "busy", true);
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].name, SseName::Error);
            assert_eq!(out[0].data["index"], 0);
            assert_eq!(out[0].data["payload"]["code"], code);
        }
        let mut turn = Turn::new(Wire::Aiflowy, "c", None, 0);
        let out = turn.refused("CONVERSATION_BUSY", "busy", true);
        assert_eq!(
            out[0].data["payload"]["detail"]["code"],
            "CONVERSATION_BUSY"
        );
        assert!(out[0].data.get("messageId").is_none());
    }
}
