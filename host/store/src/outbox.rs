//! The stored form of what waits to be delivered: a notification in a task's outbox, a message in
//! a group membership's outbox.

use aiphost_model::TaskNotice;
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
    /// The notification config it is delivered to now.
    pub config_id: String,
    /// The configs the same change goes to after that one, in order (a task with several
    /// configs, A2A's push notification configs: one entry per change, delivered to each in
    /// turn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub then: Vec<String>,
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
            then: Vec::new(),
            body: Outgoing::Notice(Box::new(notice)),
            attempts: 0,
            first_attempt_ms: 0,
            next_attempt_ms: 0,
            last_error: None,
        }
    }

    /// The same, then to the configs `then` in turn.
    pub fn then(mut self, then: Vec<String>) -> Self {
        self.then = then;
        self
    }

    /// Move on to the next config of [`then`](Self::then), not yet tried there; `false` when
    /// there is none (the entry is done).
    pub fn next_config(&mut self) -> bool {
        if self.then.is_empty() {
            return false;
        }
        self.config_id = self.then.remove(0);
        self.attempts = 0;
        self.first_attempt_ms = 0;
        self.next_attempt_ms = 0;
        self.last_error = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_goes_to_each_config_in_turn_each_tried_afresh() {
        let mut entry = OutboxEntry {
            config_id: "c1".into(),
            then: vec!["c2".into(), "c3".into()],
            body: Outgoing::Rendered(json!({"id": "t1"})),
            attempts: 0,
            first_attempt_ms: 0,
            next_attempt_ms: 0,
            last_error: None,
        };
        entry.attempts = 3;
        entry.last_error = Some("HTTP 500".into());
        let stored: OutboxEntry =
            serde_json::from_slice(&serde_json::to_vec(&entry).unwrap()).unwrap();
        assert_eq!(stored, entry);
        assert!(entry.next_config());
        assert_eq!((entry.config_id.as_str(), entry.attempts), ("c2", 0));
        assert_eq!(entry.last_error, None);
        assert!(entry.next_config());
        assert_eq!(entry.config_id, "c3");
        assert!(!entry.next_config());
        assert_eq!(entry.config_id, "c3");
    }

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
