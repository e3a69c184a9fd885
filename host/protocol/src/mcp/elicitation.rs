//! A partner's form as an MCP elicitation, and the client's answer back.
//!
//! MCP can ask its user only with a *flat* form: an object whose properties are each a string
//! (`minLength`, `maxLength`, `format` ∈ email, uri, date, date-time, `default`), a number or
//! integer (`minimum`, `maximum`, `default`), a boolean (`default`), a single-select enum
//! (`enum`, or `oneOf` of `{const, title}`) or a multi-select array of such (spec 2026-07-28
//! `client/elicitation.mdx`, "Supported Schema Types"). A form whose schema is that — with
//! `title` and `description` anywhere, `$schema` and `additionalProperties` at the top — is
//! asked as it is. Any other (nested objects, `pattern`, `$ref`, …) is asked as **one
//! free-text field**, `answer`, titled with the form's title, whose description carries the
//! schema; the text the user gives is parsed as JSON and is the answer. Either way the engine
//! checks the answer against the form's full schema before the partner sees it (a client's UI
//! may check less), so nothing a flattened form loses is lost to the partner.
//!
//! `rmcp`'s own conversion (`ElicitationSchema::from_json_schema`) drops unknown keywords
//! silently, so flatness is decided here, strictly, before its types are built.
//!
//! An answer is the spec's `ElicitResult`: `accept` with `content` (the values), `decline` or
//! `cancel`; [`Answer::of`] reads it, undoing the free-text field when the form was asked so.

use aiphost_model::activity::InputRequest;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    JsonObject,
};
use serde_json::{Map, Value, json};

/// The free-text field a form that is not flat is asked with.
pub const FALLBACK_FIELD: &str = "answer";

/// The most of a schema the free-text field's description quotes.
const MAX_QUOTED_SCHEMA: usize = 4096;

/// How a form is asked: its message and schema, and whether the schema is the fallback.
#[derive(Debug, Clone)]
pub struct Elicitation {
    /// The `elicitation/create` parameters (form mode).
    pub params: ElicitRequestParams,
    /// True when the form was asked as one free-text field (its answer is parsed as JSON).
    pub fallback: bool,
}

impl Elicitation {
    /// `form` as an elicitation; `note` (a previous answer's faults, say) leads the message.
    pub fn of(form: &InputRequest, note: Option<&str>) -> Self {
        let mut message = String::new();
        if let Some(note) = note {
            message.push_str(note);
            message.push_str("\n\n");
        }
        message.push_str(&form.title);
        if let Some(d) = &form.description {
            message.push_str("\n\n");
            message.push_str(d);
        }
        let flat = flat_schema(&form.schema)
            .and_then(|s| serde_json::from_value::<ElicitationSchema>(Value::Object(s)).ok());
        let (requested_schema, fallback) = match flat {
            Some(schema) => (schema, false),
            None => (fallback_schema(form), true),
        };
        Elicitation {
            params: ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            },
            fallback,
        }
    }

    /// The elicitation as an MRTR input request (`inputRequests[key]`, 2026-07-28).
    pub fn request(&self) -> rmcp::model::InputRequest {
        rmcp::model::InputRequest::Elicitation(ElicitRequest::new(self.params.clone()))
    }
}

/// The schema of a form asked as one free-text field.
fn fallback_schema(form: &InputRequest) -> ElicitationSchema {
    let mut quoted = Value::Object(form.schema.clone()).to_string();
    if quoted.len() > MAX_QUOTED_SCHEMA {
        let mut cut = MAX_QUOTED_SCHEMA;
        while !quoted.is_char_boundary(cut) {
            cut -= 1;
        }
        quoted.truncate(cut);
        quoted.push('…');
    }
    let schema = json!({
        "type": "object",
        "properties": {
            FALLBACK_FIELD: {
                "type": "string",
                "title": form.title,
                "description": format!("Your answer as JSON matching this schema: {quoted}"),
            }
        },
        "required": [FALLBACK_FIELD],
    });
    // A string property is always a valid elicitation schema; the empty one is the
    // (unreachable) last resort so that no form is ever unaskable.
    serde_json::from_value(schema)
        .unwrap_or_else(|_| ElicitationSchema::builder().build_unchecked())
}

