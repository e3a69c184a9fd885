//! Task events: every change of a task, numbered, as the streaming style sends them (spec 6.2).
//!
//! The host logs one event per change — the task as created, each later status, each product
//! chunk, each tool call, tool result or usage report; each door renders them in its own shapes (`aiphost-protocol`), deterministically from
//! the logged event, so every stream of a task sees identical events.

use super::activity::Activity;
use super::time::Timestamp;
use super::values::{ProductChunk, TaskStatus};
use serde::{Deserialize, Serialize};

/// What changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EventKind {
    /// The task came into being (accepted or rejected): sent as a whole task.
    Created {
        /// The status it came into being in.
        status: TaskStatus,
        /// The partner answered the start with a plain reply: this task is the record of that
        /// answer (see [`crate::Task::plain_reply`]); the events that follow complete it at once.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        plain_reply: bool,
    },
    /// The task entered a new status.
    Status {
        /// The new status.
        status: TaskStatus,
    },
    /// A product chunk (a text delta is one too, see [`crate::activity`]).
    Chunk {
        /// The chunk.
        chunk: ProductChunk,
    },
    /// Tool activity or usage: shown on streams, replayed from the journal, never part of the
    /// task's status or products.
    Activity {
        /// What the partner did.
        activity: Activity,
    },
}

/// A logged event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    /// Its number in the task's log, counting up from 1 (`eventSeq` when rendered).
    pub seq: u64,
    /// When it was logged (a v2 event's `sentAt`).
    pub at: Timestamp,
    /// What changed; flattened, so its `kind` tag sits beside `seq` and `at`.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl TaskEvent {
    /// Whether the task has ended with this event (a stream closes after it).
    pub fn is_terminal(&self) -> bool {
        match &self.kind {
            EventKind::Created { status, .. } | EventKind::Status { status } => {
                status.state.is_terminal()
            }
            EventKind::Chunk { .. } | EventKind::Activity { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::TaskState;

    #[test]
    fn the_logged_form_round_trips() {
        let update = TaskEvent {
            seq: 7,
            at: Timestamp::parse("2025-09-01T12:00:00+08:00").unwrap(),
            kind: EventKind::Status {
                status: TaskStatus::now(TaskState::Failed, Vec::new()),
            },
        };
        assert!(update.is_terminal());
        let text = serde_json::to_string(&update).unwrap();
        assert_eq!(serde_json::from_str::<TaskEvent>(&text).unwrap(), update);
    }
}
