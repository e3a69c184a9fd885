//! Tenants: who owns which hosted partners, their admin credentials and quotas, publishing
//! partners into a running host, and the API keys Leaders authenticate with.
//!
//! The operator (holder of the operator token) creates and removes tenants. A tenant, with its
//! admin token, publishes, rolls back and unpublishes its own partners and issues API keys for
//! them. Everything is kept in the store's `tenancy` tree (hashes only, never tokens) and in
//! `{data}/published/{agent}/{version}/` (the uploaded bundles).

pub mod credentials;
pub mod records;

use crate::agent::imports::{self, ImportPolicy};
use crate::agent::manifest::{LeaderAuth, Manifest, is_valid_id};
use crate::agent::{Agent, Registry, VersionLoader, grant};
use crate::protocol::{ErrorCode, RpcError, Timestamp};
use crate::runtime::outbound::{AgentValues, SecretHeader};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::{Store, StoreError};
use crate::transport::tls::Peer;
pub use aiphost_engine::quota::{self, Quotas, TenantState};
use credentials::{Credential, Kind};
use records::*;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// The largest manifest a publish may carry.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;

/// Why a tenancy operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum TenancyError {
    /// No such thing, or one the caller may not see (HTTP 404).
    #[error("no {what} {id:?}")]
    NotFound {
        /// What was looked for: `tenant`, `partner`, `version`, `key`, ...
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// It exists already (HTTP 409).
    #[error("{what} {id:?} already exists")]
    Exists {
        /// What exists: `tenant`, or `hosted partner with AIC`.
        what: &'static str,
        /// The id (or AIC) taken.
        id: String,
    },
    /// A field of the request is not acceptable (HTTP 422).
    #[error("{field}: {reason}")]
    Invalid {
        /// Which field, as a path (`manifest.capabilities.http[0]`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The change would exceed one of the tenant's quotas.
    #[error("quota {quota} is {limit}; this would need {needed}")]
    Quota {
        /// The quota's name, as spelled in JSON (`maxAgents`, `maxStoredBytes`, ...).
        quota: &'static str,
        /// Its value, in the quota's own unit.
        limit: u64,
        /// What the change would need, in the same unit.
        needed: u64,
    },
    /// The caller may not do this: a bad admin token, or a partner id held by someone else.
    #[error("{0}")]
    Forbidden(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Files or the compiler failed: writing, caching or loading a bundle.
    #[error("{0}")]
    Io(String),
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> TenancyError {
    TenancyError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

fn corrupt(e: serde_json::Error) -> TenancyError {
    TenancyError::Store(StoreError::Corrupt(e.to_string()))
}

/// Who is calling the admin API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// The holder of the operator token: may manage every tenant and partner.
    Operator,
    /// A tenant, by id, with its admin token: may manage its own partners.
    Tenant(String),
}

/// Operator settings of tenancy.
#[derive(Clone, Debug)]
pub struct TenancyConfig {
    /// The operator's token (compared by hash).
    pub operator_token: String,
    /// Quotas of a tenant created without its own.
    pub default_quotas: Quotas,
    /// Which imports a published component may have.
    pub imports: ImportPolicy,
}

/// Tenants, published partners and Leader keys of one host.
pub struct Tenancy {
    store: Store,
    runtime: Arc<Runtime>,
    agents: Arc<Registry>,
    published_dir: PathBuf,
    operator_hash: String,
    config: TenancyConfig,
    tenants: RwLock<HashMap<String, Arc<TenantState>>>,
    /// Config values and secrets by partner, shared with every loaded version of it.
    values: Mutex<HashMap<String, Arc<RwLock<AgentValues>>>>,
    /// One publish, rollback or unpublish at a time: versions are numbered and switched in order.
    changes: tokio::sync::Mutex<()>,
}

impl Tenancy {
    /// Load tenants and serve every published partner's current version.
    pub fn open(
        store: Store,
        runtime: Arc<Runtime>,
        agents: Arc<Registry>,
        data_dir: &Path,
        config: TenancyConfig,
    ) -> Result<Arc<Self>, TenancyError> {
        let tenancy = Arc::new(Tenancy {
            store,
            runtime,
            agents: agents.clone(),
            published_dir: data_dir.join("published"),
            operator_hash: credentials::hash(&config.operator_token),
            config,
            tenants: RwLock::new(HashMap::new()),
            values: Mutex::new(HashMap::new()),
            changes: tokio::sync::Mutex::new(()),
        });
        for (_, bytes) in tenancy.store.tenancy_scan("tenant/")? {
            let record: TenantRecord = serde_json::from_slice(&bytes).map_err(corrupt)?;
            tenancy.tenant_map_insert(Arc::new(TenantState::new(&record.id, record.quotas)));
        }
        for (_, bytes) in tenancy.store.tenancy_scan("agent/")? {
            let record: AgentRecord = serde_json::from_slice(&bytes).map_err(corrupt)?;
            let Some(version) = record.current.filter(|_| !record.orphaned) else {
                continue;
            };
            match tenancy.load_version(&record, version) {
                Ok(agent) => {
                    if let Err(e) = agents.switch(agent) {
                        tracing::error!(agent = %record.id, error = %e, "published partner not served");
                    }
                }
                Err(e) => {
                    tracing::error!(agent = %record.id, version, error = %e, "cannot load a published partner")
                }
            }
        }
        let loader: Arc<dyn VersionLoader> = tenancy.clone();
        agents.set_loader(Arc::downgrade(&loader));
        Ok(tenancy)
    }

    fn tenant_map_insert(&self, state: Arc<TenantState>) {
        let mut map = self.tenants.write().unwrap_or_else(|p| p.into_inner());
        map.insert(state.id.clone(), state);
    }

    /// The running state of `tenant`.
    pub fn tenant(&self, tenant: &str) -> Option<Arc<TenantState>> {
        let map = self.tenants.read().unwrap_or_else(|p| p.into_inner());
        map.get(tenant).cloned()
    }

    /// Who holds `token`: the operator, a tenant, or nobody.
    pub fn authenticate_admin(&self, token: &str) -> Result<Principal, TenancyError> {
        if Credential::matches(&self.operator_hash, token) {
            return Ok(Principal::Operator);
        }
        let refused = || TenancyError::Forbidden("the admin token is not valid".into());
        let Some((Kind::TenantAdmin, id)) = Credential::parse(token) else {
            return Err(refused());
        };
        let Some(bytes) = self.store.tenancy_get(&credential_key(id))? else {
            return Err(refused());
        };
        let credential: AdminCredential = serde_json::from_slice(&bytes).map_err(corrupt)?;
        if !Credential::matches(&credential.hash, token)
            || self.tenant(&credential.tenant).is_none()
        {
            return Err(refused());
        }
        Ok(Principal::Tenant(credential.tenant))
    }

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

    /// Every tenant, with its partners.
    pub fn list_tenants(&self) -> Result<Vec<serde_json::Value>, TenancyError> {
        let agents = self.agent_records()?;
        self.store
            .tenancy_scan("tenant/")?
            .into_iter()
            .map(|(_, bytes)| {
                let record: TenantRecord = serde_json::from_slice(&bytes).map_err(corrupt)?;
                let owned: Vec<&str> = agents
                    .iter()
                    .filter(|a| a.tenant == record.id && !a.orphaned)
                    .map(|a| a.id.as_str())
                    .collect();
                let stored = self.tenant(&record.id).map_or(0, |t| t.stored_bytes());
                Ok(json!({
                    "id": record.id,
                    "createdMs": record.created_ms,
                    "quotas": record.quotas,
                    "agents": owned,
                    "storedBytes": stored,
                }))
            })
            .collect()
    }

    /// Remove a tenant: its partners stop serving, its credentials and keys stop working. Its
    /// partner ids stay claimed so no other tenant inherits their tasks.
    pub async fn remove_tenant(&self, id: &str) -> Result<(), TenancyError> {
        let _guard = self.changes.lock().await;
        let Some(bytes) = self.store.tenancy_get(&tenant_key(id))? else {
            return Err(TenancyError::NotFound {
                what: "tenant",
                id: id.into(),
            });
        };
        let record: TenantRecord = serde_json::from_slice(&bytes).map_err(corrupt)?;
        let mut puts = Vec::new();
        let mut deletes = vec![tenant_key(id)];
        deletes.extend(record.credentials.iter().map(|c| credential_key(c)));
        let mut unserved = Vec::new();
        for mut agent in self.agent_records()? {
            if agent.tenant == id && !agent.orphaned {
                agent.orphaned = true;
                agent.current = None;
                unserved.push(agent.id.clone());
                puts.push((agent_key(&agent.id), to_json(&agent)?));
            }
        }
        for (key, bytes) in self.store.tenancy_scan("key/")? {
            let leader_key: LeaderKey = serde_json::from_slice(&bytes).map_err(corrupt)?;
            if leader_key.tenant == id {
                deletes.push(key);
            }
        }
        let ticket = self.store.tenancy_apply(&puts, &deletes)?;
        self.store.durable(ticket).await?;
        for agent in unserved {
            self.agents.remove(&agent);
        }
        let mut map = self.tenants.write().unwrap_or_else(|p| p.into_inner());
        map.remove(id);
        tracing::info!(tenant = id, "tenant removed");
        Ok(())
    }

    fn agent_records(&self) -> Result<Vec<AgentRecord>, TenancyError> {
        self.store
            .tenancy_scan("agent/")?
            .into_iter()
            .map(|(_, bytes)| serde_json::from_slice(&bytes).map_err(corrupt))
            .collect()
    }

    fn agent_record(&self, id: &str) -> Result<Option<AgentRecord>, TenancyError> {
        self.store
            .tenancy_get(&agent_key(id))?
            .map(|bytes| serde_json::from_slice(&bytes).map_err(corrupt))
            .transpose()
    }

    /// The record of `agent` if `principal` may manage it.
    fn owned_agent(&self, principal: &Principal, agent: &str) -> Result<AgentRecord, TenancyError> {
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
        let manifest = Manifest::parse(manifest_text, "manifest")
            .map_err(|e| invalid("manifest", e.to_string()))?;
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
        let _guard = self.changes.lock().await;
        let existing = self.agent_record(&id)?;
        match &existing {
            Some(record) if record.tenant != tenant || record.orphaned => {
                return Err(TenancyError::Forbidden(format!(
                    "partner id {id:?} belongs to another tenant"
                )));
            }
            None if self.agents.get(&id).is_some() => {
                return Err(TenancyError::Forbidden(format!(
                    "partner id {id:?} is hosted by the operator"
                )));
            }
            _ => {}
        }
        self.check_aic_free(&manifest.agent.aic, &id)?;
        if existing.as_ref().is_none_or(|r| r.current.is_none()) {
            self.check_room_for_one_more(tenant, quotas)?;
        }
        let stored = state.stored_bytes() + wasm.len() as u64;
        if stored > quotas.max_stored_bytes {
            return Err(TenancyError::Quota {
                quota: "maxStoredBytes",
                limit: quotas.max_stored_bytes,
                needed: stored,
            });
        }

        // Compile and link without caching anything: a refused component leaves no trace.
        let runtime = self.runtime.clone();
        let policy = self.config.imports;
        let wasm = Arc::new(wasm);
        let checking = wasm.clone();
        let checked = tokio::task::spawn_blocking(move || {
            let checked = runtime.check(&checking, Some(memory_mib), Some(invocation_ms))?;
            Ok::<_, RuntimeError>(checked)
        })
        .await
        .map_err(|e| TenancyError::Io(format!("the compiler task failed: {e}")))?
        .map_err(|e| invalid("component", e.to_string()))?;
        imports::check(&checked.imports, &policy, http_granted)
            .map_err(|e| invalid("component", e.to_string()))?;

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
            manifest,
            code: checked.code.granted(capabilities),
            loaded_at: Timestamp::now(),
            bundle: dir,
            version,
            tenant: Some(state.clone()),
        };
        self.agents
            .switch(Arc::new(agent))
            .map_err(|e| TenancyError::Forbidden(e.to_string()))?;
        tracing::info!(tenant, agent = %id, version, "published");
        Ok(info)
    }

    /// Refuse to serve partner `id` under `aic` when another hosted partner has that AIC (group
    /// queues and mentions name partners by AIC). The holder is not named: it may be another
    /// tenant's.
    fn check_aic_free(&self, aic: &str, id: &str) -> Result<(), TenancyError> {
        match self.agents.holder_of_aic(aic) {
            Some(holder) if holder != id => Err(TenancyError::Exists {
                what: "hosted partner with AIC",
                id: aic.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// `maxAgents`: may `tenant` serve one more partner than it does now?
    fn check_room_for_one_more(&self, tenant: &str, quotas: &Quotas) -> Result<(), TenancyError> {
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
        self.agents.remove(agent);
        tracing::info!(agent, "unpublished");
        Ok(())
    }

    fn version_dir(&self, agent: &str, version: u64) -> PathBuf {
        self.published_dir.join(agent).join(version.to_string())
    }

    /// Load a stored version of a published partner (through the compiled cache).
    fn load_version(&self, record: &AgentRecord, version: u64) -> Result<Arc<Agent>, TenancyError> {
        if record.version(version).is_none() {
            return Err(TenancyError::NotFound {
                what: "version",
                id: version.to_string(),
            });
        }
        let dir = self.version_dir(&record.id, version);
        let mut agent = Agent::load_with(&self.runtime, &dir, self.values_of(&record.id)?)
            .map_err(|e| TenancyError::Io(format!("cannot load {}: {e}", dir.display())))?;
        agent.version = version;
        agent.tenant = self.tenant(&record.tenant);
        Ok(Arc::new(agent))
    }

    /// The live config values and secrets of `agent`, loaded from the store once.
    fn values_of(&self, agent: &str) -> Result<Arc<RwLock<AgentValues>>, TenancyError> {
        let mut map = self.values.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(values) = map.get(agent) {
            return Ok(values.clone());
        }
        let stored: AgentValues = match self.store.tenancy_get(&values_key(agent))? {
            Some(bytes) => serde_json::from_slice(&bytes).map_err(corrupt)?,
            None => AgentValues::default(),
        };
        let values = Arc::new(RwLock::new(stored));
        map.insert(agent.to_string(), values.clone());
        Ok(values)
    }

    /// Change `agent`'s config values or secrets with `change`, store them, and let running
    /// versions see them at their next read.
    async fn change_values(
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
        let ticket = self
            .store
            .tenancy_apply(&[(values_key(agent), to_json(&changed)?)], &[])?;
        self.store.durable(ticket).await?;
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

    /// Issue an API key for a Leader (`leader`: its AIC) to call `agent`.
    pub async fn issue_key(
        &self,
        principal: &Principal,
        agent: &str,
        leader: &str,
        ttl_seconds: Option<u64>,
    ) -> Result<(LeaderKey, String), TenancyError> {
        let record = self.owned_agent(principal, agent)?;
        if leader.trim().is_empty() || leader.len() > 256 || leader.chars().any(char::is_control) {
            return Err(invalid(
                "leader",
                "must be the Leader's AIC (1-256 characters, none of them control characters)",
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
            let key: LeaderKey = serde_json::from_slice(&bytes).map_err(corrupt)?;
            if key.agent == agent {
                keys.push(json!({
                    "id": key.id, "leader": key.leader,
                    "createdMs": key.created_ms, "expiresMs": key.expires_ms,
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
        let key: LeaderKey = serde_json::from_slice(&bytes).map_err(corrupt)?;
        if key.agent != agent {
            return Err(not_found());
        }
        let ticket = self.store.tenancy_apply(&[], &[leader_key_key(key_id)])?;
        self.store.durable(ticket).await?;
        Ok(())
    }

    /// Authenticate the Leader of an AIP request to `agent`: `Ok(None)` for an open partner,
    /// `Ok(Some(leader AIC))` for a valid key, else the AIP error (-32008, -32010 or -32009).
    pub fn authenticate_leader(
        &self,
        agent: &Agent,
        bearer: Option<&str>,
        peer: &Peer,
    ) -> Result<Option<String>, RpcError> {
        let leader = match agent.manifest.access.leaders {
            LeaderAuth::Open => return Ok(None),
            LeaderAuth::ApiKey => self.leader_by_key(agent, bearer)?,
            LeaderAuth::Mtls => leader_by_certificate(peer)?,
        };
        let allowed = &agent.manifest.access.allowed_leaders;
        if !allowed.is_empty() && !allowed.contains(&leader) {
            return Err(RpcError::new(
                ErrorCode::AuthorizationFailed,
                json!({
                    "reason": "this Leader is not among the partner's allowed Leaders",
                    "leader": leader,
                }),
            ));
        }
        Ok(Some(leader))
    }

    /// The Leader an API key authenticates, for `agent`.
    fn leader_by_key(&self, agent: &Agent, bearer: Option<&str>) -> Result<String, RpcError> {
        let Some(token) = bearer else {
            return Err(RpcError::new(
                ErrorCode::AuthenticationRequired,
                json!({
                    "reason": "this partner requires an API key: send `Authorization: Bearer <key>`",
                    "scheme": "bearer",
                }),
            ));
        };
        let invalid_token = |reason: &str| {
            RpcError::new(
                ErrorCode::AccessTokenInvalid,
                json!({"reason": reason, "scheme": "bearer"}),
            )
        };
        let Some((Kind::LeaderKey, id)) = Credential::parse(token) else {
            return Err(invalid_token("the bearer token is not an aiphost API key"));
        };
        let stored = self.store.tenancy_get(&leader_key_key(id)).map_err(|e| {
            tracing::error!(error = %e, "cannot read an API key");
            RpcError::internal("the host could not check the API key; retry")
        })?;
        let Some(bytes) = stored else {
            return Err(invalid_token("unknown or revoked API key"));
        };
        let key: LeaderKey = serde_json::from_slice(&bytes)
            .map_err(|_| RpcError::internal("the host could not check the API key; retry"))?;
        if !Credential::matches(&key.hash, token) {
            return Err(invalid_token("unknown or revoked API key"));
        }
        if let Some(expires) = key.expires_ms
            && Timestamp::now_ms() >= expires
        {
            return Err(invalid_token("the API key has expired"));
        }
        if key.agent != agent.id() {
            return Err(RpcError::new(
                ErrorCode::AuthorizationFailed,
                json!({
                    "reason": "the API key was issued for another partner",
                    "leader": key.leader,
                }),
            ));
        }
        Ok(key.leader)
    }

    /// Measure every tenant's stored bytes (published bundles, tasks, events, KV).
    pub fn measure_storage(&self) -> Result<(), TenancyError> {
        let mut totals: HashMap<String, u64> = HashMap::new();
        for record in self.agent_records()? {
            if record.orphaned {
                continue;
            }
            let bundles: u64 = record.versions.iter().map(|v| v.component_bytes).sum();
            let data = self.store.agent_bytes(&record.id)?;
            *totals.entry(record.tenant.clone()).or_default() += bundles + data;
        }
        let map = self.tenants.read().unwrap_or_else(|p| p.into_inner());
        for (id, state) in map.iter() {
            let total = totals.get(id).copied().unwrap_or(0);
            state.set_stored_bytes(total);
        }
        Ok(())
    }

    /// Re-measure storage every `every` until `stop`.
    pub fn spawn_storage_meter(
        self: &Arc<Self>,
        every: std::time::Duration,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let tenancy = self.clone();
        tokio::spawn(async move {
            loop {
                let measuring = tenancy.clone();
                match tokio::task::spawn_blocking(move || measuring.measure_storage()).await {
                    Ok(Err(e)) => tracing::warn!(error = %e, "cannot measure tenant storage"),
                    Err(e) => tracing::warn!(error = %e, "storage meter failed"),
                    Ok(Ok(())) => {}
                }
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stop.cancelled() => return,
                }
            }
        });
    }
}

/// The Leader a verified client certificate names.
fn leader_by_certificate(peer: &Peer) -> Result<String, RpcError> {
    if let Some(leader) = &peer.leader {
        return Ok(leader.clone());
    }
    if peer.anonymous_certificate {
        return Err(RpcError::new(
            ErrorCode::AccessTokenInvalid,
            json!({
                "reason": "the client certificate names no Leader: it needs a URI SAN acps://{AIC}",
                "scheme": "mtls",
            }),
        ));
    }
    Err(RpcError::new(
        ErrorCode::AuthenticationRequired,
        json!({
            "reason": "this partner requires a client certificate (mutual TLS) from the host operator's CA",
            "scheme": "mtls",
        }),
    ))
}

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

fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, TenancyError> {
    serde_json::to_vec(value).map_err(corrupt)
}

/// Tenant and partner ids are URL segments and store keys.
fn check_id(field: &str, id: &str) -> Result<(), TenancyError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(invalid(
            field,
            "must be 1-64 characters of a-z, 0-9, '-' or '_'",
        ))
    }
}

/// Write a bundle to `dir` so that it appears whole or not at all.
fn write_bundle(dir: &Path, manifest: &str, wasm: &[u8]) -> Result<(), TenancyError> {
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
