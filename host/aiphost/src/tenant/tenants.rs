//! Tenants: the operator creates, lists and removes them.

use super::credentials::{Credential, Kind};
use super::records::*;
use super::*;
use crate::model::Timestamp;
use aiphost_engine::quota::{Quotas, TenantState};
use serde_json::json;
use std::sync::Arc;

impl Tenancy {
    /// Create a tenant; answers its record and its admin token (shown only now).
    pub async fn create_tenant(
        &self,
        id: &str,
        quotas: Option<Quotas>,
    ) -> Result<(TenantRecord, String), TenancyError> {
        check_id("id", id)?;
        let quotas = quotas.unwrap_or_else(|| self.config.default_quotas.clone());
        quotas
            .check()
            .map_err(|(field, reason)| invalid(format!("quotas.{field}"), reason))?;
        let _guard = self.changes.lock().await;
        if self.store.tenancy_get(&tenant_key(id))?.is_some() {
            return Err(TenancyError::Exists {
                what: "tenant",
                id: id.into(),
            });
        }
        let credential = Credential::issue(Kind::TenantAdmin);
        let now = Timestamp::now_ms();
        let record = TenantRecord {
            id: id.into(),
            created_ms: now,
            quotas: quotas.clone(),
            credentials: vec![credential.id.clone()],
        };
        let admin = AdminCredential {
            tenant: id.into(),
            hash: credential.hash.clone(),
            created_ms: now,
        };
        let ticket = self.store.tenancy_apply(
            &[
                (tenant_key(id), to_json(&record)?),
                (credential_key(&credential.id), to_json(&admin)?),
            ],
            &[],
        )?;
        self.store.durable(ticket).await?;
        self.tenant_map_insert(Arc::new(TenantState::new(id, quotas)));
        tracing::info!(tenant = id, "tenant created");
        Ok((record, credential.token))
    }

    /// Every tenant, with its partners; then the tenants being removed (`"state": "removing"`).
    pub fn list_tenants(&self) -> Result<Vec<serde_json::Value>, TenancyError> {
        let agents = self.agent_records()?;
        let removing = self
            .store
            .tenancy_scan("removing/")?
            .into_iter()
            .map(|(_, bytes)| Ok(Removal::from(&bytes.decode::<RemovingRecord>()?).to_json()));
        self.store
            .tenancy_scan("tenant/")?
            .into_iter()
            .map(|(_, bytes)| {
                let record: TenantRecord = bytes.decode()?;
                let owned: Vec<&str> = agents
                    .iter()
                    .filter(|a| a.tenant == record.id && !a.orphaned)
                    .map(|a| a.id.as_str())
                    .collect();
                let stored = self.tenant(&record.id).map_or(0, |t| t.stored_bytes());
                Ok(json!({
                    "id": record.id,
                    "state": "active",
                    "createdMs": record.created_ms,
                    "quotas": record.quotas,
                    "agents": owned,
                    "storedBytes": stored,
                }))
            })
            .chain(removing)
            .collect()
    }

    /// Begin removing a tenant: at once, its partners stop serving and its credentials and
    /// keys stop working, and a durable mark says the removal has begun; everything else of it
    /// (values, bundles, tasks, key-value entries) goes in the background
    /// ([`Tenancy::spawn_removal`]). Asked again while it runs, answers that it runs (and runs
    /// again one that failed). Its partner ids stay claimed.
    pub async fn remove_tenant(self: &Arc<Self>, id: &str) -> Result<Removal, TenancyError> {
        let _guard = self.changes.lock().await;
        if let Some(bytes) = self.store.tenancy_get(&removing_key(id))? {
            let mark: RemovingRecord = bytes.decode()?;
            self.spawn_removal(mark.clone());
            return Ok(Removal::from(&mark));
        }
        let Some(bytes) = self.store.tenancy_get(&tenant_key(id))? else {
            return Err(TenancyError::NotFound {
                what: "tenant",
                id: id.into(),
            });
        };
        let record: TenantRecord = bytes.decode()?;
        let mut deletes = vec![tenant_key(id)];
        deletes.extend(record.credentials.iter().map(|c| credential_key(c)));
        let mut mark = RemovingRecord {
            id: id.into(),
            since_ms: Timestamp::now_ms(),
            agents: Vec::new(),
        };
        let mut puts = Vec::new();
        for mut agent in self.agent_records()? {
            if agent.tenant == id && !agent.orphaned {
                mark.agents.push(RemovedAgent {
                    id: agent.id.clone(),
                    components: agent.versions.iter().map(|v| v.sha256.clone()).collect(),
                });
                // Only the claim stays: the id, and whose it was.
                agent.orphaned = true;
                agent.current = None;
                agent.versions.clear();
                puts.push((agent_key(&agent.id), to_json(&agent)?));
            }
        }
        for (key, bytes) in self.store.tenancy_scan("key/")? {
            let leader_key: LeaderKey = bytes.decode()?;
            if leader_key.tenant == id {
                deletes.push(key);
            }
        }
        puts.push((removing_key(id), to_json(&mark)?));
        let ticket = self.store.tenancy_apply(&puts, &deletes)?;
        self.store.durable(ticket).await?;
        for agent in &mark.agents {
            self.stop_serving(&agent.id);
        }
        self.tenants
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        tracing::info!(tenant = id, "tenant removal begun");
        self.spawn_removal(mark.clone());
        Ok(Removal::from(&mark))
    }
}