/// `schema` when it is a flat form MCP can show, else `None`.
pub fn flat_schema(schema: &JsonObject) -> Option<JsonObject> {
    const TOP: &[&str] = &[
        "$schema",
        "type",
        "title",
        "description",
        "properties",
        "required",
        "additionalProperties",
    ];
    if schema.keys().any(|k| !TOP.contains(&k.as_str())) {
        return None;
    }
    if schema.get("type")? != "object" {
        return None;
    }
    let properties = schema.get("properties")?.as_object()?;
    if properties.is_empty() || !properties.values().all(is_primitive) {
        return None;
    }
    if let Some(required) = schema.get("required") {
        let names = required.as_array()?;
        if !names
            .iter()
            .all(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
        {
            return None;
        }
    }
    if !matches!(
        schema.get("additionalProperties"),
        None | Some(Value::Bool(_))
    ) {
        return None;
    }
    let mut flat: Map<String, Value> = schema.clone();
    // Not an elicitation keyword: the engine still enforces it on the answer.
    flat.remove("additionalProperties");
    Some(flat)
}

/// Whether `property` is one of the spec's primitive field shapes, with only their keywords.
fn is_primitive(property: &Value) -> bool {
    let Some(p) = property.as_object() else {
        return false;
    };
    let only = |allowed: &[&str]| {
        p.keys().all(|k| {
            matches!(k.as_str(), "type" | "title" | "description") || allowed.contains(&k.as_str())
        })
    };
    let ty = p.get("type").and_then(Value::as_str);
    if p.contains_key("enum") {
        return ty == Some("string")
            && only(&["enum", "enumNames", "default"])
            && strings(p.get("enum"));
    }
    if p.contains_key("oneOf") {
        return ty == Some("string")
            && only(&["oneOf", "default"])
            && titled_consts(p.get("oneOf"));
    }
    match ty {
        Some("string") => {
            only(&["minLength", "maxLength", "format", "default"])
                && p.get("format").is_none_or(|f| {
                    matches!(f.as_str(), Some("email" | "uri" | "date" | "date-time"))
                })
        }
        Some("number" | "integer") => only(&["minimum", "maximum", "default"]),
        Some("boolean") => only(&["default"]),
        Some("array") => {
            only(&["items", "minItems", "maxItems", "default"])
                && p.get("items")
                    .and_then(Value::as_object)
                    .is_some_and(|items| {
                        let keys_ok = items
                            .keys()
                            .all(|k| matches!(k.as_str(), "type" | "enum" | "anyOf"));
                        keys_ok
                            && if items.contains_key("enum") {
                                items.get("type").and_then(Value::as_str) == Some("string")
                                    && strings(items.get("enum"))
                            } else {
                                titled_consts(items.get("anyOf"))
                            }
                    })
        }
        _ => false,
    }
}

/// A non-empty list of strings.
fn strings(list: Option<&Value>) -> bool {
    list.and_then(Value::as_array)
        .is_some_and(|l| !l.is_empty() && l.iter().all(Value::is_string))
}

/// A non-empty list of `{const: string, title: string}`.
fn titled_consts(list: Option<&Value>) -> bool {
    list.and_then(Value::as_array).is_some_and(|l| {
        !l.is_empty()
            && l.iter().all(|o| {
                o.as_object().is_some_and(|o| {
                    o.keys().all(|k| matches!(k.as_str(), "const" | "title"))
                        && o.get("const").is_some_and(Value::is_string)
                        && o.get("title").is_none_or(Value::is_string)
                })
            })
    })
}

/// What the client answered a form with.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The values (for the engine to check against the form's schema).
    Accept(Value),
    /// The user said no.
    Decline,
    /// The user dismissed the form without choosing.
    Cancel,
}

/// An answer that cannot be read: the free text was not JSON, or an `accept` had no content.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable(pub String);

impl Answer {
    /// The answer `result` gives a form asked with `fallback` (or not).
    pub fn of(result: &ElicitResult, fallback: bool) -> Result<Answer, Unreadable> {
        match result.action {
            ElicitationAction::Decline => Ok(Answer::Decline),
            ElicitationAction::Cancel => Ok(Answer::Cancel),
            ElicitationAction::Accept => {
                let content = result.content.clone().ok_or_else(|| {
                    Unreadable("an accepted form carries its values as content".into())
                })?;
                if !fallback {
                    return Ok(Answer::Accept(content));
                }
                let text = content
                    .get(FALLBACK_FIELD)
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        Unreadable(format!("the answer is the text field {FALLBACK_FIELD:?}"))
                    })?;
                serde_json::from_str(text)
                    .map(Answer::Accept)
                    .map_err(|e| Unreadable(format!("the answer is not JSON: {e}")))
            }
            // A later revision's action: not one this door knows how to honour.
            _ => Err(Unreadable(
                "an elicitation action this door does not know".into(),
            )),
        }
    }

    /// An answer given as a JSON value (an MRTR `inputResponses` entry, `tasks/update`): an
    /// `ElicitResult`.
    pub fn of_value(value: &Value, fallback: bool) -> Result<Answer, Unreadable> {
        let result: ElicitResult = serde_json::from_value(value.clone())
            .map_err(|e| Unreadable(format!("not an elicitation result: {e}")))?;
        Answer::of(&result, fallback)
    }
}

