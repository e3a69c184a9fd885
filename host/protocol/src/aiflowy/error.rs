//! What the AIFlowy door answers a request it refuses before any stream: an HTTP status and a
//! JSON body `{"error": {"code", "message", …facts}}`, the same in both wires (AIFlowy's own
//! server has no such answers; its UI only logs a non-200). The form submit's own refusals
//! (seed §12 leaves them to us) are made here, so their codes are spelled once.

use crate::error_object::{error_object, invalid_field};
use aiphost_model::{InvalidField, JsonObject};
use serde_json::{Value, json};

/// A refused request: its HTTP status, its code and the facts beside them.
#[derive(Clone, Debug, PartialEq)]
pub struct AiflowyError {
    /// The HTTP status.
    pub status: u16,
    /// The error object: `code`, `message` and the facts.
    pub error: JsonObject,
}

impl AiflowyError {
    /// `status` with `code` and the `facts` (an object's fields; its `reason` is the message).
    pub fn new(status: u16, code: &str, facts: Value) -> Self {
        AiflowyError {
            status,
            error: error_object(code, facts),
        }
    }

    /// A field of the request that is wrong: 400 `INVALID_REQUEST` naming it.
    pub fn invalid(e: InvalidField) -> Self {
        AiflowyError {
            status: 400,
            error: invalid_field(e),
        }
    }

    /// The conversation waits on no form of that id, and never did (or is not the caller's).
    pub fn form_unknown(conversation_id: &str, form_id: &str) -> Self {
        AiflowyError::new(
            400,
            "FORM_UNKNOWN",
            json!({
                "field": "form_id", "conversation_id": conversation_id, "form_id": form_id,
                "reason": format!("conversation {conversation_id:?} has no form {form_id:?}"),
            }),
        )
    }

    /// The form was asked but is no longer open: answered already, or canceled.
    pub fn form_closed(conversation_id: &str, form_id: &str) -> Self {
        AiflowyError::new(
            400,
            "FORM_CLOSED",
            json!({
                "field": "form_id", "conversation_id": conversation_id, "form_id": form_id,
                "reason": format!(
                    "form {form_id:?} of conversation {conversation_id:?} is closed: answered or canceled"
                ),
            }),
        )
    }

    /// The values do not satisfy the form's schema: `errors` as `[{path, message}]`, each path
    /// a JSON Pointer into `values`.
    pub fn form_invalid(form_id: &str, reason: &str, errors: Value) -> Self {
        AiflowyError::new(
            400,
            "FORM_INVALID",
            json!({"field": "values", "form_id": form_id, "errors": errors, "reason": reason}),
        )
    }

    /// The conversation has no task that has not ended: nothing to follow.
    pub fn conversation_idle(conversation_id: &str) -> Self {
        AiflowyError::new(
            404,
            "CONVERSATION_IDLE",
            json!({
                "conversation_id": conversation_id,
                "reason": format!("conversation {conversation_id:?} has no task under way"),
            }),
        )
    }

    /// Another request of the conversation is starting its turn right now.
    pub fn conversation_busy(conversation_id: &str) -> Self {
        AiflowyError::new(
            409,
            "CONVERSATION_BUSY",
            json!({
                "conversation_id": conversation_id,
                "reason": format!("conversation {conversation_id:?} is starting a turn; wait for it"),
            }),
        )
    }

    /// The body: `{"error": {…}}`.
    pub fn body(&self) -> Value {
        json!({"error": self.error})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_the_message_and_a_field_is_named() {
        let e = AiflowyError::invalid(InvalidField::new("prompt", "must not be empty"));
        assert_eq!(e.status, 400);
        assert_eq!(
            e.body(),
            json!({"error": {"code": "INVALID_REQUEST", "field": "prompt",
                             "message": "prompt must not be empty"}})
        );
        let e = AiflowyError::form_closed("c", "trip");
        assert_eq!(e.error["code"], "FORM_CLOSED");
        assert!(!e.error.contains_key("reason"));
        assert!(e.error["message"].as_str().unwrap().contains("closed"));
        let e =
            AiflowyError::form_invalid("trip", "no", json!([{"path": "/days", "message": "x"}]));
        assert_eq!(e.error["errors"][0]["path"], "/days");
        assert_eq!(AiflowyError::conversation_idle("c").status, 404);
    }
}
