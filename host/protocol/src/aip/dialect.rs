//! The two wire dialects: AIP v01.00 (the spec) and v02.01 (what `acps-sdk` 2.1.0 speaks).
//!
//! Parsing is lenient where the dialects or Leaders differ (unknown fields ignored, `null` taken as
//! absent, either filter name) and precise where a value is simply wrong: every error names the field.
//! Rendering follows the caller's dialect to the letter.

use crate::jsonrpc::RpcError;
use aiphost_model::values::Mentions;
use aiphost_model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, InvalidField, JsonObject,
    LeaderCommand, Task, Timestamp, WireForm, check_task_id,
};
use base64::Engine as _;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Which dialect a Leader speaks; remembered per task (as its [`WireForm`]) so later notices go
/// out in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Dialect {
    /// AIP v01.00: `params.message`, `type:"message"`, replies are `Task`s.
    #[serde(rename = "v1")]
    #[default]
    V1,
    /// AIP v02.01: `params.command`, `type:"task-command"`, replies are `TaskResult`s.
    #[serde(rename = "v2")]
    V2,
}

impl Dialect {
    /// The field that holds the history of Leader commands in a task.
    pub fn history_field(self) -> &'static str {
        match self {
            Dialect::V1 => "messageHistory",
            Dialect::V2 => "commandHistory",
        }
    }

    /// The form a task started in this dialect keeps: `"v1"` or `"v2"`, as stored since the
    /// engine kept the dialect itself.
    pub fn form(self) -> WireForm {
        WireForm::new(match self {
            Dialect::V1 => "v1",
            Dialect::V2 => "v2",
        })
    }

    /// The dialect of a kept form; a task whose door kept none or another's (one started over
    /// A2A) is told of in v1, the dialect such tasks have always been told of in.
    pub fn of(form: Option<&WireForm>) -> Dialect {
        match form.map(WireForm::as_str) {
            Some("v2") => Dialect::V2,
            _ => Dialect::V1,
        }
    }
}

