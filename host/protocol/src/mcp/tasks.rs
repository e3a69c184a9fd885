//! A task as the MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) shows it: the
//! handle a `tools/call` answers with (`CreateTaskResult`), the `DetailedTask` of `tasks/get`,
//! and the one question a task may have outstanding (its `inputRequests` key and how the
//! answer is read).
//!
//! The MCP task id is the AIP task id (`task-{uuid v4}`: unguessable). States:
//! - accepted, working, awaiting-completion → `working`, the status text as `statusMessage`
//!   (awaiting-completion: "awaiting completion by its Leader" — tasks of the MCP door never
//!   rest there, since the host completes them, but a task started at another door may);
//! - awaiting-input → `input_required`, `inputRequests` holding one elicitation keyed
//!   `{requestId}.{ms the task began to wait}` (unique over the task's life and the same after
//!   a restart: both are in the durable status). A question without a form is asked as one
//!   free-text field, `text` ([`TEXT_FIELD`]), its answer sent to the partner as text;
//! - completed, rejected, and failed **with the partner's `Failure`** → `completed` with the
//!   call's result (`result::render`: a failure or rejection is `isError`, as the SEP
//!   requires: `failed` is only for JSON-RPC errors);
//! - canceled → `cancelled`;
//! - failed **without a `Failure`** — the host ended it (the partner trapped or ran out of
//!   time, the host restarted during its invocation, a limit was reached) and no result of
//!   the partner exists → `failed` with the JSON-RPC error -32603 and the status text as its
//!   message: the MCP request failed in the host, not in the tool.
//!
//! `createdAt` is the task's oldest status kept, `lastUpdatedAt` its current one's.
//! `ttlMs` is `null` while the task runs (it is kept until it ends); once ended, the time from
//! its creation to when the host deletes it (its end plus the retention), `null` when the
//! host keeps ended tasks for ever.

use super::elicitation::{self, Answer, Elicitation, Unreadable};
use super::result;
use aiphost_model::activity::{Failure, InputRequest};
use aiphost_model::{DataItem, JsonObject, Task, TaskState};
use rmcp::model::{
    CreateTaskResult, DetailedTask, InputRequests, Task as McpTask, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};

/// How often a client is asked to poll `tasks/get` (ms).
pub const POLL_INTERVAL_MS: u64 = 1000;

/// The request id of a question asked without a form, and the one field it is asked with.
pub const TEXT_FIELD: &str = "text";

/// The JSON-RPC code of a task the host failed (internal error).
pub const HOST_FAILED_CODE: i32 = -32603;

/// The handle a `tools/call` answers with once its task is durable.
pub fn handle(task: &Task, retention_ms: Option<u64>) -> CreateTaskResult {
    CreateTaskResult::new(base(task, status(task), retention_ms))
}

/// `task` as `tasks/get` answers it.
pub fn detailed(task: &Task, retention_ms: Option<u64>) -> DetailedTask {
    let payload = match task.status.state {
        TaskState::Accepted | TaskState::Working | TaskState::AwaitingCompletion => {
            TaskPayload::Working
        }
        TaskState::AwaitingInput => {
            let question = Question::of(task);
            let mut input_requests = InputRequests::new();
            input_requests.insert(question.key.clone(), question.elicitation.request());
            TaskPayload::InputRequired { input_requests }
        }
        TaskState::Completed | TaskState::Rejected => completed(task),
        TaskState::Failed => match Failure::of(&task.status.data_items) {
            Some(_) => completed(task),
            None => TaskPayload::Failed {
                error: host_error(task),
            },
        },
        TaskState::Canceled => TaskPayload::Cancelled,
    };
    DetailedTask::new(base(task, payload.status(), retention_ms), payload)
}

/// The MCP status of `task` (as [`detailed`] gives it).
pub fn status(task: &Task) -> TaskStatus {
    match task.status.state {
        TaskState::Accepted | TaskState::Working | TaskState::AwaitingCompletion => {
            TaskStatus::Working
        }
        TaskState::AwaitingInput => TaskStatus::InputRequired,
        TaskState::Completed | TaskState::Rejected => TaskStatus::Completed,
        TaskState::Failed if Failure::of(&task.status.data_items).is_some() => {
            TaskStatus::Completed
        }
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Canceled => TaskStatus::Cancelled,
    }
}

