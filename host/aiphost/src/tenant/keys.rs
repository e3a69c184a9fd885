//! API keys: a tenant issues, lists and revokes the keys its partners' Leaders authenticate with
//! (only their hashes are kept).

use super::credentials::{Credential, Kind};
use super::records::*;
use super::*;
use crate::agent::manifest::LeaderAuth;
use crate::model::Timestamp;
use serde_json::json;

/// The longest label a key may have.
const MAX_LABEL_CHARS: usize = 64;

impl Tenancy {
    /// Issue an API key for a Leader (`leader`: its AIC) to call `agent`.
    pub async fn issue_key(
        &self,
        principal: &Principal,
        agent: &str,
        leader: &str,
        ttl_seconds: Option<u64>,
        label: Option<&str>,
    ) -> Result<(LeaderKey, String), TenancyError> {
        let record = self.owned_agent(principal, agent)?;
        // A key for a partner that does not ask for keys lets in nobody who is not let in
        // already, and keeps nobody out: issuing one would only mislead its holder.
        let access = self
            .agents
            .get(agent)
            .map(|a| a.manifest.access.leaders)
            .unwrap_or_default();
        if access != LeaderAuth::ApiKey {
            let how = match access {
                LeaderAuth::Mtls => {
                    "its Leaders are known by client certificate (`leaders = \"mtls\"`)"
                }
                _ => "it admits any Leader (`[access] leaders = \"open\"`, the default)",
            };
            return Err(invalid(
                "access",
                format!(
                    "partner {agent:?} does not take API keys: {how}, so a key would let in no one \
                     and keep out no one; to require keys, publish it with `[access]` \
                     `leaders = \"api-key\"` in its partner.toml, then issue them"
                ),
            ));
        }
        if leader.trim().is_empty() || leader.len() > 256 || leader.chars().any(char::is_control) {
            return Err(invalid(
                "leader",
                "must be the Leader's AIC (1-256 characters, none of them control characters)",
            ));
        }
        if let Some(label) = label
            && (label.is_empty()
                || label.chars().count() > MAX_LABEL_CHARS
                || label.chars().any(char::is_control))
        {
            return Err(invalid(
                "label",
                format!("must be 1-{MAX_LABEL_CHARS} printable characters (no control characters)"),
            ));
        }
        if ttl_seconds == Some(0) {
            return Err(invalid("ttlSeconds", "must be at least 1"));
        }
        let credential = Credential::issue(Kind::LeaderKey);
        let now = Timestamp::now_ms();
        let key = LeaderKey {
            id: credential.id.clone(),
            tenant: record.tenant,
            agent: agent.into(),
            leader: leader.into(),
            hash: credential.hash,
            created_ms: now,
            expires_ms: ttl_seconds.map(|s| now.saturating_add((s as i64).saturating_mul(1000))),
            label: label.map(str::to_string),
        };
        let ticket = self
            .store
            .tenancy_apply(&[(leader_key_key(&key.id), to_json(&key)?)], &[])?;
        self.store.durable(ticket).await?;
        Ok((key, credential.token))
    }

    /// The keys of `agent` (without their hashes).
    pub fn list_keys(
        &self,
        principal: &Principal,
        agent: &str,
    ) -> Result<Vec<serde_json::Value>, TenancyError> {
        self.owned_agent(principal, agent)?;
        let mut keys = Vec::new();
        for (_, bytes) in self.store.tenancy_scan("key/")? {
            let key: LeaderKey = bytes.decode()?;
            if key.agent == agent {
                keys.push(json!({
                    "id": key.id, "leader": key.leader,
                    "createdMs": key.created_ms, "expiresMs": key.expires_ms,
                    "label": key.label,
                }));
            }
        }
        Ok(keys)
    }

    /// Revoke a key: the next request bearing it is refused.
    pub async fn revoke_key(
        &self,
        principal: &Principal,
        agent: &str,
        key_id: &str,
    ) -> Result<(), TenancyError> {
        self.owned_agent(principal, agent)?;
        let not_found = || TenancyError::NotFound {
            what: "key",
            id: key_id.into(),
        };
        let bytes = self
            .store
            .tenancy_get(&leader_key_key(key_id))?
            .ok_or_else(not_found)?;
        let key: LeaderKey = bytes.decode()?;
        if key.agent != agent {
            return Err(not_found());
        }
        let ticket = self.store.tenancy_apply(&[], &[leader_key_key(key_id)])?;
        self.store.durable(ticket).await?;
        Ok(())
    }
}
