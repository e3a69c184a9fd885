//! `SendMessageRequest` (spec 3.2.1): the client's message becomes an AIP Leader command — a
//! `start` without `taskId`, a `continue` with one.

use super::error::A2aError;
use super::part::parse_parts;
use super::push::{PushConfig, parse_push_config};
use aiphost_model::Timestamp;
use aiphost_model::{CommandKind, LeaderCommand};
use aiphost_model::{MAX_TASK_ID_LEN, check_task_id};
use serde_json::{Map, Value, json};

/// The `commandParams` key under which the A2A message's own fields reach the partner
/// (`messageId`, `metadata`, `acceptedOutputModes`, `referenceTaskIds`, `extensions`).
pub const PARAMS_KEY: &str = "a2a";

/// A `SendMessage` / `SendStreamingMessage` request, read.
#[derive(Clone, Debug, PartialEq)]
pub struct SendMessage {
    /// The command: a start (the host makes up the task id) or a continue of `taskId`.
    pub command: LeaderCommand,
    /// Answer at once instead of when the task ends or needs input (`returnImmediately`).
    pub return_immediately: bool,
    /// How many history messages the answer carries (`historyLength`; `None`: all).
    pub history_length: Option<usize>,
    /// A push notification config to register for the task (`taskPushNotificationConfig`,
    /// v0.3's `pushNotificationConfig`).
    pub push_config: Option<PushConfig>,
}

/// Read the params of `SendMessage` (the request body in HTTP+JSON). A start without
/// `contextId` gets one made up here: A2A says the server assigns it.
pub fn parse_send(params: &Value) -> Result<SendMessage, A2aError> {
    let Value::Object(params) = params else {
        return Err(A2aError::invalid_params("params", "must be an object"));
    };
    let Some(Value::Object(message)) = params.get("message") else {
        return Err(A2aError::invalid_params(
            "message",
            "is required: the Message to send",
        ));
    };
    let id = match message.get("messageId") {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_TASK_ID_LEN => id.clone(),
        Some(Value::String(_)) => {
            return Err(A2aError::invalid_params(
                "message.messageId",
                format!("must be 1 to {MAX_TASK_ID_LEN} bytes long"),
            ));
        }
        _ => {
            return Err(A2aError::invalid_params(
                "message.messageId",
                "is required and must be a string",
            ));
        }
    };
    match message.get("role").and_then(Value::as_str) {
        Some("ROLE_USER" | "user") => {}
        other => {
            return Err(A2aError::new(
                super::error::A2aErrorKind::InvalidParams,
                json!({
                    "field": "message.role",
                    "reason": "a client's message has the role ROLE_USER",
                    "given": other,
                }),
            ));
        }
    }
    let data_items = parse_parts(message.get("parts"), "message.parts")?;
    let task_id = optional_id(message, "taskId", "message.taskId")?;
    let context_id = optional_id(message, "contextId", "message.contextId")?;
    let mut a2a = Map::new();
    a2a.insert("messageId".into(), json!(id));
    // Typed fields are checked as A2A types them: lists of strings (task ids, extension URIs).
    for (key, most) in [("referenceTaskIds", MAX_TASK_ID_LEN), ("extensions", 2048)] {
        match message.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items))
                if items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| !s.is_empty() && s.len() <= most)) => {}
            Some(_) => {
                return Err(A2aError::invalid_params(
                    &format!("message.{key}"),
                    format!("must be a list of strings (each 1 to {most} bytes long)"),
                ));
            }
        }
    }
    if let Some(metadata) = message.get("metadata").filter(|v| !v.is_null()) {
        if !metadata.is_object() {
            return Err(A2aError::invalid_params(
                "message.metadata",
                "must be an object",
            ));
        }
        // It is kept at `commandParams.a2a.metadata`, two levels below the value the engine's
        // limit counts from: said here with the client's own field path.
        aiphost_model::depth::check_depth_below(metadata, "message.metadata", 2)
            .map_err(|e| A2aError::invalid_params("message.metadata", e.to_string()))?;
    }
    for key in ["metadata", "referenceTaskIds", "extensions"] {
        if let Some(v) = message.get(key).filter(|v| !v.is_null()) {
            a2a.insert(key.into(), v.clone());
        }
    }
    let config = match params.get("configuration") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(c)) => c.clone(),
        Some(_) => {
            return Err(A2aError::invalid_params(
                "configuration",
                "must be an object",
            ));
        }
    };
    let field = |camel: &str, snake: &str| {
        config
            .get(camel)
            .or_else(|| config.get(snake))
            .filter(|v| !v.is_null())
    };
    if let Some(modes) = field("acceptedOutputModes", "accepted_output_modes") {
        if !modes
            .as_array()
            .is_some_and(|m| m.iter().all(Value::is_string))
        {
            return Err(A2aError::invalid_params(
                "configuration.acceptedOutputModes",
                "must be an array of media types",
            ));
        }
        a2a.insert("acceptedOutputModes".into(), modes.clone());
    }
    let history_length = match field("historyLength", "history_length") {
        None => None,
        Some(v) => Some(count(v, "configuration.historyLength")?),
    };
    let return_immediately = match field("returnImmediately", "return_immediately") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(A2aError::invalid_params(
                "configuration.returnImmediately",
                "must be true or false",
            ));
        }
    };
    let push_config = match field(
        "taskPushNotificationConfig",
        "task_push_notification_config",
    ) {
        Some(c) => Some(parse_push_config(
            c,
            "configuration.taskPushNotificationConfig",
        )?),
        None => field("pushNotificationConfig", "push_notification_config")
            .map(|c| parse_push_config(c, "configuration.pushNotificationConfig"))
            .transpose()?,
    };
    let (command, session_id) = match &task_id {
        None => (
            CommandKind::Start,
            Some(context_id.unwrap_or_else(|| format!("ctx-{}", uuid::Uuid::new_v4()))),
        ),
        Some(_) => (CommandKind::Continue, context_id),
    };
    Ok(SendMessage {
        command: LeaderCommand {
            id,
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command,
            params: Map::from_iter([(PARAMS_KEY.to_string(), Value::Object(a2a))]),
            data_items,
            task_id,
            session_id,
            group_id: None,
            mentions: None,
        },
        return_immediately,
        history_length,
        push_config,
    })
}

