//! A2A `Part`s and AIP DataItems, both ways.
//!
//! A part holds one of `text`, `raw` (base64), `url` or `data`, with an optional `mediaType`,
//! `filename` and `metadata`. Text, file (inline or by URI) and data items carry the same, with
//! one difference: an A2A `data` part may hold any JSON value, an AIP data item only an object.
//! Any other value is wrapped as `{"value": …}` with the item's metadata saying so
//! ([`WRAPPED`]), and unwrapped again on the way out.
//!
//! A part's `data` is a `google.protobuf.Value`, whose numbers are all doubles: ProtoJSON writers
//! (the official Python SDK among them) send the integer 3 as `3.0`. Such a value is read as the
//! integer it is ([`integral_numbers`]), so that a partner reading a form answer as integers (what
//! its schema's `"type": "integer"` asks, and what the host's check of it already grants `3.0`)
//! gets one.

use super::error::A2aError;
use aiphost_model::{DataItem, JsonObject};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The metadata key marking a data item that wraps a non-object A2A `data` value.
pub const WRAPPED: &str = "a2aDataValue";

/// Read the A2A part at `path` as a DataItem.
pub fn parse_part(value: &Value, path: &str) -> Result<DataItem, A2aError> {
    let Value::Object(obj) = value else {
        return Err(A2aError::invalid_params(path, "a part must be an object"));
    };
    let text_of = |key: &str| -> Result<Option<String>, A2aError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(A2aError::invalid_params(
                &format!("{path}.{key}"),
                "must be a string",
            )),
        }
    };
    let metadata = match obj.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            return Err(A2aError::invalid_params(
                &format!("{path}.metadata"),
                "must be an object",
            ));
        }
    };
    let media_type = text_of("mediaType")?;
    let filename = text_of("filename")?;
    let present: Vec<&str> = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| obj.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    let [content] = present.as_slice() else {
        return Err(A2aError::invalid_params(
            path,
            format!(
                "a part holds exactly one of text, raw, url and data; this one holds {}",
                if present.is_empty() {
                    "none".to_string()
                } else {
                    present.join(", ")
                }
            ),
        ));
    };
    Ok(match *content {
        "text" => DataItem::Text {
            text: text_of("text")?.unwrap_or_default(),
            metadata,
        },
        "raw" => {
            let raw = text_of("raw")?.unwrap_or_default();
            base64::engine::general_purpose::STANDARD
                .decode(&raw)
                .map_err(|e| {
                    A2aError::invalid_params(
                        &format!("{path}.raw"),
                        format!("is not valid base64: {e}"),
                    )
                })?;
            DataItem::File {
                name: filename,
                mime_type: media_type,
                uri: None,
                bytes: Some(raw),
                metadata,
            }
        }
        "url" => DataItem::File {
            name: filename,
            mime_type: media_type,
            uri: text_of("url")?,
            bytes: None,
            metadata,
        },
        _ => match obj.get("data").cloned().map(integral_numbers) {
            Some(Value::Object(data)) => DataItem::Data { data, metadata },
            Some(other) => {
                let mut metadata = metadata.unwrap_or_default();
                metadata.insert(WRAPPED.into(), Value::Bool(true));
                DataItem::Data {
                    data: Map::from_iter([("value".to_string(), other)]),
                    metadata: Some(metadata),
                }
            }
            None => return Err(A2aError::invalid_params(path, "the part's data is missing")),
        },
    })
}

