//! Deleting everything of a removed tenant, in the background: the config values and secrets of
//! its partners (their files), its bundles and their compiled forms, its partners' tasks (each
//! with everything kept for it), their key-value entries and group memberships. Then its
//! `removing/{id}` mark goes.
//!
//! Every step may run again: a stop or a failure half-way leaves the mark, and the next start-up
//! (or the next `DELETE` of the tenant) runs the removal again from the start. Tasks go in
//! batches through the engine, which holds each while it goes, so other tenants' commands are
//! never held behind a large tenant's removal.

use super::records::*;
use super::*;
use serde_json::json;

/// What `DELETE /admin/tenants/{id}` answers: the removal runs.
#[derive(Clone, Debug)]
pub struct Removal {
    /// The tenant.
    pub id: String,
    /// When its removal began, in Unix ms.
    pub since_ms: i64,
    /// Its partners, whose data is being deleted.
    pub agents: Vec<String>,
}

impl From<&RemovingRecord> for Removal {
    fn from(mark: &RemovingRecord) -> Self {
        Removal {
            id: mark.id.clone(),
            since_ms: mark.since_ms,
            agents: mark.agents.iter().map(|a| a.id.clone()).collect(),
        }
    }
}

impl Removal {
    /// As the admin API shows it.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "id": self.id,
            "state": "removing",
            "removingSinceMs": self.since_ms,
            "agents": self.agents,
        })
    }
}

impl Tenancy {
    /// Run the removal `mark` describes in the background, unless it runs already.
    pub(super) fn spawn_removal(self: &Arc<Self>, mark: RemovingRecord) {
        {
            let mut running = self.removals.lock().unwrap_or_else(|p| p.into_inner());
            if !running.insert(mark.id.clone()) {
                return;
            }
        }
        let tenancy = self.clone();
        tokio::spawn(async move {
            let id = mark.id.clone();
            match tenancy.remove_everything(&mark).await {
                Ok(tasks) => tracing::info!(tenant = %id, tasks, "tenant removed"),
                Err(e) => {
                    tracing::error!(tenant = %id, error = %e, "the removal of a tenant failed; it runs again at the next start or DELETE")
                }
            }
            let mut running = tenancy.removals.lock().unwrap_or_else(|p| p.into_inner());
            running.remove(&id);
        });
    }

    /// Delete everything of the tenant `mark` names, then the mark. Returns how many tasks went.
    async fn remove_everything(&self, mark: &RemovingRecord) -> Result<usize, TenancyError> {
        let mut tasks = 0;
        for agent in &mark.agents {
            let id = agent.id.as_str();
            // A partner whose tenant is being removed is never loaded again (its record is an
            // orphaned claim): this only covers a removal that start-up resumes.
            self.stop_serving(id);
            self.value_files.delete(id)?;
            self.values
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id);
            self.delete_bundles(id, &agent.components)?;
            self.forget_memberships(id)?;
            let (deleted, ticket) = self.engine.remove_agent_tasks(id).await?;
            self.store.durable(ticket).await?;
            tasks += deleted;
        }
        let _guard = self.changes.lock().await;
        let ticket = self.store.tenancy_apply(&[], &[removing_key(&mark.id)])?;
        self.store.durable(ticket).await?;
        Ok(tasks)
    }

    /// Delete `agent`'s published bundles, and the compiled form of each component unless a
    /// partner still claimed by a tenant published the same one.
    fn delete_bundles(&self, agent: &str, components: &[String]) -> Result<(), TenancyError> {
        let dir = self.published_dir.join(agent);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(TenancyError::Io(format!(
                    "cannot delete {}: {e}",
                    dir.display()
                )));
            }
            _ => {}
        }
        let others = self.agent_records()?;
        for sha256 in components {
            let shared = others
                .iter()
                .any(|a| a.versions.iter().any(|v| &v.sha256 == sha256));
            if !shared {
                self.runtime.forget_compiled(sha256).map_err(|e| {
                    TenancyError::Io(format!("cannot delete a compiled component: {e}"))
                })?;
            }
        }
        Ok(())
    }

    /// Forget `agent`'s group memberships and the results waiting for them.
    fn forget_memberships(&self, agent: &str) -> Result<(), TenancyError> {
        for (id, bytes) in self.store.memberships()? {
            let member: Result<crate::transport::group::membership::Membership, _> = bytes.decode();
            if member.is_ok_and(|m| m.agent == agent) {
                self.store.delete_membership(&id)?;
            }
        }
        Ok(())
    }
}
