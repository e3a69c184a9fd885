//! Agent API contents (`TextContent`, `DataContent`, `ImageContent`, `FileContent`) and the
//! model's `DataItem`s, both ways.
//!
//! Kinds the model has no item for (`audio`, `video`, `refusal`) are refused by name rather than
//! dropped: a partner must never answer a question it was not shown.

use aiphost_model::{DataItem, InvalidField, JsonObject};
use serde_json::{Value, json};

/// The DataItem of one content of a user message at `path` (`input[k].content[i]`).
pub fn item_of_content(value: &Value, path: &str) -> Result<DataItem, InvalidField> {
    let Value::Object(content) = value else {
        return Err(InvalidField::new(path, "a content must be an object"));
    };
    let string = |key: &str| -> Result<Option<String>, InvalidField> {
        match content.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(InvalidField::new(
                &format!("{path}.{key}"),
                "must be a string",
            )),
        }
    };
    let kind = match content.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        _ => {
            return Err(InvalidField::new(
                &format!("{path}.type"),
                "is required: text, data, image or file",
            ));
        }
    };
    let required = |key: &str| -> Result<String, InvalidField> {
        string(key)?.ok_or_else(|| {
            InvalidField::new(
                &format!("{path}.{key}"),
                format!("is required in a {kind} content"),
            )
        })
    };
    Ok(match kind {
        "text" => DataItem::text(required("text")?),
        "data" => match content.get("data") {
            Some(Value::Object(data)) => DataItem::Data {
                data: data.clone(),
                metadata: None,
            },
            _ => {
                return Err(InvalidField::new(
                    &format!("{path}.data"),
                    "must be an object in a data content",
                ));
            }
        },
        "image" => DataItem::File {
            name: None,
            mime_type: None,
            uri: Some(required("image_url")?),
            bytes: None,
            metadata: None,
        },
        "file" => {
            let name = string("filename")?;
            match (string("file_url")?, string("file_data")?) {
                (Some(uri), None) => DataItem::File {
                    name,
                    mime_type: None,
                    uri: Some(uri),
                    bytes: None,
                    metadata: None,
                },
                (None, Some(data)) => DataItem::File {
                    name,
                    mime_type: None,
                    uri: None,
                    bytes: Some(data),
                    metadata: None,
                },
                _ => {
                    return Err(InvalidField::new(
                        path,
                        "a file content holds exactly one of file_url and file_data",
                    ));
                }
            }
        }
        "audio" | "video" | "refusal" => {
            return Err(InvalidField::new(
                &format!("{path}.type"),
                format!("{kind} contents are not taken: send text, data, image or file"),
            ));
        }
        other => {
            return Err(InvalidField::new(
                &format!("{path}.type"),
                format!("{other:?} is not a content type: text, data, image or file"),
            ));
        }
    })
}

/// The Agent API content of an item, as a completed content (`delta: false`) at `index` of the
/// message `msg_id`.
pub fn render_content(item: &DataItem, index: usize, msg_id: &str) -> Value {
    let mut content = match item {
        DataItem::Text { text, .. } => json!({"type": "text", "text": text}),
        DataItem::Data { data, .. } => json!({"type": "data", "data": data}),
        DataItem::File {
            name, uri, bytes, ..
        } => {
            let mut file = JsonObject::new();
            file.insert("type".into(), json!("file"));
            if let Some(uri) = uri {
                file.insert("file_url".into(), json!(uri));
            }
            if let Some(bytes) = bytes {
                file.insert("file_data".into(), json!(bytes));
            }
            if let Some(name) = name {
                file.insert("filename".into(), json!(name));
            }
            Value::Object(file)
        }
    };
    content["object"] = json!("content");
    content["index"] = json!(index);
    content["delta"] = json!(false);
    content["msg_id"] = json!(msg_id);
    content["status"] = json!("completed");
    content
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_become_items_and_back() {
        let text = item_of_content(&json!({"type": "text", "text": "hi"}), "c").unwrap();
        assert_eq!(text, DataItem::text("hi"));
        let data =
            item_of_content(&json!({"type": "data", "data": {"city": "Oslo"}}), "c").unwrap();
        let rendered = render_content(&data, 1, "msg_1");
        assert_eq!(
            rendered,
            json!({"type": "data", "data": {"city": "Oslo"}, "object": "content", "index": 1,
                   "delta": false, "msg_id": "msg_1", "status": "completed"})
        );
        let image = item_of_content(
            &json!({"type": "image", "image_url": "https://x/y.png"}),
            "c",
        )
        .unwrap();
        assert!(matches!(image, DataItem::File { uri: Some(_), .. }));
        let file = item_of_content(
            &json!({"type": "file", "file_data": "aGk=", "filename": "a.txt"}),
            "c",
        )
        .unwrap();
        assert_eq!(render_content(&file, 0, "m")["file_data"], "aGk=");
    }

    #[test]
    fn wrong_contents_name_their_field() {
        let field = |v: Value| {
            item_of_content(&v, "input[0].content[2]")
                .unwrap_err()
                .field
        };
        assert_eq!(field(json!({"text": "x"})), "input[0].content[2].type");
        assert_eq!(field(json!({"type": "text"})), "input[0].content[2].text");
        assert_eq!(
            field(json!({"type": "data", "data": [1]})),
            "input[0].content[2].data"
        );
        assert_eq!(field(json!({"type": "audio"})), "input[0].content[2].type");
        assert_eq!(field(json!({"type": "file"})), "input[0].content[2]");
        assert_eq!(field(json!("text")), "input[0].content[2]");
    }
}