/// Read the Leader command in `params` (`params.message` in v1 and in v2's stream method,
/// `params.command` in v2's rpc method), moving its parts out of the parsed body rather than
/// copying them.
pub fn parse_command(params: Value) -> Result<Inbound, RpcError> {
    let Value::Object(mut params) = params else {
        return Err(RpcError::invalid_params("params", "must be an object"));
    };
    let (field, mut inner) = match (params.remove("command"), params.remove("message")) {
        (Some(Value::Object(c)), _) => ("params.command", c),
        (_, Some(Value::Object(m))) => ("params.message", m),
        (Some(other), _) if !other.is_null() => {
            return Err(RpcError::invalid_params(
                "params.command",
                "must be an object",
            ));
        }
        (_, Some(other)) if !other.is_null() => {
            return Err(RpcError::invalid_params(
                "params.message",
                "must be an object",
            ));
        }
        _ => {
            return Err(RpcError::invalid_params(
                "params",
                "expected `params.message` (AIP v01.00) or `params.command` (AIP v02.01)",
            ));
        }
    };
    let dialect = match inner.get("type") {
        Some(Value::String(t)) if t == "message" => Dialect::V1,
        Some(Value::String(t)) if t == "task-command" => Dialect::V2,
        None | Some(Value::Null) if field == "params.command" => Dialect::V2,
        None | Some(Value::Null) => Dialect::V1,
        Some(_) => {
            return Err(RpcError::invalid_params(
                &format!("{field}.type"),
                "expected \"message\" (AIP v01.00) or \"task-command\" (AIP v02.01)",
            ));
        }
    };
    // The parts that are objects or lists are moved out whole; they are checked below, in the
    // order the fields have always been checked in.
    let (mentions, params_value, items) = (
        inner.remove("mentions"),
        inner.remove("commandParams"),
        inner.remove("dataItems"),
    );
    let mut reader = Reader {
        obj: &mut inner,
        path: field,
    };
    let command_text = reader
        .take_str("command")?
        .ok_or_else(|| RpcError::invalid_params(&reader.at("command"), "is required"))?;
    let command = CommandKind::parse(&command_text).ok_or_else(|| {
        RpcError::invalid_params(
            &reader.at("command"),
            format!(
                "unknown command {command_text:?}; expected one of start, continue, complete, cancel, get, re-stream"
            ),
        )
    })?;
    let task_id = match reader.take_str("taskId")? {
        Some(id) => {
            check_task_id(&id, &reader.at("taskId"))?;
            Some(id)
        }
        None if command == CommandKind::Start => None,
        None => {
            return Err(RpcError::invalid_params(
                &reader.at("taskId"),
                format!("is required for the {command} command"),
            ));
        }
    };
    let sent_at = match reader.take_str("sentAt")? {
        Some(text) => Timestamp::parse(&text).ok_or_else(|| {
            RpcError::invalid_params(
                &reader.at("sentAt"),
                "must be an ISO 8601 timestamp with an offset",
            )
        })?,
        None => Timestamp::now(),
    };
    if let Some(role) = reader.take_str("senderRole")?
        && role != "leader"
    {
        return Err(RpcError::invalid_params(
            &reader.at("senderRole"),
            "a command sent to a partner must come from the \"leader\"",
        ));
    }
    let mentions = match mentions {
        None | Some(Value::Null) => None,
        Some(v) => Some(serde_json::from_value::<Mentions>(v).map_err(|_| {
            RpcError::invalid_params(&reader.at("mentions"), "must be \"all\" or a list of AICs")
        })?),
    };
    let params_obj = match params_value {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => {
            return Err(RpcError::invalid_params(
                &reader.at("commandParams"),
                "must be an object",
            ));
        }
    };
    let data_items = parse_data_items(items, &reader.at("dataItems"))?;
    // Only a get reads histories; its filter is said wrong only if it does (the engine decides).
    let history = match command {
        CommandKind::Get => parse_history_filter(&params_obj),
        _ => Ok(HistoryFilter::default()),
    };
    Ok(Inbound {
        form: Some(dialect.form()),
        command: LeaderCommand {
            id: reader
                .take_str("id")?
                .unwrap_or_else(|| format!("msg-{}", uuid::Uuid::new_v4())),
            sent_at,
            sender_id: reader.take_str("senderId")?.unwrap_or_default(),
            command,
            params: params_obj,
            data_items,
            task_id,
            session_id: reader.take_str("sessionId")?,
            group_id: reader.take_str("groupId")?,
            mentions,
        },
        owner: None,
        policy: CommandPolicy::default(),
        history,
    })
}

/// Read a `dataItems` array (absent or `null` = none), checking every item.
fn parse_data_items(value: Option<Value>, field: &str) -> Result<Vec<DataItem>, RpcError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(RpcError::invalid_params(
                field,
                "must be an array of DataItems",
            ));
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_data_item(item, &format!("{field}[{i}]")))
        .collect()
}

fn parse_data_item(value: Value, path: &str) -> Result<DataItem, RpcError> {
    let Value::Object(mut obj) = value else {
        return Err(RpcError::invalid_params(
            path,
            "a DataItem must be an object",
        ));
    };
    let (metadata, data) = (obj.remove("metadata"), obj.remove("data"));
    let mut r = Reader {
        obj: &mut obj,
        path,
    };
    let metadata = match metadata {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            return Err(RpcError::invalid_params(
                &r.at("metadata"),
                "must be an object",
            ));
        }
    };
    match r.take_str("type")?.as_deref() {
        Some("text") => Ok(DataItem::Text {
            text: r.take_str("text")?.ok_or_else(|| {
                RpcError::invalid_params(&r.at("text"), "is required for a text item")
            })?,
            metadata,
        }),
        Some("file") => {
            let uri = r.take_str("uri")?;
            let bytes = r.take_str("bytes")?;
            match (&uri, &bytes) {
                (Some(_), Some(_)) => {
                    return Err(RpcError::invalid_params(
                        path,
                        "a file item carries either `uri` or `bytes`, not both",
                    ));
                }
                (None, None) => {
                    return Err(RpcError::invalid_params(
                        path,
                        "a file item needs `uri` or `bytes`",
                    ));
                }
                (None, Some(b64)) => {
                    base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map_err(|e| {
                            RpcError::invalid_params(
                                &r.at("bytes"),
                                format!("is not valid base64: {e}"),
                            )
                        })?;
                }
                (Some(_), None) => {}
            }
            Ok(DataItem::File {
                name: r.take_str("name")?,
                mime_type: r.take_str("mimeType")?,
                uri,
                bytes,
                metadata,
            })
        }
        Some("data") => match data {
            Some(Value::Object(data)) => Ok(DataItem::Data { data, metadata }),
            Some(_) => Err(RpcError::invalid_params(
                &r.at("data"),
                "must be a JSON object",
            )),
            None => Err(RpcError::invalid_params(
                &r.at("data"),
                "is required for a data item",
            )),
        },
        Some(other) => Err(RpcError::invalid_params(
            &r.at("type"),
            format!("unknown DataItem type {other:?}; expected \"text\", \"file\" or \"data\""),
        )),
        None => Err(RpcError::invalid_params(&r.at("type"), "is required")),
    }
}

