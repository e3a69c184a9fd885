//! The parameters of the notification style's `notification/*` methods (spec 6.3), read into
//! the model's configs and subscriptions. Their shapes are the same in both dialects.

use crate::jsonrpc::RpcError;
use aiphost_model::notification::{MAX_TOKEN_LEN, MAX_URL_LEN, SetConfig, Subscription};
use aiphost_model::{JsonObject, TaskState, check_task_id};
use serde_json::Value;

/// `notification/get` and `notification/delete`: one config, or (no id) all of a task's.
#[derive(Clone, Debug, PartialEq)]
pub struct IdParams {
    /// The task (`taskId`).
    pub task_id: String,
    /// The config (`notificationConfigId`); `None`: all of the task's.
    pub config_id: Option<String>,
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
pub fn parse_set(params: &Value) -> Result<SetConfig, RpcError> {
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
    Ok(SetConfig {
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
