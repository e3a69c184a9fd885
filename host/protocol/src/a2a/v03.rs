//! A2A v0.3 over the JSON-RPC binding, translated to and from v1.0. No I/O here.
//!
//! Much of the A2A ecosystem still speaks v0.3, whose JSON-RPC methods have slashed names
//! (`message/send`, `tasks/get`, ...) and whose objects differ from v1.0's in shape, not in
//! meaning. Rather than a second set of operations, a v0.3 request is *upgraded* to the v1.0
//! request that means the same ([`upgrade_request`]), runs as that, and its answer is
//! *downgraded* to v0.3's shapes ([`Downgrade`]). So both versions share every operation, and
//! what v0.3 cannot say is said as close as it can be.
//!
//! | v0.3 | v1.0 |
//! | --- | --- |
//! | `message/send`, `message/stream` | `SendMessage`, `SendStreamingMessage` |
//! | `tasks/get`, `tasks/cancel`, `tasks/resubscribe` | `GetTask`, `CancelTask`, `SubscribeToTask` |
//! | `tasks/pushNotificationConfig/set` | `CreateTaskPushNotificationConfig` |
//! | `tasks/pushNotificationConfig/get` (with a config id; without one, the task's first config) | `GetTaskPushNotificationConfig` (`ListTaskPushNotificationConfigs`) |
//! | `tasks/pushNotificationConfig/list`, `…/delete` | `ListTaskPushNotificationConfigs`, `DeleteTaskPushNotificationConfig` |
//! | `agent/getAuthenticatedExtendedCard` | `GetExtendedAgentCard` |
//!
//! The objects:
//!
//! - parts carry a `kind` (`text`, `file` with `file: {bytes | uri, mimeType, name}`, `data`)
//!   where v1.0's hold one of `text`, `raw`, `url`, `data` with `mediaType` and `filename`; a
//!   v0.3 `data` part holds an object only, so other values travel as `{"value": …}` with
//!   `metadata.data_part_compat` (the convention of the official SDK's v0.3 layer);
//! - roles are `user` / `agent` (`ROLE_USER` / `ROLE_AGENT`), states lowercase kebab
//!   (`input-required` for `TASK_STATE_INPUT_REQUIRED`), and tasks and messages say their
//!   `kind`;
//! - `message/send` answers with the Task (or Message) itself, not `{"task": …}`; stream events
//!   are the Task, Message, `status-update` (with `final`) or `artifact-update` itself;
//! - `configuration.blocking: false` is v1.0's `returnImmediately: true`;
//! - push configs nest (`{taskId, pushNotificationConfig: {…}}`, see [`super::push`]);
//! - errors keep their codes (v0.3 and v1.0 share them; the few v1.0 adds lie in JSON-RPC's
//!   server-defined range, which v0.3 leaves to servers) and carry their metadata as `data`, as
//!   v0.3 has no `ErrorInfo`.

