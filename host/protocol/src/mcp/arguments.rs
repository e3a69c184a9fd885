//! A call's arguments against its tool's input schema, and the start's items they become.
//! - The default schema (`{"text": string, required; "data": object}`, nothing else): the text,
//!   then the data as a data item ([`default_items`]).
//! - A skill's own `input-schema` (its manifest's): the whole arguments object as one data item
//!   ([`schema_items`]); the check is the schema's, compiled by the engine, handed in.
//!
//! Arguments that fail are the call's result, not a JSON-RPC error (the spec: input validation
//! errors are tool execution errors, so the model can correct itself), naming each failing place
//! as a JSON Pointer, at most 20.

use aiphost_model::DataItem;
use rmcp::model::JsonObject;
use serde_json::{Value, json};

/// The most failing places one answer names.
const MAX_ERRORS: usize = 20;

/// One failing place of the arguments.
#[derive(Debug, PartialEq)]
pub struct ArgumentError {
    /// A JSON Pointer into the arguments (`/text`).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

/// The items of arguments that fit the default schema, or every place where they do not.
pub fn default_items(arguments: Option<&JsonObject>) -> Result<Vec<DataItem>, Vec<ArgumentError>> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    let mut errors = Vec::new();
    let mut wrong = |path: String, message: &str| {
        errors.push(ArgumentError {
            path,
            message: message.into(),
        })
    };
    let text = match arguments.get("text") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => {
            wrong("/text".into(), "must be a string");
            None
        }
        None => {
            wrong("/text".into(), "is required");
            None
        }
    };
    let data = match arguments.get("data") {
        Some(Value::Object(data)) => Some(data.clone()),
        Some(_) => {
            wrong("/data".into(), "must be an object");
            None
        }
        None => None,
    };
    for key in arguments
        .keys()
        .filter(|k| !matches!(k.as_str(), "text" | "data"))
    {
        wrong(
            format!("/{}", pointer_token(key)),
            "is not an argument of this tool (it takes text and data)",
        );
    }
    errors.truncate(MAX_ERRORS);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut items = vec![DataItem::text(text.unwrap_or_default())];
    if let Some(data) = data {
        items.push(DataItem::Data {
            data,
            metadata: None,
        });
    }
    Ok(items)
}

/// The items of arguments checked by a skill's own schema (`check` says where they fail): the
/// arguments object, whole, as one data item (absent arguments are the empty object).
pub fn schema_items(
    arguments: Option<&JsonObject>,
    check: impl FnOnce(&Value) -> Vec<ArgumentError>,
) -> Result<Vec<DataItem>, Vec<ArgumentError>> {
    let arguments = Value::Object(arguments.cloned().unwrap_or_default());
    let mut errors = check(&arguments);
    errors.truncate(MAX_ERRORS);
    if !errors.is_empty() {
        return Err(errors);
    }
    let Value::Object(data) = arguments else {
        return Ok(Vec::new());
    };
    Ok(vec![DataItem::Data {
        data,
        metadata: None,
    }])
}

/// The facts of a wrong-arguments result: every place, and one line saying them all.
pub fn facts(errors: &[ArgumentError]) -> Value {
    let reason = errors
        .iter()
        .map(|e| format!("arguments{}: {}", e.path, e.message))
        .collect::<Vec<_>>()
        .join("; ");
    let list: Vec<Value> = errors
        .iter()
        .map(|e| json!({"path": e.path, "message": e.message}))
        .collect();
    json!({"reason": reason, "errors": list})
}

/// `key` as one JSON Pointer reference token (RFC 6901: `~` is `~0`, `/` is `~1`).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn text_and_data_become_the_start_items() {
        let items = default_items(Some(&args(json!({"text": "hi", "data": {"a": 1}})))).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], DataItem::text("hi"));
        let items = default_items(Some(&args(json!({"text": ""})))).unwrap();
        assert_eq!(items, vec![DataItem::text("")]);
    }

    #[test]
    fn every_failing_place_is_named() {
        let errors = default_items(None).unwrap_err();
        assert_eq!(
            errors,
            vec![ArgumentError {
                path: "/text".into(),
                message: "is required".into()
            }]
        );
        let errors =
            default_items(Some(&args(json!({"text": 3, "data": [], "a/b": true})))).unwrap_err();
        let paths: Vec<_> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["/text", "/data", "/a~1b"]);
        let facts = facts(&errors);
        assert_eq!(
            facts["reason"],
            "arguments/text: must be a string; arguments/data: must be an object; \
             arguments/a~1b: is not an argument of this tool (it takes text and data)"
        );
        assert_eq!(
            facts["errors"][0],
            json!({"path": "/text", "message": "must be a string"})
        );
    }

    #[test]
    fn a_skills_schema_takes_the_whole_object_as_one_item() {
        let trip = args(json!({"city": "Oslo", "days": 3}));
        let items = schema_items(Some(&trip), |_| Vec::new()).unwrap();
        assert_eq!(
            items,
            vec![DataItem::Data {
                data: trip.clone(),
                metadata: None
            }]
        );
        // Absent arguments are checked (and sent) as `{}`.
        let mut seen = None;
        let items = schema_items(None, |v| {
            seen = Some(v.clone());
            Vec::new()
        })
        .unwrap();
        assert_eq!(seen, Some(json!({})));
        assert_eq!(items.len(), 1);
        let wrong = |v: &Value| {
            assert_eq!(v["days"], 0);
            (0..30)
                .map(|i| ArgumentError {
                    path: format!("/k{i}"),
                    message: "no".into(),
                })
                .collect()
        };
        let errors = schema_items(Some(&args(json!({"days": 0}))), wrong).unwrap_err();
        assert_eq!(errors.len(), MAX_ERRORS);
        assert_eq!(errors[0].path, "/k0");
    }

    #[test]
    fn at_most_twenty_places() {
        let many: JsonObject = (0..30).map(|i| (format!("k{i}"), json!(i))).collect();
        let errors = default_items(Some(&many)).unwrap_err();
        assert_eq!(errors.len(), MAX_ERRORS);
    }
}
