//! The values a task is made of: states, DataItems, products, statuses and Leader commands.
//!
//! DataItems and Products have the same shape in every AIP dialect, so their serde form is the wire
//! form. Tasks and Leader commands differ between dialects; `aiphost-protocol` renders and parses those.

use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// A JSON object.
pub type JsonObject = Map<String, Value>;

/// The AIP task states (spec 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// The partner has taken the task on; it has not started working yet.
    Accepted,
    /// The partner is working on the task.
    Working,
    /// The partner needs more from the Leader (a `continue`); canceled if none comes in time.
    AwaitingInput,
    /// The partner has a result for the Leader to `complete` (or `continue`); completed if neither comes in time.
    AwaitingCompletion,
    /// Done: the Leader completed it, or its awaiting-completion time ran out. Terminal.
    Completed,
    /// Canceled by the Leader, or its awaiting-input time ran out. Terminal.
    Canceled,
    /// The partner (or the host for it) gave up on the task. Terminal.
    Failed,
    /// The partner declined the task. Terminal.
    Rejected,
}

impl TaskState {
    /// Every state, in the order of the spec's list.
    pub const ALL: [TaskState; 8] = [
        TaskState::Accepted,
        TaskState::Working,
        TaskState::AwaitingInput,
        TaskState::AwaitingCompletion,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
        TaskState::Rejected,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Accepted => "accepted",
            TaskState::Working => "working",
            TaskState::AwaitingInput => "awaiting-input",
            TaskState::AwaitingCompletion => "awaiting-completion",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
        }
    }

    /// Parse a state leniently: any case, and enum spellings such as `AwaitingCompletion`.
    pub fn parse(text: &str) -> Option<Self> {
        let folded: String = text
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        TaskState::ALL
            .into_iter()
            .find(|s| s.as_str().replace('-', "") == folded)
            .or_else(|| (folded == "cancelled").then_some(TaskState::Canceled))
    }

    /// Completed, canceled, failed and rejected: nothing moves the task again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }

    /// A state in which the partner has said what happens next and no invocation needs to run.
    pub fn is_resting(self) -> bool {
        self.is_terminal()
            || matches!(
                self,
                TaskState::AwaitingInput | TaskState::AwaitingCompletion
            )
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One DataItem (spec 4.5). The serde form is the wire form in both dialects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum DataItem {
    /// Text (`"type": "text"`).
    Text {
        /// The text.
        text: String,
        /// Free-form metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<JsonObject>,
    },
    /// A file, by `uri` or inline `bytes` (`"type": "file"`).
    File {
        /// The file's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Its MIME type (`mimeType`).
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Where the file can be fetched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
        /// Base64, as on the wire; checked when it comes in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<String>,
        /// Free-form metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<JsonObject>,
    },
    /// Structured data (`"type": "data"`).
    Data {
        /// The data, a JSON object.
        data: JsonObject,
        /// Free-form metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<JsonObject>,
    },
}

impl DataItem {
    /// `Ok` if its `data` and `metadata` nest at most [`crate::depth::MAX_JSON_DEPTH`] levels;
    /// `field` names the item (`dataItems[0]`) in the error's path.
    pub fn check_depth(&self, field: &str) -> Result<(), crate::depth::TooDeep> {
        let (data, metadata) = match self {
            DataItem::Text { metadata, .. } | DataItem::File { metadata, .. } => (None, metadata),
            DataItem::Data { data, metadata } => (Some(data), metadata),
        };
        if let Some(data) = data {
            // The object itself is one level.
            check_object(data, &format!("{field}.data"))?;
        }
        if let Some(metadata) = metadata {
            check_object(metadata, &format!("{field}.metadata"))?;
        }
        Ok(())
    }

    /// A plain text item.
    pub fn text(text: impl Into<String>) -> Self {
        DataItem::Text {
            text: text.into(),
            metadata: None,
        }
    }

    /// The MIME type this item counts as when matching a skill's input modes.
    pub fn mime_type(&self) -> &str {
        match self {
            DataItem::Text { .. } => "text/plain",
            DataItem::Data { .. } => "application/json",
            DataItem::File { mime_type, .. } => {
                mime_type.as_deref().unwrap_or("application/octet-stream")
            }
        }
    }

    /// The bytes this item adds to a task's products, for `maxProductsBytes`: text in UTF-8, file
    /// content decoded (a URI counts its length), structured data as compact JSON.
    pub fn content_bytes(&self) -> u64 {
        let n = match self {
            DataItem::Text { text, .. } => text.len(),
            DataItem::File { uri, bytes, .. } => match (bytes, uri) {
                (Some(b64), _) => b64.len() / 4 * 3,
                (None, Some(uri)) => uri.len(),
                (None, None) => 0,
            },
            DataItem::Data { data, .. } => serde_json::to_vec(data).map(|v| v.len()).unwrap_or(0),
        };
        n as u64
    }
}

/// A product (spec 4.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Product {
    /// The product's id, unique within the task; chunks name their product by it.
    pub id: String,
    /// A name for people to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the product is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content (`dataItems`).
    #[serde(rename = "dataItems", default)]
    pub data_items: Vec<DataItem>,
}