use super::error::{A2aError, A2aErrorKind};
use super::push::{parse_config_ref, parse_push_config, render_push_config_v03};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The version of this door, as v0.3 clients say it (`A2A-Version`, the card's
/// `protocolVersion`): `Major.Minor`, as v1.0 (3.6) asks.
pub const VERSION: &str = "0.3";

/// The v0.3 JSON-RPC methods served.
pub const METHODS: &[&str] = &[
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

/// The metadata key of the official SDK's v0.3 layer marking a `data` part that wraps a value
/// which is not an object as `{"value": …}`.
pub const DATA_PART_COMPAT: &str = "data_part_compat";

/// Whether `method` is a v0.3 name: every v0.3 method has a `/`, no v1.0 method does.
pub fn is_v03_method(method: &str) -> bool {
    method.contains('/')
}

/// Whether a v0.3 request may say `A2A-Version: asked`: nothing (v0.3 clients predate the
/// header, and v1.0 3.6.2 reads its absence as 0.3), or 0.3 with or without a patch number.
pub fn accepts_version(asked: &str) -> bool {
    let asked = asked.trim();
    if asked.is_empty() {
        return true;
    }
    let mut numbers = asked.split('.');
    numbers.next() == Some("0")
        && numbers.next() == Some("3")
        && numbers.all(|patch| !patch.is_empty() && patch.chars().all(|c| c.is_ascii_digit()))
}

/// A v0.3 request as the v1.0 request that means the same.
#[derive(Clone, Debug, PartialEq)]
pub struct Upgraded {
    /// The v1.0 method.
    pub method: &'static str,
    /// Its params.
    pub params: Value,
    /// How its answer goes back to v0.3.
    pub downgrade: Downgrade,
}

/// How the answer of an upgraded request becomes v0.3's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Downgrade {
    /// A `Task` (`tasks/get`, `tasks/cancel`).
    Task,
    /// A `SendMessageResponse` (`{task}` or `{message}`): the Task or Message itself.
    Sent,
    /// A stream of `StreamResponse`s. `ends_when_interrupted`: the stream also ends when the
    /// task needs input (`message/stream`; `tasks/resubscribe` follows a task to its end), so a
    /// status update saying so is `final`.
    Stream {
        /// Whether an input-required (or auth-required) status ends the stream.
        ends_when_interrupted: bool,
    },
    /// A `TaskPushNotificationConfig`.
    PushConfig,
    /// A `ListTaskPushNotificationConfigsResponse`, of which v0.3's `get` without a config id
    /// wants the first config of task `task_id`.
    FirstPushConfig {
        /// The task, for the error when it has no config.
        task_id: String,
    },
    /// A `ListTaskPushNotificationConfigsResponse`: v0.3 wants the bare array of configs.
    PushConfigs,
    /// Nothing to say: `null` (`tasks/pushNotificationConfig/delete`).
    Null,
    /// Passed on as it is (the agent card, which is served with v0.3's fields as well).
    AsIs,
}

/// The v1.0 request of the v0.3 request `method` with `params`; InvalidParams naming the v0.3
/// field when `params` are not v0.3's shape, MethodNotFound for a method v0.3 does not have.
pub fn upgrade_request(method: &str, params: &Value) -> Result<Upgraded, A2aError> {
    let upgraded = |method: &'static str, params: Value, downgrade: Downgrade| Upgraded {
        method,
        params,
        downgrade,
    };
    Ok(match method {
        "message/send" => upgraded("SendMessage", upgrade_send(params)?, Downgrade::Sent),
        "message/stream" => upgraded(
            "SendStreamingMessage",
            upgrade_send(params)?,
            Downgrade::Stream {
                ends_when_interrupted: true,
            },
        ),
        // `TaskQueryParams` and `TaskIdParams` have v1.0's field names (`id`, `historyLength`);
        // the v1.0 operations check them.
        "tasks/get" => upgraded("GetTask", params.clone(), Downgrade::Task),
        "tasks/cancel" => upgraded("CancelTask", params.clone(), Downgrade::Task),
        "tasks/resubscribe" => upgraded(
            "SubscribeToTask",
            params.clone(),
            Downgrade::Stream {
                ends_when_interrupted: false,
            },
        ),
        "tasks/pushNotificationConfig/set" => upgraded(
            "CreateTaskPushNotificationConfig",
            upgrade_push_config(params)?,
            Downgrade::PushConfig,
        ),
        "tasks/pushNotificationConfig/get" => match parse_config_ref(params, true)? {
            (task, Some(config)) => upgraded(
                "GetTaskPushNotificationConfig",
                json!({"taskId": task, "id": config}),
                Downgrade::PushConfig,
            ),
            (task, None) => upgraded(
                "ListTaskPushNotificationConfigs",
                json!({"taskId": task}),
                Downgrade::FirstPushConfig { task_id: task },
            ),
        },
        "tasks/pushNotificationConfig/list" => {
            let (task, _) = parse_config_ref(params, true)?;
            upgraded(
                "ListTaskPushNotificationConfigs",
                json!({"taskId": task}),
                Downgrade::PushConfigs,
            )
        }
        "tasks/pushNotificationConfig/delete" => match parse_config_ref(params, true)? {
            (task, Some(config)) => upgraded(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": task, "id": config}),
                Downgrade::Null,
            ),
            // v0.3 deletes one config at a time; v1.0's Delete names one too.
            (_, None) => {
                return Err(A2aError::invalid_params(
                    "params.pushNotificationConfigId",
                    "is required: the id of the config to delete",
                ));
            }
        },
        "agent/getAuthenticatedExtendedCard" => {
            upgraded("GetExtendedAgentCard", json!({}), Downgrade::AsIs)
        }
        other => {
            return Err(A2aError::new(
                A2aErrorKind::MethodNotFound,
                json!({"method": other, "supported": METHODS}),
            ));
        }
    })
}

/// `MessageSendParams` as `SendMessageRequest`: the message and its parts in v1.0's shapes,
/// `configuration.blocking` as `returnImmediately`. The rest (`configuration.historyLength`,
/// `acceptedOutputModes` and `pushNotificationConfig`, `metadata`) v1.0 reads as it is.
fn upgrade_send(params: &Value) -> Result<Value, A2aError> {
    let Value::Object(params) = params else {
        return Err(A2aError::invalid_params(
            "params",
            "must be an object: {\"message\": {...}, \"configuration\": {...}}",
        ));
    };
    let mut out = params.clone();
    // A message or configuration that is missing or not an object is left for v1.0's reading
    // to report.
    if let Some(Value::Object(message)) = params.get("message") {
        out.insert("message".into(), upgrade_message(message)?);
    }
    if let Some(Value::Object(config)) = params.get("configuration") {
        let mut config = config.clone();
        match config.remove("blocking") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(blocking)) => {
                config.insert("returnImmediately".into(), Value::Bool(!blocking));
            }
            Some(_) => {
                return Err(A2aError::invalid_params(
                    "configuration.blocking",
                    "must be true (answer when the task ends or needs input) or false (answer at once)",
                ));
            }
        }
        out.insert("configuration".into(), Value::Object(config));
    }
    Ok(Value::Object(out))
}

