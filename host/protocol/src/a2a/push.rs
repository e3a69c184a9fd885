//! Push notification configs (spec 3.1.7–3.1.10, 4.3): A2A's `TaskPushNotificationConfig` read
//! into the host's [`NotificationConfig`] and rendered back, and the payload a webhook gets.
//!
//! v1.0 sends the config flat (`{taskId, id, url, token, authentication: {scheme,
//! credentials}}`); v0.3 nests it (`{taskId, pushNotificationConfig: {id, url, token,
//! authentication: {schemes: [..], credentials}}}`). Both are read; each is rendered in its own
//! version's shape.

use super::error::A2aError;
use super::task::{TaskView, render_task};
use crate::notice_format::NoticeFormat;
use aiphost_model::TaskNotice;
use aiphost_model::notification::{
    MAX_TOKEN_LEN, MAX_URL_LEN, NotificationConfig, PushAuthentication,
};
use aiphost_model::{MAX_TASK_ID_LEN, check_task_id};
use serde_json::{Map, Value, json};

/// The longest authentication scheme accepted (`Bearer`, `Basic`, ...).
pub const MAX_SCHEME_LEN: usize = 64;

/// A push notification config as a client sent it, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct PushConfig {
    /// The config's id, if the client chose one (the host makes one up otherwise).
    pub id: Option<String>,
    /// The task it is for, if the request body names it (HTTP+JSON takes it from the path).
    pub task_id: Option<String>,
    /// The webhook.
    pub url: String,
    /// Sent as `X-A2A-Notification-Token` (empty: not sent).
    pub token: String,
    /// Sent as `Authorization: {scheme} {credentials}`.
    pub authentication: Option<PushAuthentication>,
}

impl PushConfig {
    /// The config to store for task `task_id`, with `id` (the client's, or one made up).
    pub fn into_config(self, task_id: &str) -> NotificationConfig {
        NotificationConfig {
            id: self
                .id
                .unwrap_or_else(|| format!("push-{}", uuid::Uuid::new_v4())),
            url: self.url,
            token: self.token,
            task_id: task_id.to_string(),
            format: NoticeFormat::A2a.form(),
            authentication: self.authentication,
        }
    }
}

/// Read a `TaskPushNotificationConfig` (either version's shape, camelCase or snake_case) at
/// `path` (for error messages: `params`, `configuration.taskPushNotificationConfig`).
pub fn parse_push_config(value: &Value, path: &str) -> Result<PushConfig, A2aError> {
    let Value::Object(outer) = value else {
        return Err(A2aError::invalid_params(path, "must be an object"));
    };
    let task_id = id_field(outer, &["taskId", "task_id"], &format!("{path}.taskId"))?;
    // v0.3 nests the config itself.
    let (config, path) = match field(
        outer,
        &["pushNotificationConfig", "push_notification_config"],
    ) {
        Some(Value::Object(inner)) => (inner, format!("{path}.pushNotificationConfig")),
        Some(_) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.pushNotificationConfig"),
                "must be an object",
            ));
        }
        None => (outer, path.to_string()),
    };
    let id = id_field(config, &["id"], &format!("{path}.id"))?;
    let url = match field(config, &["url"]) {
        Some(Value::String(url)) if !url.is_empty() && url.len() <= MAX_URL_LEN => url.clone(),
        Some(Value::String(url)) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.url"),
                format!(
                    "is {} bytes long; 1 to {MAX_URL_LEN} are allowed",
                    url.len()
                ),
            ));
        }
        _ => {
            return Err(A2aError::invalid_params(
                &format!("{path}.url"),
                "is required: the webhook to POST the task's updates to",
            ));
        }
    };
    let token = match field(config, &["token"]) {
        None => String::new(),
        Some(Value::String(t)) => header_value(t, &format!("{path}.token"), MAX_TOKEN_LEN)?,
        Some(_) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.token"),
                "must be a string",
            ));
        }
    };
    let authentication = match field(config, &["authentication"]) {
        None => None,
        Some(Value::Object(auth)) => parse_authentication(auth, &format!("{path}.authentication"))?,
        Some(_) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.authentication"),
                "must be an object: {\"scheme\": \"Bearer\", \"credentials\": \"...\"}",
            ));
        }
    };
    Ok(PushConfig {
        id,
        task_id,
        url,
        token,
        authentication,
    })
}

