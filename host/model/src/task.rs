//! A task as the rest of the host sees it, whatever door started it; the rule for its id; and
//! which parts of its histories a read asks for.

use super::field::InvalidField;
use super::time::Timestamp;
use super::values::{LeaderCommand, Product, TaskStatus};
use serde::{Deserialize, Serialize};

/// The longest task id we accept; ids are keys in the store and appear in logs.
pub const MAX_TASK_ID_LEN: usize = 256;

/// Check a task id: non-empty, bounded, no control characters.
pub fn check_task_id<'a>(id: &'a str, field: &str) -> Result<&'a str, InvalidField> {
    if id.is_empty() {
        return Err(InvalidField::new(field, "must not be empty"));
    }
    if id.len() > MAX_TASK_ID_LEN {
        return Err(InvalidField::new(
            field,
            format!(
                "is {} bytes long; at most {MAX_TASK_ID_LEN} are allowed",
                id.len()
            ),
        ));
    }
    if id.chars().any(char::is_control) {
        return Err(InvalidField::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(id)
}

/// A task as the rest of the host sees it, dialect-free.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The task's id: the Leader's `taskId`, or one the host made up for a start without one.
    pub id: String,
    /// The session the task belongs to (`sessionId`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The Leader that started the task.
    #[serde(default)]
    pub leader_id: Option<String>,
    /// The group the task was started in (`groupId`).
    #[serde(default)]
    pub group_id: Option<String>,
    /// The current status.
    pub status: TaskStatus,
    /// The products so far.
    #[serde(default)]
    pub products: Vec<Product>,
    /// Every Leader command that named this task, in arrival order.
    #[serde(default)]
    pub commands: Vec<LeaderCommand>,
    /// Every status the task has been in, oldest first (`statusHistory`).
    #[serde(default)]
    pub status_history: Vec<TaskStatus>,
    /// The host completes the task as soon as its partner has a result (see
    /// [`CommandPolicy::complete_on_result`](crate::CommandPolicy::complete_on_result)); fixed
    /// at its start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub completes_on_result: bool,
    /// The partner answered the start with a plain reply (contract 0.2.0) and no task: this task
    /// is kept as the record of that answer, completed at once with the reply as its product
    /// `reply`. A door whose protocol has stateless answers (A2A) shows the reply as a message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain_reply: bool,
}

/// Which parts of the histories a read asked for (spec `GetCommandParams`; AIP's wire module
/// reads it from a get's `commandParams`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryFilter {
    /// Only commands sent after this instant (`lastMessageSentAt` / `lastCommandSentAt`).
    pub commands_after: Option<Timestamp>,
    /// Only statuses entered after this instant (`lastStateChangedAt`).
    pub states_after: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_bounded_and_printable() {
        assert!(check_task_id("task-1", "taskId").is_ok());
        assert_eq!(check_task_id("", "taskId").unwrap_err().field, "taskId");
        assert!(check_task_id(&"x".repeat(MAX_TASK_ID_LEN + 1), "taskId").is_err());
        assert!(check_task_id("a\nb", "taskId").is_err());
    }
}
