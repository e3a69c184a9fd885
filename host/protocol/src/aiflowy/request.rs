//! The AIFlowy door's requests, read and checked: a chat turn (AIFlowy's `BotController` body:
//! `prompt`, `botId`, `conversationId`, `messages`, `attachments`), a form submit (seed §12:
//! `conversation_id`, `form_id`, `values`), and the conversation a query names.
//!
//! A conversation id is AIFlowy's `BigInteger` or the seed's string: a whole number is kept as its
//! decimal text, so `42` and `"42"` are one conversation (and one AIP `sessionId`). Both key
//! spellings are read (`conversationId` and `conversation_id`, `formId` and `form_id`): the seed's
//! text and AIFlowy's code disagree, and a client of either must be understood.

use aiphost_model::{DataItem, InvalidField, JsonObject, check_task_id};
use serde_json::{Map, Value};

/// A chat turn, read.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The conversation (`None`: the door makes one up, a new conversation).
    pub conversation_id: Option<String>,
    /// The turn: the prompt as text, then each attachment as a file.
    pub items: Vec<DataItem>,
}

/// A form submit, read.
#[derive(Clone, Debug, PartialEq)]
pub struct FormSubmit {
    /// The conversation whose task asked.
    pub conversation_id: String,
    /// The form answered.
    pub form_id: String,
    /// The answer.
    pub values: JsonObject,
}

/// Read a chat body. `botId` and `messages` are AIFlowy's and mean nothing here (the partner is
/// the URL's; the conversation's task holds its history): they are accepted when well formed.
pub fn parse_chat(body: &Value) -> Result<ChatRequest, InvalidField> {
    let body = object(body)?;
    let prompt = match body.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        Some(Value::String(_)) => {
            return Err(InvalidField::new("prompt", "must not be empty"));
        }
        Some(_) => return Err(InvalidField::new("prompt", "must be a string")),
        None => {
            return Err(InvalidField::new(
                "prompt",
                "is required: what the user says",
            ));
        }
    };
    let conversation_id = optional_conversation(body, "conversationId", "conversation_id")?;
    match body.get("botId") {
        None | Some(Value::Null | Value::String(_) | Value::Number(_)) => {}
        Some(_) => {
            return Err(InvalidField::new("botId", "must be a number or a string"));
        }
    }
    match body.get("messages") {
        None | Some(Value::Null) => {}
        Some(Value::Array(messages)) => {
            if let Some(i) = messages.iter().position(|m| !m.is_object()) {
                return Err(InvalidField::new(
                    &format!("messages[{i}]"),
                    "must be an object",
                ));
            }
        }
        Some(_) => return Err(InvalidField::new("messages", "must be a list")),
    }
    let mut items = vec![DataItem::text(prompt)];
    match body.get("attachments") {
        None | Some(Value::Null) => {}
        Some(Value::Array(attachments)) => {
            for (i, a) in attachments.iter().enumerate() {
                match a {
                    Value::String(uri) if !uri.is_empty() => items.push(DataItem::File {
                        name: None,
                        mime_type: None,
                        uri: Some(uri.clone()),
                        bytes: None,
                        metadata: None,
                    }),
                    _ => {
                        return Err(InvalidField::new(
                            &format!("attachments[{i}]"),
                            "must be a URL (a non-empty string)",
                        ));
                    }
                }
            }
        }
        Some(_) => {
            return Err(InvalidField::new("attachments", "must be a list of URLs"));
        }
    }
    Ok(ChatRequest {
        conversation_id,
        items,
    })
}

/// Read a form submit body.
pub fn parse_form(body: &Value) -> Result<FormSubmit, InvalidField> {
    let body = object(body)?;
    let conversation_id = optional_conversation(body, "conversation_id", "conversationId")?
        .ok_or_else(|| {
            InvalidField::new(
                "conversation_id",
                "is required: the conversation whose form this answers",
            )
        })?;
    let form_id = match either(body, "form_id", "formId") {
        Some((_, Value::String(id))) if !id.is_empty() && id.len() <= 128 => id.clone(),
        Some((key, _)) => {
            return Err(InvalidField::new(
                key,
                "must be a form's id (a string of 1 to 128 bytes)",
            ));
        }
        None => {
            return Err(InvalidField::new(
                "form_id",
                "is required: the form this answers",
            ));
        }
    };
    let values = match body.get("values") {
        Some(Value::Object(values)) => values.clone(),
        _ => {
            return Err(InvalidField::new(
                "values",
                "is required: the answer, an object",
            ));
        }
    };
    Ok(FormSubmit {
        conversation_id,
        form_id,
        values,
    })
}

/// Read a stop body (`{conversation_id}`): the conversation whose running task to cancel.
pub fn parse_stop(body: &Value) -> Result<String, InvalidField> {
    optional_conversation(object(body)?, "conversation_id", "conversationId")?.ok_or_else(|| {
        InvalidField::new(
            "conversation_id",
            "is required: the conversation whose running task to stop",
        )
    })
}

/// The conversation a query parameter names (`conversation_id=…`).
pub fn parse_conversation(value: Option<&str>) -> Result<String, InvalidField> {
    let value = value.ok_or_else(|| {
        InvalidField::new("conversation_id", "is required: the conversation to follow")
    })?;
    Ok(check_task_id(value, "conversation_id")?.to_string())
}

