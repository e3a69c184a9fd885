//! Forms: a partner's JSON Schema checked when it asks, and the answer checked against it before
//! the partner hears it.
//!
//! The engine owns the rule, so every door refuses a wrong answer the same way: before the
//! continue is recorded, the task moved or the partner invoked, with the failing field paths
//! ([`FormError`]). Schemas are compiled by the `jsonschema` crate with its default features off
//! (no network or file `$ref`: a partner's schema cannot make the host fetch anything) and with
//! the linear-time `regex` engine for `pattern` (a partner's pattern cannot make a client's
//! answer cost exponential time).

use aiphost_model::activity::{self, InputRequest};
use aiphost_model::{DataItem, JsonObject};
use serde_json::Value;

/// The most field errors one refusal lists.
const MAX_ERRORS: usize = 20;

/// One field of an answer that does not satisfy the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Where, as a JSON Pointer into the answer (`/days`; empty for the answer as a whole).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Why a continue's answer to a form was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    /// The answer does not satisfy the schema.
    #[error("the answer to form {request_id:?} does not satisfy its schema: {}", summary(.errors))]
    Invalid {
        /// The form.
        request_id: String,
        /// The data item holding the answer (its index among the command's items).
        item: usize,
        /// The fields that fail, at most [`MAX_ERRORS`].
        errors: Vec<FieldError>,
    },
    /// An item answers a form the task does not await.
    #[error("the task awaits an answer to form {request_id:?}, not to {named:?}")]
    OtherForm {
        /// The form the task awaits.
        request_id: String,
        /// The form the item names.
        named: String,
    },
    /// More than one data item could be the answer, and none is tagged as it.
    #[error(
        "the task awaits an answer to form {request_id:?}: send one data item (tag it with metadata {{\"aiphost.kind\": \"input-answer\", \"requestId\": {request_id:?}}} when there are several)"
    )]
    Ambiguous {
        /// The form.
        request_id: String,
    },
}

fn summary(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| {
            let at = if e.path.is_empty() { "/" } else { &e.path };
            format!("{at}: {}", e.message)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Compile a partner's form schema: it must be a valid JSON Schema (its `$schema` draft, 2020-12
/// when it names none) that resolves without fetching anything.
pub fn compile(schema: &JsonObject) -> Result<jsonschema::Validator, String> {
    compile_schema(schema).map_err(|e| format!("the form schema is not a valid JSON Schema: {e}"))
}

/// Compile any schema a partner gives (a form's, a skill's `input-schema`) with the host's
/// options, so every schema a partner writes is held to the same rules; the error says where in
/// the schema it fails (`instance_path`).
pub fn compile_schema(
    schema: &JsonObject,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(&Value::Object(schema.clone()))
}

/// Find the answer to `request` among a continue's `items`, tag it as the answer if it is the one
/// untagged data item, and check it against the schema.
///
/// A continue without any data item passes (a text such as "never mind" is for the partner to
/// read); one with a data item must carry a valid answer.
pub fn take_answer(request: &InputRequest, items: &mut [DataItem]) -> Result<(), FormError> {
    let id = &request.request_id;
    // An answer tagged for another form would reach the partner unchecked: refused.
    if let Some(other) = items
        .iter()
        .find(|i| activity::kind_of(i) == Some("input-answer") && !activity::is_answer_to(i, id))
    {
        let named = match other {
            DataItem::Data {
                metadata: Some(m), ..
            } => m
                .get(activity::REQUEST_ID)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            _ => String::new(),
        };
        return Err(FormError::OtherForm {
            request_id: id.clone(),
            named,
        });
    }
    let tagged = items.iter().position(|i| activity::is_answer_to(i, id));
    let index = match tagged {
        Some(i) => i,
        None => {
            let untagged: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, i)| {
                    matches!(i, DataItem::Data { .. }) && activity::kind_of(i).is_none()
                })
                .map(|(n, _)| n)
                .collect();
            match untagged.as_slice() {
                [] => return Ok(()),
                [one] => *one,
                _ => {
                    return Err(FormError::Ambiguous {
                        request_id: id.clone(),
                    });
                }
            }
        }
    };
    let DataItem::Data { data, metadata } = &mut items[index] else {
        return Ok(());
    };
    let validator = compile(&request.schema).map_err(|message| FormError::Invalid {
        request_id: id.clone(),
        item: index,
        errors: vec![FieldError {
            path: String::new(),
            message,
        }],
    })?;
    let answer = Value::Object(data.clone());
    let errors: Vec<FieldError> = validator
        .iter_errors(&answer)
        .take(MAX_ERRORS)
        .map(|e| FieldError {
            path: e.instance_path().to_string(),
            message: e.to_string(),
        })
        .collect();
    if !errors.is_empty() {
        return Err(FormError::Invalid {
            request_id: id.clone(),
            item: index,
            errors,
        });
    }
    let tags = metadata.get_or_insert_with(JsonObject::new);
    tags.extend(activity::answer_metadata(id));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trip() -> InputRequest {
        InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: None,
            schema: json!({"type":"object","required":["city","days"],
                "properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}}})
            .as_object()
            .cloned()
            .unwrap(),
        }
    }

    fn data(v: Value) -> DataItem {
        DataItem::Data {
            data: v.as_object().cloned().unwrap(),
            metadata: None,
        }
    }

    #[test]
    fn a_fitting_answer_is_tagged() {
        let mut items = vec![
            DataItem::text("here"),
            data(json!({"city": "Paris", "days": 3})),
        ];
        take_answer(&trip(), &mut items).unwrap();
        assert!(activity::is_answer_to(&items[1], "trip"));
    }

    #[test]
    fn a_wrong_answer_names_each_failing_field() {
        let mut items = vec![data(json!({"city": 7, "days": 0}))];
        let err = take_answer(&trip(), &mut items).unwrap_err();
        let FormError::Invalid { errors, item, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(*item, 0);
        let paths: Vec<_> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(
            paths.contains(&"/city") && paths.contains(&"/days"),
            "{err}"
        );
        let missing = take_answer(&trip(), &mut [data(json!({"city": "Oslo"}))]).unwrap_err();
        assert!(missing.to_string().contains("days"), "{missing}");
    }

    #[test]
    fn text_passes_and_two_untagged_answers_are_ambiguous() {
        take_answer(&trip(), &mut [DataItem::text("never mind")]).unwrap();
        let err = take_answer(
            &trip(),
            &mut [data(json!({"city": "a"})), data(json!({"city": "b"}))],
        )
        .unwrap_err();
        assert!(matches!(err, FormError::Ambiguous { .. }));
    }

    #[test]
    fn an_answer_to_another_form_is_refused() {
        let mut items = vec![DataItem::Data {
            data: JsonObject::new(),
            metadata: Some(activity::answer_metadata("hotel")),
        }];
        let err = take_answer(&trip(), &mut items).unwrap_err();
        assert_eq!(
            err,
            FormError::OtherForm {
                request_id: "trip".into(),
                named: "hotel".into()
            }
        );
    }

    #[test]
    fn schemas_must_be_valid_and_local() {
        assert!(compile(&trip().schema).is_ok());
        let bad = json!({"type": "object", "properties": {"a": {"type": 12}}});
        assert!(compile(bad.as_object().unwrap()).is_err());
        let remote = json!({"type": "object", "$ref": "https://example.com/s.json"});
        assert!(compile(remote.as_object().unwrap()).is_err());
    }
}
