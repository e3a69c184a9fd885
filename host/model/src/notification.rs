//! Notification configs as the engine stores them (spec 6.3, A2A's push notification configs):
//! where to POST a task's changes, and which of its changes. Each door reads them from its own
//! requests (`aiphost-protocol`).

use super::values::TaskState;
use super::wire_form::WireForm;
use serde::{Deserialize, Serialize};

/// The longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;
/// The longest token accepted.
pub const MAX_TOKEN_LEN: usize = 4096;

/// A notification config: where to POST a task's changes, and the token to send along.
///
/// Made by AIP's `notification/set` or by A2A's push notification config operations; `format`
/// is the making door's name for what its notifications look like and how they authenticate.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationConfig {
    /// The config's id (`id` in `notification/set`, `notificationConfigId` elsewhere).
    pub id: String,
    /// The webhook to POST to.
    pub url: String,
    /// Sent with every notification, so the receiver can tell it is genuine (A2A: may be
    /// empty, then no token header is sent).
    pub token: String,
    /// The task whose changes it reports (`taskId`).
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The wire form its notifications speak, as the door that made it names it (none: the
    /// form of configs made before doors named theirs, AIP's). Kept, not understood, here: the
    /// deliverer reads it back (`aiphost-protocol`'s `NoticeFormat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<WireForm>,
    /// A2A's `AuthenticationInfo`: each notification carries `Authorization: {scheme}
    /// {credentials}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushAuthentication>,
}

/// How an A2A notification authenticates itself to its receiver (A2A `AuthenticationInfo`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushAuthentication {
    /// The HTTP authentication scheme, e.g. `Bearer`.
    pub scheme: String,
    /// What follows the scheme in the `Authorization` header.
    #[serde(default)]
    pub credentials: String,
}

impl std::fmt::Debug for NotificationConfig {
    // The token authenticates the host to the receiver: never in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationConfig")
            .field("id", &self.id)
            .field("url", &self.url)
            .field(
                "token",
                &if self.token.is_empty() {
                    ""
                } else {
                    "<hidden>"
                },
            )
            .field("task_id", &self.task_id)
            .field("format", &self.format)
            .field("authentication", &self.authentication)
            .finish()
    }
}

impl std::fmt::Debug for PushAuthentication {
    // The credentials are a secret of the receiver's: never in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushAuthentication")
            .field("scheme", &self.scheme)
            .field("credentials", &"<hidden>")
            .finish()
    }
}

/// A config to store for a task, as a door asked for it: create (no `id`) or replace (the `id` of
/// one of the task's configs). AIP's `notification/set`.
#[derive(Clone, Debug, PartialEq)]
pub struct SetConfig {
    /// The config to replace; `None` creates one.
    pub id: Option<String>,
    /// The webhook to POST to, at most [`MAX_URL_LEN`] bytes.
    pub url: String,
    /// The token to send along, at most [`MAX_TOKEN_LEN`] bytes, no control characters.
    pub token: String,
    /// The task (`taskId`).
    pub task_id: String,
}

/// What `notification/start` adds to a start: which config, and on which states to notify
/// (empty: every state).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    /// The config to notify through (`notificationConfigId`).
    pub config_id: String,
    /// The states to notify on (`notifyOnStates`); empty: every state.
    #[serde(default)]
    pub states: Vec<TaskState>,
}

impl Subscription {
    /// Whether entering `state` is notified.
    pub fn wants(&self, state: TaskState) -> bool {
        self.states.is_empty() || self.states.contains(&state)
    }
}