fn object(body: &Value) -> Result<&Map<String, Value>, InvalidField> {
    body.as_object()
        .ok_or_else(|| InvalidField::new("", "the body must be a JSON object"))
}

/// The value under `key`, else under its other spelling `alias` (null counts as absent), with
/// the key it was found under.
fn either<'a>(
    body: &'a Map<String, Value>,
    key: &'static str,
    alias: &'static str,
) -> Option<(&'static str, &'a Value)> {
    [key, alias]
        .into_iter()
        .find_map(|k| body.get(k).filter(|v| !v.is_null()).map(|v| (k, v)))
}

/// A conversation id under `key` or `alias`: a string, or a whole number kept as its decimal
/// text; checked as a session id is.
fn optional_conversation(
    body: &Map<String, Value>,
    key: &'static str,
    alias: &'static str,
) -> Result<Option<String>, InvalidField> {
    let Some((key, value)) = either(body, key, alias) else {
        return Ok(None);
    };
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_u64() || n.is_i64() => n.to_string(),
        _ => {
            return Err(InvalidField::new(key, "must be a string or a whole number"));
        }
    };
    check_task_id(&text, key)?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_chat_body_as_aiflowy_sends_it() {
        let chat = parse_chat(&json!({
            "prompt": "think about tea", "botId": 7, "conversationId": 12345678901234567u64,
            "messages": [{"role": "user", "content": "earlier"}],
            "attachments": ["https://files.example/a.pdf"],
        }))
        .unwrap();
        assert_eq!(chat.conversation_id.as_deref(), Some("12345678901234567"));
        assert_eq!(chat.items[0], DataItem::text("think about tea"));
        assert!(
            matches!(&chat.items[1], DataItem::File { uri: Some(u), .. } if u.ends_with("a.pdf"))
        );
        let seed = parse_chat(&json!({"prompt": "hi", "conversation_id": "c-1"})).unwrap();
        assert_eq!(seed.conversation_id.as_deref(), Some("c-1"));
        let fresh = parse_chat(&json!({"prompt": "hi"})).unwrap();
        assert_eq!(fresh.conversation_id, None);
        assert_eq!(fresh.items.len(), 1);
    }

    #[test]
    fn a_wrong_chat_body_names_its_field() {
        let field = |v: Value| parse_chat(&v).unwrap_err().field;
        assert_eq!(field(json!({})), "prompt");
        assert_eq!(field(json!({"prompt": " "})), "prompt");
        assert_eq!(field(json!({"prompt": 3})), "prompt");
        assert_eq!(
            field(json!({"prompt": "x", "conversationId": 1.5})),
            "conversationId"
        );
        assert_eq!(
            field(json!({"prompt": "x", "conversationId": ""})),
            "conversationId"
        );
        assert_eq!(
            field(json!({"prompt": "x", "attachments": [""]})),
            "attachments[0]"
        );
        assert_eq!(
            field(json!({"prompt": "x", "messages": [1]})),
            "messages[0]"
        );
        assert_eq!(field(json!({"prompt": "x", "botId": []})), "botId");
        assert_eq!(field(json!("x")), "");
    }

    #[test]
    fn a_form_submit_in_either_spelling() {
        let seed =
            parse_form(&json!({"conversation_id": "c", "form_id": "trip", "values": {"days": 3}}))
                .unwrap();
        assert_eq!(
            seed,
            FormSubmit {
                conversation_id: "c".into(),
                form_id: "trip".into(),
                values: json!({"days": 3}).as_object().cloned().unwrap(),
            }
        );
        let aiflowy =
            parse_form(&json!({"conversationId": 9, "formId": "trip", "values": {}})).unwrap();
        assert_eq!(aiflowy.conversation_id, "9");
        let field = |v: Value| parse_form(&v).unwrap_err().field;
        assert_eq!(
            field(json!({"form_id": "t", "values": {}})),
            "conversation_id"
        );
        assert_eq!(
            field(json!({"conversation_id": "c", "values": {}})),
            "form_id"
        );
        assert_eq!(
            field(json!({"conversation_id": "c", "formId": 1, "values": {}})),
            "formId"
        );
        assert_eq!(
            field(json!({"conversation_id": "c", "form_id": "t", "values": [1]})),
            "values"
        );
    }

    #[test]
    fn a_queried_conversation_is_checked() {
        assert_eq!(parse_conversation(Some("c")).unwrap(), "c");
        assert_eq!(parse_stop(&json!({"conversationId": 43})).unwrap(), "43");
        assert_eq!(parse_stop(&json!({"conversation_id": "c"})).unwrap(), "c");
        assert_eq!(parse_stop(&json!({})).unwrap_err().field, "conversation_id");
        assert_eq!(parse_stop(&json!([1])).unwrap_err().field, "");
        assert_eq!(
            parse_conversation(None).unwrap_err().field,
            "conversation_id"
        );
        assert_eq!(
            parse_conversation(Some("a\nb")).unwrap_err().field,
            "conversation_id"
        );
    }
}
