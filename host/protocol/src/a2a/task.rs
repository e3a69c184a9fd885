//! An AIP task as an A2A `Task` (spec 4.1.1), and the state mapping between the two.
//!
//! | AIP | A2A |
//! | --- | --- |
//! | accepted | `TASK_STATE_SUBMITTED` |
//! | working | `TASK_STATE_WORKING` |
//! | awaiting-input | `TASK_STATE_INPUT_REQUIRED` |
//! | awaiting-completion | `TASK_STATE_INPUT_REQUIRED`, with `metadata.aipState` (A2A has no such state; a task started over A2A never rests in it) |
//! | completed / canceled / failed / rejected | `TASK_STATE_COMPLETED` / `_CANCELED` / `_FAILED` / `_REJECTED` |
//!
//! Products are artifacts (`artifactId` = the product id). The history is the task's messages in
//! order: the Leader's starts and continues (`ROLE_USER`, their own message ids) and what the
//! partner said with its earlier statuses (`ROLE_AGENT`); what it says with the current status
//! is that status's `message`. Everything is rendered from what is stored, so two renderings of
//! one task state are identical.

use super::part::render_parts;
use aiphost_model::Task;
use aiphost_model::{CommandKind, DataItem, Product, TaskState, TaskStatus};
use serde_json::{Map, Value, json};

/// The A2A spelling of an AIP state.
pub fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Accepted => "TASK_STATE_SUBMITTED",
        TaskState::Working => "TASK_STATE_WORKING",
        TaskState::AwaitingInput | TaskState::AwaitingCompletion => "TASK_STATE_INPUT_REQUIRED",
        TaskState::Completed => "TASK_STATE_COMPLETED",
        TaskState::Canceled => "TASK_STATE_CANCELED",
        TaskState::Failed => "TASK_STATE_FAILED",
        TaskState::Rejected => "TASK_STATE_REJECTED",
    }
}

/// The AIP states an A2A state (either spelling: `TASK_STATE_WORKING` or v0.3's `working`)
/// stands for, for filtering; `None` for a name A2A does not have.
pub fn states_of(name: &str) -> Option<&'static [TaskState]> {
    let folded = name
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-");
    Some(match folded.as_str() {
        "submitted" => &[TaskState::Accepted],
        "working" => &[TaskState::Working],
        "input-required" => &[TaskState::AwaitingInput, TaskState::AwaitingCompletion],
        "completed" => &[TaskState::Completed],
        "canceled" | "cancelled" => &[TaskState::Canceled],
        "failed" => &[TaskState::Failed],
        "rejected" => &[TaskState::Rejected],
        "auth-required" => &[],
        _ => return None,
    })
}

/// What to include when rendering a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskView {
    /// At most this many of the newest history messages (`None`: all; 0: no `history`).
    pub history_length: Option<usize>,
    /// Include `artifacts` (ListTasks leaves them out unless asked).
    pub artifacts: bool,
}

impl Default for TaskView {
    fn default() -> Self {
        TaskView {
            history_length: None,
            artifacts: true,
        }
    }
}

/// The message id of what the partner said with `status` of task `task_id`.
fn status_message_id(task_id: &str, status: &TaskStatus) -> String {
    format!(
        "{task_id}-{}-{}",
        status.state,
        status.state_changed_at.unix_millis()
    )
}

/// The A2A `Message` of a partner's plain reply (contract 0.2.0): the items it answered with, as
/// an agent message with no task (A2A's stateless answer; the host keeps the task `task_id` as
/// the record of it). Its id is derived from the task's, so every rendering is the same.
pub fn render_reply(task_id: &str, context_id: Option<&str>, items: &[DataItem]) -> Value {
    let mut m = Map::new();
    m.insert("messageId".into(), json!(format!("reply-{task_id}")));
    if let Some(c) = context_id {
        m.insert("contextId".into(), json!(c));
    }
    m.insert("role".into(), json!("ROLE_AGENT"));
    m.insert("parts".into(), render_parts(items));
    Value::Object(m)
}

/// A2A `TaskStatus`: the state, what the partner said with it (as an agent message), and when.
pub fn render_status(task_id: &str, context_id: Option<&str>, status: &TaskStatus) -> Value {
    let mut out = Map::new();
    out.insert("state".into(), json!(state_name(status.state)));
    if !status.data_items.is_empty() {
        out.insert(
            "message".into(),
            agent_message(
                &status_message_id(task_id, status),
                task_id,
                context_id,
                &status.data_items,
            ),
        );
    }
    out.insert(
        "timestamp".into(),
        json!(status.state_changed_at.to_utc_z()),
    );
    Value::Object(out)
}

fn agent_message(id: &str, task_id: &str, context_id: Option<&str>, items: &[DataItem]) -> Value {
    message("ROLE_AGENT", id, task_id, context_id, items)
}

