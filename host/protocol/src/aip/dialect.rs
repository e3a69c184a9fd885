//! The two wire dialects: AIP v01.00 (the spec) and v02.01 (what `acps-sdk` 2.1.0 speaks).
//!
//! Parsing is lenient where the dialects or Leaders differ (unknown fields ignored, `null` taken as
//! absent, either filter name) and precise where a value is simply wrong: every error names the field.
//! Rendering follows the caller's dialect to the letter.

use crate::jsonrpc::RpcError;
use aiphost_model::values::Mentions;
use aiphost_model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, InvalidField, JsonObject,
    LeaderCommand, Task, TaskStatus, Timestamp, WireForm, check_task_id,
};
use base64::Engine as _;
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
/// `params.command` in v2's rpc method).
pub fn parse_command(params: &Value) -> Result<Inbound, RpcError> {
    let Value::Object(params) = params else {
        return Err(RpcError::invalid_params("params", "must be an object"));
    };
    let (field, inner) = match (params.get("command"), params.get("message")) {
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
    let reader = Reader {
        obj: inner,
        path: field,
    };
    let command_text = reader
        .opt_str("command")?
        .ok_or_else(|| RpcError::invalid_params(&reader.at("command"), "is required"))?;
    let command = CommandKind::parse(command_text).ok_or_else(|| {
        RpcError::invalid_params(
            &reader.at("command"),
            format!(
                "unknown command {command_text:?}; expected one of start, continue, complete, cancel, get, re-stream"
            ),
        )
    })?;
    let task_id = match reader.opt_str("taskId")? {
        Some(id) => Some(check_task_id(id, &reader.at("taskId"))?.to_string()),
        None if command == CommandKind::Start => None,
        None => {
            return Err(RpcError::invalid_params(
                &reader.at("taskId"),
                format!("is required for the {command} command"),
            ));
        }
    };
    let sent_at = match reader.opt_str("sentAt")? {
        Some(text) => Timestamp::parse(text).ok_or_else(|| {
            RpcError::invalid_params(
                &reader.at("sentAt"),
                "must be an ISO 8601 timestamp with an offset",
            )
        })?,
        None => Timestamp::now(),
    };
    if let Some(role) = reader.opt_str("senderRole")?
        && role != "leader"
    {
        return Err(RpcError::invalid_params(
            &reader.at("senderRole"),
            "a command sent to a partner must come from the \"leader\"",
        ));
    }
    let mentions = match inner.get("mentions") {
        None | Some(Value::Null) => None,
        Some(v) => Some(serde_json::from_value::<Mentions>(v.clone()).map_err(|_| {
            RpcError::invalid_params(&reader.at("mentions"), "must be \"all\" or a list of AICs")
        })?),
    };
    let params_obj = match inner.get("commandParams") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params(
                &reader.at("commandParams"),
                "must be an object",
            ));
        }
    };
    let data_items = parse_data_items(inner.get("dataItems"), &reader.at("dataItems"))?;
    // Only a get reads histories; its filter is said wrong only if it does (the engine decides).
    let history = match command {
        CommandKind::Get => parse_history_filter(&params_obj),
        _ => Ok(HistoryFilter::default()),
    };
    Ok(Inbound {
        form: Some(dialect.form()),
        command: LeaderCommand {
            id: reader
                .opt_str("id")?
                .map(str::to_string)
                .unwrap_or_else(|| format!("msg-{}", uuid::Uuid::new_v4())),
            sent_at,
            sender_id: reader.opt_str("senderId")?.unwrap_or_default().to_string(),
            command,
            params: params_obj,
            data_items,
            task_id,
            session_id: reader.opt_str("sessionId")?.map(str::to_string),
            group_id: reader.opt_str("groupId")?.map(str::to_string),
            mentions,
        },
        owner: None,
        policy: CommandPolicy::default(),
        history,
    })
}

/// Read a `dataItems` array (absent or `null` = none), checking every item.
pub fn parse_data_items(value: Option<&Value>, field: &str) -> Result<Vec<DataItem>, RpcError> {
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
        .iter()
        .enumerate()
        .map(|(i, item)| parse_data_item(item, &format!("{field}[{i}]")))
        .collect()
}

fn parse_data_item(value: &Value, path: &str) -> Result<DataItem, RpcError> {
    let Value::Object(obj) = value else {
        return Err(RpcError::invalid_params(
            path,
            "a DataItem must be an object",
        ));
    };
    let r = Reader { obj, path };
    let metadata = match obj.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            return Err(RpcError::invalid_params(
                &r.at("metadata"),
                "must be an object",
            ));
        }
    };
    match r.opt_str("type")? {
        Some("text") => Ok(DataItem::Text {
            text: r
                .opt_str("text")?
                .ok_or_else(|| {
                    RpcError::invalid_params(&r.at("text"), "is required for a text item")
                })?
                .to_string(),
            metadata,
        }),
        Some("file") => {
            let uri = r.opt_str("uri")?.map(str::to_string);
            let bytes = r.opt_str("bytes")?.map(str::to_string);
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
                name: r.opt_str("name")?.map(str::to_string),
                mime_type: r.opt_str("mimeType")?.map(str::to_string),
                uri,
                bytes,
                metadata,
            })
        }
        Some("data") => match obj.get("data") {
            Some(Value::Object(data)) => Ok(DataItem::Data {
                data: data.clone(),
                metadata,
            }),
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

/// Reads optional string fields, naming the path in errors.
struct Reader<'a> {
    obj: &'a JsonObject,
    path: &'a str,
}