/// A client's v0.3 `Message` in v1.0's shape.
fn upgrade_message(message: &Map<String, Value>) -> Result<Value, A2aError> {
    let mut out = message.clone();
    match out.remove("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind == "message" => {}
        Some(other) => {
            return Err(A2aError::new(
                A2aErrorKind::InvalidParams,
                json!({"field": "message.kind", "reason": "must be \"message\"", "given": other}),
            ));
        }
    }
    match message.get("role") {
        Some(Value::String(role)) if role == "user" || role == "ROLE_USER" => {
            out.insert("role".into(), json!("ROLE_USER"));
        }
        other => {
            return Err(A2aError::new(
                A2aErrorKind::InvalidParams,
                json!({
                    "field": "message.role",
                    "reason": "a client's message has the role \"user\"",
                    "given": other,
                }),
            ));
        }
    }
    if let Some(Value::Array(parts)) = message.get("parts") {
        let parts = parts
            .iter()
            .enumerate()
            .map(|(i, part)| upgrade_part(part, &format!("message.parts[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("parts".into(), Value::Array(parts));
    }
    Ok(Value::Object(out))
}

/// A v0.3 `Part` (at `path`, for errors) in v1.0's shape. A part without `kind` is taken as
/// v1.0's already, unless it holds a v0.3 `file`.
fn upgrade_part(part: &Value, path: &str) -> Result<Value, A2aError> {
    let Value::Object(part) = part else {
        return Err(A2aError::invalid_params(path, "a part must be an object"));
    };
    let kind = match part.get("kind") {
        None | Some(Value::Null) if part.contains_key("file") => "file",
        None | Some(Value::Null) => return Ok(Value::Object(part.clone())),
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => "",
    };
    let mut out = Map::new();
    if let Some(metadata) = part.get("metadata").filter(|m| !m.is_null()) {
        out.insert("metadata".into(), metadata.clone());
    }
    match kind {
        "text" => {
            out.insert(
                "text".into(),
                part.get("text").cloned().unwrap_or(Value::Null),
            );
        }
        "data" => {
            let data = part.get("data").cloned().unwrap_or(Value::Null);
            // The official SDK's wrapping of a value that is not an object: unwrapped, as
            // v1.0 carries any value.
            let wrapped = out
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove(DATA_PART_COMPAT))
                == Some(Value::Bool(true));
            let data = match data {
                Value::Object(mut inner) if wrapped && inner.contains_key("value") => {
                    inner.remove("value").unwrap_or(Value::Null)
                }
                other => other,
            };
            if out
                .get("metadata")
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
            {
                out.remove("metadata");
            }
            out.insert("data".into(), data);
        }
        "file" => upgrade_file(part.get("file"), &format!("{path}.file"), &mut out)?,
        _ => {
            return Err(A2aError::new(
                A2aErrorKind::InvalidParams,
                json!({
                    "field": format!("{path}.kind"),
                    "reason": "must be \"text\", \"file\" or \"data\"",
                    "given": part.get("kind"),
                }),
            ));
        }
    }
    Ok(Value::Object(out))
}

/// A v0.3 `FileWithBytes` or `FileWithUri` (at `path`) into the v1.0 part `out`.
fn upgrade_file(
    file: Option<&Value>,
    path: &str,
    out: &mut Map<String, Value>,
) -> Result<(), A2aError> {
    let Some(Value::Object(file)) = file else {
        return Err(A2aError::invalid_params(
            path,
            "is required: {\"bytes\": base64} or {\"uri\": ...}, with an optional mimeType and name",
        ));
    };
    let text = |key: &str| -> Result<Option<&String>, A2aError> {
        match file.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(A2aError::invalid_params(
                &format!("{path}.{key}"),
                "must be a string",
            )),
        }
    };
    match (text("bytes")?, text("uri")?) {
        (Some(bytes), None) => {
            // Checked here so that the error names v0.3's field, not v1.0's `raw`.
            if let Err(e) = base64::engine::general_purpose::STANDARD.decode(bytes) {
                return Err(A2aError::invalid_params(
                    &format!("{path}.bytes"),
                    format!("is not valid base64: {e}"),
                ));
            }
            out.insert("raw".into(), json!(bytes));
        }
        (None, Some(uri)) => {
            out.insert("url".into(), json!(uri));
        }
        (bytes, _) => {
            return Err(A2aError::invalid_params(
                path,
                format!(
                    "a file holds exactly one of bytes and uri; this one holds {}",
                    if bytes.is_some() { "both" } else { "neither" }
                ),
            ));
        }
    }
    if let Some(mime_type) = text("mimeType")? {
        out.insert("mediaType".into(), json!(mime_type));
    }
    if let Some(name) = text("name")? {
        out.insert("filename".into(), json!(name));
    }
    Ok(())
}

/// v0.3's `TaskPushNotificationConfig` as v1.0's (flat, `authentication.scheme`). Read with
/// [`parse_push_config`], so its errors name v0.3's fields (`params.pushNotificationConfig.url`).
fn upgrade_push_config(params: &Value) -> Result<Value, A2aError> {
    let config = parse_push_config(params, "params")?;
    let Some(task_id) = &config.task_id else {
        return Err(A2aError::invalid_params(
            "params.taskId",
            "is required: the task the config is for",
        ));
    };
    let mut out = Map::new();
    out.insert("taskId".into(), json!(task_id));
    if let Some(id) = &config.id {
        out.insert("id".into(), json!(id));
    }
    out.insert("url".into(), json!(config.url));
    if !config.token.is_empty() {
        out.insert("token".into(), json!(config.token));
    }
    if let Some(auth) = &config.authentication {
        out.insert(
            "authentication".into(),
            json!({"scheme": auth.scheme, "credentials": auth.credentials}),
        );
    }
    Ok(Value::Object(out))
}

impl Downgrade {
    /// The v0.3 result of the v1.0 `result`. An error only where v0.3 asks for something v1.0
    /// answered with nothing (the first config of a task that has none).
    pub fn downgrade_result(&self, result: Value) -> Result<Value, A2aError> {
        Ok(match self {
            Downgrade::Task => task(result),
            Downgrade::Sent => match result {
                Value::Object(mut sent) => match (sent.remove("task"), sent.remove("message")) {
                    (Some(t), _) => task(t),
                    (None, Some(m)) => message(m),
                    (None, None) => Value::Object(sent),
                },
                other => other,
            },
            // A stream's items are downgraded one by one (`downgrade_stream_item`).
            Downgrade::Stream { .. } | Downgrade::AsIs => result,
            Downgrade::PushConfig => push_config(&result)?,
            Downgrade::FirstPushConfig { task_id } => match push_configs(&result).first() {
                Some(first) => push_config(first)?,
                None => {
                    return Err(A2aError::new(
                        A2aErrorKind::TaskNotFound,
                        json!({
                            "taskId": task_id,
                            "reason": "the task has no push notification config",
                        }),
                    ));
                }
            },
            Downgrade::PushConfigs => Value::Array(
                push_configs(&result)
                    .iter()
                    .map(push_config)
                    .collect::<Result<_, _>>()?,
            ),
            Downgrade::Null => Value::Null,
        })
    }

    /// The v0.3 event (`SendStreamingMessageSuccessResponse.result`) of the v1.0
    /// `StreamResponse` `item`.
    pub fn downgrade_stream_item(&self, item: Value) -> Value {
        let ends_when_interrupted = matches!(
            self,
            Downgrade::Stream {
                ends_when_interrupted: true
            }
        );
        let Value::Object(mut item) = item else {
            return item;
        };
        if let Some(t) = item.remove("task") {
            return task(t);
        }
        if let Some(m) = item.remove("message") {
            return message(m);
        }
        if let Some(Value::Object(mut update)) = item.remove("statusUpdate") {
            let state = update.remove("status").map(status).unwrap_or(Value::Null);
            // v0.3's `final`: whether this is the stream's last event, which is when the
            // task ends or, on a message's stream, when it waits for the client.
            let ends = match state["state"].as_str().unwrap_or_default() {
                "completed" | "canceled" | "failed" | "rejected" => true,
                "input-required" | "auth-required" => ends_when_interrupted,
                _ => false,
            };
            update.insert("kind".into(), json!("status-update"));
            update.insert("status".into(), state);
            update.insert("final".into(), json!(ends));
            return Value::Object(update);
        }
        if let Some(Value::Object(mut update)) = item.remove("artifactUpdate") {
            if let Some(a) = update.remove("artifact") {
                update.insert("artifact".into(), artifact(a));
            }
            update.insert("kind".into(), json!("artifact-update"));
            return Value::Object(update);
        }
        Value::Object(item)
    }
}

/// The v0.3 spelling of a v1.0 `TaskState` (`TASK_STATE_INPUT_REQUIRED` → `input-required`);
/// `unknown` for one v0.3 does not have.
pub fn state_name(v1: &str) -> &'static str {
    match v1 {
        "TASK_STATE_SUBMITTED" => "submitted",
        "TASK_STATE_WORKING" => "working",
        "TASK_STATE_INPUT_REQUIRED" => "input-required",
        "TASK_STATE_COMPLETED" => "completed",
        "TASK_STATE_CANCELED" => "canceled",
        "TASK_STATE_FAILED" => "failed",
        "TASK_STATE_REJECTED" => "rejected",
        "TASK_STATE_AUTH_REQUIRED" => "auth-required",
        _ => "unknown",
    }
}