fn message(
    role: &str,
    id: &str,
    task_id: &str,
    context_id: Option<&str>,
    items: &[DataItem],
) -> Value {
    let mut m = Map::new();
    m.insert("messageId".into(), json!(id));
    if let Some(c) = context_id {
        m.insert("contextId".into(), json!(c));
    }
    m.insert("taskId".into(), json!(task_id));
    m.insert("role".into(), json!(role));
    m.insert("parts".into(), render_parts(items));
    Value::Object(m)
}

/// A2A `Artifact` of a product (or of a product chunk's piece of one).
pub fn render_artifact(product: &Product) -> Value {
    let mut a = Map::new();
    a.insert("artifactId".into(), json!(product.id));
    if let Some(n) = &product.name {
        a.insert("name".into(), json!(n));
    }
    if let Some(d) = &product.description {
        a.insert("description".into(), json!(d));
    }
    a.insert("parts".into(), render_parts(&product.data_items));
    Value::Object(a)
}

/// What the partner said with its statuses, one message per run of statuses saying the same
/// items, oldest first. A status that repeats the items of the one right before it says nothing
/// new: the host's completion of a task for an A2A client repeats what the partner said with
/// its result (so that the completed status carries it), and the two are one message. A run is
/// named after its last status, the one it was last shown as the task's status message under.
fn said_by_statuses(statuses: &[TaskStatus]) -> Vec<&TaskStatus> {
    statuses
        .iter()
        .enumerate()
        .filter(|(i, status)| {
            !status.data_items.is_empty()
                && statuses
                    .get(i + 1)
                    .is_none_or(|next| next.data_items != status.data_items)
        })
        .map(|(_, status)| status)
        .collect()
}

/// The task's messages, oldest first: the Leader's starts and continues, and what the partner
/// said with its earlier statuses. What it says with the current one is the status's `message`
/// and not history yet (as the official SDK keeps a task: a status message joins the history
/// when a newer status or message supersedes it), so no message is in a task twice.
fn history(task: &Task) -> Vec<(i64, Value)> {
    let context = task.session_id.as_deref();
    let mut out: Vec<(i64, Value)> = task
        .commands
        .iter()
        .filter(|c| matches!(c.command, CommandKind::Start | CommandKind::Continue))
        .map(|c| {
            (
                c.sent_at.unix_millis(),
                message("ROLE_USER", &c.id, &task.id, context, &c.data_items),
            )
        })
        .collect();
    let mut said = said_by_statuses(&task.status_history);
    if task.status_history.last() == Some(&task.status)
        && said.last().is_some_and(|last| **last == task.status)
    {
        said.pop();
    }
    for status in said {
        out.push((
            status.state_changed_at.unix_millis(),
            agent_message(
                &status_message_id(&task.id, status),
                &task.id,
                context,
                &status.data_items,
            ),
        ));
    }
    // Stable: a command and the status it caused in the same millisecond keep that order.
    out.sort_by_key(|(at, _)| *at);
    out
}

