//! Generated bindings for the `aiphost:partner` world and conversions to and from the host's model.

use aiphost_model::{DataItem, JsonObject, Product, ProductChunk, TaskState};
use base64::Engine as _;

wasmtime::component::bindgen!({
    world: "partner",
    path: "../../wit",
    imports: { default: async },
    exports: { default: async },
});

pub use self::aiphost::partner::types as wit;

impl From<TaskState> for wit::TaskState {
    fn from(s: TaskState) -> Self {
        match s {
            TaskState::Accepted => wit::TaskState::Accepted,
            TaskState::Working => wit::TaskState::Working,
            TaskState::AwaitingInput => wit::TaskState::AwaitingInput,
            TaskState::AwaitingCompletion => wit::TaskState::AwaitingCompletion,
            TaskState::Completed => wit::TaskState::Completed,
            TaskState::Canceled => wit::TaskState::Canceled,
            TaskState::Failed => wit::TaskState::Failed,
            TaskState::Rejected => wit::TaskState::Rejected,
        }
    }
}

impl From<wit::TaskState> for TaskState {
    fn from(s: wit::TaskState) -> Self {
        match s {
            wit::TaskState::Accepted => TaskState::Accepted,
            wit::TaskState::Working => TaskState::Working,
            wit::TaskState::AwaitingInput => TaskState::AwaitingInput,
            wit::TaskState::AwaitingCompletion => TaskState::AwaitingCompletion,
            wit::TaskState::Completed => TaskState::Completed,
            wit::TaskState::Canceled => TaskState::Canceled,
            wit::TaskState::Failed => TaskState::Failed,
            wit::TaskState::Rejected => TaskState::Rejected,
        }
    }
}

/// A host DataItem as the guest sees it. File bytes were checked as base64 on the way in.
pub fn item_to_guest(item: &DataItem) -> wit::DataItem {
    let json_text = |m: &Option<JsonObject>| {
        m.as_ref()
            .map(|m| serde_json::Value::Object(m.clone()).to_string())
    };
    match item {
        DataItem::Text { text, metadata } => wit::DataItem {
            kind: wit::DataKind::Text(text.clone()),
            metadata: json_text(metadata),
        },
        DataItem::File {
            name,
            mime_type,
            uri,
            bytes,
            metadata,
        } => {
            let content = match (uri, bytes) {
                (_, Some(b64)) => wit::FileContent::Bytes(
                    base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .unwrap_or_default(),
                ),
                (Some(uri), None) => wit::FileContent::Uri(uri.clone()),
                (None, None) => wit::FileContent::Uri(String::new()),
            };
            wit::DataItem {
                kind: wit::DataKind::File(wit::FileItem {
                    name: name.clone(),
                    mime_type: mime_type.clone(),
                    content,
                }),
                metadata: json_text(metadata),
            }
        }
        DataItem::Data { data, metadata } => wit::DataItem {
            kind: wit::DataKind::Data(serde_json::Value::Object(data.clone()).to_string()),
            metadata: json_text(metadata),
        },
    }
}

fn json_object(text: &str, what: &str) -> Result<JsonObject, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("{what} must be a JSON object")),
        Err(e) => Err(format!("{what} is not valid JSON: {e}")),
    }
}

/// A DataItem reported by a guest, checked: `data` and `metadata` must be JSON objects nested at
/// most [`aiphost_model::depth::MAX_JSON_DEPTH`] levels (the host stores them).
pub fn item_from_guest(item: wit::DataItem) -> Result<DataItem, String> {
    let item = item_from_guest_unchecked(item)?;
    item.check_depth("a data item").map_err(|e| e.to_string())?;
    Ok(item)
}

fn item_from_guest_unchecked(item: wit::DataItem) -> Result<DataItem, String> {
    let metadata = item
        .metadata
        .as_deref()
        .map(|m| json_object(m, "metadata"))
        .transpose()?;
    Ok(match item.kind {
        wit::DataKind::Text(text) => DataItem::Text { text, metadata },
        wit::DataKind::Data(text) => DataItem::Data {
            data: json_object(&text, "a data item")?,
            metadata,
        },
        wit::DataKind::File(file) => {
            let (uri, bytes) = match file.content {
                wit::FileContent::Uri(uri) => (Some(uri), None),
                wit::FileContent::Bytes(b) => (
                    None,
                    Some(base64::engine::general_purpose::STANDARD.encode(b)),
                ),
            };
            DataItem::File {
                name: file.name,
                mime_type: file.mime_type,
                uri,
                bytes,
                metadata,
            }
        }
    })
}

/// Convert a list of guest items, failing on the first malformed one.
pub fn items_from_guest(items: Vec<wit::DataItem>) -> Result<Vec<DataItem>, String> {
    items.into_iter().map(item_from_guest).collect()
}

/// A product chunk reported by a guest.
pub fn chunk_from_guest(chunk: wit::ProductChunk) -> Result<ProductChunk, String> {
    let p = chunk.product;
    if p.id.is_empty() || p.id.len() > 256 || p.id.chars().any(char::is_control) {
        return Err("a product id must be 1-256 bytes with no control characters".into());
    }
    Ok(ProductChunk {
        product: Product {
            id: p.id,
            name: p.name,
            description: p.description,
            data_items: items_from_guest(p.data_items)?,
        },
        append: chunk.append,
        last_chunk: chunk.last_chunk,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_roundtrip_through_the_guest_form() {
        let items: Vec<DataItem> = serde_json::from_value(json!([
            {"type": "text", "text": "hi", "metadata": {"a": 1}},
            {"type": "file", "name": "f", "mimeType": "text/csv", "bytes": "aGVsbG8="},
            {"type": "file", "uri": "https://x/y"},
            {"type": "data", "data": {"k": [1, 2]}}
        ]))
        .unwrap();
        let back: Vec<DataItem> = items
            .iter()
            .map(item_to_guest)
            .map(|i| item_from_guest(i).unwrap())
            .collect();
        assert_eq!(back, items);
    }

    #[test]
    fn guest_items_must_carry_objects() {
        let bad = wit::DataItem {
            kind: wit::DataKind::Data("[1,2]".into()),
            metadata: None,
        };
        assert!(item_from_guest(bad).unwrap_err().contains("JSON object"));
        let bad_meta = wit::DataItem {
            kind: wit::DataKind::Text("x".into()),
            metadata: Some("{oops".into()),
        };
        assert!(item_from_guest(bad_meta).unwrap_err().contains("metadata"));
    }
}
