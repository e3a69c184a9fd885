//! A partner's manifest (`partner.toml`): who it is, what skills it offers, what it may use.
//!
//! ```toml
//! [agent]
//! id = "echo"                                   # URL segment: /agents/echo
//! aic = "1.2.156.3088.1.1.AIPHST.ECHO.1.0000"
//! name = "Echo"
//! description = "Echoes its input back as a product."
//! version = "0.1.0"
//!
//! [[skills]]
//! id = "echo"
//! name = "Echo"
//! description = "Returns the input DataItems as a product."
//! tags = ["example"]
//! input-modes = ["text/plain", "application/json"]
//! output-modes = ["text/plain", "application/json"]
//!
//! [skills.input-schema]                         # optional: the JSON Schema of a tool call's
//! type = "object"                               # arguments (the MCP door's inputSchema)
//! properties.text = { type = "string" }
//!
//! [skills.annotations]                          # optional: MCP tool annotations
//! read-only = true
//!
//! [limits]
//! memory-mib = 64
//! invocation-ms = 10000
//!
//! [access]
//! leaders = "open"                              # or "api-key" or "mtls"
//! allowed-leaders = []                          # AICs; empty: any authenticated Leader
//!
//! [capabilities]
//! http = ["api.example.com"]                    # outbound HTTP, if the operator allows it
//! config = ["MODEL"]                            # config values its tenant sets
//! ```

use super::skill_schema;
use aiphost_model::JsonObject;
use serde::Deserialize;
use std::path::Path;

/// Which rules a manifest is held to: one coming in (published, built, checked by the CLI) meets
/// every rule; one the host already stored meets those it was accepted under, so a rule added
/// later cannot leave an accepted partner unable to load (its breach is logged instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// A manifest coming in: every rule.
    New,
    /// A bundle already stored or installed: later rules (unique skill ids) only warn.
    Stored,
}

/// Why a manifest was refused.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The manifest file.
        path: String,
        /// What reading it failed with.
        source: std::io::Error,
    },
    /// The text is not TOML of the manifest's shape (including unknown fields).
    #[error("{path} is not a valid manifest: {message}")]
    Syntax {
        /// Where the manifest came from (a path or another origin).
        path: String,
        /// The TOML parser's message.
        message: String,
    },
    /// The manifest parses but a field breaks a rule.
    #[error("{path}: {field} {reason}")]
    Invalid {
        /// Where the manifest came from (a path or another origin).
        path: String,
        /// The field at fault, e.g. `agent.id` or `skills[0].name`.
        field: String,
        /// The rule it breaks.
        reason: String,
    },
}

/// The whole manifest.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `[agent]`: the partner's identity.
    pub agent: AgentInfo,
    /// `[[skills]]`: at least one.
    #[serde(default)]
    pub skills: Vec<Skill>,
    /// `[limits]`: resource limits it asks for.
    #[serde(default)]
    pub limits: Limits,
    /// `[access]`: who may call it.
    #[serde(default)]
    pub access: Access,
    /// `[capabilities]`: what it asks for beyond its sandbox.
    #[serde(default)]
    pub capabilities: CapabilityRequest,
}

/// What the partner asks for beyond its sandbox (`[capabilities]`); the operator's policy
/// decides what is granted.
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CapabilityRequest {
    /// Hosts it sends HTTP requests to: `api.example.com` (the scheme's default port) or
    /// `api.example.com:8443`.
    #[serde(default)]
    pub http: Vec<String>,
    /// Config values it reads by name.
    #[serde(default)]
    pub config: Vec<String>,
}

/// Who may call the partner (`[access]`).
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Access {
    /// How Leaders authenticate: `open` (anyone), `api-key` (a bearer key its tenant issued)
    /// or `mtls` (a client certificate naming the Leader's AIC as `acps://{AIC}`).
    #[serde(default)]
    pub leaders: LeaderAuth,
    /// The Leaders (AICs) allowed to call it once authenticated; empty: every authenticated one.
    #[serde(default)]
    pub allowed_leaders: Vec<String>,
}