/// `AuthenticationInfo`: v1.0's `scheme`, or the first of v0.3's `schemes`. No scheme at all
/// (v0.3's `schemes: []`): no `Authorization` header.
fn parse_authentication(
    auth: &Map<String, Value>,
    path: &str,
) -> Result<Option<PushAuthentication>, A2aError> {
    let scheme = match (field(auth, &["scheme"]), field(auth, &["schemes"])) {
        (Some(Value::String(s)), _) => Some(s.clone()),
        (None, Some(Value::Array(list))) => match list.first() {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(A2aError::invalid_params(
                    &format!("{path}.schemes"),
                    "must list scheme names",
                ));
            }
        },
        (None, None) => None,
        _ => {
            return Err(A2aError::invalid_params(
                &format!("{path}.scheme"),
                "must be a string such as \"Bearer\"",
            ));
        }
    };
    let Some(scheme) = scheme else {
        return Ok(None);
    };
    // An HTTP token (RFC 9110 5.6.2): it is the first word of a header value.
    let token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if scheme.is_empty() || scheme.len() > MAX_SCHEME_LEN || !scheme.chars().all(token_char) {
        return Err(A2aError::invalid_params(
            &format!("{path}.scheme"),
            format!(
                "must be an HTTP authentication scheme (1 to {MAX_SCHEME_LEN} letters, digits or !#$%&'*+-.^_`|~), e.g. \"Bearer\""
            ),
        ));
    }
    let credentials = match field(auth, &["credentials"]) {
        None => String::new(),
        Some(Value::String(c)) => header_value(c, &format!("{path}.credentials"), MAX_TOKEN_LEN)?,
        Some(_) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.credentials"),
                "must be a string",
            ));
        }
    };
    Ok(Some(PushAuthentication {
        scheme,
        credentials,
    }))
}

/// Which task, and which of its configs, a Get, List or Delete names: v1.0 `{taskId, id}`,
/// v0.3 (`v03`) `{id, pushNotificationConfigId}`, where `id` is the task's. Either casing.
pub fn parse_config_ref(params: &Value, v03: bool) -> Result<(String, Option<String>), A2aError> {
    let Value::Object(params) = params else {
        return Err(A2aError::invalid_params("params", "must be an object"));
    };
    let (task_names, config_names): (&[&str], &[&str]) = if v03 {
        (
            &["id"],
            &["pushNotificationConfigId", "push_notification_config_id"],
        )
    } else {
        (&["taskId", "task_id"], &["id"])
    };
    let task_field = format!("params.{}", task_names[0]);
    let task = id_field(params, task_names, &task_field)?.ok_or_else(|| {
        A2aError::invalid_params(&task_field, "is required: the task the config is for")
    })?;
    let config = id_field(params, config_names, &format!("params.{}", config_names[0]))?;
    Ok((task, config))
}

/// A stored config in v1.0's shape.
pub fn render_push_config(config: &NotificationConfig) -> Value {
    let mut out = json!({"id": config.id, "taskId": config.task_id, "url": config.url});
    if !config.token.is_empty() {
        out["token"] = json!(config.token);
    }
    if let Some(auth) = &config.authentication {
        out["authentication"] = json!({"scheme": auth.scheme, "credentials": auth.credentials});
    }
    out
}

/// A stored config in v0.3's shape.
pub fn render_push_config_v03(config: &NotificationConfig) -> Value {
    let mut inner = json!({"id": config.id, "url": config.url});
    if !config.token.is_empty() {
        inner["token"] = json!(config.token);
    }
    if let Some(auth) = &config.authentication {
        inner["authentication"] =
            json!({"schemes": [auth.scheme], "credentials": auth.credentials});
    }
    json!({"taskId": config.task_id, "pushNotificationConfig": inner})
}

/// What a webhook gets for a change of a task (spec 4.3.3): a `StreamResponse` holding the task
/// as it now is, artifacts included (no history), so that every notification stands alone.
pub fn render_notice(notice: &TaskNotice) -> Value {
    json!({"task": render_task(&notice.task, TaskView {
        history_length: Some(0),
        artifacts: true,
    })})
}

