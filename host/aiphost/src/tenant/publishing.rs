//! Publishing: a tenant's partners as numbered versions under `{data}/published/{agent}/{version}/`,
//! switched in order (publish, rollback, unpublish), each checked against the tenant's quotas.

use super::records::*;
use super::*;
use crate::agent::code::Code;
use crate::agent::imports::{self};
use crate::agent::manifest::{Manifest, ManifestError};
use crate::agent::{Agent, Compile, VersionLoader, grant};
use crate::model::Timestamp;
use crate::runtime::Runtime;
use aiphost_engine::quota::Quotas;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest manifest a publish may carry.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;

impl VersionLoader for Tenancy {
    fn load(&self, agent: &str, version: u64) -> Option<Arc<Agent>> {
        let record = self.agent_record(agent).ok().flatten()?;
        match self.load_version(&record, version) {
            Ok(agent) => Some(agent),
            Err(e) => {
                tracing::error!(agent, version, error = %e, "cannot load the version a task runs on");
                None
            }
        }
    }
}

/// Write a bundle to `dir` so that it appears whole or not at all.
pub(super) fn write_bundle(dir: &Path, manifest: &str, wasm: &[u8]) -> Result<(), TenancyError> {
    let io = |e: std::io::Error| TenancyError::Io(format!("cannot store the bundle: {e}"));
    let parent = dir
        .parent()
        .ok_or_else(|| TenancyError::Io("bundle directory has no parent".into()))?;
    std::fs::create_dir_all(parent).map_err(io)?;
    let tmp = parent.join(format!(".incoming-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&tmp).map_err(io)?;
    let written = std::fs::write(tmp.join(crate::agent::MANIFEST_FILE), manifest)
        .and_then(|()| std::fs::write(tmp.join(crate::agent::COMPONENT_FILE), wasm))
        .and_then(|()| {
            if dir.exists() {
                // A version number left by a publish that crashed before its record was stored.
                std::fs::remove_dir_all(dir)?;
            }
            std::fs::rename(&tmp, dir)
        });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(io(e));
    }
    Ok(())
}

impl Tenancy {
    pub(super) fn agent_records(&self) -> Result<Vec<AgentRecord>, TenancyError> {
        self.store
            .tenancy_scan("agent/")?
            .into_iter()
            .map(|(_, bytes)| bytes.decode().map_err(TenancyError::from))
            .collect()
    }

    pub(super) fn agent_record(&self, id: &str) -> Result<Option<AgentRecord>, TenancyError> {
        self.store
            .tenancy_get(&agent_key(id))?
            .map(|bytes| bytes.decode().map_err(TenancyError::from))
            .transpose()
    }

    /// The record of `agent` if `principal` may manage it.
    pub(super) fn owned_agent(
        &self,
        principal: &Principal,
        agent: &str,
    ) -> Result<AgentRecord, TenancyError> {
        let not_found = || TenancyError::NotFound {
            what: "partner",
            id: agent.into(),
        };
        let record = self.agent_record(agent)?.ok_or_else(not_found)?;
        match principal {
            Principal::Operator => Ok(record),
            // Another tenant's partner looks exactly like one that does not exist.
            Principal::Tenant(t) if *t == record.tenant && !record.orphaned => Ok(record),
            Principal::Tenant(_) => Err(not_found()),
        }
    }

    /// The tenant owning published partner `agent` (`None`: the operator's, or unknown).
    pub fn owner_of(&self, agent: &str) -> Option<String> {
        self.agent_record(agent)
            .ok()
            .flatten()
            .filter(|r| !r.orphaned)
            .map(|r| r.tenant)
    }

    /// The published partners `principal` manages.
    pub fn list_agents(
        &self,
        principal: &Principal,
    ) -> Result<Vec<serde_json::Value>, TenancyError> {
        Ok(self
            .agent_records()?
            .into_iter()
            .filter(|r| match principal {
                Principal::Operator => true,
                Principal::Tenant(t) => *t == r.tenant && !r.orphaned,
            })
            .map(|r| {
                json!({
                    "id": r.id,
                    "tenant": r.tenant,
                    "current": r.current,
                    "versions": r.versions.len(),
                    "orphaned": r.orphaned,
                })
            })
            .collect())
    }

    /// Publish a new version of a partner for `tenant` and switch new tasks to it.
    pub async fn publish(
        &self,
        tenant: &str,
        manifest_text: &str,
        wasm: Vec<u8>,
    ) -> Result<VersionInfo, TenancyError> {
        let state = self.tenant(tenant).ok_or_else(|| TenancyError::NotFound {
            what: "tenant",
            id: tenant.into(),
        })?;
        let quotas = &state.quotas;
        if manifest_text.len() > MAX_MANIFEST_BYTES {
            return Err(invalid(
                "manifest",
                format!(
                    "is {} bytes; at most {MAX_MANIFEST_BYTES}",
                    manifest_text.len()
                ),
            ));
        }
        if wasm.len() as u64 > quotas.max_component_bytes {
            return Err(TenancyError::Quota {
                quota: "maxComponentBytes",
                limit: quotas.max_component_bytes,
                needed: wasm.len() as u64,
            });
        }
        // A broken rule names its field under `manifest.` (`manifest.skills[0].input-schema`),
        // as the checks below do, so a client can point at the line.
        let manifest = Manifest::parse(manifest_text, "manifest").map_err(|e| match e {
            ManifestError::Invalid { field, reason, .. } => {
                invalid(format!("manifest.{field}"), reason)
            }
            other => invalid("manifest", other.to_string()),
        })?;
        let memory_mib = manifest
            .limits
            .memory_mib
            .unwrap_or(quotas.max_memory_mib.min(64));
        if memory_mib > quotas.max_memory_mib {
            return Err(TenancyError::Quota {
                quota: "maxMemoryMib",
                limit: quotas.max_memory_mib,
                needed: memory_mib,
            });
        }
        let invocation_ms = manifest
            .limits
            .invocation_ms
            .unwrap_or(quotas.max_invocation_ms);
        if invocation_ms > quotas.max_invocation_ms {
            return Err(TenancyError::Quota {
                quota: "maxInvocationMs",
                limit: quotas.max_invocation_ms,
                needed: invocation_ms,
            });
        }
        let outbound = self.runtime.outbound_policy();
        for (i, host) in manifest.capabilities.http.iter().enumerate() {
            if !outbound.allows(host) {
                return Err(invalid(
                    format!("manifest.capabilities.http[{i}]"),
                    format!("{host:?} is not a host this host's operator lets partners reach"),
                ));
            }
        }
        let http_granted = !manifest.capabilities.http.is_empty();
        let id = manifest.agent.id.clone();
        // Everything that can refuse the publish without compiling, before compiling; checked
        // again under the lock below, where nothing can change in between.
        self.admissible(tenant, &state, &id, &manifest, wasm.len())?;

        // The imports and the pool footprint first, read from the binary: a component the
        // policy refuses is refused without compiling it.
        let imported =
            Runtime::imports_of(&wasm).map_err(|e| invalid("component", e.to_string()))?;
        imports::check(&imported, http_granted).map_err(|e| invalid("component", e.to_string()))?;
        Runtime::footprint_of(&wasm).map_err(|e| invalid("component", e.to_string()))?;

        // Every check that costs nothing has passed: now the tenant's publishing budget, which
        // bounds what its publishes cost the host's CPU (held until this publish ends).
        let _budget = state.admit_publish().map_err(TenancyError::PublishBudget)?;
        // Compile and link without caching anything (a refused component leaves no trace), and
        // outside the lock: other publishes, rollbacks and tenant changes go on meanwhile.
        let (wasm, checked) = {
            let _compiler = self
                .compiling
                .acquire()
                .await
                .map_err(|e| TenancyError::Io(format!("the compilers are closed: {e}")))?;
            let runtime = self.runtime.clone();
            let checking = Arc::new(wasm);
            let wasm = checking.clone();
            let started = std::time::Instant::now();
            tracing::info!(tenant, agent = %id, bytes = wasm.len(), "compiling a published component");
            let checked = tokio::task::spawn_blocking(move || {
                runtime.check(&checking, Some(memory_mib), Some(invocation_ms))
            })
            .await
            .map_err(|e| TenancyError::Io(format!("the compiler task failed: {e}")))?
            .map_err(|e| invalid("component", e.to_string()))?;
            tracing::info!(tenant, agent = %id, ms = started.elapsed().as_millis() as u64, "compiled");
            (wasm, checked)
        };

        let _guard = self.changes.lock().await;
        let existing = self.admissible(tenant, &state, &id, &manifest, wasm.len())?;

        let mut record = existing.unwrap_or_else(|| AgentRecord {
            id: id.clone(),
            tenant: tenant.into(),
            current: None,
            versions: Vec::new(),
            orphaned: false,
        });
        let version = record.next_version();
        let info = VersionInfo {
            version,
            label: manifest.agent.version.clone(),
            published_ms: Timestamp::now_ms(),
            sha256: Sha256::digest(wasm.as_slice())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            component_bytes: wasm.len() as u64,
        };
        let dir = self.version_dir(&id, version);
        write_bundle(&dir, manifest_text, &wasm)?;
        self.runtime
            .keep(&wasm, &checked)
            .map_err(|e| TenancyError::Io(format!("cannot cache the compiled component: {e}")))?;
        record.versions.push(info.clone());
        record.current = Some(version);
        let ticket = self
            .store
            .tenancy_apply(&[(agent_key(&id), to_json(&record)?)], &[])?;
        self.store.durable(ticket).await?;
        let capabilities = grant(&manifest, outbound, self.values_of(&id)?);
        let agent = Agent {
            skill_inputs: crate::agent::skill_schema::SkillInputs::compile(&manifest),
            manifest,
            code: Code::ready(checked.code.granted(capabilities)),
            loaded_at: Timestamp::now(),
            bundle: dir,
            version,
            tenant: Some(state.clone()),
            // Its tenant's quotas say both.
            list_tasks: false,
            rate: None,
        };
        self.agents
            .switch(Arc::new(agent))
            .map_err(|e| TenancyError::Forbidden(e.to_string()))?;
        tracing::info!(tenant, agent = %id, version, "published");
        Ok(info)
    }

    /// Whether `tenant` may publish `manifest` (a component of `bytes`) now: the partner id is
    /// its own or free, the AIC is free, and its quotas have room. Returns the partner's record,
    /// if it has one.
    fn admissible(
        &self,
        tenant: &str,
        state: &TenantState,
        id: &str,
        manifest: &Manifest,
        bytes: usize,
    ) -> Result<Option<AgentRecord>, TenancyError> {
        let quotas = &state.quotas;
        let existing = self.agent_record(id)?;
        match &existing {
            Some(record) if record.tenant != tenant || record.orphaned => {
                return Err(TenancyError::Forbidden(format!(
                    "partner id {id:?} belongs to another tenant"
                )));
            }
            None if self.agents.get(id).is_some() => {
                return Err(TenancyError::Forbidden(format!(
                    "partner id {id:?} is hosted by the operator"
                )));
            }
            _ => {}
        }
        self.check_aic_free(&manifest.agent.aic, id)?;
        if existing.as_ref().is_none_or(|r| r.current.is_none()) {
            self.check_room_for_one_more(tenant, quotas)?;
        }
        let stored = state.stored_bytes() + bytes as u64;
        if stored > quotas.max_stored_bytes {
            return Err(TenancyError::Quota {
                quota: "maxStoredBytes",
                limit: quotas.max_stored_bytes,
                needed: stored,
            });
        }
        Ok(existing)
    }

    /// Refuse to serve partner `id` under `aic` when another hosted partner has that AIC (group
    /// queues and mentions name partners by AIC). The holder is not named: it may be another
    /// tenant's.
    pub(super) fn check_aic_free(&self, aic: &str, id: &str) -> Result<(), TenancyError> {
        match self.agents.holder_of_aic(aic) {
            Some(holder) if holder != id => Err(TenancyError::Exists {
                what: "hosted partner with AIC",
                id: aic.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// `maxAgents`: may `tenant` serve one more partner than it does now?
    pub(super) fn check_room_for_one_more(
        &self,
        tenant: &str,
        quotas: &Quotas,
    ) -> Result<(), TenancyError> {
        let serving = self
            .agent_records()?
            .iter()
            .filter(|a| a.tenant == tenant && !a.orphaned && a.current.is_some())
            .count() as u64;
        let limit = u64::from(quotas.max_agents);
        if serving + 1 > limit {
            return Err(TenancyError::Quota {
                quota: "maxAgents",
                limit,
                needed: serving + 1,
            });
        }
        Ok(())
    }

    /// The versions of a partner and the one serving.
    pub fn versions(
        &self,
        principal: &Principal,
        agent: &str,
    ) -> Result<AgentRecord, TenancyError> {
        self.owned_agent(principal, agent)
    }

    /// Serve `version` again for new tasks.
    pub async fn rollback(
        &self,
        principal: &Principal,
        agent: &str,
        version: u64,
    ) -> Result<VersionInfo, TenancyError> {
        let _guard = self.changes.lock().await;
        let mut record = self.owned_agent(principal, agent)?;
        let info = record
            .version(version)
            .cloned()
            .ok_or_else(|| TenancyError::NotFound {
                what: "version",
                id: version.to_string(),
            })?;
        if record.current.is_none() {
            let quotas = self
                .tenant(&record.tenant)
                .map(|t| t.quotas.clone())
                .ok_or_else(|| TenancyError::NotFound {
                    what: "tenant",
                    id: record.tenant.clone(),
                })?;
            self.check_room_for_one_more(&record.tenant, &quotas)?;
        }
        let loaded = self.load_version(&record, version)?;
        self.check_aic_free(loaded.aic(), agent)?;
        record.current = Some(version);
        let ticket = self
            .store
            .tenancy_apply(&[(agent_key(agent), to_json(&record)?)], &[])?;
        self.store.durable(ticket).await?;
        self.agents
            .switch(loaded)
            .map_err(|e| TenancyError::Forbidden(e.to_string()))?;
        tracing::info!(agent, version, "rolled back");
        Ok(info)
    }

    /// Stop serving a partner. Its versions stay, to be rolled back to; its tasks stay stored.
    pub async fn unpublish(&self, principal: &Principal, agent: &str) -> Result<(), TenancyError> {
        let _guard = self.changes.lock().await;
        let mut record = self.owned_agent(principal, agent)?;
        record.current = None;
        let ticket = self
            .store
            .tenancy_apply(&[(agent_key(agent), to_json(&record)?)], &[])?;
        self.store.durable(ticket).await?;
        self.stop_serving(agent);
        tracing::info!(agent, "unpublished");
        Ok(())
    }

    pub(super) fn version_dir(&self, agent: &str, version: u64) -> PathBuf {
        self.published_dir.join(agent).join(version.to_string())
    }

    /// Load a stored version of a published partner (through the compiled cache).
    pub(super) fn load_version(
        &self,
        record: &AgentRecord,
        version: u64,
    ) -> Result<Arc<Agent>, TenancyError> {
        let (agent, compile) = self.prepare_version(record, version)?;
        compile.run(&self.runtime).map_err(|e| {
            TenancyError::Io(format!("cannot load {}: {e}", agent.bundle.display()))
        })?;
        Ok(agent)
    }

    /// `version` of a published partner read and checked, its compile still to run.
    pub(super) fn prepare_version(
        &self,
        record: &AgentRecord,
        version: u64,
    ) -> Result<(Arc<Agent>, Compile), TenancyError> {
        if record.version(version).is_none() {
            return Err(TenancyError::NotFound {
                what: "version",
                id: version.to_string(),
            });
        }
        let dir = self.version_dir(&record.id, version);
        let (mut agent, compile) = Agent::prepare(&self.runtime, &dir, self.values_of(&record.id)?)
            .map_err(|e| TenancyError::Io(format!("cannot load {}: {e}", dir.display())))?;
        agent.version = version;
        agent.tenant = self.tenant(&record.tenant);
        Ok((Arc::new(agent), compile))
    }
}
