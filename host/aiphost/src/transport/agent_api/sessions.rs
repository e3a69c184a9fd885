//! A session's turns: the Agent API has no task ids, so a session's newest task (the kit's
//! [`sessions::newest`]) says what a request does — continue it (it awaits input), refuse (it
//! runs), or start a new one. The kit's session guard makes the look-up and the start one step:
//! two requests in one session at once would both find no running task and start two.

use super::errors::{self, ApiError};
use super::state::AgentApiState;
use crate::model::{CommandPolicy, Task, TaskState};
use crate::transport::kit::caller::Caller;
use crate::transport::kit::sessions;

/// What the Agent API asks of the engine: a task is done when its partner has a result (the
/// Agent API has no state in which a client reviews one), and ended tasks take no more
/// commands. Its cancel goes by the same.
pub(super) const POLICY: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// What a request in a session does, by the session's newest task.
pub(super) enum Next {
    /// No task of the session waits or runs: start one.
    Start,
    /// The task awaits input: the request is its answer.
    Continue(Task),
    /// The task is accepted or working: one turn at a time.
    Busy(Task),
    /// Another request of the session is starting its turn right now.
    Starting,
}

/// The session's newest task in the caller's namespace (most recently changed first), if any.
pub(super) async fn newest(
    app: &AgentApiState,
    caller: &Caller,
    session_id: &str,
) -> Result<Option<Task>, ApiError> {
    sessions::newest(&app.engine, caller, session_id)
        .await
        .map_err(errors::engine)
}

/// What a request in `session_id` does now.
pub(super) async fn turn(
    app: &AgentApiState,
    caller: &Caller,
    session_id: &str,
) -> Result<Next, ApiError> {
    Ok(match newest(app, caller, session_id).await? {
        Some(task) if task.status.state == TaskState::AwaitingInput => Next::Continue(task),
        Some(task) if is_running(task.status.state) => Next::Busy(task),
        _ => Next::Start,
    })
}

/// Accepted or working: the partner is at it.
pub(super) fn is_running(state: TaskState) -> bool {
    matches!(state, TaskState::Accepted | TaskState::Working)
}