/// How Leaders authenticate to a partner.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LeaderAuth {
    /// No credentials: every Leader may call, and all share one task namespace.
    #[default]
    Open,
    /// `Authorization: Bearer <key>`; each Leader sees only the tasks it created.
    ApiKey,
    /// A client certificate from the operator's CA; each Leader sees only its own tasks.
    Mtls,
}

/// The partner's identity.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AgentInfo {
    /// The URL segment the partner is served under: `/agents/{id}`.
    pub id: String,
    /// Its ACPs identity code.
    pub aic: String,
    /// Its display name.
    pub name: String,
    /// What it does, for Leaders reading its ACS document.
    pub description: String,
    /// Its version string; also the version of a skill that declares none.
    pub version: String,
    /// Who provides it (ACS `provider`).
    #[serde(default)]
    pub provider: Option<Provider>,
    /// Where its documentation is (ACS `documentationUrl`).
    #[serde(default)]
    pub documentation_url: Option<String>,
}

/// Who provides the partner (ACS `provider`).
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Provider {
    /// The providing organization's name.
    #[serde(default)]
    pub organization: Option<String>,
    /// The department within the organization.
    #[serde(default)]
    pub department: Option<String>,
    /// The provider's web site.
    #[serde(default)]
    pub url: Option<String>,
    /// The provider's country code (ACS `countryCode`).
    #[serde(default)]
    pub country_code: Option<String>,
}

/// One skill (ACS `AgentSkill`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Skill {
    /// The skill's id, unique among the partner's skills.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its version; `None`: the partner's version.
    #[serde(default)]
    pub version: Option<String>,
    /// Keywords for discovery.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests it handles.
    #[serde(default)]
    pub examples: Vec<String>,
    /// MIME types it accepts (`*/*` and `type/*` allowed).
    #[serde(default)]
    pub input_modes: Vec<String>,
    /// MIME types it produces.
    #[serde(default)]
    pub output_modes: Vec<String>,
    /// `[skills.input-schema]` as written (a TOML table); [`Skill::input_schema`] is its JSON.
    #[serde(default, rename = "input-schema")]
    input_schema_table: Option<toml::Table>,
    /// The input schema as JSON, set once the manifest is checked.
    #[serde(skip)]
    input_schema: Option<JsonObject>,
    /// `[skills.annotations]`: hints about what calling the skill does (MCP tool annotations).
    #[serde(default)]
    pub annotations: Option<SkillAnnotations>,
}

impl Skill {
    /// The JSON Schema of the arguments a tool call of this skill takes, when the manifest gives
    /// one (read by the MCP door, issue 33): a checked object schema with `type: "object"`.
    pub fn input_schema(&self) -> Option<&JsonObject> {
        self.input_schema.as_ref()
    }
}

/// Hints about what calling a skill does (`[skills.annotations]`), the MCP door's tool
/// annotations; hints only, never trusted for a decision (MCP says the same of its own).
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SkillAnnotations {
    /// A display title for the tool.
    #[serde(default)]
    pub title: Option<String>,
    /// It changes nothing outside itself.
    #[serde(default)]
    pub read_only: Option<bool>,
    /// It may destroy or overwrite something (meaningful when not read-only).
    #[serde(default)]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default)]
    pub idempotent: Option<bool>,
    /// It reaches an open world (the web, other parties) rather than a closed domain.
    #[serde(default)]
    pub open_world: Option<bool>,
}

/// Resource limits the partner asks for (the operator's caps still apply).
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Limits {
    /// Linear memory per instance, in MiB.
    #[serde(default)]
    pub memory_mib: Option<u64>,
    /// Wall-clock time one invocation may take, in milliseconds.
    #[serde(default)]
    pub invocation_ms: Option<u64>,
}

/// Whether `id` can name a partner or a tenant: 1-64 characters of a-z, 0-9, '-' or '_' (it is
/// a URL segment and a store key).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

