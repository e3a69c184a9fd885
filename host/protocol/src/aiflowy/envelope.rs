//! The AIFlowy chat envelope (seed §4) in its two spellings, and the SSE event names (§3.1).
//!
//! The seed's text spells every key in snake case and `domain`/`type` in lower case; AIFlowy's
//! own server (`ChatEnvelope`, serialised by fastjson) sends `conversationId`/`messageId`, the
//! enum *names* (`LLM`, `TOOL_CALL`), and leaves null fields out — and its Vue UI compares the
//! upper-case names. [`Wire`] chooses: the seed's is the default, AIFlowy's is `?wire=aiflowy`.

use aiphost_model::{InvalidField, JsonObject};
use serde_json::{Value, json};

/// The protocol's name (`protocol`).
pub const PROTOCOL: &str = "aiflowy-chat";
/// The protocol's version (`version`).
pub const VERSION: &str = "1.1";

/// Which spelling of the envelope a client reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// The seed's text: snake-case keys, lower-case domain and type.
    #[default]
    Seed,
    /// AIFlowy's own server: camelCase envelope keys, upper-case enum names, nulls left out.
    Aiflowy,
}

impl Wire {
    /// The wire a `wire` query parameter names (`None`: the seed's).
    pub fn from_param(value: Option<&str>) -> Result<Wire, InvalidField> {
        match value {
            None | Some("seed") => Ok(Wire::Seed),
            Some("aiflowy") => Ok(Wire::Aiflowy),
            Some(other) => Err(InvalidField::new(
                "wire",
                format!("is {other:?}; the wires are \"seed\" (the default) and \"aiflowy\""),
            )),
        }
    }
}

/// What an event is about (seed §5). Only those the door sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// What the model says.
    Llm,
    /// Tool calls and results.
    Tool,
    /// The stream's own state and errors.
    System,
    /// Business rules (a rejection).
    Business,
    /// Forms.
    Interaction,
}

impl Domain {
    fn name(self) -> &'static str {
        match self {
            Domain::Llm => "llm",
            Domain::Tool => "tool",
            Domain::System => "system",
            Domain::Business => "business",
            Domain::Interaction => "interaction",
        }
    }
}

/// What happened within the domain (`type`; AIFlowy's `ChatType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Reasoning text.
    Thinking,
    /// Answer text.
    Message,
    /// A tool was called.
    ToolCall,
    /// A tool answered.
    ToolResult,
    /// The conversation's state (`running`, `suspended`, `resumed`, `canceled`).
    Status,
    /// Something failed.
    Error,
    /// A form asks for input.
    FormRequest,
    /// A form is withdrawn.
    FormCancel,
    /// The stream ends.
    Done,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Thinking => "thinking",
            Kind::Message => "message",
            Kind::ToolCall => "tool_call",
            Kind::ToolResult => "tool_result",
            Kind::Status => "status",
            Kind::Error => "error",
            Kind::FormRequest => "form_request",
            Kind::FormCancel => "form_cancel",
            Kind::Done => "done",
        }
    }
}

/// The SSE `event:` name of a frame (seed §3.1: only these three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SseName {
    /// A normal event.
    Message,
    /// An error: the client stops reading (seed §14).
    Error,
    /// The stream ends.
    Done,
}

impl SseName {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SseName::Message => "message",
            SseName::Error => "error",
            SseName::Done => "done",
        }
    }
}

/// One envelope, before it is spelled for a wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// Its domain.
    pub domain: Domain,
    /// Its type.
    pub kind: Kind,
    /// The conversation.
    pub conversation_id: String,
    /// The assistant message it belongs to (the task's id; `None` before there is one).
    pub message_id: Option<String>,
    /// Its place in the stream, from 0.
    pub index: u64,
    /// Its data.
    pub payload: JsonObject,
    /// Tokens, latency (`None`: left out).
    pub meta: Option<JsonObject>,
}

impl Envelope {
    /// The envelope as `wire` spells it.
    pub fn to_value(&self, wire: Wire) -> Value {
        let (conversation_key, message_key) = match wire {
            Wire::Seed => ("conversation_id", "message_id"),
            Wire::Aiflowy => ("conversationId", "messageId"),
        };
        let spell = |name: &str| match wire {
            Wire::Seed => name.to_string(),
            Wire::Aiflowy => name.to_ascii_uppercase(),
        };
        let mut out = JsonObject::new();
        out.insert("protocol".into(), json!(PROTOCOL));
        out.insert("version".into(), json!(VERSION));
        out.insert("domain".into(), json!(spell(self.domain.name())));
        out.insert("type".into(), json!(spell(self.kind.name())));
        out.insert(conversation_key.into(), json!(self.conversation_id));
        // Absent rather than null in both wires: fastjson leaves nulls out, and the seed marks
        // the field optional.
        if let Some(id) = &self.message_id {
            out.insert(message_key.into(), json!(id));
        }
        out.insert("index".into(), json!(self.index));
        out.insert("payload".into(), Value::Object(self.payload.clone()));
        if let Some(meta) = &self.meta {
            out.insert("meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope() -> Envelope {
        Envelope {
            domain: Domain::Tool,
            kind: Kind::ToolCall,
            conversation_id: "42".into(),
            message_id: Some("t-1".into()),
            index: 3,
            payload: json!({"tool_call_id": "c"}).as_object().cloned().unwrap(),
            meta: None,
        }
    }

    #[test]
    fn the_seed_spells_snake_and_lower_case() {
        assert_eq!(
            envelope().to_value(Wire::Seed),
            json!({"protocol": "aiflowy-chat", "version": "1.1", "domain": "tool",
                   "type": "tool_call", "conversation_id": "42", "message_id": "t-1",
                   "index": 3, "payload": {"tool_call_id": "c"}})
        );
    }

    #[test]
    fn aiflowy_spells_camel_keys_and_enum_names_and_omits_nulls() {
        let mut e = envelope();
        e.message_id = None;
        e.meta = Some(JsonObject::new());
        let v = e.to_value(Wire::Aiflowy);
        assert_eq!(
            v,
            json!({"protocol": "aiflowy-chat", "version": "1.1", "domain": "TOOL",
                   "type": "TOOL_CALL", "conversationId": "42", "index": 3,
                   "payload": {"tool_call_id": "c"}, "meta": {}})
        );
    }

    #[test]
    fn the_wire_parameter_is_read_or_refused() {
        assert_eq!(Wire::from_param(None), Ok(Wire::Seed));
        assert_eq!(Wire::from_param(Some("seed")), Ok(Wire::Seed));
        assert_eq!(Wire::from_param(Some("aiflowy")), Ok(Wire::Aiflowy));
        assert_eq!(Wire::from_param(Some("AIFLOWY")).unwrap_err().field, "wire");
    }
}
