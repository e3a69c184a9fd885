//! What a partner of contract 0.2.0 says besides statuses and products: text streamed as deltas,
//! tool activity, token usage, a form that asks for input, and a failure with a code.
//!
//! None of these needs a new kind of task: each becomes something the model already has, marked
//! with the item metadata key [`KIND`] so a door (or a client) can tell them apart.
//! - A [`TextDelta`] is a product chunk (`append`) with one text item marked `answer` or
//!   `reasoning`; consecutive marked items of a product merge into one ([`merge_text`]), so a
//!   `get` shows one text per channel however many deltas built it.
//! - An [`Activity`] (tool call, tool result, usage) is an event of its own kind: shown on streams,
//!   kept in the journal for replay, never part of the task's products or status history.
//! - An [`InputRequest`] is the data item of an `awaiting-input` status, and a [`Failure`] the data
//!   item of a `failed` one: a client that reads only statuses still sees the question or the error.
//!
//! The bounds checked here are the contract's (`wit/partner.wit`); the host checks them before
//! anything is stored.

use super::time::Timestamp;
use super::values::{DataItem, JsonObject, Product, ProductChunk, TaskState, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The item metadata key that marks what an item is (`answer`, `tool-call`, `input-request`, ...).
pub const KIND: &str = "aiphost.kind";
/// The metadata key of a form answer naming the request it answers.
pub const REQUEST_ID: &str = "requestId";
/// Largest text of one delta.
pub const MAX_DELTA_BYTES: usize = 64 * 1024;
/// Largest tool arguments (a JSON object as text).
pub const MAX_TOOL_ARGUMENTS_BYTES: usize = 64 * 1024;
/// Largest tool output.
pub const MAX_TOOL_OUTPUT_BYTES: usize = 256 * 1024;
/// Largest form schema (JSON text).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Deepest form schema: a schema nests two levels per property (`properties`, the name).
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Largest failure message, form description.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// Largest failure detail (a JSON object as text).
pub const MAX_DETAIL_BYTES: usize = 16 * 1024;

/// Which text of a product a delta extends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    /// What the partner answers.
    Answer,
    /// What the partner thinks on the way.
    Reasoning,
}

impl Channel {
    /// The [`KIND`] of this channel's text items.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Answer => "answer",
            Channel::Reasoning => "reasoning",
        }
    }

    /// The channel whose text items carry this [`KIND`].
    pub fn of_kind(kind: &str) -> Option<Self> {
        match kind {
            "answer" => Some(Channel::Answer),
            "reasoning" => Some(Channel::Reasoning),
            _ => None,
        }
    }
}

/// A piece of text appended to a product.
#[derive(Clone, Debug, PartialEq)]
pub struct TextDelta {
    /// The product it extends.
    pub product_id: String,
    /// Which of its texts.
    pub channel: Channel,
    /// The text (empty only with `last`).
    pub text: String,
    /// The product is whole after it.
    pub last: bool,
}

impl TextDelta {
    /// The contract's bounds: a product id of 1-256 bytes without control characters, text of at
    /// most [`MAX_DELTA_BYTES`], empty only to close the product.
    pub fn check(&self) -> Result<(), String> {
        check_product_id(&self.product_id)?;
        if self.text.len() > MAX_DELTA_BYTES {
            return Err(format!(
                "a text delta is {} bytes; at most {MAX_DELTA_BYTES} are allowed",
                self.text.len()
            ));
        }
        if self.text.is_empty() && !self.last {
            return Err("a text delta may be empty only when it is the last".into());
        }
        Ok(())
    }

    /// The product chunk it is: one marked text item, appended.
    pub fn into_chunk(self) -> ProductChunk {
        ProductChunk {
            product: Product {
                id: self.product_id,
                name: None,
                description: None,
                data_items: vec![marked_text(self.text, self.channel)],
            },
            append: true,
            last_chunk: self.last,
        }
    }
}

