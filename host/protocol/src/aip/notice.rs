//! A model [`TaskNotice`] on AIP's wire: a webhook of the notification style or a result
//! published to a group, in the dialect of the Leader that started the task.

use super::dialect::{Dialect, render_task};
use aiphost_model::TaskNotice;
use serde_json::{Value, json};

/// Who hears a notice: the two differ only in a v1 `senderRole`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// A notification receiver (a webhook): the task exactly as a `get` shows it.
    Webhook,
    /// A group's exchange: a message among others, so it says it comes from the partner.
    Group,
}

/// The notice on the wire, for `audience`, in the dialect of the Leader that started its task
/// (v1 for a task no AIP Leader started): a v1 `Task` or a v2 `TaskResult`.
pub fn render_notice(notice: &TaskNotice, audience: Audience) -> Value {
    let dialect = Dialect::of(notice.form.as_ref());
    let mut body = render_task(&notice.task, dialect, &notice.partner_aic, None);
    match dialect {
        Dialect::V2 => {
            body["id"] = json!(notice.id);
            body["sentAt"] = json!(notice.at);
        }
        Dialect::V1 if audience == Audience::Group => {
            body["senderRole"] = json!("partner");
        }
        Dialect::V1 => {}
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{Task, TaskState, TaskStatus};

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
            plain_reply: false,
        }
    }

    #[test]
    fn a_v2_notice_keeps_its_id_and_time_on_every_rendering() {
        let notice = TaskNotice::now("partner-aic", Some(Dialect::V2.form()), &task(None));
        let once = render_notice(&notice, Audience::Webhook);
        let again = render_notice(&notice, Audience::Webhook);
        assert_eq!(once, again);
        assert_eq!(once["id"], json!(notice.id));
        assert_eq!(once["type"], json!("task-result"));
        assert_eq!(once["senderId"], json!("partner-aic"));
        assert_eq!(once["taskId"], json!("t1"));
    }

    #[test]
    fn a_v1_group_notice_says_it_comes_from_the_partner() {
        let notice = TaskNotice::now("partner-aic", Some(Dialect::V1.form()), &task(Some("g1")));
        let webhook = render_notice(&notice, Audience::Webhook);
        let group = render_notice(&notice, Audience::Group);
        assert_eq!(webhook["type"], json!("task"));
        assert!(webhook.get("senderRole").is_none());
        assert_eq!(group["senderRole"], json!("partner"));
        assert_eq!(group["senderId"], json!("partner-aic"));
    }

    #[test]
    fn a_notice_carries_no_histories() {
        let mut t = task(None);
        t.status_history.push(t.status.clone());
        let notice = TaskNotice::now("p", Some(Dialect::V1.form()), &t);
        assert!(notice.task.status_history.is_empty());
        let body = render_notice(&notice, Audience::Webhook);
        assert!(body.get("statusHistory").is_none());
    }

    #[test]
    fn a_notice_of_a_task_no_aip_leader_started_goes_out_in_v1() {
        let none = TaskNotice::now("p", None, &task(None));
        let v1 = TaskNotice {
            form: Some(Dialect::V1.form()),
            ..none.clone()
        };
        assert_eq!(
            render_notice(&none, Audience::Webhook),
            render_notice(&v1, Audience::Webhook)
        );
    }
}
