//! The `error` object of the chat doors' refusals, `{"code", "message", …facts}`: what the
//! Agent API and AIFlowy doors answer (with an HTTP status) when they refuse a request before
//! any stream, spelled once for both.

use aiphost_model::{InvalidField, JsonObject};
use serde_json::{Value, json};

/// `code`, then the fields of `facts` (an object; anything else adds nothing), its `reason` said
/// as `message`; the code is the message when the facts have none.
pub fn error_object(code: &str, facts: Value) -> JsonObject {
    let mut error = JsonObject::new();
    error.insert("code".into(), json!(code));
    if let Value::Object(facts) = facts {
        for (k, v) in facts {
            let key = if k == "reason" { "message".into() } else { k };
            error.insert(key, v);
        }
    }
    error.entry("message").or_insert_with(|| json!(code));
    error
}

/// A field of the request that is wrong: `INVALID_REQUEST` naming it, the message saying the
/// field and why.
pub fn invalid_field(e: InvalidField) -> JsonObject {
    let message = if e.field.is_empty() {
        e.reason.clone()
    } else {
        format!("{} {}", e.field, e.reason)
    };
    error_object(
        "INVALID_REQUEST",
        json!({"field": e.field, "message": message}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_message_and_the_code_stands_in_for_none() {
        let e = error_object("X", json!({"reason": "why", "field": "a"}));
        assert_eq!(
            Value::Object(e),
            json!({"code": "X", "message": "why", "field": "a"})
        );
        let e = error_object("Y", json!({"limit": 3}));
        assert_eq!(
            Value::Object(e),
            json!({"code": "Y", "message": "Y", "limit": 3})
        );
    }
}