/// What the webhook of a config made over v0.3 gets for a change of a task: the task itself
/// (v0.3 sent no `StreamResponse` wrapper), in v0.3's shape.
pub fn render_notice(notice: &aiphost_model::TaskNotice) -> Value {
    match super::render_notice(notice) {
        Value::Object(mut wrapped) => task(wrapped.remove("task").unwrap_or_default()),
        other => other,
    }
}

/// A v1.0 `Task` as v0.3's.
fn task(value: Value) -> Value {
    let Value::Object(mut t) = value else {
        return value;
    };
    t.insert("kind".into(), json!("task"));
    // Required in v0.3; an AIP task without a session has none.
    t.entry("contextId").or_insert_with(|| json!(""));
    if let Some(s) = t.remove("status") {
        t.insert("status".into(), status(s));
    }
    if let Some(Value::Array(history)) = t.remove("history") {
        t.insert(
            "history".into(),
            Value::Array(history.into_iter().map(message).collect()),
        );
    }
    if let Some(Value::Array(artifacts)) = t.remove("artifacts") {
        t.insert(
            "artifacts".into(),
            Value::Array(artifacts.into_iter().map(artifact).collect()),
        );
    }
    Value::Object(t)
}

/// A v1.0 `TaskStatus` as v0.3's.
fn status(value: Value) -> Value {
    let Value::Object(mut s) = value else {
        return value;
    };
    let state = state_name(s.get("state").and_then(Value::as_str).unwrap_or_default());
    s.insert("state".into(), json!(state));
    if let Some(m) = s.remove("message") {
        s.insert("message".into(), message(m));
    }
    Value::Object(s)
}

/// A v1.0 `Message` as v0.3's.
fn message(value: Value) -> Value {
    let Value::Object(mut m) = value else {
        return value;
    };
    let role = match m.get("role").and_then(Value::as_str) {
        Some("ROLE_USER") => "user",
        _ => "agent",
    };
    m.insert("role".into(), json!(role));
    m.insert("kind".into(), json!("message"));
    if let Some(Value::Array(parts)) = m.remove("parts") {
        m.insert("parts".into(), parts_of(parts));
    }
    Value::Object(m)
}

/// A v1.0 `Artifact` as v0.3's.
fn artifact(value: Value) -> Value {
    let Value::Object(mut a) = value else {
        return value;
    };
    if let Some(Value::Array(parts)) = a.remove("parts") {
        a.insert("parts".into(), parts_of(parts));
    }
    Value::Object(a)
}

