//! A durable change of a task, as it is announced to others: a webhook of the notification style or
//! a result published to a group.
//!
//! The engine writes a [`TaskNotice`] in the same write as the change it announces and never
//! renders it: the door that delivers it (the notifier, a group's link) renders it in the dialect
//! of the Leader that started the task, with [`TaskNotice::render`].

use super::dialect::{Dialect, Task, render_task};
use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
    /// The dialect of the Leader that started the task: the notice goes out in it.
    pub dialect: Dialect,
    /// The task, without histories.
    pub task: Task,
}

/// Who hears a notice: the two differ only in a v1 `senderRole`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// A notification receiver (a webhook): the task exactly as a `get` shows it.
    Webhook,
    /// A group's exchange: a message among others, so it says it comes from the partner.
    Group,
}

impl TaskNotice {
    /// A notice of `task` as it is now, with a fresh id.
    pub fn now(partner_aic: &str, dialect: Dialect, task: &Task) -> Self {
        TaskNotice {
            id: format!("result-{}", uuid::Uuid::new_v4()),
            at: Timestamp::now(),
            partner_aic: partner_aic.to_string(),
            dialect,
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
            },
        }
    }

    /// The notice on the wire, for `audience`: a v1 `Task` or a v2 `TaskResult`.
    pub fn render(&self, audience: Audience) -> Value {
        let mut body = render_task(&self.task, self.dialect, &self.partner_aic, None);
        match self.dialect {
            Dialect::V2 => {
                body["id"] = json!(self.id);
                body["sentAt"] = json!(self.at);
            }
            Dialect::V1 if audience == Audience::Group => {
                body["senderRole"] = json!("partner");
            }
            Dialect::V1 => {}
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TaskState, TaskStatus};

    fn task(group: Option<&str>) -> Task {
        Task {
            id: "t1".into(),
            session_id: None,
            leader_id: Some("leader".into()),
            group_id: group.map(str::to_string),
            status: TaskStatus::now(TaskState::Working, Vec::new()),
            products: Vec::new(),
            commands: Vec::new(),
            status_history: Vec::new(),
            completes_on_result: false,
        }
    }

    #[test]
    fn a_v2_notice_keeps_its_id_and_time_on_every_rendering() {
        let notice = TaskNotice::now("partner-aic", Dialect::V2, &task(None));
        let once = notice.render(Audience::Webhook);
        let again = notice.render(Audience::Webhook);
        assert_eq!(once, again);
        assert_eq!(once["id"], json!(notice.id));
        assert_eq!(once["type"], json!("task-result"));
        assert_eq!(once["senderId"], json!("partner-aic"));
        assert_eq!(once["taskId"], json!("t1"));
    }

    #[test]
    fn a_v1_group_notice_says_it_comes_from_the_partner() {
        let notice = TaskNotice::now("partner-aic", Dialect::V1, &task(Some("g1")));
        let webhook = notice.render(Audience::Webhook);
        let group = notice.render(Audience::Group);
        assert_eq!(webhook["type"], json!("task"));
        assert!(webhook.get("senderRole").is_none());
        assert_eq!(group["senderRole"], json!("partner"));
        assert_eq!(group["senderId"], json!("partner-aic"));
    }

    #[test]
    fn a_notice_carries_no_histories() {
        let mut t = task(None);
        t.status_history.push(t.status.clone());
        let notice = TaskNotice::now("p", Dialect::V1, &t);
        assert!(notice.task.status_history.is_empty());
        let body = notice.render(Audience::Webhook);
        assert!(body.get("statusHistory").is_none());
    }
}