/// The A2A `Task` of `task`.
pub fn render_task(task: &Task, view: TaskView) -> Value {
    let context = task.session_id.as_deref();
    let mut out = Map::new();
    out.insert("id".into(), json!(task.id));
    if let Some(c) = context {
        out.insert("contextId".into(), json!(c));
    }
    out.insert(
        "status".into(),
        render_status(&task.id, context, &task.status),
    );
    if view.artifacts && !task.products.is_empty() {
        out.insert(
            "artifacts".into(),
            Value::Array(task.products.iter().map(render_artifact).collect()),
        );
    }
    if view.history_length != Some(0) {
        let mut messages = history(task);
        if let Some(n) = view.history_length {
            let skip = messages.len().saturating_sub(n);
            messages.drain(..skip);
        }
        if !messages.is_empty() {
            out.insert(
                "history".into(),
                Value::Array(messages.into_iter().map(|(_, m)| m).collect()),
            );
        }
    }
    if task.status.state == TaskState::AwaitingCompletion {
        out.insert(
            "metadata".into(),
            json!({"aipState": TaskState::AwaitingCompletion.as_str()}),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::LeaderCommand;
    use aiphost_model::Timestamp;

    fn task() -> Task {
        let t0 = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let status = |state, items: Vec<DataItem>, ms| TaskStatus {
            state,
            state_changed_at: t0.plus_millis(ms),
            data_items: items,
        };
        let done = status(TaskState::Completed, vec![DataItem::text("Hello")], 20);
        Task {
            id: "t-1".into(),
            session_id: Some("ctx-1".into()),
            leader_id: None,
            group_id: None,
            status: done.clone(),
            products: vec![Product {
                id: "p".into(),
                name: Some("P".into()),
                description: None,
                data_items: vec![DataItem::text("out")],
            }],
            commands: vec![LeaderCommand {
                id: "m-1".into(),
                sent_at: t0,
                sender_id: String::new(),
                command: CommandKind::Start,
                params: Default::default(),
                data_items: vec![DataItem::text("in")],
                task_id: None,
                session_id: Some("ctx-1".into()),
                group_id: None,
                mentions: None,
            }],
            status_history: vec![
                status(TaskState::Accepted, vec![], 1),
                status(TaskState::Working, vec![], 2),
                status(
                    TaskState::AwaitingCompletion,
                    vec![DataItem::text("Hello")],
                    20,
                ),
                done,
            ],
            completes_on_result: true,
            plain_reply: false,
        }
    }

    #[test]
    fn a_task_renders_with_status_artifacts_and_history() {
        let v = render_task(&task(), TaskView::default());
        assert_eq!(v["id"], "t-1");
        assert_eq!(v["contextId"], "ctx-1");
        assert_eq!(v["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(v["status"]["timestamp"], "2026-01-01T00:00:00.020Z");
        assert_eq!(v["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(v["status"]["message"]["parts"][0]["text"], "Hello");
        assert_eq!(v["artifacts"][0]["artifactId"], "p");
        assert_eq!(v["artifacts"][0]["parts"][0]["text"], "out");
        // The start; the partner's one message (said with the awaiting-completion status and
        // repeated by the completion) is the status's, not history's.
        let history = v["history"].as_array().unwrap();
        assert_eq!(history.len(), 1, "{history:?}");
        assert_eq!(history[0]["messageId"], "m-1");
        assert_eq!(history[0]["role"], "ROLE_USER");
        assert!(v.get("metadata").is_none());
    }

    #[test]
    fn every_message_is_in_a_task_once_and_keeps_its_id() {
        let t0 = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let at = |state, items: Vec<DataItem>, ms| TaskStatus {
            state,
            state_changed_at: t0.plus_millis(ms),
            data_items: items,
        };
        let question = vec![DataItem::text("Where to?")];
        let asking = at(TaskState::AwaitingInput, question.clone(), 2);
        let mut t = task();
        // Asked, answered, asked the same again (a new message), then done with a result the
        // completion repeats.
        t.status_history = vec![
            at(TaskState::Accepted, vec![], 0),
            at(TaskState::Working, vec![], 1),
            asking.clone(),
            at(TaskState::Working, vec![], 10),
            at(TaskState::AwaitingInput, question, 11),
            at(TaskState::Working, vec![], 15),
            at(
                TaskState::AwaitingCompletion,
                vec![DataItem::text("Hello")],
                20,
            ),
            t.status.clone(),
        ];
        let asked = render_task(
            &Task {
                status: asking.clone(),
                status_history: t.status_history[..3].to_vec(),
                ..t.clone()
            },
            TaskView::default(),
        );
        let v = render_task(&t, TaskView::default());
        let texts: Vec<&Value> = v["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["parts"][0]["text"])
            .chain([&v["status"]["message"]["parts"][0]["text"]])
            .collect();
        assert_eq!(texts, ["in", "Where to?", "Where to?", "Hello"], "{v}");
        // The question, asked while it was the status, is in the history under the same id.
        assert_eq!(v["history"][1], asked["status"]["message"], "{v}");
        // The completion's message is the one a stream's completed update carries.
        assert_eq!(
            v["status"]["message"],
            render_status("t-1", Some("ctx-1"), &t.status)["message"]
        );
    }

    #[test]
    fn history_length_keeps_the_newest_and_artifacts_can_be_left_out() {
        // Asked a question, then answered: the question is history now, the newest of it.
        let mut answered = task();
        let question = answered.status_history[2].clone();
        answered.status = TaskStatus {
            state: TaskState::Working,
            state_changed_at: question.state_changed_at.plus_millis(1),
            data_items: vec![],
        };
        answered.status_history = vec![
            answered.status_history[0].clone(),
            question,
            answered.status.clone(),
        ];
        let one = render_task(
            &answered,
            TaskView {
                history_length: Some(1),
                artifacts: false,
            },
        );
        assert_eq!(one["history"].as_array().unwrap().len(), 1);
        assert_eq!(one["history"][0]["role"], "ROLE_AGENT");
        assert!(one.get("artifacts").is_none());
        let none = render_task(
            &task(),
            TaskView {
                history_length: Some(0),
                artifacts: true,
            },
        );
        assert!(none.get("history").is_none());
    }

    #[test]
    fn every_state_has_a_name_that_maps_back() {
        for state in TaskState::ALL {
            let name = state_name(state);
            assert!(states_of(name).unwrap().contains(&state), "{state}");
        }
        assert_eq!(states_of("working"), Some(&[TaskState::Working][..]));
        assert_eq!(states_of("sleeping"), None);
    }
}