impl Product {
    /// Bytes of content, as counted against `maxProductsBytes`.
    pub fn content_bytes(&self) -> u64 {
        self.data_items.iter().map(DataItem::content_bytes).sum()
    }
}

/// A piece of a product as a partner emits it (and as the streaming style sends it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProductChunk {
    /// The product's id, name and description, with this chunk's items.
    pub product: Product,
    /// Add the items to the product with the same id instead of replacing it.
    pub append: bool,
    /// The product is whole after this chunk.
    #[serde(rename = "lastChunk")]
    pub last_chunk: bool,
}

/// A task status (spec 4.2 `TaskStatus`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state entered.
    pub state: TaskState,
    /// When it was entered (`stateChangedAt`).
    #[serde(rename = "stateChangedAt")]
    pub state_changed_at: Timestamp,
    /// What the partner says with it, e.g. the question when awaiting input (`dataItems`; left out when empty).
    #[serde(rename = "dataItems", default, skip_serializing_if = "Vec::is_empty")]
    pub data_items: Vec<DataItem>,
}

impl TaskStatus {
    /// A status entered now.
    pub fn now(state: TaskState, data_items: Vec<DataItem>) -> Self {
        TaskStatus {
            state,
            state_changed_at: Timestamp::now(),
            data_items,
        }
    }
}

/// The commands a Leader can send about a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandKind {
    /// Start a new task.
    Start,
    /// Give a task awaiting input or completion more input; it goes back to working.
    Continue,
    /// Accept the result of a task awaiting completion.
    Complete,
    /// Cancel a task that has not ended.
    Cancel,
    /// Read a task, with its histories.
    Get,
    /// Reconnect to a task's event stream after `lastEventSeq` (`re-stream`); changes nothing.
    ReStream,
}

impl CommandKind {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::Start => "start",
            CommandKind::Continue => "continue",
            CommandKind::Complete => "complete",
            CommandKind::Cancel => "cancel",
            CommandKind::Get => "get",
            CommandKind::ReStream => "re-stream",
        }
    }

    /// The command named exactly `text` (the spec's names: `start`, `continue`, `complete`,
    /// `cancel`, `get`, `re-stream`). Nothing is trimmed or folded: a name that differs in any
    /// character is not a command, so no two spellings can mean the same thing.
    pub fn parse(text: &str) -> Option<Self> {
        [
            CommandKind::Start,
            CommandKind::Continue,
            CommandKind::Complete,
            CommandKind::Cancel,
            CommandKind::Get,
            CommandKind::ReStream,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == text)
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `mentions`: a list of AICs, or everyone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Mentions {
    /// `"all"`: every member.
    All(AllMarker),
    /// These AICs only.
    List(Vec<String>),
}

/// The literal `"all"`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum AllMarker {
    /// `"all"`.
    #[serde(rename = "all")]
    All,
}

