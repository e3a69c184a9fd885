//! Config values and secrets of a tenant's partners: stored (in files of their own, not in sled:
//! `value_files`), shared with every loaded version of the partner, and never shown back
//! (secrets).

use super::*;
use crate::runtime::outbound::{AgentValues, SecretHeader};
use serde_json::json;
use std::sync::{Arc, RwLock};

impl Tenancy {
    /// The live config values and secrets of `agent`, loaded from the store once.
    pub(super) fn values_of(&self, agent: &str) -> Result<Arc<RwLock<AgentValues>>, TenancyError> {
        let mut map = self.values.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(values) = map.get(agent) {
            return Ok(values.clone());
        }
        let values = Arc::new(RwLock::new(self.value_files.read(agent)?));
        map.insert(agent.to_string(), values.clone());
        Ok(values)
    }

    /// Change `agent`'s config values or secrets with `change`, store them, and let running
    /// versions see them at their next read.
    pub(super) async fn change_values(
        &self,
        principal: &Principal,
        agent: &str,
        change: impl FnOnce(&mut AgentValues) -> Result<(), TenancyError>,
    ) -> Result<(), TenancyError> {
        self.owned_agent(principal, agent)?;
        let _guard = self.changes.lock().await;
        let values = self.values_of(agent)?;
        let mut changed = values.read().unwrap_or_else(|p| p.into_inner()).clone();
        change(&mut changed)?;
        self.value_files.write(agent, &changed)?;
        *values.write().unwrap_or_else(|p| p.into_inner()) = changed;
        Ok(())
    }

    /// Set config value `name` of `agent`.
    pub async fn set_config(
        &self,
        principal: &Principal,
        agent: &str,
        name: &str,
        value: String,
    ) -> Result<(), TenancyError> {
        if name.is_empty() || name.len() > 128 || value.len() > 64 * 1024 {
            return Err(invalid(
                "config",
                "a name is 1-128 characters and a value at most 64 KiB",
            ));
        }
        self.change_values(principal, agent, |r| {
            r.config.insert(name.to_string(), value);
            Ok(())
        })
        .await
    }

    /// Set secret `name` of `agent`: `header: value` added to every request to `host`.
    pub async fn set_secret(
        &self,
        principal: &Principal,
        agent: &str,
        name: &str,
        secret: SecretHeader,
    ) -> Result<(), TenancyError> {
        if name.is_empty() || name.len() > 128 {
            return Err(invalid("name", "must be 1-128 characters"));
        }
        if http::HeaderName::from_bytes(secret.header.as_bytes()).is_err() {
            return Err(invalid("header", "is not a valid HTTP header name"));
        }
        if http::HeaderValue::from_str(&secret.value).is_err() {
            return Err(invalid("value", "is not a valid HTTP header value"));
        }
        if secret.host.is_empty() || secret.host.contains('/') {
            return Err(invalid("host", "must be a host or host:port, as granted"));
        }
        self.change_values(principal, agent, |r| {
            r.secrets.insert(name.to_string(), secret);
            Ok(())
        })
        .await
    }

    /// Delete config value or secret `name` (`secret`: which of the two).
    pub async fn delete_value(
        &self,
        principal: &Principal,
        agent: &str,
        name: &str,
        secret: bool,
    ) -> Result<(), TenancyError> {
        self.change_values(principal, agent, |r| {
            let removed = if secret {
                r.secrets.remove(name).is_some()
            } else {
                r.config.remove(name).is_some()
            };
            if removed {
                Ok(())
            } else {
                Err(TenancyError::NotFound {
                    what: if secret { "secret" } else { "config value" },
                    id: name.to_string(),
                })
            }
        })
        .await
    }

    /// `agent`'s config values, and its secrets without their values.
    pub fn list_values(
        &self,
        principal: &Principal,
        agent: &str,
    ) -> Result<serde_json::Value, TenancyError> {
        self.owned_agent(principal, agent)?;
        let values = self.values_of(agent)?;
        let values = values.read().unwrap_or_else(|p| p.into_inner());
        let secrets: serde_json::Map<String, serde_json::Value> = values
            .secrets
            .iter()
            .map(|(name, s)| (name.clone(), json!({"host": s.host, "header": s.header})))
            .collect();
        Ok(json!({"config": values.config, "secrets": secrets}))
    }
}
