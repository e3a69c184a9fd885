//! The stored form of a notification waiting in the outbox.

use serde::{Deserialize, Serialize};

/// A notification waiting in the outbox.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// The notification config it is delivered to.
    pub config_id: String,
    /// The task as it was when the change happened, in the task's dialect.
    pub body: serde_json::Value,
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