/// Takes optional string fields out of an object, naming the path in errors.
struct Reader<'a> {
    obj: &'a mut JsonObject,
    path: &'a str,
}

impl Reader<'_> {
    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// The string at `key`, moved out (`null` or absent: `None`).
    fn take_str(&mut self, key: &str) -> Result<Option<String>, RpcError> {
        match self.obj.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(RpcError::invalid_params(&self.at(key), "must be a string")),
        }
    }
}

/// Read the history filter from a get's `commandParams`, accepting either dialect's name.
pub fn parse_history_filter(params: &JsonObject) -> Result<HistoryFilter, InvalidField> {
    let read = |name: &str| -> Result<Option<Timestamp>, InvalidField> {
        match params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Timestamp::parse(s).map(Some).ok_or_else(|| {
                InvalidField::new(
                    &format!("commandParams.{name}"),
                    "must be an ISO 8601 timestamp or null",
                )
            }),
            Some(_) => Err(InvalidField::new(
                &format!("commandParams.{name}"),
                "must be an ISO 8601 timestamp or null",
            )),
        }
    };
    let v1 = read("lastMessageSentAt")?;
    let v2 = read("lastCommandSentAt")?;
    Ok(HistoryFilter {
        commands_after: v2.or(v1),
        states_after: read("lastStateChangedAt")?,
    })
}

/// A Leader command as it appears in a history, in one dialect: a v1 `Message` or a v2
/// `TaskCommand`, borrowed from the command and serialized straight to the wire.
pub struct CommandOnWire<'a> {
    command: &'a LeaderCommand,
    dialect: Dialect,
}

impl Serialize for CommandOnWire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cmd = self.command;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry(
            "type",
            match self.dialect {
                Dialect::V1 => "message",
                Dialect::V2 => "task-command",
            },
        )?;
        m.serialize_entry("id", &cmd.id)?;
        m.serialize_entry("sentAt", &cmd.sent_at)?;
        m.serialize_entry("senderRole", "leader")?;
        m.serialize_entry("senderId", &cmd.sender_id)?;
        if let Some(mentions) = &cmd.mentions {
            m.serialize_entry("mentions", mentions)?;
        }
        m.serialize_entry("command", &cmd.command)?;
        if !cmd.params.is_empty() {
            m.serialize_entry("commandParams", &cmd.params)?;
        }
        // v1 requires `dataItems`; v2 makes it optional, and an empty list is valid in both.
        m.serialize_entry("dataItems", &cmd.data_items)?;
        entry_opt(&mut m, "taskId", &cmd.task_id)?;
        entry_opt(&mut m, "groupId", &cmd.group_id)?;
        entry_opt(&mut m, "sessionId", &cmd.session_id)?;
        m.end()
    }
}

/// Render a Leader command as it appears in a history: a v1 `Message` or a v2 `TaskCommand`.
pub fn render_command(cmd: &LeaderCommand, dialect: Dialect) -> Value {
    to_value(&CommandOnWire {
        command: cmd,
        dialect,
    })
}

