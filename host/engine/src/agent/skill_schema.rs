//! A skill's `input-schema`: the JSON Schema of the arguments a tool call of the skill takes (the
//! MCP door's `inputSchema`, issue 33), written in `partner.toml` as a TOML table.
//!
//! ```toml
//! [skills.input-schema]
//! type = "object"
//! required = ["destination"]
//! properties.destination = { type = "string" }
//! properties.days = { type = "integer", minimum = 1 }
//! ```
//!
//! Why a table rather than a JSON string: the manifest stays one language, and TOML's own
//! errors point at the line. The table is converted to JSON here and held to the rules a
//! partner's form schema meets at run time (`activity::MAX_SCHEMA_BYTES`,
//! `activity::MAX_SCHEMA_DEPTH`, compiled by [`forms::compile_schema`]: no remote `$ref`, linear
//! `pattern`s), plus MCP's: a tool's arguments are an object, so the top says `type = "object"`.
//! Every refusal names the path inside the schema, so an author can find the line.
//!
//! [`SkillInputs`] holds the schemas compiled, once per loaded partner, for the calls that
//! check their arguments against them.

use super::manifest::Manifest;
use crate::task::forms::{self, FieldError};
use aiphost_model::JsonObject;
use aiphost_model::activity::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH};
use serde_json::Value;

/// The most failing places one check names (as a form answer's check does).
const MAX_ERRORS: usize = 20;

/// A partner's skills' input schemas, compiled: one entry per skill of its manifest, in its
/// order (`None`: the skill gives no schema). Compiled when the partner is loaded or published,
/// not per call: a schema is up to 64 KiB and compiling it costs far more than checking.
#[derive(Default)]
pub struct SkillInputs {
    validators: Vec<Option<jsonschema::Validator>>,
}

impl SkillInputs {
    /// The compiled schemas of `manifest`'s skills. A checked manifest's schemas compile (its
    /// check compiled them with the same options); one that does not anyway is logged and its
    /// skill left with none, so a partner never fails to load on it.
    pub fn compile(manifest: &Manifest) -> Self {
        let validators = manifest
            .skills
            .iter()
            .map(|skill| {
                let schema = skill.input_schema()?;
                forms::compile_schema(schema)
                    .inspect_err(|e| {
                        tracing::warn!(agent = %manifest.agent.id, skill = %skill.id, error = %e,
                            "a skill's input schema does not compile; its calls take the default arguments")
                    })
                    .ok()
            })
            .collect();
        SkillInputs { validators }
    }

    /// Whether skill `index` (its place in the manifest) has an input schema.
    pub fn has_schema(&self, index: usize) -> bool {
        matches!(self.validators.get(index), Some(Some(_)))
    }

    /// `arguments` checked against skill `index`'s schema: every failing place (a JSON Pointer
    /// into the arguments, empty for the whole), at most 20; `None` when the skill has no schema.
    pub fn check(&self, index: usize, arguments: &Value) -> Option<Vec<FieldError>> {
        let validator = self.validators.get(index)?.as_ref()?;
        Some(
            validator
                .iter_errors(arguments)
                .take(MAX_ERRORS)
                .map(|e| FieldError {
                    path: e.instance_path().to_string(),
                    message: e.to_string(),
                })
                .collect(),
        )
    }
}

/// Why an input schema was refused: the field at fault (`skills[0].input-schema.properties.when`)
/// and the rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaRefusal {
    /// Where, starting with the `field` [`convert`] was given.
    pub field: String,
    /// What is wrong there.
    pub reason: String,
}

/// The JSON object of `table`, the `input-schema` found at `field`, once every rule holds.
pub fn convert(table: &toml::Table, field: &str) -> Result<JsonObject, SchemaRefusal> {
    let schema = table_to_json(table, field, 1)?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaRefusal {
            field: format!("{field}.type"),
            reason: "must be \"object\" (a tool's arguments are a JSON object)".into(),
        });
    }
    // The size of the JSON the doors will send: the TOML spelling can be shorter or longer.
    let bytes = serde_json::to_vec(&schema).map_or(usize::MAX, |json| json.len());
    if bytes > MAX_SCHEMA_BYTES {
        return Err(SchemaRefusal {
            field: field.into(),
            reason: format!("is {bytes} bytes as JSON; at most {MAX_SCHEMA_BYTES} are allowed"),
        });
    }
    forms::compile_schema(&schema).map_err(|e| SchemaRefusal {
        field: format!("{field}{}", pointer_as_path(e.instance_path().as_str())),
        reason: format!("is not a valid JSON Schema: {e}"),
    })?;
    Ok(schema)
}

