//! Tenants: who owns which hosted partners, their admin credentials and quotas, publishing
//! partners into a running host, and the API keys Leaders authenticate with.
//!
//! The operator (holder of the operator token) creates and removes tenants. A tenant, with its
//! admin token, publishes, rolls back and unpublishes its own partners and issues API keys for
//! them. Everything is kept in the store's `tenancy` tree (hashes only, never tokens), in
//! `{data}/published/{agent}/{version}/` (the uploaded bundles) and in `{data}/values/` (config
//! values and secrets, outside sled: `value_files`).
//!
//! One concept per file, each an `impl` of [`Tenancy`]: `tenants` (create, list, remove),
//! `removal` (deleting everything of a removed tenant, in the background),
//! `publishing` (versions of a tenant's partners), `values` (config values and secrets), `keys`
//! (Leaders' API keys), `authentication` (admin tokens, Leaders' keys and certificates) and
//! `metering` (stored bytes against the quota); quotas themselves are the engine's
//! (`aiphost_engine::quota`). Stored forms are in `records`, token hashing in `credentials`.

mod authentication;
pub mod credentials;
mod keys;
mod metering;
mod publishing;
pub mod records;
mod removal;
mod tenants;
mod value_files;
mod values;

pub use authentication::{ClientCertificate, LeaderAuthError, Scheme};
pub use publishing::MAX_MANIFEST_BYTES;
pub use removal::Removal;

use crate::agent::manifest::is_valid_id;
use crate::agent::{Compile, Registry, VersionLoader};
use crate::partner_logs::PartnerLogs;
use crate::runtime::Runtime;
use crate::runtime::outbound::AgentValues;
use crate::store::{Encoded, Store, StoreError};
use crate::task::TaskEngine;
pub use aiphost_engine::quota::{self, Quotas, TenantState};
use records::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

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
    /// A publish over the tenant's publishing budget (compiles at once, or an hour's worth).
    #[error("{0}")]
    PublishBudget(aiphost_engine::quota::QuotaError),
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

/// Who is calling the admin API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// The holder of the operator token: may manage every tenant and partner.
    Operator,
    /// A tenant, by id, with its admin token: may manage its own partners.
    Tenant(String),
}

/// Operator settings of tenancy.
#[derive(Clone)]
pub struct TenancyConfig {
    /// The operator's token (compared by hash).
    pub operator_token: String,
    /// Quotas of a tenant created without its own.
    pub default_quotas: Quotas,
}

/// Tenants, published partners and Leader keys of one host.
pub struct Tenancy {
    store: Store,
    /// Removing a tenant removes its partners' tasks through the engine, which holds them.
    engine: TaskEngine,
    runtime: Arc<Runtime>,
    agents: Arc<Registry>,
    /// A partner no longer served loses its kept log lines.
    logs: Arc<PartnerLogs>,
    published_dir: PathBuf,
    value_files: value_files::ValueFiles,
    /// Tenants whose removal runs now (a removal that failed half-way is not here, and the
    /// next `DELETE` or start-up runs it again).
    removals: Mutex<HashSet<String>>,
    operator_hash: String,
    config: TenancyConfig,
    tenants: RwLock<HashMap<String, Arc<TenantState>>>,
    /// Config values and secrets by partner, shared with every loaded version of it.
    values: Mutex<HashMap<String, Arc<RwLock<AgentValues>>>>,
    /// One publish, rollback or unpublish at a time: versions are numbered and switched in order.
    changes: tokio::sync::Mutex<()>,
    /// Publishes compiling at once (outside `changes`: a 12 MB component compiles for seconds,
    /// and a small publish must not wait behind it). One per CPU: a compile takes a core and,
    /// for a large component, hundreds of MB.
    compiling: tokio::sync::Semaphore,
}

impl Tenancy {
    /// Load tenants and serve every published partner's current version, as compiling: the
    /// compiles are returned, to be run with [`crate::agent::Registry::compile_all`].
    pub fn open(
        store: Store,
        engine: TaskEngine,
        runtime: Arc<Runtime>,
        agents: Arc<Registry>,
        logs: Arc<PartnerLogs>,
        data_dir: &Path,
        config: TenancyConfig,
    ) -> Result<(Arc<Self>, Vec<Compile>), TenancyError> {
        let tenancy = Arc::new(Tenancy {
            store,
            engine,
            runtime,
            agents: agents.clone(),
            logs,
            published_dir: data_dir.join("published"),
            value_files: value_files::ValueFiles::new(data_dir),
            removals: Mutex::new(HashSet::new()),
            operator_hash: credentials::hash(&config.operator_token),
            config,
            tenants: RwLock::new(HashMap::new()),
            values: Mutex::new(HashMap::new()),
            changes: tokio::sync::Mutex::new(()),
            compiling: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, usize::from),
            ),
        });
        let moved = tenancy.value_files.migrate(&tenancy.store)?;
        if moved > 0 {
            tracing::info!(
                partners = moved,
                "moved config values and secrets out of the store into their files"
            );
        }
        for (_, bytes) in tenancy.store.tenancy_scan("tenant/")? {
            let record: TenantRecord = bytes.decode()?;
            tenancy.tenant_map_insert(Arc::new(TenantState::new(&record.id, record.quotas)));
        }
        let mut serving = Vec::new();
        for (_, bytes) in tenancy.store.tenancy_scan("agent/")? {
            let record: AgentRecord = bytes.decode()?;
            if let Some(version) = record.current.filter(|_| !record.orphaned) {
                serving.push((record, version));
            }
        }
        // Read and checked now, compiled with the operator's bundles in the background.
        let mut compiles = Vec::new();
        for (record, version) in &serving {
            match tenancy.prepare_version(record, *version) {
                Ok((agent, compile)) => match agents.switch(agent) {
                    Ok(()) => compiles.push(compile),
                    Err(e) => {
                        tracing::error!(agent = %record.id, error = %e, "published partner not served")
                    }
                },
                Err(e) => {
                    tracing::error!(agent = %record.id, version, error = %e, "cannot load a published partner")
                }
            }
        }
        let loader: Arc<dyn VersionLoader> = tenancy.clone();
        agents.set_loader(Arc::downgrade(&loader));
        // Removals a stop cut short are finished in the background.
        for (_, bytes) in tenancy.store.tenancy_scan("removing/")? {
            let mark: RemovingRecord = bytes.decode()?;
            tracing::info!(tenant = %mark.id, "finishing the removal of a tenant");
            tenancy.spawn_removal(mark);
        }
        Ok((tenancy, compiles))
    }

    fn tenant_map_insert(&self, state: Arc<TenantState>) {
        let mut map = self.tenants.write().unwrap_or_else(|p| p.into_inner());
        map.insert(state.id.clone(), state);
    }

    /// Stop serving partner `agent` (unpublished, or its tenant removed): its log lines go too.
    fn stop_serving(&self, agent: &str) {
        self.agents.remove(agent);
        self.logs.forget(agent);
    }

    /// The running state of `tenant`.
    pub fn tenant(&self, tenant: &str) -> Option<Arc<TenantState>> {
        let map = self.tenants.read().unwrap_or_else(|p| p.into_inner());
        map.get(tenant).cloned()
    }
}

impl std::fmt::Debug for TenancyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenancyConfig")
            .field(
                "operator_token",
                &crate::redact::Redacted(Some(&self.operator_token)),
            )
            .field("default_quotas", &self.default_quotas)
            .finish()
    }
}

/// `value` as the store keeps it.
fn to_json<T: serde::Serialize>(value: &T) -> Result<Encoded, TenancyError> {
    Ok(Encoded::of(value)?)
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
