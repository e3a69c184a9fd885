//! What the tenancy side of the store holds, and under which keys.
//!
//! | key                | record        |
//! |--------------------|---------------|
//! | `tenant/{id}`      | [`TenantRecord`] |
//! | `cred/{id}`        | [`AdminCredential`] (a tenant admin token's hash) |
//! | `agent/{id}`       | [`AgentRecord`]: owner, versions, the one serving |
//! | `key/{id}`         | [`LeaderKey`] (a Leader API key's hash) |
//! | `removing/{id}`    | [`RemovingRecord`]: a tenant being removed |
//! | `values/{agent}`   | none any more: config values and secrets are files (`value_files`); a store that still holds some has them moved out when it opens |

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

/// The key of the [`RemovingRecord`] of tenant `id`.
pub fn removing_key(id: &str) -> String {
    format!("removing/{id}")
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

/// A tenant whose removal has begun and not ended: written in the same batch that deletes its
/// record, credentials and keys, deleted when everything of it is gone. Start-up finishes the
/// removals it finds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemovingRecord {
    /// The tenant's id.
    pub id: String,
    /// When its removal began, in Unix ms.
    pub since_ms: i64,
    /// Its partners, with the SHA-256 of every component it published for each.
    pub agents: Vec<RemovedAgent>,
}

/// A partner of a tenant being removed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemovedAgent {
    /// The partner id.
    pub id: String,
    /// SHA-256 (hex) of each version's component: their compiled forms are deleted too.
    pub components: Vec<String>,
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
/// an id is never handed to another tenant, whose Leaders' old references (keys, task ids,
/// group invitations) would otherwise reach a stranger. A removed tenant's claim keeps only the
/// id and the tenant's name (its versions are forgotten with its bundles).
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
    /// What it is for, as its issuer said (`console`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}