/// `table` (at `path`, `level` levels deep: the schema's own table is level 1) as JSON.
fn table_to_json(
    table: &toml::Table,
    path: &str,
    level: usize,
) -> Result<JsonObject, SchemaRefusal> {
    too_deep(path, level)?;
    table
        .iter()
        .map(|(key, value)| {
            let json = value_to_json(value, &format!("{path}{}", key_segment(key)), level)?;
            Ok((key.clone(), json))
        })
        .collect()
}

/// One TOML value found at `path` inside a container at `level`, as JSON. Recursion stops at
/// [`MAX_SCHEMA_DEPTH`], so a deep table costs no deep stack.
fn value_to_json(value: &toml::Value, path: &str, level: usize) -> Result<Value, SchemaRefusal> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => Value::Number(n),
            None => {
                return Err(SchemaRefusal {
                    field: path.into(),
                    reason: format!("is {f}, which JSON has no number for"),
                });
            }
        },
        // TOML has dates and times, JSON has none: the schema would mean something else as a
        // string, so the author says which by quoting it.
        toml::Value::Datetime(d) => {
            return Err(SchemaRefusal {
                field: path.into(),
                reason: format!(
                    "is the TOML date-time {d}, which JSON has no value for (quote it to make it a string)"
                ),
            });
        }
        toml::Value::Array(items) => {
            too_deep(path, level + 1)?;
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| value_to_json(item, &format!("{path}[{i}]"), level + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        toml::Value::Table(table) => Value::Object(table_to_json(table, path, level + 1)?),
    })
}

fn too_deep(path: &str, level: usize) -> Result<(), SchemaRefusal> {
    if level > MAX_SCHEMA_DEPTH {
        return Err(SchemaRefusal {
            field: path.into(),
            reason: format!("nests deeper than {MAX_SCHEMA_DEPTH} levels"),
        });
    }
    Ok(())
}

/// `.key`, or `."some key"` when the key is not a bare TOML key (as TOML would quote it).
fn key_segment(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        format!(".{key}")
    } else {
        format!(".{key:?}")
    }
}