/// A text item marked with its channel.
fn marked_text(text: String, channel: Channel) -> DataItem {
    DataItem::Text {
        text,
        metadata: Some(kind_only(channel.as_str())),
    }
}

/// Metadata holding only a [`KIND`].
fn kind_only(kind: &str) -> JsonObject {
    let mut m = JsonObject::new();
    m.insert(KIND.into(), Value::String(kind.into()));
    m
}

/// The [`KIND`] an item is marked with, if any.
pub fn kind_of(item: &DataItem) -> Option<&str> {
    let metadata = match item {
        DataItem::Text { metadata, .. }
        | DataItem::File { metadata, .. }
        | DataItem::Data { metadata, .. } => metadata.as_ref(),
    };
    metadata?.get(KIND)?.as_str()
}

/// The channel of a text item built from deltas (marked `answer` or `reasoning` and nothing else).
fn delta_channel(item: &DataItem) -> Option<Channel> {
    match item {
        DataItem::Text {
            metadata: Some(m), ..
        } if m.len() == 1 => Channel::of_kind(kind_of(item)?),
        _ => None,
    }
}

/// Append `item` to `items`, merging it into the last one when both are text of the same channel
/// (what deltas build). Merging never changes the product's bytes: those count text only.
pub fn push_merged(items: &mut Vec<DataItem>, item: DataItem) {
    if let (Some(channel), Some(last)) = (delta_channel(&item), items.last_mut())
        && delta_channel(last) == Some(channel)
        && let (DataItem::Text { text: into, .. }, DataItem::Text { text, .. }) = (last, &item)
    {
        into.push_str(text);
        return;
    }
    items.push(item);
}

/// `items` with consecutive delta texts of the same channel merged (a product restored from its
/// stored chunks reads as it did before the restart).
pub fn merge_text(items: impl IntoIterator<Item = DataItem>) -> Vec<DataItem> {
    let mut merged = Vec::new();
    for item in items {
        push_merged(&mut merged, item);
    }
    merged
}

/// What a status says for people: its items that no [`KIND`] marks (a form, a failure, an
/// activity are shown their own way, or not at all).
pub fn said(items: &[DataItem]) -> Vec<&DataItem> {
    items.iter().filter(|i| kind_of(i).is_none()).collect()
}

/// The texts among `items`, one a line (what a status says, as one message).
pub fn text_of(items: &[&DataItem]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            DataItem::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The product id rule of the contract (shared with product chunks).
pub fn check_product_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
        return Err("a product id must be 1-256 bytes with no control characters".into());
    }
    Ok(())
}

/// A tool call the partner made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Names the call; its result names it again.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: JsonObject,
}

/// What a tool gave back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolOutput {
    /// A JSON value.
    Json(Value),
    /// Plain text.
    Text(String),
}

/// The outcome of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The call it answers.
    pub call_id: String,
    /// What the tool gave back.
    pub output: ToolOutput,
    /// The tool failed.
    pub is_error: bool,
}

/// Token counts of a partner's model calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The model's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tokens read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Tokens written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Tokens spent thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Add these counts to the running `sums` of a turn, under a door's names for the input,
    /// output and reasoning tokens (`keys`, in that order); the model named last is the one
    /// kept. A count sums saturating; one the partner did not give adds nothing.
    pub fn add_to(&self, sums: &mut JsonObject, keys: [&str; 3]) {
        if let Some(model) = &self.model {
            sums.insert("model".into(), json!(model));
        }
        let counts = [self.input_tokens, self.output_tokens, self.reasoning_tokens];
        for (key, n) in keys.into_iter().zip(counts) {
            if let Some(n) = n {
                let sum = sums.get(key).and_then(Value::as_u64).unwrap_or(0);
                sums.insert(key.into(), json!(sum.saturating_add(n)));
            }
        }
    }
}