/// The key of one asking of a form: its request id and when the task began to wait for it (ms),
/// unique over the task's life (the same form asked again after a wrong answer gets a new key)
/// and the same after a restart (both are in the task's durable status).
pub fn key(request_id: &str, asked_at_ms: i64) -> String {
    format!("{request_id}.{asked_at_ms}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(schema: Value) -> InputRequest {
        InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: Some("Where to?".into()),
            schema: match schema {
                Value::Object(m) => m,
                _ => JsonObject::new(),
            },
        }
    }

    fn schema_of(e: &Elicitation) -> Value {
        match &e.params {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => serde_json::to_value(requested_schema).unwrap_or_default(),
            _ => Value::Null,
        }
    }

    #[test]
    fn a_flat_form_is_asked_as_it_is() {
        let trip = json!({
            "type": "object",
            "required": ["city", "days"],
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "title": "City"},
                "days": {"type": "integer", "minimum": 1},
                "mode": {"type": "string", "enum": ["train", "plane"]},
                "ok": {"type": "boolean", "default": true},
                "at": {"type": "string", "format": "date"},
            }
        });
        let e = Elicitation::of(&form(trip), Some("days: must be ≥ 1"));
        assert!(!e.fallback);
        let s = schema_of(&e);
        assert_eq!(s["properties"]["days"]["minimum"], 1);
        assert_eq!(s["required"], json!(["city", "days"]));
        let ElicitRequestParams::FormElicitationParams { message, .. } = &e.params else {
            panic!("form mode")
        };
        assert_eq!(message, "days: must be ≥ 1\n\nTrip\n\nWhere to?");
    }

    #[test]
    fn anything_else_is_one_free_text_field() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "object"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "x+"}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}),
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
            json!({"type": "object", "allOf": [], "properties": {"a": {"type": "string"}}}),
            json!({"type": "array"}),
        ] {
            let e = Elicitation::of(&form(schema.clone()), None);
            assert!(e.fallback, "{schema}");
            let s = schema_of(&e);
            assert_eq!(
                s["properties"][FALLBACK_FIELD]["type"], "string",
                "{schema}"
            );
            assert_eq!(s["properties"][FALLBACK_FIELD]["title"], "Trip");
            assert_eq!(s["required"], json!([FALLBACK_FIELD]));
        }
    }

    #[test]
    fn a_huge_schema_is_quoted_in_part() {
        let big: Map<String, Value> = (0..2000)
            .map(|i| (format!("field{i}"), json!({"type": "object"})))
            .collect();
        let e = Elicitation::of(&form(json!({"type": "object", "properties": big})), None);
        let s = schema_of(&e);
        let d = s["properties"][FALLBACK_FIELD]["description"]
            .as_str()
            .unwrap_or("");
        assert!(d.len() < MAX_QUOTED_SCHEMA + 100, "{}", d.len());
        assert!(d.ends_with('…'));
    }

    #[test]
    fn answers_are_read_by_action() {
        let accept = json!({"action": "accept", "content": {"city": "Oslo", "days": 3}});
        assert_eq!(
            Answer::of_value(&accept, false),
            Ok(Answer::Accept(json!({"city": "Oslo", "days": 3})))
        );
        assert_eq!(
            Answer::of_value(&json!({"action": "decline"}), false),
            Ok(Answer::Decline)
        );
        assert_eq!(
            Answer::of_value(&json!({"action": "cancel"}), true),
            Ok(Answer::Cancel)
        );
        assert!(Answer::of_value(&json!({"action": "accept"}), false).is_err());
        assert!(Answer::of_value(&json!({"action": "maybe"}), false).is_err());
        let text = json!({"action": "accept", "content": {"answer": "{\"city\": \"Oslo\"}"}});
        assert_eq!(
            Answer::of_value(&text, true),
            Ok(Answer::Accept(json!({"city": "Oslo"})))
        );
        let bad = json!({"action": "accept", "content": {"answer": "Oslo"}});
        assert!(Answer::of_value(&bad, true).is_err());
    }

    #[test]
    fn keys_differ_per_asking() {
        assert_eq!(key("trip", 1700000000123), "trip.1700000000123");
        assert_ne!(key("trip", 1), key("trip", 2));
    }
}