fn parts_of(parts: Vec<Value>) -> Value {
    Value::Array(parts.into_iter().map(part).collect())
}

/// A v1.0 `Part` as v0.3's. A text part's `mediaType` has no place in v0.3 and is left out.
fn part(value: Value) -> Value {
    let Value::Object(mut p) = value else {
        return value;
    };
    let mut out = Map::new();
    let mut metadata = match p.remove("metadata") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    if let Some(text) = p.remove("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text);
    } else if let Some(data) = p.remove("data") {
        let data = match data {
            Value::Object(d) => Value::Object(d),
            // v0.3 data is an object: the official SDK's wrapping.
            other => {
                metadata
                    .get_or_insert_with(Map::new)
                    .insert(DATA_PART_COMPAT.into(), json!(true));
                json!({"value": other})
            }
        };
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        if let Some(raw) = p.remove("raw") {
            file.insert("bytes".into(), raw);
        } else {
            file.insert("uri".into(), p.remove("url").unwrap_or_else(|| json!("")));
        }
        if let Some(media_type) = p.remove("mediaType") {
            file.insert("mimeType".into(), media_type);
        }
        if let Some(filename) = p.remove("filename") {
            file.insert("name".into(), filename);
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    }
    if let Some(m) = metadata {
        out.insert("metadata".into(), Value::Object(m));
    }
    Value::Object(out)
}

/// The configs of a v1.0 `ListTaskPushNotificationConfigsResponse` (or of a bare array).
fn push_configs(result: &Value) -> Vec<Value> {
    match result {
        Value::Array(configs) => configs.clone(),
        other => other
            .get("configs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    }
}

/// A v1.0 `TaskPushNotificationConfig` as v0.3's, read and rendered by [`super::push`] so that
/// v0.3's config shape is written in one place.
fn push_config(v1: &Value) -> Result<Value, A2aError> {
    let config = parse_push_config(v1, "result").map_err(|e| {
        A2aError::new(
            A2aErrorKind::Internal,
            json!({
                "reason": "the host answered with a push notification config it cannot render for v0.3",
                "detail": Value::Object(e.metadata),
            }),
        )
    })?;
    let task_id = config.task_id.clone().unwrap_or_default();
    Ok(render_push_config_v03(&config.into_config(&task_id)))
}

/// The JSON-RPC `error` object of `error` for a v0.3 client: the same code, v0.3's message,
/// and what exactly went wrong as `data` (v0.3 has no `ErrorInfo`).
pub fn render_error(error: &A2aError) -> Value {
    use A2aErrorKind::*;
    let message = match error.kind {
        PushNotificationNotSupported => "Push Notification is not supported",
        ContentTypeNotSupported => "Incompatible content types",
        ExtendedAgentCardNotConfigured => "Authenticated Extended Card is not configured",
        other => other.message(),
    };
    let mut out = json!({"code": error.kind.jsonrpc_code(), "message": message});
    if !error.metadata.is_empty() {
        out["data"] = Value::Object(error.metadata.clone());
    }
    out
}

/// A whole JSON-RPC error response to request `id`, for a v0.3 client.
pub fn error_response(error: &A2aError, id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": render_error(error)})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{StreamContext, parse_send, render_event, render_push_config, render_task};
    use aiphost_model::Task;
    use aiphost_model::Timestamp;
    use aiphost_model::{
        CommandKind, DataItem, LeaderCommand, Product, ProductChunk, TaskState, TaskStatus,
    };
    use aiphost_model::{EventKind, TaskEvent};

    fn send(params: Value) -> Result<Upgraded, A2aError> {
        upgrade_request("message/send", &params)
    }

    #[test]
    fn a_v03_message_reads_as_the_v10_one_it_means() {
        let up = send(json!({
            "message": {
                "kind": "message", "role": "user", "messageId": "m-1", "contextId": "ctx-9",
                "metadata": {"k": 1},
                "parts": [
                    {"kind": "text", "text": "hi", "metadata": {"lang": "en"}},
                    {"kind": "file", "file": {"bytes": "dGNr", "mimeType": "text/plain", "name": "a.txt"}},
                    {"kind": "file", "file": {"uri": "https://example.com/o.txt"}},
                    {"kind": "data", "data": {"key": "value"}},
                    {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}},
                ],
            },
            "configuration": {"blocking": false, "historyLength": 2, "acceptedOutputModes": ["text/plain"]},
        }))
        .unwrap();
        assert_eq!(up.method, "SendMessage");
        assert_eq!(up.downgrade, Downgrade::Sent);
        let message = &up.params["message"];
        assert_eq!(message["role"], "ROLE_USER");
        assert!(message.get("kind").is_none());
        assert_eq!(
            message["parts"],
            json!([
                {"text": "hi", "metadata": {"lang": "en"}},
                {"raw": "dGNr", "mediaType": "text/plain", "filename": "a.txt"},
                {"url": "https://example.com/o.txt"},
                {"data": {"key": "value"}},
                {"data": [1, 2]},
            ])
        );
        assert_eq!(up.params["configuration"]["returnImmediately"], true);
        assert!(up.params["configuration"].get("blocking").is_none());
        // And v1.0's reading takes it.
        let sent = parse_send(&up.params).unwrap();
        assert!(sent.return_immediately);
        assert_eq!(sent.history_length, Some(2));
        assert_eq!(sent.command.session_id.as_deref(), Some("ctx-9"));
        assert_eq!(sent.command.data_items.len(), 5);
        assert_eq!(
            sent.command.params["a2a"]["acceptedOutputModes"],
            json!(["text/plain"])
        );
        // Blocking is v1.0's default.
        let blocking = send(json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]},
                                   "configuration": {"blocking": true}}))
        .unwrap();
        assert!(!parse_send(&blocking.params).unwrap().return_immediately);
    }

    #[test]
    fn a_v03_push_config_in_a_message_is_read_by_v10() {
        let up = send(json!({
            "message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]},
            "configuration": {"pushNotificationConfig": {"url": "https://h.example/hook", "token": "t",
                "authentication": {"schemes": ["Bearer"], "credentials": "c"}}},
        }))
        .unwrap();
        let config = parse_send(&up.params).unwrap().push_config.unwrap();
        assert_eq!(config.url, "https://h.example/hook");
        assert_eq!(config.authentication.unwrap().scheme, "Bearer");
    }

    #[test]
    fn malformed_v03_messages_name_the_v03_field() {
        let message = |extra: Value| {
            let mut m =
                json!({"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]});
            for (k, v) in extra.as_object().unwrap() {
                m[k] = v.clone();
            }
            json!({"message": m})
        };
        for (params, field) in [
            (json!("x"), "params"),
            (message(json!({"kind": "task"})), "message.kind"),
            (message(json!({"role": "agent"})), "message.role"),
            (
                message(json!({"parts": [{"kind": "image"}]})),
                "message.parts[0].kind",
            ),
            (message(json!({"parts": ["x"]})), "message.parts[0]"),
            (
                message(
                    json!({"parts": [{"kind": "file", "file": {"bytes": "%%", "mimeType": "a/b"}}]}),
                ),
                "message.parts[0].file.bytes",
            ),
            (
                message(
                    json!({"parts": [{"kind": "text", "text": "x"}, {"kind": "file", "file": {"bytes": "AA==", "uri": "http://x/"}}]}),
                ),
                "message.parts[1].file",
            ),
            (
                message(json!({"parts": [{"kind": "file"}]})),
                "message.parts[0].file",
            ),
            (
                message(json!({"parts": [{"kind": "file", "file": {"uri": 5}}]})),
                "message.parts[0].file.uri",
            ),
            (
                json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]},
                       "configuration": {"blocking": "no"}}),
                "configuration.blocking",
            ),
        ] {
            let e = send(params.clone()).unwrap_err();
            assert_eq!(e.kind, A2aErrorKind::InvalidParams, "{params}");
            assert_eq!(e.metadata["field"], field, "{params}");
        }
        // What v1.0 reads the same way it reports the same way.
        let no_message = send(json!({})).unwrap();
        assert_eq!(
            parse_send(&no_message.params).unwrap_err().metadata["field"],
            "message"
        );
    }

    #[test]
    fn every_v03_method_has_its_v10_counterpart_and_others_are_not_found() {
        let id = json!({"id": "t-1", "historyLength": 3});
        let get = upgrade_request("tasks/get", &id).unwrap();
        assert_eq!(
            (get.method, &get.params, &get.downgrade),
            ("GetTask", &id, &Downgrade::Task)
        );
        assert_eq!(
            upgrade_request("tasks/cancel", &id).unwrap().method,
            "CancelTask"
        );
        let resubscribe = upgrade_request("tasks/resubscribe", &id).unwrap();
        assert_eq!(resubscribe.method, "SubscribeToTask");
        assert_eq!(
            resubscribe.downgrade,
            Downgrade::Stream {
                ends_when_interrupted: false
            }
        );
        let stream = upgrade_request("message/stream", &json!({})).unwrap();
        assert_eq!(
            stream.downgrade,
            Downgrade::Stream {
                ends_when_interrupted: true
            }
        );
        assert_eq!(
            upgrade_request("agent/getAuthenticatedExtendedCard", &Value::Null)
                .unwrap()
                .method,
            "GetExtendedAgentCard"
        );
        for method in METHODS {
            assert!(is_v03_method(method));
        }
        assert!(!is_v03_method("SendMessage"));
        let e = upgrade_request("tasks/list", &json!({})).unwrap_err();
        assert_eq!(e.kind, A2aErrorKind::MethodNotFound);
        assert_eq!(e.metadata["method"], "tasks/list");
    }

    #[test]
    fn v03_push_config_requests_become_v10_ones() {
        let set = upgrade_request(
            "tasks/pushNotificationConfig/set",
            &json!({"taskId": "t-1", "pushNotificationConfig": {"id": "p-1", "url": "https://h.example/hook",
                "token": "tok", "authentication": {"schemes": ["Bearer"], "credentials": "s3"}}}),
        )
        .unwrap();
        assert_eq!(set.method, "CreateTaskPushNotificationConfig");
        assert_eq!(
            set.params,
            json!({"taskId": "t-1", "id": "p-1", "url": "https://h.example/hook", "token": "tok",
                   "authentication": {"scheme": "Bearer", "credentials": "s3"}})
        );
        let no_task = upgrade_request(
            "tasks/pushNotificationConfig/set",
            &json!({"pushNotificationConfig": {"url": "https://h.example/hook"}}),
        )
        .unwrap_err();
        assert_eq!(no_task.metadata["field"], "params.taskId");
        let no_url = upgrade_request(
            "tasks/pushNotificationConfig/set",
            &json!({"taskId": "t", "pushNotificationConfig": {}}),
        )
        .unwrap_err();
        assert_eq!(
            no_url.metadata["field"],
            "params.pushNotificationConfig.url"
        );

        let get = upgrade_request(
            "tasks/pushNotificationConfig/get",
            &json!({"id": "t-1", "pushNotificationConfigId": "p-1"}),
        )
        .unwrap();
        assert_eq!(
            (get.method, get.params),
            (
                "GetTaskPushNotificationConfig",
                json!({"taskId": "t-1", "id": "p-1"})
            )
        );
        let first =
            upgrade_request("tasks/pushNotificationConfig/get", &json!({"id": "t-1"})).unwrap();
        assert_eq!(first.method, "ListTaskPushNotificationConfigs");
        assert_eq!(
            first.downgrade,
            Downgrade::FirstPushConfig {
                task_id: "t-1".into()
            }
        );
        let list =
            upgrade_request("tasks/pushNotificationConfig/list", &json!({"id": "t-1"})).unwrap();
        assert_eq!(
            (list.method, list.params),
            ("ListTaskPushNotificationConfigs", json!({"taskId": "t-1"}))
        );
        let delete = upgrade_request(
            "tasks/pushNotificationConfig/delete",
            &json!({"id": "t-1", "pushNotificationConfigId": "p-1"}),
        )
        .unwrap();
        assert_eq!(
            (delete.method, delete.params),
            (
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": "t-1", "id": "p-1"})
            )
        );
        let e = upgrade_request("tasks/pushNotificationConfig/delete", &json!({"id": "t-1"}))
            .unwrap_err();
        assert_eq!(e.metadata["field"], "params.pushNotificationConfigId");
        let e = upgrade_request("tasks/pushNotificationConfig/list", &json!({})).unwrap_err();
        assert_eq!(e.metadata["field"], "params.id");
    }

    #[test]
    fn v10_push_configs_answer_in_v03_shapes() {
        let v1 = parse_push_config(
            &json!({"taskId": "t-1", "id": "p-1", "url": "https://h.example/hook", "token": "tok",
                    "authentication": {"scheme": "Bearer", "credentials": "s3"}}),
            "x",
        )
        .unwrap()
        .into_config("t-1");
        let rendered = render_push_config(&v1);
        let expected = render_push_config_v03(&v1);
        assert_eq!(
            expected["pushNotificationConfig"]["authentication"]["schemes"],
            json!(["Bearer"])
        );
        assert_eq!(
            Downgrade::PushConfig
                .downgrade_result(rendered.clone())
                .unwrap(),
            expected
        );
        let page = json!({"configs": [rendered.clone(), rendered], "nextPageToken": ""});
        assert_eq!(
            Downgrade::PushConfigs
                .downgrade_result(page.clone())
                .unwrap(),
            json!([expected.clone(), expected.clone()])
        );
        let first = Downgrade::FirstPushConfig {
            task_id: "t-1".into(),
        };
        assert_eq!(first.downgrade_result(page).unwrap(), expected);
        let none = first.downgrade_result(json!({"configs": []})).unwrap_err();
        assert_eq!(none.kind, A2aErrorKind::TaskNotFound);
        assert_eq!(none.metadata["taskId"], "t-1");
        assert_eq!(
            Downgrade::Null.downgrade_result(json!({})).unwrap(),
            Value::Null
        );
        let garbled = Downgrade::PushConfig
            .downgrade_result(json!({"id": "p"}))
            .unwrap_err();
        assert_eq!(garbled.kind, A2aErrorKind::Internal);
    }

    fn stored_task() -> Task {
        let t0 = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let status = |state, items: Vec<DataItem>, ms| TaskStatus {
            state,
            state_changed_at: t0.plus_millis(ms),
            data_items: items,
        };
        let asking = status(TaskState::AwaitingInput, vec![DataItem::text("more?")], 20);
        Task {
            id: "t-1".into(),
            session_id: None,
            leader_id: None,
            group_id: None,
            status: asking.clone(),
            products: vec![Product {
                id: "p".into(),
                name: Some("P".into()),
                description: None,
                data_items: vec![
                    DataItem::File {
                        name: Some("o.bin".into()),
                        mime_type: Some("application/octet-stream".into()),
                        uri: None,
                        bytes: Some("AAEC".into()),
                        metadata: None,
                    },
                    DataItem::Data {
                        data: Map::from_iter([("value".to_string(), json!(7))]),
                        metadata: Some(Map::from_iter([(
                            super::super::part::WRAPPED.to_string(),
                            json!(true),
                        )])),
                    },
                ],
            }],
            commands: vec![LeaderCommand {
                id: "m-1".into(),
                sent_at: t0,
                sender_id: String::new(),
                command: CommandKind::Start,
                params: Default::default(),
                data_items: vec![DataItem::text("in")],
                task_id: None,
                session_id: None,
                group_id: None,
                mentions: None,
            }],
            status_history: vec![status(TaskState::Accepted, vec![], 1), asking],
            completes_on_result: true,
            plain_reply: false,
        }
    }

    #[test]
    fn a_v10_task_answers_in_v03_shape() {
        let v1 = render_task(&stored_task(), Default::default());
        let t = Downgrade::Task.downgrade_result(v1.clone()).unwrap();
        assert_eq!(t["kind"], "task");
        assert_eq!(t["id"], "t-1");
        assert_eq!(t["contextId"], "", "required in v0.3");
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(t["status"]["timestamp"], v1["status"]["timestamp"]);
        let said = &t["status"]["message"];
        assert_eq!(
            (&said["kind"], &said["role"]),
            (&json!("message"), &json!("agent"))
        );
        assert_eq!(said["parts"], json!([{"kind": "text", "text": "more?"}]));
        assert_eq!(t["history"][0]["role"], "user");
        assert_eq!(t["history"][0]["messageId"], "m-1");
        assert_eq!(
            t["artifacts"][0]["parts"],
            json!([
                {"kind": "file", "file": {"bytes": "AAEC", "mimeType": "application/octet-stream", "name": "o.bin"}},
                {"kind": "data", "data": {"value": 7}, "metadata": {"data_part_compat": true}},
            ])
        );
        assert_eq!(t["artifacts"][0]["name"], "P");
        // message/send's answer is the task itself.
        let sent = Downgrade::Sent
            .downgrade_result(json!({"task": v1}))
            .unwrap();
        assert_eq!(sent, t);
        let said = Downgrade::Sent
            .downgrade_result(json!({"message": {"role": "ROLE_AGENT", "messageId": "x", "parts": [{"url": "http://h/f"}]}}))
            .unwrap();
        assert_eq!(
            said,
            json!({"kind": "message", "role": "agent", "messageId": "x",
                   "parts": [{"kind": "file", "file": {"uri": "http://h/f"}}]})
        );
        for (v1, v03) in [
            ("TASK_STATE_SUBMITTED", "submitted"),
            ("TASK_STATE_WORKING", "working"),
            ("TASK_STATE_COMPLETED", "completed"),
            ("TASK_STATE_CANCELED", "canceled"),
            ("TASK_STATE_FAILED", "failed"),
            ("TASK_STATE_REJECTED", "rejected"),
            ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
            ("TASK_STATE_UNSPECIFIED", "unknown"),
        ] {
            assert_eq!(state_name(v1), v03);
        }
    }

    #[test]
    fn stream_events_answer_in_v03_shape_and_say_which_is_final() {
        let ctx = StreamContext {
            task_id: "t",
            context_id: Some("c"),
            completes_on_result: true,
        };
        let event = |kind| {
            let rendered = render_event(
                &TaskEvent {
                    seq: 1,
                    at: Timestamp::now(),
                    kind,
                },
                &ctx,
            );
            rendered.unwrap()
        };
        let status = |state| {
            event(EventKind::Status {
                status: TaskStatus::now(state, vec![]),
            })
        };
        let message_stream = Downgrade::Stream {
            ends_when_interrupted: true,
        };
        let subscription = Downgrade::Stream {
            ends_when_interrupted: false,
        };
        let created = message_stream.downgrade_stream_item(event(EventKind::Created {
            status: TaskStatus::now(TaskState::Accepted, vec![]),
            plain_reply: false,
        }));
        assert_eq!(created["kind"], "task");
        assert_eq!(created["status"]["state"], "submitted");
        let working = message_stream.downgrade_stream_item(status(TaskState::Working));
        assert_eq!(working["kind"], "status-update");
        assert_eq!(
            (&working["taskId"], &working["contextId"]),
            (&json!("t"), &json!("c"))
        );
        assert_eq!(
            (&working["status"]["state"], &working["final"]),
            (&json!("working"), &json!(false))
        );
        let asking = status(TaskState::AwaitingInput);
        assert_eq!(
            message_stream.downgrade_stream_item(asking.clone())["final"],
            true
        );
        assert_eq!(subscription.downgrade_stream_item(asking)["final"], false);
        for ended in [
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::Rejected,
        ] {
            assert_eq!(
                subscription.downgrade_stream_item(status(ended))["final"],
                true,
                "{ended}"
            );
        }
        let chunk = message_stream.downgrade_stream_item(event(EventKind::Chunk {
            chunk: ProductChunk {
                product: Product {
                    id: "p".into(),
                    name: None,
                    description: None,
                    data_items: vec![DataItem::text("a")],
                },
                append: true,
                last_chunk: true,
            },
        }));
        assert_eq!(
            chunk,
            json!({"kind": "artifact-update", "taskId": "t", "contextId": "c", "append": true, "lastChunk": true,
                   "artifact": {"artifactId": "p", "parts": [{"kind": "text", "text": "a"}]}})
        );
    }

    #[test]
    fn errors_keep_their_codes_with_v03_messages_and_plain_data() {
        let e = A2aError::task_not_found("t-1");
        assert_eq!(
            error_response(&e, &json!(4)),
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": "Task not found",
                   "data": {"taskId": "t-1"}}})
        );
        let push = render_error(&A2aError::new(
            A2aErrorKind::PushNotificationNotSupported,
            Value::Null,
        ));
        assert_eq!(
            push,
            json!({"code": -32003, "message": "Push Notification is not supported"})
        );
        let bad = render_error(&A2aError::invalid_params("message.role", "x"));
        assert_eq!(bad["data"]["field"], "message.role");
        assert_eq!(
            render_error(&A2aError::new(
                A2aErrorKind::ExtendedAgentCardNotConfigured,
                Value::Null
            ))["code"],
            -32007
        );
    }

    #[test]
    fn versions_a_v03_request_may_name() {
        for ok in ["", "0.3", "0.3.0", " 0.3 "] {
            assert!(accepts_version(ok), "{ok:?}");
        }
        for refused in ["1.0", "1", "0.2", "0.3.x", "0.3.", "0", "0.30"] {
            assert!(!accepts_version(refused), "{refused:?}");
        }
    }
}
