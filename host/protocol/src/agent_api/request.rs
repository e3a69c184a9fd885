//! An `AgentRequest` (`POST /agents/{id}/process`) and the stop request
//! (`POST /agents/{id}/process/stop`), read and checked.
//!
//! Only the **last** message of `input` is the turn: earlier ones are the conversation as the
//! client remembers it, which the session's task already holds. Generation options and any other
//! field the schema class allows go to the partner unchanged, under `commandParams.agentApi`,
//! after the typed ones are checked as the schema types them.

use super::content::item_of_content;
use aiphost_model::depth::check_depth;
use aiphost_model::{DataItem, InvalidField, JsonObject, MAX_TASK_ID_LEN, check_task_id};
use serde_json::Value;

/// The fields the door reads itself; everything else is an option for the partner.
const OWN_FIELDS: [&str; 4] = ["input", "stream", "id", "session_id"];

/// An Agent API request, read.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentApiRequest {
    /// The request's `id` (the response's id when given).
    pub request_id: Option<String>,
    /// The session (`None`: the door makes one up, a new conversation).
    pub session_id: Option<String>,
    /// Answer as SSE (the default) or as one JSON `AgentResponse`.
    pub stream: bool,
    /// The turn: the items of the last user message.
    pub items: Vec<DataItem>,
    /// Generation options and other fields, for the partner.
    pub options: JsonObject,
}

/// Read an `AgentRequest` body.
pub fn parse_request(body: &Value) -> Result<AgentApiRequest, InvalidField> {
    let Value::Object(body) = body else {
        return Err(InvalidField::new("", "the body must be a JSON object"));
    };
    let input = match body.get("input") {
        Some(Value::Array(input)) if !input.is_empty() => input,
        Some(Value::Array(_)) => {
            return Err(InvalidField::new("input", "must hold at least one message"));
        }
        _ => {
            return Err(InvalidField::new(
                "input",
                "is required: a list of messages, the last one the user's",
            ));
        }
    };
    let last = input.len() - 1;
    let items = parse_turn(&input[last], &format!("input[{last}]"))?;
    let stream = match body.get("stream") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(InvalidField::new("stream", "must be true or false")),
    };
    let request_id = match body.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_TASK_ID_LEN => {
            Some(id.clone())
        }
        Some(_) => {
            return Err(InvalidField::new(
                "id",
                format!("must be a string of 1 to {MAX_TASK_ID_LEN} bytes"),
            ));
        }
    };
    let session_id = match body.get("session_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(check_task_id(s, "session_id")?.to_string()),
        Some(_) => return Err(InvalidField::new("session_id", "must be a string")),
    };
    let options: JsonObject = body
        .iter()
        .filter(|(k, _)| !OWN_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_options(&options)?;
    Ok(AgentApiRequest {
        request_id,
        session_id,
        stream,
        items,
        options,
    })
}

/// The items of the turn's message at `path`: a user message with at least one content.
fn parse_turn(message: &Value, path: &str) -> Result<Vec<DataItem>, InvalidField> {
    let Value::Object(message) = message else {
        return Err(InvalidField::new(path, "a message must be an object"));
    };
    match message.get("role").and_then(Value::as_str) {
        Some("user") => {}
        Some(other) => {
            return Err(InvalidField::new(
                &format!("{path}.role"),
                format!("is {other:?}; the last message of input is the user's (\"user\")"),
            ));
        }
        None => {
            return Err(InvalidField::new(
                &format!("{path}.role"),
                "is required: \"user\" for the last message of input",
            ));
        }
    }
    match message.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "message" => {}
        Some(_) => {
            return Err(InvalidField::new(
                &format!("{path}.type"),
                "the user's turn is a message of type \"message\"",
            ));
        }
    }
    let contents = match message.get("content") {
        Some(Value::Array(contents)) if !contents.is_empty() => contents,
        _ => {
            return Err(InvalidField::new(
                &format!("{path}.content"),
                "is required: a list of at least one content",
            ));
        }
    };
    contents
        .iter()
        .enumerate()
        .map(|(i, c)| item_of_content(c, &format!("{path}.content[{i}]")))
        .collect()
}