/// A task in one dialect, as a door answers with it: a v1 `Task` or a v2 `TaskResult` from
/// the partner, borrowed from the task and serialized straight to the wire (no
/// [`Value`] built on the way; [`render_task`] is the same as a `Value`, for a notice that
/// edits it). Histories are included only when `history` is given (the `get` command),
/// filtered by it.
pub struct TaskOnWire<'a> {
    task: &'a Task,
    dialect: Dialect,
    partner_aic: &'a str,
    history: Option<&'a HistoryFilter>,
    /// A v2 result's own id and time, fixed when it is made.
    result: Option<(String, Timestamp)>,
}

impl<'a> TaskOnWire<'a> {
    /// `task` in `dialect`, sent by `partner_aic`; a v2 result gets a fresh id and time now.
    pub fn new(
        task: &'a Task,
        dialect: Dialect,
        partner_aic: &'a str,
        history: Option<&'a HistoryFilter>,
    ) -> Self {
        let result = (dialect == Dialect::V2)
            .then(|| (format!("result-{}", uuid::Uuid::new_v4()), Timestamp::now()));
        TaskOnWire {
            task,
            dialect,
            partner_aic,
            history,
            result,
        }
    }
}

impl Serialize for TaskOnWire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let task = self.task;
        let mut m = s.serialize_map(None)?;
        match &self.result {
            None => {
                m.serialize_entry("type", "task")?;
                m.serialize_entry("id", &task.id)?;
                if task.group_id.is_some() {
                    m.serialize_entry("senderId", self.partner_aic)?;
                }
            }
            Some((id, at)) => {
                m.serialize_entry("type", "task-result")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("sentAt", at)?;
                m.serialize_entry("senderRole", "partner")?;
                m.serialize_entry("senderId", self.partner_aic)?;
                m.serialize_entry("taskId", &task.id)?;
            }
        }
        m.serialize_entry("status", &task.status)?;
        m.serialize_entry("products", &task.products)?;
        if let Some(filter) = self.history {
            m.serialize_entry(
                self.dialect.history_field(),
                &CommandsAfter(task, filter, self.dialect),
            )?;
            m.serialize_entry("statusHistory", &StatusesAfter(task, filter))?;
        }
        entry_opt(&mut m, "groupId", &task.group_id)?;
        entry_opt(&mut m, "sessionId", &task.session_id)?;
        m.end()
    }
}

/// A task's commands after a history filter's time, in a dialect.
struct CommandsAfter<'a>(&'a Task, &'a HistoryFilter, Dialect);

impl Serialize for CommandsAfter<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let CommandsAfter(task, filter, dialect) = *self;
        s.collect_seq(
            task.commands
                .iter()
                .filter(|c| filter.commands_after.is_none_or(|after| c.sent_at > after))
                .map(|command| CommandOnWire { command, dialect }),
        )
    }
}

/// A task's statuses after a history filter's time.
struct StatusesAfter<'a>(&'a Task, &'a HistoryFilter);

impl Serialize for StatusesAfter<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let StatusesAfter(task, filter) = *self;
        s.collect_seq(task.status_history.iter().filter(|status| {
            filter
                .states_after
                .is_none_or(|after| status.state_changed_at > after)
        }))
    }
}

/// [`TaskOnWire`] as a [`Value`].
pub fn render_task(
    task: &Task,
    dialect: Dialect,
    partner_aic: &str,
    history: Option<&HistoryFilter>,
) -> Value {
    to_value(&TaskOnWire::new(task, dialect, partner_aic, history))
}

/// A wire form as a [`Value`]: maps with string keys, strings, numbers and the model's values
/// never fail to serialize.
fn to_value(wire: &impl Serialize) -> Value {
    serde_json::to_value(wire).unwrap_or_else(|e| json!({"error": e.to_string()}))
}