/// A non-negative count (`historyLength`, `pageSize`): a number, or a numeric string as
/// ProtoJSON allows.
pub fn count(value: &Value, field: &str) -> Result<usize, A2aError> {
    let n = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse::<i64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(A2aError::invalid_params(
            field,
            "must be a non-negative whole number",
        )),
    }
}

fn optional_id(
    obj: &Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<String>, A2aError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => check_task_id(s, field)
            .map(|id| Some(id.to_string()))
            .map_err(A2aError::from),
        Some(_) => Err(A2aError::invalid_params(field, "must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_without_task_starts_one_in_a_new_context() {
        let sent = parse_send(&json!({
            "message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}],
                        "metadata": {"k": 1}},
            "configuration": {"returnImmediately": true, "historyLength": 2}
        }))
        .unwrap();
        assert_eq!(sent.command.command, CommandKind::Start);
        assert!(
            sent.command
                .session_id
                .as_deref()
                .unwrap()
                .starts_with("ctx-")
        );
        assert_eq!(sent.command.params["a2a"]["messageId"], "m-1");
        assert_eq!(sent.command.params["a2a"]["metadata"]["k"], 1);
        assert!(sent.return_immediately);
        assert_eq!(sent.history_length, Some(2));
    }

    #[test]
    fn a_message_with_a_task_continues_it_in_its_own_context() {
        let sent = parse_send(&json!({"message": {
            "role": "ROLE_USER", "messageId": "m-2", "taskId": "t-1", "parts": [{"text": "more"}]
        }}))
        .unwrap();
        assert_eq!(sent.command.command, CommandKind::Continue);
        assert_eq!(sent.command.task_id.as_deref(), Some("t-1"));
        assert_eq!(sent.command.session_id, None);
    }

    #[test]
    fn malformed_messages_say_what_is_wrong() {
        for (params, field) in [
            (json!({}), "message"),
            (
                json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
                "message.messageId",
            ),
            (
                json!({"message": {"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": "x"}]}}),
                "message.role",
            ),
            (
                json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": []}}),
                "message.parts",
            ),
            (
                json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}], "taskId": 5}}),
                "message.taskId",
            ),
            (
                json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]},
                    "configuration": {"historyLength": -1}}),
                "configuration.historyLength",
            ),
        ] {
            let e = parse_send(&params).unwrap_err();
            assert_eq!(e.metadata["field"], field, "{params}");
        }
    }
}
