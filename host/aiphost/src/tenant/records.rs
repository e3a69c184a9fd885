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

/// The key of tenant `id`'s [`TenantRecord`].
pub fn tenant_key(id: &str) -> String {
    format!("tenant/{id}")
}

/// The key of admin credential `id`'s [`AdminCredential`].
pub fn credential_key(id: &str) -> String {
    format!("cred/{id}")
}

/// The key of partner `id`'s [`AgentRecord`].
pub fn agent_key(id: &str) -> String {
    format!("agent/{id}")
}

/// The key of Leader API key `id`'s [`LeaderKey`].
pub fn leader_key_key(id: &str) -> String {
    format!("key/{id}")
}

/// The key of partner `agent`'s config values and secrets.
pub fn values_key(agent: &str) -> String {
    format!("values/{agent}")
}

/// A tenant.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRecord {
    /// The tenant's id.
    pub id: String,
    /// When it was created, in Unix ms.
    pub created_ms: i64,
    /// Its limits.
    pub quotas: Quotas,
    /// Ids of its admin credentials.
    pub credentials: Vec<String>,
}

/// A tenant admin token, by hash.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminCredential {
    /// The tenant it administers.
    pub tenant: String,
    /// SHA-256 of the token, hex.
    pub hash: String,
    /// When it was issued, in Unix ms.
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
    /// When it was published, in Unix ms.
    pub published_ms: i64,
    /// SHA-256 of the component, hex.
    pub sha256: String,
    /// The component's size, in bytes.
    pub component_bytes: u64,
}

/// A partner id claimed by a tenant. The claim outlives an unpublish and the tenant's removal:
/// an id is never handed to another tenant, who would otherwise inherit its tasks and store.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRecord {
    /// The partner id (the manifest's `agent.id`).
    pub id: String,
    /// The tenant that claimed it.
    pub tenant: String,
    /// The version serving new tasks (`None`: unpublished).
    pub current: Option<u64>,
    /// Every version published, in publish order.
    pub versions: Vec<VersionInfo>,
    /// The owning tenant was removed; the id stays claimed.
    #[serde(default)]
    pub orphaned: bool,
}

impl AgentRecord {
    /// The version numbered `version`.
    pub fn version(&self, version: u64) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.version == version)
    }

    /// The number the next publish gets: one more than the highest so far.
    pub fn next_version(&self) -> u64 {
        self.versions.iter().map(|v| v.version).max().unwrap_or(0) + 1
    }
}

/// A Leader's API key for one partner, by hash.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderKey {
    /// The key's id (the middle part of its token).
    pub id: String,
    /// The tenant that issued it.
    pub tenant: String,
    /// The partner it may call.
    pub agent: String,
    /// The Leader's AIC: who the key authenticates.
    pub leader: String,
    /// SHA-256 of the token, hex.
    pub hash: String,
    /// When it was issued, in Unix ms.
    pub created_ms: i64,
    /// When it stops working, in Unix ms (`None`: never).
    pub expires_ms: Option<i64>,
}