/// Something a partner did that is shown but is neither a status nor a product.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Activity {
    /// It called a tool.
    ToolCall(ToolCall),
    /// A tool answered.
    ToolResult(ToolResult),
    /// It used tokens.
    Usage(Usage),
}

impl Activity {
    /// Its [`KIND`]: `tool-call`, `tool-result` or `usage`.
    pub fn kind(&self) -> &'static str {
        match self {
            Activity::ToolCall(_) => "tool-call",
            Activity::ToolResult(_) => "tool-result",
            Activity::Usage(_) => "usage",
        }
    }

    /// Its fields as a JSON object (camelCase, as the doors show them).
    pub fn fields(&self) -> JsonObject {
        let value = match self {
            Activity::ToolCall(c) => serde_json::to_value(c),
            Activity::ToolResult(r) => Ok(json!({
                "callId": r.call_id,
                "output": match &r.output { ToolOutput::Json(v) => v.clone(), ToolOutput::Text(t) => Value::String(t.clone()) },
                "isError": r.is_error,
            })),
            Activity::Usage(u) => serde_json::to_value(u),
        };
        match value {
            Ok(Value::Object(m)) => m,
            _ => JsonObject::new(),
        }
    }

    /// How a door shows it as one DataItem: its fields, marked with its kind.
    pub fn data_item(&self) -> DataItem {
        DataItem::Data {
            data: self.fields(),
            metadata: Some(kind_only(self.kind())),
        }
    }

    /// How a door whose wire has statuses but no activity shows it: a `working` status at `at`
    /// whose one item is [`Activity::data_item`] (the task's own status does not change).
    pub fn as_status(&self, at: Timestamp) -> TaskStatus {
        TaskStatus {
            state: TaskState::Working,
            state_changed_at: at,
            data_items: vec![self.data_item()],
        }
    }

    /// The bytes it counts against a task's activity budget (what a partner chose to send).
    pub fn bytes(&self) -> u64 {
        let n = match self {
            Activity::ToolCall(c) => {
                c.call_id.len()
                    + c.name.len()
                    + serde_json::to_string(&c.arguments).map_or(0, |t| t.len())
            }
            Activity::ToolResult(r) => {
                r.call_id.len()
                    + match &r.output {
                        ToolOutput::Json(v) => v.to_string().len(),
                        ToolOutput::Text(t) => t.len(),
                    }
            }
            Activity::Usage(u) => u.model.as_ref().map_or(0, String::len) + 24,
        };
        n as u64
    }
}

/// A form: what a partner asks for, as a JSON Schema of an object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    /// The answer comes back tagged with it.
    pub request_id: String,
    /// A short title.
    pub title: String,
    /// What the form is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema the answer must satisfy.
    pub schema: JsonObject,
}

impl InputRequest {
    /// The contract's bounds on the identifiers and texts (the schema is checked where it is
    /// parsed, and compiled by the engine).
    pub fn check(&self) -> Result<(), String> {
        let id = &self.request_id;
        if id.is_empty()
            || id.len() > 128
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err("a request id must be 1-128 bytes of A-Z a-z 0-9 . _ -".into());
        }
        if self.title.is_empty() || self.title.len() > 256 {
            return Err("a form title must be 1-256 bytes".into());
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.len() > MAX_MESSAGE_BYTES)
        {
            return Err(format!(
                "a form description may be at most {MAX_MESSAGE_BYTES} bytes"
            ));
        }
        if self.schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("a form schema must have \"type\": \"object\" at its top level".into());
        }
        Ok(())
    }

    /// The items of the awaiting-input status that asks it: a text for people (title and
    /// description), then the request itself, marked `input-request`.
    pub fn items(&self) -> Vec<DataItem> {
        let text = match &self.description {
            Some(d) => format!("{}\n\n{d}", self.title),
            None => self.title.clone(),
        };
        let data = match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        vec![
            DataItem::text(text),
            DataItem::Data {
                data,
                metadata: Some(kind_only("input-request")),
            },
        ]
    }

    /// The request among a status's items, if it asks one.
    pub fn of(items: &[DataItem]) -> Option<InputRequest> {
        items.iter().find_map(|item| match item {
            DataItem::Data { data, .. } if kind_of(item) == Some("input-request") => {
                serde_json::from_value(Value::Object(data.clone())).ok()
            }
            _ => None,
        })
    }
}