fn field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| obj.get(*n))
        .filter(|v| !v.is_null())
}

/// An optional id (1 to [`MAX_TASK_ID_LEN`] bytes, no control characters); an empty string is
/// no id.
fn id_field(
    obj: &Map<String, Value>,
    names: &[&str],
    path: &str,
) -> Result<Option<String>, A2aError> {
    match field(obj, names) {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => check_task_id(s, path)
            .map(|id| Some(id.to_string()))
            .map_err(A2aError::from),
        Some(_) => Err(A2aError::invalid_params(
            path,
            format!("must be a string of 1 to {MAX_TASK_ID_LEN} bytes"),
        )),
    }
}

/// A string sent as (part of) a header value: bounded, no control characters.
fn header_value(value: &str, path: &str, max: usize) -> Result<String, A2aError> {
    if value.len() > max || value.chars().any(char::is_control) {
        return Err(A2aError::invalid_params(
            path,
            format!(
                "must be at most {max} bytes with no control characters (it is sent as a header)"
            ),
        ));
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_shapes_read_the_same() {
        let v10 = parse_push_config(
            &json!({"task_id": "t-1", "id": "p-1", "url": "https://x.example/hook",
                    "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "s3"}}),
            "params",
        )
        .unwrap();
        let v03 = parse_push_config(
            &json!({"taskId": "t-1", "pushNotificationConfig": {"id": "p-1",
                    "url": "https://x.example/hook", "token": "tok",
                    "authentication": {"schemes": ["Bearer"], "credentials": "s3"}}}),
            "params",
        )
        .unwrap();
        assert_eq!(v10, v03);
        assert_eq!(v10.task_id.as_deref(), Some("t-1"));
        let config = v10.into_config("t-1");
        assert_eq!(NoticeFormat::of(config.format.as_ref()), NoticeFormat::A2a);
        assert_eq!(
            render_push_config(&config),
            json!({"id": "p-1", "taskId": "t-1", "url": "https://x.example/hook", "token": "tok",
                   "authentication": {"scheme": "Bearer", "credentials": "s3"}})
        );
        assert_eq!(
            render_push_config_v03(&config)["pushNotificationConfig"]["authentication"]["schemes"],
            json!(["Bearer"])
        );
        let bare = parse_push_config(&json!({"url": "http://h/"}), "p").unwrap();
        assert_eq!(
            (&bare.id, &bare.authentication, bare.token.as_str()),
            (&None, &None, "")
        );
        assert!(
            bare.into_config("t").id.starts_with("push-"),
            "an id is made up"
        );
    }

    #[test]
    fn malformed_configs_name_the_field() {
        for (value, field) in [
            (json!("x"), "params"),
            (json!({}), "params.url"),
            (json!({"url": ""}), "params.url"),
            (json!({"url": "http://h", "id": 4}), "params.id"),
            (json!({"url": "http://h", "token": "a\nb"}), "params.token"),
            (
                json!({"url": "http://h", "authentication": {"scheme": "Bear er"}}),
                "params.authentication.scheme",
            ),
            (
                json!({"url": "http://h", "authentication": {"scheme": "Bearer", "credentials": "a\r\nX: y"}}),
                "params.authentication.credentials",
            ),
            (
                json!({"pushNotificationConfig": {"token": "t"}}),
                "params.pushNotificationConfig.url",
            ),
        ] {
            let e = parse_push_config(&value, "params").unwrap_err();
            assert_eq!(e.metadata["field"], field, "{value}");
        }
    }

    #[test]
    fn config_refs_of_both_versions() {
        assert_eq!(
            parse_config_ref(&json!({"task_id": "t", "id": "p"}), false).unwrap(),
            ("t".into(), Some("p".into()))
        );
        assert_eq!(
            parse_config_ref(&json!({"id": "t", "pushNotificationConfigId": "p"}), true).unwrap(),
            ("t".into(), Some("p".into()))
        );
        assert_eq!(
            parse_config_ref(&json!({"id": "t"}), true).unwrap(),
            ("t".into(), None)
        );
        assert_eq!(
            parse_config_ref(&json!({"id": "p"}), false)
                .unwrap_err()
                .metadata["field"],
            "params.taskId"
        );
    }
}
