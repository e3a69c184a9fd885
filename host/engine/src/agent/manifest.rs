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

use serde::Deserialize;
use std::path::Path;

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
    /// Read and check `partner.toml` at `path`.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    /// Parse and check manifest text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ManifestError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| ManifestError::Syntax {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        manifest.check(origin)?;
        Ok(manifest)
    }

    fn check(&self, origin: &str) -> Result<(), ManifestError> {
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
}
