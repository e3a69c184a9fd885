//! What the tenancy side of the store holds, and under which keys.
//!
//! | key                | record        |
//! |--------------------|---------------|
//! | `tenant/{id}`      | [`TenantRecord`] |
//! | `cred/{id}`        | [`AdminCredential`] (a tenant admin token's hash) |
//! | `agent/{id}`       | [`AgentRecord`]: owner, versions, the one serving |
//! | `key/{id}`         | [`LeaderKey`] (a Leader API key's hash) |
//! | `values/{agent}`   | `runtime::outbound::AgentValues`: config values and secrets |

use super::quota::Quotas;
use serde::{Deserialize, Serialize};

pub fn tenant_key(id: &str) -> String {
    format!("tenant/{id}")
}

pub fn credential_key(id: &str) -> String {
    format!("cred/{id}")
}

pub fn agent_key(id: &str) -> String {
    format!("agent/{id}")
}

pub fn leader_key_key(id: &str) -> String {
    format!("key/{id}")
}

pub fn values_key(agent: &str) -> String {
    format!("values/{agent}")
}

/// A tenant.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRecord {
    pub id: String,
    pub created_ms: i64,
    pub quotas: Quotas,
    /// Ids of its admin credentials.
    pub credentials: Vec<String>,
}

/// A tenant admin token, by hash.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminCredential {
    pub tenant: String,
    pub hash: String,
    pub created_ms: i64,
}

/// One published version of a partner.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// 1, 2, 3… in publish order.
    pub version: u64,
    /// The manifest's own `agent.version`.
    pub label: String,
    pub published_ms: i64,
    /// SHA-256 of the component, hex.
    pub sha256: String,
    pub component_bytes: u64,
}

/// A partner id claimed by a tenant. The claim outlives an unpublish and the tenant's removal:
/// an id is never handed to another tenant, who would otherwise inherit its tasks and store.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRecord {
    pub id: String,
    pub tenant: String,
    /// The version serving new tasks (`None`: unpublished).
    pub current: Option<u64>,
    pub versions: Vec<VersionInfo>,
    /// The owning tenant was removed; the id stays claimed.
    #[serde(default)]
    pub orphaned: bool,
}

impl AgentRecord {
    pub fn version(&self, version: u64) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.version == version)
    }

    pub fn next_version(&self) -> u64 {
        self.versions.iter().map(|v| v.version).max().unwrap_or(0) + 1
    }
}

/// A Leader's API key for one partner, by hash.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderKey {
    pub id: String,
    pub tenant: String,
    pub agent: String,
    /// The Leader's AIC: who the key authenticates.
    pub leader: String,
    pub hash: String,
    pub created_ms: i64,
    pub expires_ms: Option<i64>,
}