/// The metadata of a form answer to `request_id`.
pub fn answer_metadata(request_id: &str) -> JsonObject {
    let mut m = kind_only("input-answer");
    m.insert(REQUEST_ID.into(), Value::String(request_id.into()));
    m
}

/// Whether `item` is marked as the answer to `request_id`.
pub fn is_answer_to(item: &DataItem, request_id: &str) -> bool {
    match item {
        DataItem::Data {
            metadata: Some(m), ..
        } => {
            m.get(KIND).and_then(Value::as_str) == Some("input-answer")
                && m.get(REQUEST_ID).and_then(Value::as_str) == Some(request_id)
        }
        _ => false,
    }
}

/// A failure with a code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// `A-Z 0-9 _`, 1-64 bytes.
    pub code: String,
    /// For people.
    pub message: String,
    /// Trying again may succeed.
    pub retryable: bool,
    /// More detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<JsonObject>,
}

impl Failure {
    /// The contract's bounds on the code and the message.
    pub fn check(&self) -> Result<(), String> {
        let code = &self.code;
        if code.is_empty()
            || code.len() > 64
            || !code
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err("a failure code must be 1-64 bytes of A-Z 0-9 _".into());
        }
        if self.message.len() > MAX_MESSAGE_BYTES {
            return Err(format!(
                "a failure message may be at most {MAX_MESSAGE_BYTES} bytes"
            ));
        }
        Ok(())
    }

    /// The items of the failed status: the message for people, then the failure, marked
    /// `failure`.
    pub fn items(&self) -> Vec<DataItem> {
        let data = match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        vec![
            DataItem::text(self.message.clone()),
            DataItem::Data {
                data,
                metadata: Some(kind_only("failure")),
            },
        ]
    }

    /// The failure among a status's items, if there is one.
    pub fn of(items: &[DataItem]) -> Option<Failure> {
        items.iter().find_map(|item| match item {
            DataItem::Data { data, .. } if kind_of(item) == Some("failure") => {
                serde_json::from_value(Value::Object(data.clone())).ok()
            }
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str, channel: Channel) -> DataItem {
        TextDelta {
            product_id: "p".into(),
            channel,
            text: text.into(),
            last: false,
        }
        .into_chunk()
        .product
        .data_items
        .remove(0)
    }

    #[test]
    fn deltas_of_a_channel_merge_and_others_do_not() {
        let items = vec![
            delta("thin", Channel::Reasoning),
            delta("king", Channel::Reasoning),
            delta("Hel", Channel::Answer),
            delta("lo", Channel::Answer),
            DataItem::text("plain"),
            DataItem::text("plain"),
            delta("!", Channel::Answer),
        ];
        let merged = merge_text(items);
        let texts: Vec<_> = merged
            .iter()
            .map(|i| match i {
                DataItem::Text { text, .. } => text.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(texts, ["thinking", "Hello", "plain", "plain", "!"]);
        assert_eq!(kind_of(&merged[1]), Some("answer"));
    }

    #[test]
    fn bounds_are_checked() {
        let mut d = TextDelta {
            product_id: String::new(),
            channel: Channel::Answer,
            text: "x".into(),
            last: false,
        };
        assert!(d.check().is_err());
        d.product_id = "answer".into();
        assert!(d.check().is_ok());
        d.text.clear();
        assert!(d.check().unwrap_err().contains("empty"));
        d.last = true;
        assert!(d.check().is_ok());
        d.text = "x".repeat(MAX_DELTA_BYTES + 1);
        assert!(d.check().is_err());

        let mut f = Failure {
            code: "RATE_LIMITED".into(),
            message: "slow down".into(),
            retryable: true,
            detail: None,
        };
        assert!(f.check().is_ok());
        f.code = "rate-limited".into();
        assert!(f.check().is_err());

        let form = |schema: Value, id: &str| InputRequest {
            request_id: id.into(),
            title: "Trip".into(),
            description: None,
            schema: schema.as_object().cloned().unwrap_or_default(),
        };
        assert!(form(json!({"type": "object"}), "trip").check().is_ok());
        assert!(form(json!({"type": "string"}), "trip").check().is_err());
        assert!(form(json!({"type": "object"}), "a b").check().is_err());
    }

    #[test]
    fn forms_and_failures_are_found_again_in_their_status_items() {
        let request = InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: Some("Where to?".into()),
            schema: json!({"type": "object"}).as_object().cloned().unwrap(),
        };
        let items = request.items();
        assert_eq!(items[0], DataItem::text("Trip\n\nWhere to?"));
        assert_eq!(InputRequest::of(&items), Some(request));
        let failure = Failure {
            code: "X".into(),
            message: "m".into(),
            retryable: false,
            detail: Some(json!({"a": 1}).as_object().cloned().unwrap()),
        };
        assert_eq!(Failure::of(&failure.items()), Some(failure));
        let answer = DataItem::Data {
            data: JsonObject::new(),
            metadata: Some(answer_metadata("trip")),
        };
        assert!(is_answer_to(&answer, "trip"));
        assert!(!is_answer_to(&answer, "other"));
    }

    #[test]
    fn a_status_says_its_unmarked_items_and_its_texts_one_a_line() {
        let failure = Failure {
            code: "X".into(),
            message: "no tea".into(),
            retryable: false,
            detail: None,
        };
        let mut items = failure.items();
        items.push(DataItem::text("try later"));
        items.push(DataItem::Data {
            data: JsonObject::new(),
            metadata: None,
        });
        let said = said(&items);
        assert_eq!(said.len(), 3, "{said:?}");
        assert_eq!(text_of(&said), "no tea\ntry later");
        assert_eq!(text_of(&[]), "");
    }

    #[test]
    fn usage_sums_under_a_doors_names() {
        let mut sums = JsonObject::new();
        let keys = ["in", "out", "think"];
        Usage {
            model: Some("a".into()),
            input_tokens: Some(5),
            output_tokens: Some(u64::MAX),
            reasoning_tokens: None,
        }
        .add_to(&mut sums, keys);
        Usage {
            model: Some("b".into()),
            input_tokens: Some(2),
            output_tokens: Some(1),
            reasoning_tokens: None,
        }
        .add_to(&mut sums, keys);
        Usage::default().add_to(&mut sums, keys);
        assert_eq!(
            Value::Object(sums),
            json!({"model": "b", "in": 7, "out": u64::MAX})
        );
    }

    #[test]
    fn activity_renders_as_a_marked_data_item() {
        let call = Activity::ToolCall(ToolCall {
            call_id: "c1".into(),
            name: "lookup".into(),
            arguments: json!({"query": "x"}).as_object().cloned().unwrap(),
        });
        assert_eq!(
            serde_json::to_value(call.data_item()).unwrap(),
            json!({"type": "data", "data": {"callId": "c1", "name": "lookup", "arguments": {"query": "x"}},
                   "metadata": {"aiphost.kind": "tool-call"}})
        );
        let result = Activity::ToolResult(ToolResult {
            call_id: "c1".into(),
            output: ToolOutput::Text("ok".into()),
            is_error: false,
        });
        assert_eq!(
            Value::Object(result.fields()),
            json!({"callId": "c1", "output": "ok", "isError": false})
        );
        let text = serde_json::to_string(&result).unwrap();
        assert_eq!(serde_json::from_str::<Activity>(&text).unwrap(), result);
    }
}
