//! The notification style's objects (spec 6.3): configs and the parameters of the
//! `notification/*` methods. Their shapes are the same in both dialects.

use super::dialect::check_task_id;
use super::jsonrpc::RpcError;
use super::model::{JsonObject, TaskState};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;
/// The longest token accepted.
pub const MAX_TOKEN_LEN: usize = 4096;

/// A notification config: where to POST a task's changes, and the token to send along.
///
/// Made by AIP's `notification/set` or by A2A's push notification config operations; `format`
/// says which, and so what its notifications look like and how they authenticate.
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
    /// The protocol its notifications speak (AIP unless an A2A client made it).
    #[serde(default, skip_serializing_if = "NoticeFormat::is_aip")]
    pub format: NoticeFormat,
    /// A2A's `AuthenticationInfo`: each notification carries `Authorization: {scheme}
    /// {credentials}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushAuthentication>,
}

/// The protocol a config's notifications speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoticeFormat {
    /// AIP: the task as `get` shows it, in the dialect of the Leader that started it, with the
    /// config's token in `X-ACPS-AIP-Notification-Token`.
    #[default]
    Aip,
    /// A2A: a `StreamResponse` holding the task, with `Authorization` from the config's
    /// authentication and its token in `X-A2A-Notification-Token`.
    A2a,
    /// A2A v0.3 (a config made with v0.3's methods): the task itself in v0.3's shape, with
    /// the same headers.
    #[serde(rename = "a2a-v0.3")]
    A2aV03,
}

impl NoticeFormat {
    fn is_aip(&self) -> bool {
        *self == NoticeFormat::Aip
    }
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

/// `notification/set`: create (no `id`) or update (`id` of an existing config).
#[derive(Clone, Debug, PartialEq)]
pub struct SetParams {
    /// The config to update; `None` creates one.
    pub id: Option<String>,
    /// The webhook to POST to, at most [`MAX_URL_LEN`] bytes.
    pub url: String,
    /// The token to send along, at most [`MAX_TOKEN_LEN`] bytes, no control characters.
    pub token: String,
    /// The task (`taskId`).
    pub task_id: String,
}

/// `notification/get` and `notification/delete`: one config, or (no id) all of a task's.
#[derive(Clone, Debug, PartialEq)]
pub struct IdParams {
    /// The task (`taskId`).
    pub task_id: String,
    /// The config (`notificationConfigId`); `None`: all of the task's.
    pub config_id: Option<String>,
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

fn object(params: &Value) -> Result<&JsonObject, RpcError> {
    params
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("params", "must be an object"))
}

fn string<'a>(obj: &'a JsonObject, key: &str, required: bool) -> Result<Option<&'a str>, RpcError> {
    let field = format!("params.{key}");
    match obj.get(key) {
        None | Some(Value::Null) if required => {
            Err(RpcError::invalid_params(&field, "is required"))
        }
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::invalid_params(&field, "must be a string")),
    }
}

/// Read `notification/set` params. The URL's form is checked here; where it points is the
/// notifier's policy.
pub fn parse_set(params: &Value) -> Result<SetParams, RpcError> {
    let obj = object(params)?;
    let task_id = check_task_id(
        string(obj, "taskId", true)?.unwrap_or_default(),
        "params.taskId",
    )?;
    let url = string(obj, "url", true)?.unwrap_or_default();
    if url.len() > MAX_URL_LEN {
        return Err(RpcError::invalid_params(
            "params.url",
            format!(
                "is {} bytes long; at most {MAX_URL_LEN} are allowed",
                url.len()
            ),
        ));
    }
    let token = string(obj, "token", true)?.unwrap_or_default();
    if token.len() > MAX_TOKEN_LEN || token.chars().any(|c| c.is_control()) {
        return Err(RpcError::invalid_params(
            "params.token",
            format!(
                "must be at most {MAX_TOKEN_LEN} bytes with no control characters (it is sent as a header)"
            ),
        ));
    }
    Ok(SetParams {
        id: string(obj, "id", false)?.map(str::to_string),
        url: url.to_string(),
        token: token.to_string(),
        task_id: task_id.to_string(),
    })
}

/// Read `notification/get` or `notification/delete` params.
pub fn parse_id(params: &Value) -> Result<IdParams, RpcError> {
    let obj = object(params)?;
    let task_id = check_task_id(
        string(obj, "taskId", true)?.unwrap_or_default(),
        "params.taskId",
    )?;
    Ok(IdParams {
        task_id: task_id.to_string(),
        config_id: string(obj, "notificationConfigId", false)?.map(str::to_string),
    })
}

/// Read the `NotificationStartParams` of a start's `commandParams`.
pub fn parse_subscription(params: &JsonObject) -> Result<Subscription, RpcError> {
    let config_id = match params.get("notificationConfigId") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => {
            return Err(RpcError::invalid_params(
                "commandParams.notificationConfigId",
                "notification/start needs the id of a config made with notification/set",
            ));
        }
    };
    let states = match params.get("notifyOnStates") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().and_then(TaskState::parse))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                RpcError::invalid_params(
                    "commandParams.notifyOnStates",
                    "must list task states, e.g. [\"working\", \"awaiting-completion\"]",
                )
            })?,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "commandParams.notifyOnStates",
                "must be a list of task states or null",
            ));
        }
    };
    Ok(Subscription { config_id, states })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_params_from_the_spec_example() {
        let p = parse_set(&json!({"url": "https://example.com/notifications", "token": "your_token", "taskId": "task-5678"}))
            .unwrap();
        assert_eq!(p.id, None);
        assert_eq!(p.task_id, "task-5678");
        let p = parse_set(&json!({"id": "n-1", "url": "http://x", "token": "t", "taskId": "t1"}))
            .unwrap();
        assert_eq!(p.id.as_deref(), Some("n-1"));
        for (params, field) in [
            (json!({"token": "t", "taskId": "t"}), "params.url"),
            (json!({"url": "http://x", "taskId": "t"}), "params.token"),
            (json!({"url": "http://x", "token": "t"}), "params.taskId"),
            (
                json!({"url": "http://x", "token": "a\nb", "taskId": "t"}),
                "params.token",
            ),
            (
                json!({"url": "x".repeat(3000), "token": "t", "taskId": "t"}),
                "params.url",
            ),
            (
                json!({"url": "http://x", "token": "t", "taskId": "t", "id": 5}),
                "params.id",
            ),
        ] {
            assert_eq!(
                parse_set(&params).unwrap_err().data["field"],
                field,
                "{params}"
            );
        }
    }

    #[test]
    fn id_params_and_subscriptions() {
        let p = parse_id(&json!({"taskId": "t", "notificationConfigId": null})).unwrap();
        assert_eq!(p.config_id, None);
        assert!(parse_id(&json!({})).is_err());
        let s = parse_subscription(
            json!({"notificationConfigId": "n", "notifyOnStates": ["Working", "awaiting-completion"]})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert!(s.wants(TaskState::Working) && s.wants(TaskState::AwaitingCompletion));
        assert!(!s.wants(TaskState::Completed));
        let all = parse_subscription(
            json!({"notificationConfigId": "n", "notifyOnStates": []})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert!(all.wants(TaskState::Completed));
        let bad = parse_subscription(
            json!({"notificationConfigId": "n", "notifyOnStates": ["sleeping"]})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            bad.unwrap_err().data["field"],
            "commandParams.notifyOnStates"
        );
        assert!(parse_subscription(json!({}).as_object().unwrap()).is_err());
    }
}