impl<'a> Reader<'a> {
    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, RpcError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
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

/// Render a Leader command as it appears in a history: a v1 `Message` or a v2 `TaskCommand`.
pub fn render_command(cmd: &LeaderCommand, dialect: Dialect) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "type".into(),
        json!(match dialect {
            Dialect::V1 => "message",
            Dialect::V2 => "task-command",
        }),
    );
    obj.insert("id".into(), json!(cmd.id));
    obj.insert("sentAt".into(), json!(cmd.sent_at));
    obj.insert("senderRole".into(), json!("leader"));
    obj.insert("senderId".into(), json!(cmd.sender_id));
    if let Some(m) = &cmd.mentions {
        obj.insert("mentions".into(), json!(m));
    }
    obj.insert("command".into(), json!(cmd.command));
    if !cmd.params.is_empty() {
        obj.insert("commandParams".into(), Value::Object(cmd.params.clone()));
    }
    // v1 requires `dataItems`; v2 makes it optional, and an empty list is valid in both.
    obj.insert("dataItems".into(), json!(cmd.data_items));
    insert_opt(&mut obj, "taskId", &cmd.task_id);
    insert_opt(&mut obj, "groupId", &cmd.group_id);
    insert_opt(&mut obj, "sessionId", &cmd.session_id);
    Value::Object(obj)
}

/// Render a task in `dialect`: a v1 `Task` or a v2 `TaskResult` from `partner_aic`.
/// Histories are included only when `history` is given (the `get` command), filtered by it.
pub fn render_task(
    task: &Task,
    dialect: Dialect,
    partner_aic: &str,
    history: Option<&HistoryFilter>,
) -> Value {
    let mut obj = Map::new();
    match dialect {
        Dialect::V1 => {
            obj.insert("type".into(), json!("task"));
            obj.insert("id".into(), json!(task.id));
            if task.group_id.is_some() {
                obj.insert("senderId".into(), json!(partner_aic));
            }
        }
        Dialect::V2 => {
            obj.insert("type".into(), json!("task-result"));
            obj.insert(
                "id".into(),
                json!(format!("result-{}", uuid::Uuid::new_v4())),
            );
            obj.insert("sentAt".into(), json!(Timestamp::now()));
            obj.insert("senderRole".into(), json!("partner"));
            obj.insert("senderId".into(), json!(partner_aic));
            obj.insert("taskId".into(), json!(task.id));
        }
    }
    obj.insert("status".into(), json!(task.status));
    obj.insert("products".into(), json!(task.products));
    if let Some(filter) = history {
        let commands: Vec<Value> = task
            .commands
            .iter()
            .filter(|c| filter.commands_after.is_none_or(|after| c.sent_at > after))
            .map(|c| render_command(c, dialect))
            .collect();
        let statuses: Vec<&TaskStatus> = task
            .status_history
            .iter()
            .filter(|s| {
                filter
                    .states_after
                    .is_none_or(|after| s.state_changed_at > after)
            })
            .collect();
        obj.insert(dialect.history_field().into(), json!(commands));
        obj.insert("statusHistory".into(), json!(statuses));
    }
    insert_opt(&mut obj, "groupId", &task.group_id);
    insert_opt(&mut obj, "sessionId", &task.session_id);
    Value::Object(obj)
}

fn insert_opt(obj: &mut Map<String, Value>, key: &str, value: &Option<String>) {
    if let Some(v) = value {
        obj.insert(key.into(), json!(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::TaskState;

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
        let inbound = parse_command(&v1_start()).unwrap();
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
        let inbound = parse_command(&params).unwrap();
        assert_eq!(inbound.form, Some(Dialect::V2.form()));
        assert_eq!(inbound.command.command, CommandKind::Get);
        assert!(inbound.command.data_items.is_empty());
        // v2 streams keep `params.message` but say task-command inside.
        let stream = json!({"message": params["command"].clone()});
        assert_eq!(
            parse_command(&stream).unwrap().form,
            Some(Dialect::V2.form())
        );
    }

    #[test]
    fn precise_errors() {
        let field_of = |params: Value| parse_command(&params).unwrap_err().data["field"].clone();
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
        let inbound = parse_command(&json!({"command": {
            "command": "start", "taskId": null, "dataItems": null, "mentions": "all", "sessionId": null
        }}))
        .unwrap();
        assert_eq!(inbound.command.task_id, None);
        assert_eq!(inbound.command.session_id, None);
        assert!(matches!(inbound.command.mentions, Some(Mentions::All(_))));
    }

    fn sample_task() -> Task {
        let start = parse_command(&v1_start()).unwrap().command;
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