/// The largest magnitude up to which every integer is exactly a double (2^53).
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// `value` with every number that is a whole double within [`EXACT_INTEGERS`] written as an
/// integer (`3.0` → `3`), at any depth; other numbers (fractions, larger magnitudes, where a
/// double no longer names one integer) are kept as they came.
fn integral_numbers(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Number(n) if n.is_f64() => {
                if let Some(x) = n
                    .as_f64()
                    .filter(|x| x.fract() == 0.0 && x.abs() <= EXACT_INTEGERS)
                {
                    // Exact: a whole double within 2^53 converts to i64 without loss.
                    *value = Value::from(x as i64);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            Value::Object(fields) => fields.values_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// Read the `parts` array at `path` (it must hold at least one part).
pub fn parse_parts(value: Option<&Value>, path: &str) -> Result<Vec<DataItem>, A2aError> {
    match value {
        Some(Value::Array(parts)) if !parts.is_empty() => parts
            .iter()
            .enumerate()
            .map(|(i, part)| parse_part(part, &format!("{path}[{i}]")))
            .collect(),
        Some(Value::Array(_)) => Err(A2aError::invalid_params(
            path,
            "must hold at least one part",
        )),
        None | Some(Value::Null) => Err(A2aError::invalid_params(path, "is required")),
        Some(_) => Err(A2aError::invalid_params(path, "must be an array of parts")),
    }
}

/// The A2A part of a DataItem.
pub fn render_part(item: &DataItem) -> Value {
    let mut part = Map::new();
    let metadata: Option<&JsonObject> = match item {
        DataItem::Text { text, metadata } => {
            part.insert("text".into(), json!(text));
            metadata.as_ref()
        }
        DataItem::File {
            name,
            mime_type,
            uri,
            bytes,
            metadata,
        } => {
            match (bytes, uri) {
                (Some(b), _) => part.insert("raw".into(), json!(b)),
                (None, uri) => part.insert("url".into(), json!(uri.clone().unwrap_or_default())),
            };
            if let Some(m) = mime_type {
                part.insert("mediaType".into(), json!(m));
            }
            if let Some(n) = name {
                part.insert("filename".into(), json!(n));
            }
            metadata.as_ref()
        }
        DataItem::Data { data, metadata } => {
            let wrapped = metadata
                .as_ref()
                .is_some_and(|m| m.get(WRAPPED) == Some(&Value::Bool(true)));
            let value = match data.get("value") {
                Some(inner) if wrapped => inner.clone(),
                _ => Value::Object(data.clone()),
            };
            part.insert("data".into(), value);
            metadata.as_ref()
        }
    };
    let metadata: Option<Map<String, Value>> = metadata
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != WRAPPED)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>()
        })
        .filter(|m| !m.is_empty());
    if let Some(m) = metadata {
        part.insert("metadata".into(), Value::Object(m));
    }
    Value::Object(part)
}

/// The A2A parts of DataItems.
pub fn render_parts(items: &[DataItem]) -> Value {
    Value::Array(items.iter().map(render_part).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_part_goes_there_and_back() {
        let parts = json!([
            {"text": "hi", "metadata": {"lang": "en"}},
            {"raw": "dGNr", "mediaType": "text/plain", "filename": "output.txt"},
            {"url": "https://example.com/o.txt", "mediaType": "text/plain"},
            {"data": {"key": "value", "count": 42}},
            {"data": [1, 2]},
        ]);
        let items = parse_parts(Some(&parts), "message.parts").unwrap();
        assert_eq!(items[0].mime_type(), "text/plain");
        assert_eq!(items[1].mime_type(), "text/plain");
        assert!(matches!(&items[4], DataItem::Data { data, .. } if data["value"] == json!([1, 2])));
        assert_eq!(render_parts(&items), parts);
    }

    #[test]
    fn whole_doubles_of_data_are_read_as_integers() {
        // What the official Python SDK sends for {"city": "Rome", "days": 3, ...}.
        let parts = json!([
            {"data": {"city": "Rome", "days": 3.0, "nested": [2.0, {"n": -7.0}], "half": 2.5,
                      "huge": 1e300}},
            {"data": 4.0},
        ]);
        let items = parse_parts(Some(&parts), "message.parts").unwrap();
        let DataItem::Data { data, .. } = &items[0] else {
            panic!("a data item: {items:?}");
        };
        assert_eq!(data["days"].as_u64(), Some(3));
        assert_eq!(data["nested"], json!([2, {"n": -7}]));
        assert_eq!(data["half"], json!(2.5));
        assert_eq!(data["huge"], json!(1e300));
        assert!(
            matches!(&items[1], DataItem::Data { data, .. } if data["value"].as_i64() == Some(4))
        );
    }

    #[test]
    fn malformed_parts_name_where() {
        let two = json!([{"text": "a", "url": "b"}]);
        let e = parse_parts(Some(&two), "message.parts").unwrap_err();
        assert_eq!(e.metadata["field"], "message.parts[0]");
        let bad = json!([{"raw": "%%%"}]);
        let e = parse_parts(Some(&bad), "p").unwrap_err();
        assert_eq!(e.metadata["field"], "p[0].raw");
        assert!(parse_parts(Some(&json!([])), "p").is_err());
        assert!(parse_parts(None, "p").is_err());
    }
}