/// The fields every shape shares.
fn base(task: &Task, status: TaskStatus, retention_ms: Option<u64>) -> McpTask {
    let created = task.status_history.first().unwrap_or(&task.status);
    let updated = &task.status;
    let mut base = McpTask::new(
        task.id.clone(),
        status,
        created.state_changed_at.to_utc_z(),
        updated.state_changed_at.to_utc_z(),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if task.status.state.is_terminal()
        && let Some(retention) = retention_ms
    {
        let lived = updated
            .state_changed_at
            .unix_millis()
            .saturating_sub(created.state_changed_at.unix_millis());
        let lived = u64::try_from(lived).unwrap_or(0);
        base = base.with_ttl_ms(lived.saturating_add(retention));
    }
    if let Some(message) = status_message(task) {
        base = base.with_status_message(message);
    }
    base
}

/// What the task says of its state, if anything: its status text (awaiting-completion says
/// why it rests).
fn status_message(task: &Task) -> Option<String> {
    let text = task
        .status
        .data_items
        .iter()
        .filter_map(|item| match item {
            DataItem::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if !text.is_empty() {
        return Some(text);
    }
    (task.status.state == TaskState::AwaitingCompletion)
        .then(|| "awaiting completion by its Leader".to_string())
}

/// `completed` with the call's result.
fn completed(task: &Task) -> TaskPayload {
    let rendered = serde_json::to_value(result::render(task)).unwrap_or(Value::Null);
    let result = match rendered {
        Value::Object(map) => map,
        // A CallToolResult is an object; the fallback keeps the task readable regardless.
        _ => JsonObject::new(),
    };
    TaskPayload::Completed { result }
}

/// The JSON-RPC error of a task the host failed.
fn host_error(task: &Task) -> JsonObject {
    let message = status_message(task).unwrap_or_else(|| "the task failed in the host".into());
    let error = json!({
        "code": HOST_FAILED_CODE,
        "message": message,
        "data": {"taskId": task.id, "state": task.status.state},
    });
    match error {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The question a task awaiting input has outstanding.
#[derive(Debug, Clone)]
pub struct Question {
    /// Its `inputRequests` key.
    pub key: String,
    /// The partner's form (`None`: a question asked without one, answered as text).
    pub form: Option<InputRequest>,
    /// How it is asked.
    pub elicitation: Elicitation,
}

/// What a `tasks/update` answer to a [`Question`] is.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The item to continue the task with (the form's values tagged as its answer, or text).
    Continue(DataItem),
    /// The user said no.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

impl Question {
    /// The question of `task` (a task awaiting input: its form, or its status text as a
    /// question with one free-text field).
    pub fn of(task: &Task) -> Question {
        let asked_at = task.status.state_changed_at.unix_millis();
        match InputRequest::of(&task.status.data_items) {
            Some(form) => Question {
                key: elicitation::key(&form.request_id, asked_at),
                elicitation: Elicitation::of(&form, None),
                form: Some(form),
            },
            None => {
                let text = status_message(task).unwrap_or_else(|| "The partner asks.".into());
                let free = InputRequest {
                    request_id: TEXT_FIELD.into(),
                    title: text,
                    description: None,
                    schema: text_schema(),
                };
                Question {
                    key: elicitation::key(TEXT_FIELD, asked_at),
                    elicitation: Elicitation::of(&free, None),
                    form: None,
                }
            }
        }
    }

    /// Read the client's `ElicitResult` for this question.
    pub fn reply(&self, response: &Value) -> Result<Reply, Unreadable> {
        match Answer::of_value(response, self.elicitation.fallback)? {
            Answer::Decline => Ok(Reply::Decline),
            Answer::Cancel => Ok(Reply::Cancel),
            Answer::Accept(values) => {
                let Value::Object(values) = values else {
                    return Err(Unreadable("the answer is a JSON object".into()));
                };
                match &self.form {
                    Some(form) => Ok(Reply::Continue(DataItem::Data {
                        data: values,
                        metadata: Some(aiphost_model::activity::answer_metadata(&form.request_id)),
                    })),
                    None => match values.get(TEXT_FIELD).and_then(Value::as_str) {
                        Some(text) => Ok(Reply::Continue(DataItem::text(text))),
                        None => Err(Unreadable(format!(
                            "the answer is the text field {TEXT_FIELD:?}"
                        ))),
                    },
                }
            }
        }
    }
}

/// The schema of a question asked without a form.
fn text_schema() -> JsonObject {
    let schema = json!({
        "type": "object",
        "properties": {TEXT_FIELD: {"type": "string", "title": "Answer"}},
        "required": [TEXT_FIELD],
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{Product, TaskStatus as AipStatus, Timestamp};

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("a timestamp")
    }

    fn status_of(state: TaskState, when: &str, items: Vec<DataItem>) -> AipStatus {
        AipStatus {
            state,
            state_changed_at: at(when),
            data_items: items,
        }
    }

    /// A task created at 10:00:00, now in `state` since 10:00:05 with `items`.
    fn task(state: TaskState, items: Vec<DataItem>) -> Task {
        let first = status_of(TaskState::Accepted, "2026-08-01T10:00:00Z", vec![]);
        let now = status_of(state, "2026-08-01T10:00:05Z", items);
        Task {
            id: "task-1".into(),
            session_id: None,
            leader_id: None,
            group_id: None,
            status: now.clone(),
            products: Vec::new(),
            commands: Vec::new(),
            status_history: vec![first, now],
            completes_on_result: true,
            plain_reply: false,
        }
    }

    fn trip() -> InputRequest {
        InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: Some("Where to?".into()),
            schema: match json!({"type": "object", "required": ["city", "days"],
                "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}})
            {
                Value::Object(m) => m,
                _ => JsonObject::new(),
            },
        }
    }

    fn wire(task: &Task, retention: Option<u64>) -> Value {
        serde_json::to_value(detailed(task, retention)).expect("serializes")
    }

    #[test]
    fn a_running_task_is_working_with_no_ttl() {
        for state in [
            TaskState::Accepted,
            TaskState::Working,
            TaskState::AwaitingCompletion,
        ] {
            let t = task(state, vec![DataItem::text("on it")]);
            let w = wire(&t, Some(60_000));
            assert_eq!(w["status"], "working", "{state:?}");
            assert_eq!(w["taskId"], "task-1");
            assert_eq!(w["statusMessage"], "on it");
            assert_eq!(w["createdAt"], "2026-08-01T10:00:00.000Z");
            assert_eq!(w["lastUpdatedAt"], "2026-08-01T10:00:05.000Z");
            assert_eq!(w["ttlMs"], Value::Null);
            assert_eq!(w["pollIntervalMs"], POLL_INTERVAL_MS);
            assert!(w.get("result").is_none() && w.get("inputRequests").is_none());
        }
        let w = wire(&task(TaskState::AwaitingCompletion, vec![]), None);
        assert_eq!(w["statusMessage"], "awaiting completion by its Leader");
    }

    #[test]
    fn a_form_is_an_input_request_keyed_by_its_asking() {
        let t = task(TaskState::AwaitingInput, trip().items());
        let w = wire(&t, None);
        assert_eq!(w["status"], "input_required");
        let key = format!("trip.{}", at("2026-08-01T10:00:05Z").unix_millis());
        let request = &w["inputRequests"][&key];
        assert_eq!(request["method"], "elicitation/create", "{w}");
        assert_eq!(
            request["params"]["requestedSchema"]["properties"]["days"]["minimum"],
            1
        );
        let q = Question::of(&t);
        assert_eq!(q.key, key);
        let accept = json!({"action": "accept", "content": {"city": "Oslo", "days": 3}});
        let Ok(Reply::Continue(item)) = q.reply(&accept) else {
            panic!("an answer")
        };
        assert!(aiphost_model::activity::is_answer_to(&item, "trip"));
        assert_eq!(q.reply(&json!({"action": "decline"})), Ok(Reply::Decline));
        assert_eq!(q.reply(&json!({"action": "cancel"})), Ok(Reply::Cancel));
        assert!(q.reply(&json!({"action": "accept"})).is_err());
        assert!(q.reply(&json!("yes")).is_err());
    }

    #[test]
    fn a_question_without_a_form_is_asked_as_text() {
        let t = task(
            TaskState::AwaitingInput,
            vec![DataItem::text("Which city?")],
        );
        let q = Question::of(&t);
        assert!(q.form.is_none() && q.key.starts_with("text."));
        let w = wire(&t, None);
        let request = &w["inputRequests"][&q.key];
        assert!(
            request["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Which city?")),
            "{w}"
        );
        let reply = q.reply(&json!({"action": "accept", "content": {"text": "Oslo"}}));
        assert_eq!(reply, Ok(Reply::Continue(DataItem::text("Oslo"))));
        assert!(
            q.reply(&json!({"action": "accept", "content": {"city": "Oslo"}}))
                .is_err()
        );
    }

    #[test]
    fn an_ended_task_carries_its_result_and_ttl() {
        let mut t = task(TaskState::Completed, vec![]);
        t.products = vec![Product {
            id: "answer".into(),
            name: None,
            description: None,
            data_items: vec![DataItem::text("Oslo for 3 days")],
        }];
        let w = wire(&t, Some(60_000));
        assert_eq!(w["status"], "completed");
        assert_eq!(w["result"]["content"][0]["text"], "Oslo for 3 days", "{w}");
        assert_eq!(w["result"]["isError"], false);
        assert_eq!(w["ttlMs"], 65_000);
        assert_eq!(wire(&t, None)["ttlMs"], Value::Null);
    }

    #[test]
    fn a_partner_failure_or_rejection_is_completed_with_is_error() {
        let failure = Failure {
            code: "CONCIERGE_FAILED".into(),
            message: "out of coffee".into(),
            retryable: false,
            detail: None,
        };
        let w = wire(&task(TaskState::Failed, failure.items()), None);
        assert_eq!(w["status"], "completed", "{w}");
        assert_eq!(w["result"]["isError"], true);
        assert!(
            w["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("CONCIERGE_FAILED: out of coffee")),
            "{w}"
        );
        let w = wire(&task(TaskState::Rejected, vec![DataItem::text("no")]), None);
        assert_eq!(w["status"], "completed");
        assert_eq!(w["result"]["isError"], true);
    }

    #[test]
    fn a_host_failure_is_failed_and_a_cancel_cancelled() {
        let t = task(
            TaskState::Failed,
            vec![DataItem::text("the partner trapped")],
        );
        assert_eq!(status(&t), TaskStatus::Failed);
        let w = wire(&t, None);
        assert_eq!(w["status"], "failed");
        assert_eq!(w["error"]["code"], HOST_FAILED_CODE);
        assert_eq!(w["error"]["message"], "the partner trapped");
        assert!(w.get("result").is_none());
        let w = wire(&task(TaskState::Canceled, vec![]), None);
        assert_eq!(w["status"], "cancelled");
    }

    #[test]
    fn a_handle_is_a_task_result_without_payload() {
        let h = handle(&task(TaskState::Working, vec![]), Some(1000));
        let w = serde_json::to_value(h).expect("serializes");
        assert_eq!(w["resultType"], "task");
        assert_eq!(w["taskId"], "task-1");
        assert_eq!(w["status"], "working");
        assert_eq!(w["ttlMs"], Value::Null);
        assert_eq!(w["pollIntervalMs"], POLL_INTERVAL_MS);
        let h = handle(&task(TaskState::AwaitingInput, trip().items()), None);
        let w = serde_json::to_value(h).expect("serializes");
        assert_eq!(w["status"], "input_required");
        assert!(w.get("inputRequests").is_none());
    }
}
