//! A conversation's turns: AIFlowy names no task, so the conversation's newest task (the kit's
//! [`sessions::newest`]) says what a chat request does — continue it (it awaits input), refuse
//! (it runs), or start a new one — and what a form submit and the events route find; and the
//! engine command of a turn.

use super::errors;
use super::state::AiflowyState;
use crate::model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, JsonObject, LeaderCommand, Task,
    TaskState, Timestamp,
};
use crate::protocol::aiflowy::AiflowyError;
use crate::transport::kit::caller::Caller;
use crate::transport::kit::sessions;

/// What the AIFlowy door asks of the engine: a task is done when its partner has a result (a
/// chat has no state in which a client reviews one), and ended tasks take no more commands.
pub(super) const POLICY: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// What a chat request in a conversation does, by the conversation's newest task.
pub(super) enum Next {
    /// No task of the conversation waits or runs: start one.
    Start,
    /// The task awaits input: the prompt is its answer.
    Continue(Task),
    /// The task is accepted or working: one turn at a time.
    Busy(Task),
}

/// The conversation's newest task in the caller's namespace, if any.
pub(super) async fn newest(
    app: &AiflowyState,
    caller: &Caller,
    conversation_id: &str,
) -> Result<Option<Task>, AiflowyError> {
    sessions::newest(&app.engine, caller, conversation_id)
        .await
        .map_err(errors::engine)
}

/// What a chat request in `conversation_id` does now.
pub(super) async fn turn(
    app: &AiflowyState,
    caller: &Caller,
    conversation_id: &str,
) -> Result<Next, AiflowyError> {
    Ok(match newest(app, caller, conversation_id).await? {
        Some(task) if task.status.state == TaskState::AwaitingInput => Next::Continue(task),
        Some(task) if is_running(task.status.state) => Next::Busy(task),
        _ => Next::Start,
    })
}

/// Accepted or working: the partner is at it.
pub(super) fn is_running(state: TaskState) -> bool {
    matches!(state, TaskState::Accepted | TaskState::Working)
}

/// The engine's command of a turn in `conversation_id`: the start of a new task (`task_id`
/// `None`, with `params`) or the continue of `task_id`, carrying `items`.
pub(super) fn inbound(
    caller: &Caller,
    items: Vec<DataItem>,
    task_id: Option<String>,
    conversation_id: &str,
    params: JsonObject,
) -> Inbound {
    let command = if task_id.is_some() {
        CommandKind::Continue
    } else {
        CommandKind::Start
    };
    Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            id: format!("aiflowy-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command,
            params,
            data_items: items,
            task_id,
            session_id: Some(conversation_id.to_string()),
            group_id: None,
            mentions: None,
        },
        owner: caller.owner.clone(),
        policy: POLICY,
    }
}