/// A JSON Pointer into the schema (`/properties/days/type`) in the manifest's dotted spelling
/// (`.properties.days.type`); array indexes stay keys, as a pointer cannot tell them apart.
fn pointer_as_path(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| key_segment(&segment.replace("~1", "/").replace("~0", "~")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).expect("TOML")
    }

    #[test]
    fn converts_a_schema_to_json() {
        let schema = convert(
            &table(
                r#"
type = "object"
required = ["destination"]
additionalProperties = false
properties.destination = { type = "string", maxLength = 80 }
properties.days = { type = "integer", minimum = 1, multipleOf = 0.5 }
"#,
            ),
            "skills[0].input-schema",
        )
        .expect("a good schema");
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "required": ["destination"],
                "additionalProperties": false,
                "properties": {
                    "destination": {"type": "string", "maxLength": 80},
                    "days": {"type": "integer", "minimum": 1, "multipleOf": 0.5},
                },
            })
        );
    }

    #[test]
    fn refuses_with_the_path() {
        let refused =
            |text: &str| convert(&table(text), "skills[1].input-schema").expect_err("a refusal");
        let e = refused(
            "type = \"object\"\nproperties.when = { type = \"string\", default = 1979-05-27T07:32:00Z }\n",
        );
        assert_eq!(e.field, "skills[1].input-schema.properties.when.default");
        assert!(e.reason.contains("date-time 1979-05-27T07:32:00Z"), "{e:?}");
        let e = refused("type = \"object\"\nexamples = [{ \"a b\" = [1, 2021-01-01] }]\n");
        assert_eq!(e.field, "skills[1].input-schema.examples[0].\"a b\"[1]");
        let e = refused("type = \"object\"\nmaximum = nan\n");
        assert_eq!(e.field, "skills[1].input-schema.maximum");
        assert!(e.reason.contains("no number"), "{e:?}");

        let e = refused("type = \"array\"\n");
        assert_eq!(e.field, "skills[1].input-schema.type");
        let e = refused("properties.a = { type = \"string\" }\n");
        assert_eq!(e.field, "skills[1].input-schema.type");

        let e = refused("type = \"object\"\nproperties.days = { type = 12 }\n");
        assert!(e.reason.contains("not a valid JSON Schema"), "{e:?}");
        assert!(e.field.starts_with("skills[1].input-schema"), "{e:?}");
        let e = refused("type = \"object\"\n\"$ref\" = \"https://example.com/s.json\"\n");
        assert!(e.reason.contains("not a valid JSON Schema"), "{e:?}");

        let deep = format!(
            "type = \"object\"\nx = {}1{}\n",
            "[".repeat(MAX_SCHEMA_DEPTH),
            "]".repeat(MAX_SCHEMA_DEPTH)
        );
        let e = refused(&deep);
        assert!(e.reason.contains("deeper than 32"), "{e:?}");
        assert!(
            e.field.starts_with("skills[1].input-schema.x[0][0]"),
            "{e:?}"
        );
        let shallow = format!(
            "type = \"object\"\nx = {}1{}\n",
            "[".repeat(MAX_SCHEMA_DEPTH - 1),
            "]".repeat(MAX_SCHEMA_DEPTH - 1)
        );
        assert!(convert(&table(&shallow), "s").is_ok());

        let big = format!(
            "type = \"object\"\ndescription = \"{}\"\n",
            "x".repeat(MAX_SCHEMA_BYTES)
        );
        let e = refused(&big);
        assert_eq!(e.field, "skills[1].input-schema");
        assert!(e.reason.contains("at most 65536"), "{e:?}");
    }

    #[test]
    fn compiled_inputs_check_arguments_by_skill() {
        let manifest = Manifest::parse(
            r#"
[agent]
id = "typed"
aic = "1.2.156.3088.1.1.AIPHST.TYPED.1.0000"
name = "Typed"
description = "d"
version = "0.1.0"

[[skills]]
id = "plain"
name = "Plain"
description = "no schema"

[[skills]]
id = "trip"
name = "Trip"
description = "a schema"
[skills.input-schema]
type = "object"
required = ["city"]
additionalProperties = false
properties.city = { type = "string" }
properties.days = { type = "integer", minimum = 1 }
"#,
            "test",
        )
        .expect("a good manifest");
        let inputs = SkillInputs::compile(&manifest);
        assert!(!inputs.has_schema(0));
        assert!(inputs.has_schema(1));
        assert!(!inputs.has_schema(2));
        assert_eq!(inputs.check(0, &json!({})), None);
        assert_eq!(
            inputs.check(1, &json!({"city": "Oslo", "days": 3})),
            Some(vec![])
        );
        let errors = inputs
            .check(1, &json!({"days": 0, "x": 1}))
            .expect("a schema");
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"/days"), "{errors:?}");
        assert!(paths.contains(&""), "{errors:?}");
        let errors = inputs
            .check(1, &json!({"city": 1, "days": "x"}))
            .expect("a schema");
        assert_eq!(errors.len(), 2, "{errors:?}");
    }

    #[test]
    fn a_compile_error_names_where_in_the_schema() {
        // The meta-schema check fails at the property's `type`: the path goes down to it.
        let e = convert(
            &table("type = \"object\"\nproperties.days = { type = 12 }\n"),
            "f",
        )
        .expect_err("a refusal");
        assert!(e.field.starts_with("f.properties.days"), "{e:?}");
        assert_eq!(pointer_as_path("/a~1b/c~0d/0"), ".\"a/b\".\"c~d\".0");
    }
}
