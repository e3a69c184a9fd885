//! A durable change of a task, as it is announced to others: a webhook of the notification style or
//! a result published to a group.
//!
//! The engine writes a [`TaskNotice`] in the same write as the change it announces and never
//! renders it: the door that delivers it (the notifier, a group's link) renders it
//! (`aiphost-protocol`), in the wire form the door that started the task chose.

use super::task::Task;
use super::time::Timestamp;
use super::wire_form::WireForm;
use serde::{Deserialize, Serialize};

/// A task as it was when a change happened, to be told to someone who is not waiting for a reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskNotice {
    /// The message's own id, fixed when the change is written, so that every delivery attempt of
    /// one notice carries the same id (a v2 `TaskResult.id`).
    pub id: String,
    /// When the change was written (a v2 `sentAt`).
    pub at: Timestamp,
    /// The AIC of the partner whose task it is (its `senderId`).
    pub partner_aic: String,
    /// The wire form the door that started the task chose (AIP: the Leader's dialect); the
    /// notice goes out in it. Stored as `dialect`, as when it was AIP's dialect itself.
    #[serde(rename = "dialect", default, skip_serializing_if = "Option::is_none")]
    pub form: Option<WireForm>,
    /// The task, without histories.
    pub task: Task,
}

impl TaskNotice {
    /// A notice of `task` as it is now, with a fresh id.
    pub fn now(partner_aic: &str, form: Option<WireForm>, task: &Task) -> Self {
        TaskNotice {
            id: format!("result-{}", uuid::Uuid::new_v4()),
            at: Timestamp::now(),
            partner_aic: partner_aic.to_string(),
            form,
            // Only what a notice shows: a task's histories may be long, and this runs on the
            // write path of every notified change.
            task: Task {
                id: task.id.clone(),
                session_id: task.session_id.clone(),
                leader_id: task.leader_id.clone(),
                group_id: task.group_id.clone(),
                status: task.status.clone(),
                products: task.products.clone(),
                commands: Vec::new(),
                status_history: Vec::new(),
                completes_on_result: false,
                plain_reply: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::{TaskState, TaskStatus};

    #[test]
    fn a_notice_carries_no_histories_and_keeps_its_form_as_stored() {
        let mut task = Task {
            id: "t1".into(),
            session_id: None,
            leader_id: Some("leader".into()),
            group_id: None,
            status: TaskStatus::now(TaskState::Working, Vec::new()),
            products: Vec::new(),
            commands: Vec::new(),
            status_history: Vec::new(),
            completes_on_result: false,
            plain_reply: false,
        };
        task.status_history.push(task.status.clone());
        let notice = TaskNotice::now("p", Some(WireForm::new("v2")), &task);
        assert!(notice.task.status_history.is_empty());
        let stored = serde_json::to_value(&notice).unwrap();
        assert_eq!(stored["dialect"], "v2");
        let without = TaskNotice::now("p", None, &task);
        assert!(
            serde_json::to_value(&without)
                .unwrap()
                .get("dialect")
                .is_none()
        );
    }
}