/// The typed options, checked as `AgentRequest` types them; every value nests at most as deep
/// as the host stores.
fn check_options(options: &JsonObject) -> Result<(), InvalidField> {
    for (key, value) in options {
        if value.is_null() {
            continue;
        }
        let ok = match key.as_str() {
            "model" | "user_id" => value.is_string(),
            "temperature" | "top_p" | "frequency_penalty" | "presence_penalty" => value.is_number(),
            "max_tokens" | "seed" => value.is_u64() || value.is_i64(),
            "n" => value.as_u64().is_some_and(|n| (1..=5).contains(&n)),
            "stop" => {
                value.is_string()
                    || value
                        .as_array()
                        .is_some_and(|a| a.iter().all(Value::is_string))
            }
            "tools" => value.is_array(),
            _ => true,
        };
        if !ok {
            let wanted = match key.as_str() {
                "model" | "user_id" => "a string",
                "max_tokens" | "seed" => "a whole number",
                "n" => "a whole number from 1 to 5",
                "stop" => "a string or a list of strings",
                "tools" => "a list",
                _ => "a number",
            };
            return Err(InvalidField::new(key, format!("must be {wanted}")));
        }
        check_depth(value, key).map_err(|e| InvalidField::new(key, e.to_string()))?;
    }
    Ok(())
}

/// Read a stop request (`{"session_id": …}`): the session whose running task to cancel.
pub fn parse_stop(body: &Value) -> Result<String, InvalidField> {
    match body.get("session_id") {
        Some(Value::String(s)) => Ok(check_task_id(s, "session_id")?.to_string()),
        _ => Err(InvalidField::new(
            "session_id",
            "is required: the session whose running task to stop",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(text: &str) -> Value {
        json!({"role": "user", "type": "message", "content": [{"type": "text", "text": text}]})
    }

    #[test]
    fn the_last_user_message_is_the_turn_and_options_go_along() {
        let body = json!({
            "input": [turn("earlier"), {"role": "assistant", "content": []}, turn("now")],
            "session_id": "s-1", "id": "r-1", "temperature": 0.2, "n": 2,
            "stop": ["\n"], "custom": {"a": 1},
        });
        let request = parse_request(&body).unwrap();
        assert_eq!(request.items, vec![DataItem::text("now")]);
        assert_eq!(request.session_id.as_deref(), Some("s-1"));
        assert_eq!(request.request_id.as_deref(), Some("r-1"));
        assert!(request.stream);
        assert_eq!(
            Value::Object(request.options),
            json!({"temperature": 0.2, "n": 2, "stop": ["\n"], "custom": {"a": 1}})
        );
        let folded = parse_request(&json!({"input": [turn("x")], "stream": false})).unwrap();
        assert!(!folded.stream && folded.session_id.is_none());
    }

    #[test]
    fn malformed_requests_name_the_field() {
        let field = |body: Value| parse_request(&body).unwrap_err().field;
        assert_eq!(field(json!({})), "input");
        assert_eq!(field(json!({"input": []})), "input");
        assert_eq!(
            field(json!({"input": [{"role": "robot", "content": []}]})),
            "input[0].role"
        );
        assert_eq!(
            field(json!({"input": [turn("a"), {"role": "user", "content": []}]})),
            "input[1].content"
        );
        assert_eq!(
            field(json!({"input": [{"role": "user", "content": [{"type": "image"}]}]})),
            "input[0].content[0].image_url"
        );
        assert_eq!(field(json!({"input": [turn("a")], "n": 9})), "n");
        assert_eq!(
            field(json!({"input": [turn("a")], "stream": "yes"})),
            "stream"
        );
        assert_eq!(
            field(json!({"input": [turn("a")], "session_id": ""})),
            "session_id"
        );
        assert_eq!(field(json!({"input": [turn("a")], "model": 3})), "model");
        assert_eq!(field(json!([1])), "");
    }

    #[test]
    fn a_stop_names_its_session() {
        assert_eq!(parse_stop(&json!({"session_id": "s"})).unwrap(), "s");
        assert_eq!(parse_stop(&json!({})).unwrap_err().field, "session_id");
    }
}
