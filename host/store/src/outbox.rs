//! The stored form of what waits to be delivered: a notification in a task's outbox, a message in
//! a group membership's outbox.

use aiphost_protocol::TaskNotice;
use serde::{Deserialize, Serialize};

/// A message waiting in an outbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outgoing {
    /// A task's change, rendered by the door that delivers it.
    Notice(Box<TaskNotice>),
    /// A message already rendered: every entry written before notices existed, which delivers
    /// as it was stored.
    Rendered(serde_json::Value),
}

/// A notification waiting in the outbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// The notification config it is delivered to.
    pub config_id: String,
    /// The task as it was when the change happened.
    pub body: Outgoing,
    /// Delivery attempts made.
    #[serde(default)]
    pub attempts: u32,
    /// When it was first tried (Unix ms); 0 until then.
    #[serde(default)]
    pub first_attempt_ms: i64,
    /// Not to be tried before this (Unix ms).
    #[serde(default)]
    pub next_attempt_ms: i64,
    /// Why the last attempt failed.
    #[serde(default)]
    pub last_error: Option<String>,
}

impl OutboxEntry {
    /// A notification of `notice` to the config `config_id`, not yet tried.
    pub fn new(config_id: &str, notice: TaskNotice) -> Self {
        OutboxEntry {
            config_id: config_id.to_string(),
            body: Outgoing::Notice(Box::new(notice)),
            attempts: 0,
            first_attempt_ms: 0,
            next_attempt_ms: 0,
            last_error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Entries written before notices existed held the rendered task: they still deliver.
    #[test]
    fn an_entry_stored_rendered_reads_back_as_rendered() {
        let old = json!({
            "config_id": "c1",
            "body": {"type": "task", "id": "t1", "status": {"state": "working"}},
            "attempts": 2,
        });
        let entry: OutboxEntry = serde_json::from_value(old).unwrap();
        assert_eq!(entry.attempts, 2);
        let Outgoing::Rendered(body) = entry.body else {
            panic!("an old entry must read back as rendered");
        };
        assert_eq!(body["id"], json!("t1"));
    }
}