/// `key` in `m` when `value` is there.
fn entry_opt<M: SerializeMap>(
    m: &mut M,
    key: &str,
    value: &Option<String>,
) -> Result<(), M::Error> {
    match value {
        Some(v) => m.serialize_entry(key, v),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{TaskState, TaskStatus};

    fn v1_start() -> Value {
        json!({"message": {
            "type": "message", "id": "msg-5678", "sentAt": "2025-09-01T11:58:00+08:00",
            "senderRole": "leader", "senderId": "agent-leader-aic", "command": "start",
            "dataItems": [{"type": "text", "text": "请帮我做一个3天北京文化主体游的行程安排。"}],
            "taskId": "task-1234", "sessionId": "session-91011"
        }})
    }

    #[test]
    fn reads_the_v1_spec_example() {
        let inbound = parse_command(v1_start()).unwrap();
        assert_eq!(inbound.form, Some(Dialect::V1.form()));
        let c = inbound.command;
        assert_eq!(c.command, CommandKind::Start);
        assert_eq!(c.task_id.as_deref(), Some("task-1234"));
        assert_eq!(c.session_id.as_deref(), Some("session-91011"));
        assert_eq!(c.data_items.len(), 1);
        // And renders back to the same message for the history.
        assert_eq!(render_command(&c, Dialect::V1), v1_start()["message"]);
    }

    #[test]
    fn reads_the_reference_sdk_form() {
        let params = json!({"command": {
            "type": "task-command", "id": "cmd-1", "sentAt": "2026-11-21T10:24:20.126731+00:00",
            "senderRole": "leader", "senderId": "1.2.156.3088.1.1.INTOP.LEADER.1.0000",
            "command": "get", "taskId": "task-g1", "sessionId": "sess-1"
        }});
        let inbound = parse_command(params.clone()).unwrap();
        assert_eq!(inbound.form, Some(Dialect::V2.form()));
        assert_eq!(inbound.command.command, CommandKind::Get);
        assert!(inbound.command.data_items.is_empty());
        // v2 streams keep `params.message` but say task-command inside.
        let stream = json!({"message": params["command"].clone()});
        assert_eq!(
            parse_command(stream).unwrap().form,
            Some(Dialect::V2.form())
        );
    }

    #[test]
    fn precise_errors() {
        let field_of = |params: Value| parse_command(params).unwrap_err().data["field"].clone();
        assert_eq!(field_of(json!({})), json!("params"));
        assert_eq!(field_of(json!({"message": 3})), json!("params.message"));
        assert_eq!(
            field_of(json!({"message": {"type": "task"}})),
            json!("params.message.type")
        );
        assert_eq!(
            field_of(json!({"message": {"type": "message"}})),
            json!("params.message.command")
        );
        assert_eq!(
            field_of(json!({"message": {"command": "explode", "taskId": "t"}})),
            json!("params.message.command")
        );
        assert_eq!(
            field_of(json!({"message": {"command": "get"}})),
            json!("params.message.taskId")
        );
        assert_eq!(
            field_of(json!({"message": {"command": "get", "taskId": ""}})),
            json!("params.message.taskId")
        );
        assert_eq!(
            field_of(json!({"message": {"command": "start", "sentAt": "noon"}})),
            json!("params.message.sentAt")
        );
        assert_eq!(
            field_of(json!({"message": {"command": "start", "dataItems": [{"type": "text"}]}})),
            json!("params.message.dataItems[0].text")
        );
        assert_eq!(
            field_of(
                json!({"message": {"command": "start", "dataItems": [{"type": "file", "bytes": "%%%"}]}})
            ),
            json!("params.message.dataItems[0].bytes")
        );
        assert_eq!(
            field_of(
                json!({"message": {"command": "start", "dataItems": [{"type": "data", "data": [1]}]}})
            ),
            json!("params.message.dataItems[0].data")
        );
        assert_eq!(
            field_of(json!({"command": {"command": "start", "commandParams": 5}})),
            json!("params.command.commandParams")
        );
        assert_eq!(
            field_of(json!({"command": {"command": "start", "senderRole": "partner"}})),
            json!("params.command.senderRole")
        );
    }

    #[test]
    fn start_without_task_id_is_allowed_and_nulls_are_absent() {
        let inbound = parse_command(json!({"command": {
            "command": "start", "taskId": null, "dataItems": null, "mentions": "all", "sessionId": null
        }}))
        .unwrap();
        assert_eq!(inbound.command.task_id, None);
        assert_eq!(inbound.command.session_id, None);
        assert!(matches!(inbound.command.mentions, Some(Mentions::All(_))));
    }

    fn sample_task() -> Task {
        let start = parse_command(v1_start()).unwrap().command;
        let accepted = TaskStatus {
            state: TaskState::Accepted,
            state_changed_at: Timestamp::parse("2025-09-01T11:59:00+08:00").unwrap(),
            data_items: vec![],
        };
        let done = TaskStatus {
            state: TaskState::AwaitingCompletion,
            state_changed_at: Timestamp::parse("2025-09-01T12:05:00+08:00").unwrap(),
            data_items: vec![],
        };
        Task {
            id: "task-1234".into(),
            session_id: Some("session-91011".into()),
            leader_id: Some("agent-leader-aic".into()),
            group_id: None,
            status: done.clone(),
            products: vec![],
            commands: vec![start],
            status_history: vec![accepted, done],
            completes_on_result: false,
            plain_reply: false,
        }
    }

    #[test]
    fn renders_v1_task_like_the_spec() {
        let v = render_task(&sample_task(), Dialect::V1, "aic", None);
        assert_eq!(
            v,
            json!({"type": "task", "id": "task-1234",
                   "status": {"state": "awaiting-completion", "stateChangedAt": "2025-09-01T12:05:00+08:00"},
                   "products": [], "sessionId": "session-91011"})
        );
    }

    #[test]
    fn renders_v2_task_result_with_fresh_ids() {
        let a = render_task(&sample_task(), Dialect::V2, "1.2.3", None);
        let b = render_task(&sample_task(), Dialect::V2, "1.2.3", None);
        assert_eq!(a["type"], "task-result");
        assert_eq!(a["taskId"], "task-1234");
        assert_eq!(a["senderRole"], "partner");
        assert_eq!(a["senderId"], "1.2.3");
        assert_ne!(a["id"], b["id"]);
        assert!(Timestamp::parse(a["sentAt"].as_str().unwrap()).is_some());
    }

    #[test]
    fn history_filters_compare_instants() {
        let task = sample_task();
        // 03:59Z is 11:59+08:00: the accepted status is not after it, the later one is.
        let filter = parse_history_filter(
            json!({"lastStateChangedAt": "2025-09-01T03:59:00Z", "lastMessageSentAt": "2025-09-01T03:57:00Z"})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        let v = render_task(&task, Dialect::V1, "aic", Some(&filter));
        assert_eq!(v["statusHistory"].as_array().unwrap().len(), 1);
        assert_eq!(v["messageHistory"].as_array().unwrap().len(), 1);
        let v2 = render_task(&task, Dialect::V2, "aic", Some(&HistoryFilter::default()));
        assert_eq!(v2["commandHistory"][0]["type"], "task-command");
        assert_eq!(v2["statusHistory"].as_array().unwrap().len(), 2);
        assert!(
            parse_history_filter(json!({"lastCommandSentAt": 5}).as_object().unwrap()).is_err()
        );
    }

    #[test]
    fn a_door_sends_the_bytes_of_the_rendered_task() {
        let task = sample_task();
        let all = HistoryFilter::default();
        for (dialect, history) in [
            (Dialect::V1, None),
            (Dialect::V2, None),
            (Dialect::V1, Some(&all)),
            (Dialect::V2, Some(&all)),
        ] {
            let wire = TaskOnWire::new(&task, dialect, "aic", history);
            let id = json!(7);
            let sent: Value =
                serde_json::from_slice(&crate::jsonrpc::Success::new(&id, &wire).to_bytes())
                    .unwrap();
            let value = serde_json::to_value(&wire).unwrap();
            assert_eq!(sent, crate::jsonrpc::success(&id, value.clone()));
            assert_eq!(value["status"], json!(task.status));
            assert_eq!(
                value.get("commandHistory").is_some(),
                dialect == Dialect::V2 && history.is_some()
            );
        }
    }

    #[test]
    fn a_dialect_is_kept_as_it_was_stored() {
        for dialect in [Dialect::V1, Dialect::V2] {
            let stored = serde_json::to_value(dialect.form()).unwrap();
            assert_eq!(stored, serde_json::to_value(dialect).unwrap());
            assert_eq!(Dialect::of(Some(&dialect.form())), dialect);
        }
        assert_eq!(Dialect::of(None), Dialect::V1);
        assert_eq!(Dialect::of(Some(&WireForm::new("a2a"))), Dialect::V1);
    }
}