/// [`crate::depth::check_depth`] of a JSON object, without copying it into a `Value`.
fn check_object(map: &JsonObject, field: &str) -> Result<(), crate::depth::TooDeep> {
    for (key, value) in map {
        // One level for the object around it.
        crate::depth::check_depth_below(value, &format!("{field}.{key}"), 1)?;
    }
    Ok(())
}

/// A Leader's command, whichever dialect carried it. Kept in the task's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaderCommand {
    /// The message id the Leader gave.
    pub id: String,
    /// When the Leader sent it (`sentAt` on the wire; the host's clock when absent).
    pub sent_at: Timestamp,
    /// The Leader's AIC as the command gives it (`senderId` on the wire; empty when absent).
    pub sender_id: String,
    /// What the command asks.
    pub command: CommandKind,
    /// The command's `commandParams` (empty when absent).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: JsonObject,
    /// The items sent with it (`dataItems` on the wire).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_items: Vec<DataItem>,
    /// The task it names (`taskId` on the wire); `None` only for a start, whose id the host makes up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The session it belongs to (`sessionId` on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The group it was sent in (`groupId` on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Whom it addresses in a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mentions: Option<Mentions>,
}

impl LeaderCommand {
    /// A cancel of `task_id` that a door makes for its client, whose protocol sends no AIP
    /// command (A2A's `CancelTask`, the Agent API's stop): a made-up id, sent now, no sender.
    pub fn cancel_of(task_id: &str) -> Self {
        LeaderCommand {
            id: format!("cancel-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command: CommandKind::Cancel,
            params: Map::new(),
            data_items: Vec::new(),
            task_id: Some(task_id.to_string()),
            session_id: None,
            group_id: None,
            mentions: None,
        }
    }

    /// `Ok` if every free-form JSON value it carries (its `commandParams`, each item's `data` and
    /// `metadata`) nests at most [`crate::depth::MAX_JSON_DEPTH`] levels: the host stores them.
    pub fn check_depth(&self) -> Result<(), crate::depth::TooDeep> {
        check_object(&self.params, "commandParams")?;
        for (i, item) in self.data_items.iter().enumerate() {
            item.check_depth(&format!("dataItems[{i}]"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn state_spellings() {
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(s));
            let v = serde_json::to_value(s).unwrap();
            assert_eq!(v, json!(s.as_str()));
        }
        assert_eq!(
            TaskState::parse("AwaitingCompletion"),
            Some(TaskState::AwaitingCompletion)
        );
        assert_eq!(
            TaskState::parse("AWAITING_INPUT"),
            Some(TaskState::AwaitingInput)
        );
        assert_eq!(TaskState::parse("cancelled"), Some(TaskState::Canceled));
        assert_eq!(TaskState::parse("sleeping"), None);
    }

    #[test]
    fn terminal_and_resting() {
        let terminal: Vec<_> = TaskState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskState::Completed,
                TaskState::Canceled,
                TaskState::Failed,
                TaskState::Rejected
            ]
        );
        assert!(TaskState::AwaitingInput.is_resting());
        assert!(!TaskState::Working.is_resting());
        assert!(!TaskState::Accepted.is_resting());
    }

    #[test]
    fn data_items_roundtrip_wire_form() {
        let wire = json!([
            {"type": "text", "text": "hi", "metadata": {"lang": "en"}},
            {"type": "file", "name": "a.pdf", "mimeType": "application/pdf", "uri": "https://x/a.pdf"},
            {"type": "file", "bytes": "aGVsbG8="},
            {"type": "data", "data": {"n": 1}}
        ]);
        let items: Vec<DataItem> = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&items).unwrap(), wire);
        assert_eq!(items[0].mime_type(), "text/plain");
        assert_eq!(items[1].mime_type(), "application/pdf");
        assert_eq!(items[2].content_bytes(), 6);
        assert_eq!(items[3].mime_type(), "application/json");
    }

    #[test]
    fn mentions_all_or_list() {
        let all: Mentions = serde_json::from_value(json!("all")).unwrap();
        assert_eq!(all, Mentions::All(AllMarker::All));
        let list: Mentions = serde_json::from_value(json!(["a", "b"])).unwrap();
        assert_eq!(list, Mentions::List(vec!["a".into(), "b".into()]));
    }
}