impl Manifest {
    /// Read `partner.toml` at `path` and check it against `rules`.
    pub fn load(path: &Path, rules: Rules) -> Result<Self, ManifestError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse_with(&text, &shown, rules)
    }

    /// Parse manifest text coming in and check it against every rule; `origin` names it in
    /// errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ManifestError> {
        Self::parse_with(text, origin, Rules::New)
    }

    /// Parse manifest text and check it against `rules`; `origin` names it in errors.
    pub fn parse_with(text: &str, origin: &str, rules: Rules) -> Result<Self, ManifestError> {
        let mut manifest: Manifest = toml::from_str(text).map_err(|e| ManifestError::Syntax {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        manifest.check(origin, rules)?;
        Ok(manifest)
    }

    /// Check every field, and convert the skills' input schemas to JSON (the one thing that
    /// changes: checking a schema is converting it).
    fn check(&mut self, origin: &str, rules: Rules) -> Result<(), ManifestError> {
        let invalid = |field: &str, reason: &str| ManifestError::Invalid {
            path: origin.to_string(),
            field: field.to_string(),
            reason: reason.to_string(),
        };
        if !is_valid_id(&self.agent.id) {
            return Err(invalid(
                "agent.id",
                "must be 1-64 characters of a-z, 0-9, '-' or '_' (it is a URL segment)",
            ));
        }
        for (field, value) in [
            ("agent.aic", &self.agent.aic),
            ("agent.name", &self.agent.name),
            ("agent.description", &self.agent.description),
            ("agent.version", &self.agent.version),
        ] {
            if value.trim().is_empty() {
                return Err(invalid(field, "must not be empty"));
            }
        }
        if self.skills.is_empty() {
            return Err(invalid("skills", "must list at least one skill"));
        }
        for (i, skill) in self.skills.iter().enumerate() {
            for (name, value) in [
                ("id", &skill.id),
                ("name", &skill.name),
                ("description", &skill.description),
            ] {
                if value.trim().is_empty() {
                    return Err(invalid(&format!("skills[{i}].{name}"), "must not be empty"));
                }
            }
            for mode in skill.input_modes.iter().chain(&skill.output_modes) {
                if !mode.contains('/') {
                    return Err(invalid(
                        &format!("skills[{i}]"),
                        &format!("has {mode:?}, which is not a MIME type (type/subtype)"),
                    ));
                }
            }
            // A tool's name is its skill's id: two skills of one id would be two tools of one
            // name. Refused coming in; a bundle stored before the rule still loads.
            if let Some(first) = self.skills[..i].iter().position(|s| s.id == skill.id) {
                match rules {
                    Rules::New => {
                        return Err(invalid(
                            &format!("skills[{i}].id"),
                            &format!(
                                "is {:?}, the id of skills[{first}] too; skill ids must be unique",
                                skill.id
                            ),
                        ));
                    }
                    Rules::Stored => tracing::warn!(
                        manifest = origin,
                        skill = %skill.id,
                        "skills[{i}] has the id of skills[{first}]; a publish would refuse this manifest now"
                    ),
                }
            }
            if let Some(title) = skill.annotations.as_ref().and_then(|a| a.title.as_ref())
                && title.trim().is_empty()
            {
                return Err(invalid(
                    &format!("skills[{i}].annotations.title"),
                    "must not be empty",
                ));
            }
        }
        for (i, skill) in self.skills.iter_mut().enumerate() {
            skill.input_schema = match &skill.input_schema_table {
                None => None,
                Some(table) => Some(
                    skill_schema::convert(table, &format!("skills[{i}].input-schema")).map_err(
                        |refusal| ManifestError::Invalid {
                            path: origin.to_string(),
                            field: refusal.field,
                            reason: refusal.reason,
                        },
                    )?,
                ),
            };
        }
        for (i, host) in self.capabilities.http.iter().enumerate() {
            let (name, port) = match host.rsplit_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (host.as_str(), None),
            };
            let name_ok = !name.is_empty()
                && name.len() <= 253
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
            let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
            if !name_ok || !port_ok {
                return Err(invalid(
                    &format!("capabilities.http[{i}]"),
                    &format!(
                        "is {host:?}; give a host name or address, with an optional :port (no scheme, path or wildcard)"
                    ),
                ));
            }
        }
        for (i, name) in self.capabilities.config.iter().enumerate() {
            let ok = !name.is_empty()
                && name.len() <= 128
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
            if !ok {
                return Err(invalid(
                    &format!("capabilities.config[{i}]"),
                    "must be 1-128 characters of A-Z, a-z, 0-9, '_', '-' or '.'",
                ));
            }
        }
        if self.limits.memory_mib == Some(0) {
            return Err(invalid("limits.memory-mib", "must be at least 1"));
        }
        if self.limits.invocation_ms == Some(0) {
            return Err(invalid("limits.invocation-ms", "must be at least 1"));
        }
        Ok(())
    }

    /// The MIME types the partner accepts: the union of its skills' input modes. Empty: anything.
    pub fn input_modes(&self) -> Vec<&str> {
        self.modes(|s| &s.input_modes)
    }

    /// Every output mode of its skills, sorted, once each.
    pub fn output_modes(&self) -> Vec<&str> {
        self.modes(|s| &s.output_modes)
    }

    fn modes(&self, pick: fn(&Skill) -> &Vec<String>) -> Vec<&str> {
        let mut modes: Vec<&str> = self
            .skills
            .iter()
            .flat_map(|s| pick(s).iter().map(String::as_str))
            .collect();
        modes.sort_unstable();
        modes.dedup();
        modes
    }

    /// Whether a DataItem of `mime` suits one of the skills (`*/*` and `type/*` match broadly).
    pub fn accepts(&self, mime: &str) -> bool {
        let modes = self.input_modes();
        if modes.is_empty() {
            return true;
        }
        let mime = mime
            .split(';')
            .next()
            .unwrap_or(mime)
            .trim()
            .to_ascii_lowercase();
        let major = mime.split('/').next().unwrap_or("");
        modes.iter().any(|m| {
            let m = m.to_ascii_lowercase();
            m == "*/*" || m == mime || m.strip_suffix("/*").is_some_and(|t| t == major)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[agent]
id = "echo"
aic = "1.2.156.3088.1.1.AIPHST.ECHO.1.0000"
name = "Echo"
description = "Echoes"
version = "0.1.0"

[[skills]]
id = "echo"
name = "Echo"
description = "Echoes input"
input-modes = ["text/plain", "image/*"]

[limits]
memory-mib = 32
"#;

    #[test]
    fn parses_and_matches_modes() {
        let m = Manifest::parse(GOOD, "test").unwrap();
        assert_eq!(m.agent.id, "echo");
        assert_eq!(m.limits.memory_mib, Some(32));
        assert!(m.accepts("text/plain"));
        assert!(m.accepts("text/plain; charset=utf-8"));
        assert!(m.accepts("image/png"));
        assert!(!m.accepts("application/pdf"));
    }

    #[test]
    fn rejects_bad_manifests_precisely() {
        let bad_id = GOOD.replace("id = \"echo\"\naic", "id = \"Echo/1\"\naic");
        let e = Manifest::parse(&bad_id, "test").unwrap_err().to_string();
        assert!(e.contains("agent.id"), "{e}");
        let no_skills = GOOD.split("[[skills]]").next().unwrap().to_string();
        let e = Manifest::parse(&no_skills, "test").unwrap_err().to_string();
        assert!(e.contains("skills"), "{e}");
        let unknown = format!("{GOOD}\n[surprise]\nx = 1\n");
        assert!(Manifest::parse(&unknown, "test").is_err());
        let bad_mode = GOOD.replace("\"image/*\"", "\"images\"");
        let e = Manifest::parse(&bad_mode, "test").unwrap_err().to_string();
        assert!(e.contains("MIME"), "{e}");
    }

    /// `GOOD` with `skill` TOML added to its skill (before `[limits]`).
    fn with_skill(skill: &str) -> String {
        GOOD.replace("[limits]", &format!("{skill}\n[limits]"))
    }

    /// The field and reason of the refusal of `text`.
    fn refusal(text: &str) -> (String, String) {
        match Manifest::parse(text, "test") {
            Err(ManifestError::Invalid { field, reason, .. }) => (field, reason),
            other => panic!("not an invalid field: {other:?}"),
        }
    }

    #[test]
    fn a_skill_carries_its_input_schema_and_annotations() {
        let m = Manifest::parse(
            &with_skill(
                r#"
[skills.input-schema]
type = "object"
required = ["destination"]
properties.destination = { type = "string" }
properties.days = { type = "integer", minimum = 1 }

[skills.annotations]
title = "Plan a trip"
read-only = true
destructive = false
idempotent = true
open-world = false
"#,
            ),
            "test",
        )
        .expect("a good manifest");
        let skill = &m.skills[0];
        assert_eq!(
            skill.input_schema().cloned().map(serde_json::Value::Object),
            Some(serde_json::json!({
                "type": "object",
                "required": ["destination"],
                "properties": {
                    "destination": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1},
                },
            }))
        );
        assert_eq!(
            skill.annotations,
            Some(SkillAnnotations {
                title: Some("Plan a trip".into()),
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            })
        );
        // Both are optional.
        let plain = Manifest::parse(GOOD, "test").expect("a good manifest");
        assert_eq!(plain.skills[0].input_schema(), None);
        assert_eq!(plain.skills[0].annotations, None);
    }

    #[test]
    fn refuses_bad_input_schemas_and_annotations_with_their_path() {
        let (field, reason) = refusal(&with_skill(
            "[skills.input-schema]\ntype = \"object\"\nproperties.when = { type = \"string\", default = 2026-11-28 }\n",
        ));
        assert_eq!(field, "skills[0].input-schema.properties.when.default");
        assert!(reason.contains("TOML date-time 2026-11-28"), "{reason}");

        let (field, reason) = refusal(&with_skill("[skills.input-schema]\ntype = \"string\"\n"));
        assert_eq!(field, "skills[0].input-schema.type");
        assert!(reason.contains("\"object\""), "{reason}");

        let (field, reason) = refusal(&with_skill(
            "[skills.input-schema]\ntype = \"object\"\nproperties.days = { type = \"integer\", minimum = \"one\" }\n",
        ));
        assert!(
            field.starts_with("skills[0].input-schema.properties.days"),
            "{field}"
        );
        assert!(reason.contains("not a valid JSON Schema"), "{reason}");

        // A second skill is named by its index.
        let second = with_skill(
            "[[skills]]\nid = \"plan\"\nname = \"Plan\"\ndescription = \"Plans\"\ninput-schema = { type = \"object\", properties = { a = { pattern = \"(\" } } }\n",
        );
        let (field, reason) = refusal(&second);
        assert!(
            field.starts_with("skills[1].input-schema.properties.a"),
            "{field}"
        );
        assert!(reason.contains("not a valid JSON Schema"), "{reason}");

        // A schema that is not a table at all is TOML of the wrong shape.
        let e = Manifest::parse(
            &with_skill("input-schema = \"{}\"\n").replace("[limits]\n", "\n[limits]\n"),
            "test",
        );
        assert!(e.is_err());

        let e = Manifest::parse(
            &with_skill("[skills.annotations]\nread-only = true\nreadOnlyHint = true\n"),
            "test",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("readOnlyHint"), "{e}");
        let (field, _) = refusal(&with_skill("[skills.annotations]\ntitle = \" \"\n"));
        assert_eq!(field, "skills[0].annotations.title");
    }

    #[test]
    fn duplicate_skill_ids_are_refused_coming_in_and_load_when_stored() {
        let twice = with_skill(
            "[[skills]]\nid = \"echo\"\nname = \"Again\"\ndescription = \"Echoes again\"\n",
        );
        let (field, reason) = refusal(&twice);
        assert_eq!(field, "skills[1].id");
        assert!(reason.contains("skills[0]"), "{reason}");
        let stored =
            Manifest::parse_with(&twice, "test", Rules::Stored).expect("a stored bundle loads");
        assert_eq!(stored.skills.len(), 2);
        // Stored or not, every other rule still holds.
        let twice_bad = twice.replace("id = \"echo\"\naic", "id = \"Echo/1\"\naic");
        assert!(Manifest::parse_with(&twice_bad, "test", Rules::Stored).is_err());

        // The same checks at load from a file.
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("partner.toml");
        std::fs::write(&path, &twice).expect("written");
        assert!(Manifest::load(&path, Rules::New).is_err());
        assert!(Manifest::load(&path, Rules::Stored).is_ok());
    }
}
