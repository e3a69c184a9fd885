//! Hosted partners: their manifests, their loaded code, and the registry the transports look them
//! up in.
//!
//! An agent bundle is a directory holding `partner.toml` and `partner.wasm` (what
//! `aiphost agent build` writes); `serve --agents DIR` hosts every bundle below `DIR`.

pub mod imports;
pub mod manifest;
pub mod parallel;

use crate::quota::TenantState;
use aiphost_protocol::Timestamp;
use aiphost_runtime::outbound::{AgentValues, Capabilities, OutboundPolicy};
use aiphost_runtime::{PartnerCode, Runtime, RuntimeError};
use manifest::{Manifest, ManifestError};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

/// The manifest file of a bundle.
pub const MANIFEST_FILE: &str = "partner.toml";
/// The component file of a bundle.
pub const COMPONENT_FILE: &str = "partner.wasm";

/// Why a bundle could not be hosted.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Its manifest was refused.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The runtime could not load its component.
    #[error("{path}: {source}")]
    Runtime {
        /// The component file.
        path: String,
        /// Why the runtime refused it.
        source: RuntimeError,
    },
    /// A directory of bundles could not be listed.
    #[error("cannot list agent bundles in {path}: {source}")]
    List {
        /// The directory.
        path: String,
        /// What listing it failed with.
        source: std::io::Error,
    },
    /// Another hosted bundle already has its id.
    #[error("two bundles declare agent id {id:?}: {first} and {second}")]
    Duplicate {
        /// The agent id both declare.
        id: String,
        /// The bundle hosted already.
        first: String,
        /// The bundle refused.
        second: String,
    },
    /// Another hosted partner already has its AIC.
    ///
    /// Group queues, mentions and `senderId`s name partners by AIC: two hosted partners with
    /// one AIC would read each other's group commands.
    #[error("agent {second:?} declares AIC {aic:?}, which hosted agent {first:?} already has")]
    DuplicateAic {
        /// The AIC both declare.
        aic: String,
        /// The id of the partner hosted already.
        first: String,
        /// The id of the partner refused.
        second: String,
    },
}

/// A hosted partner: one version of it.
pub struct Agent {
    /// Its checked manifest.
    pub manifest: Manifest,
    /// Its compiled component, with the capabilities granted to it (`None`: no code, for engine
    /// tests whose [`crate::task::PartnerRunner`] is a fake partner).
    pub code: Option<PartnerCode>,
    /// When this version was loaded (the ACS `lastModifiedTime`).
    pub loaded_at: Timestamp,
    /// The bundle directory it was loaded from.
    pub bundle: PathBuf,
    /// Its published version (0: a bundle the operator serves from a directory).
    pub version: u64,
    /// The tenant it belongs to (`None`: the operator's own).
    pub tenant: Option<Arc<TenantState>>,
}

impl Agent {
    /// The URL segment and store namespace.
    pub fn id(&self) -> &str {
        &self.manifest.agent.id
    }

    /// The partner's AIC.
    pub fn aic(&self) -> &str {
        &self.manifest.agent.aic
    }

    /// Load the bundle in `dir` (an operator's: no config values or secrets).
    pub fn load(runtime: &Runtime, dir: &Path) -> Result<Self, AgentError> {
        Self::load_with(runtime, dir, Arc::default())
    }

    /// Load the bundle in `dir`, reading config values and secrets from `values`.
    pub fn load_with(
        runtime: &Runtime,
        dir: &Path,
        values: Arc<RwLock<AgentValues>>,
    ) -> Result<Self, AgentError> {
        let manifest = Manifest::load(&dir.join(MANIFEST_FILE))?;
        let wasm = dir.join(COMPONENT_FILE);
        let code = runtime
            .load(
                &wasm,
                manifest.limits.memory_mib,
                manifest.limits.invocation_ms,
            )
            .map_err(|source| AgentError::Runtime {
                path: wasm.display().to_string(),
                source,
            })?;
        let code = code.granted(grant(&manifest, runtime.outbound_policy(), values));
        Ok(Agent {
            manifest,
            code: Some(code),
            loaded_at: Timestamp::now(),
            bundle: dir.to_path_buf(),
            version: 0,
            tenant: None,
        })
    }
}

/// Refuse `agent` if another hosted partner (another id) has its AIC.
fn check_aic(current: &BTreeMap<String, Arc<Agent>>, agent: &Agent) -> Result<(), AgentError> {
    match current
        .values()
        .find(|a| a.aic() == agent.aic() && a.id() != agent.id())
    {
        Some(holder) => Err(AgentError::DuplicateAic {
            aic: agent.aic().to_string(),
            first: holder.id().to_string(),
            second: agent.id().to_string(),
        }),
        None => Ok(()),
    }
}

/// What the operator's policy grants of what `manifest` asks for.
pub fn grant(
    manifest: &Manifest,
    policy: Arc<OutboundPolicy>,
    values: Arc<RwLock<AgentValues>>,
) -> Capabilities {
    Capabilities {
        http_hosts: manifest
            .capabilities
            .http
            .iter()
            .filter(|host| policy.allows(host))
            .cloned()
            .collect(),
        config_names: manifest.capabilities.config.clone(),
        values,
        policy,
    }
}

/// Loads versions of published partners that are no longer the current one (a task started on
/// an earlier version finishes on it).
pub trait VersionLoader: Send + Sync {
    /// Load `version` of partner `agent`; `None` if there is no such version.
    fn load(&self, agent: &str, version: u64) -> Option<Arc<Agent>>;
}

/// The hosted partners by id: the version serving new tasks, and earlier versions still in use.
///
/// Switching is atomic: a request sees the old version or the new one, never a mix, and an
/// invocation holds the `Arc` of the version it runs on.
#[derive(Default)]
pub struct Registry {
    current: RwLock<BTreeMap<String, Arc<Agent>>>,
    /// Versions loaded for tasks pinned to them, by (id, version).
    pinned: Mutex<HashMap<(String, u64), Arc<Agent>>>,
    /// Weak: the loader (tenancy) holds this registry, and a cycle would keep the store open
    /// after shutdown.
    loader: OnceLock<Weak<dyn VersionLoader>>,
}

impl Registry {
    /// Load every bundle directly below each of `dirs` (a directory that is itself a bundle counts).
    pub fn load_dirs(runtime: &Runtime, dirs: &[PathBuf]) -> Result<Self, AgentError> {
        let registry = Registry::default();
        let mut all = Vec::new();
        for dir in dirs {
            let mut bundles = Vec::new();
            if dir.join(MANIFEST_FILE).is_file() {
                bundles.push(dir.clone());
            } else {
                let entries = std::fs::read_dir(dir).map_err(|source| AgentError::List {
                    path: dir.display().to_string(),
                    source,
                })?;
                for entry in entries.flatten() {
                    if entry.path().join(MANIFEST_FILE).is_file() {
                        bundles.push(entry.path());
                    }
                }
            }
            bundles.sort();
            all.extend(bundles);
        }
        if !all.is_empty() {
            tracing::info!(
                partners = all.len(),
                "loading partners (compiling, on every core, those not in the compiled cache)"
            );
        }
        let loaded = parallel::map(&all, |bundle| {
            let started = std::time::Instant::now();
            let agent = Agent::load(runtime, bundle)?;
            tracing::info!(agent = agent.id(), bundle = %bundle.display(), ms = started.elapsed().as_millis() as u64, "loaded partner");
            Ok::<_, AgentError>(agent)
        });
        for agent in loaded {
            registry.insert(agent?)?;
        }
        Ok(registry)
    }

    /// Host `agent`; an id and an AIC can be hosted once.
    pub fn insert(&self, agent: Agent) -> Result<(), AgentError> {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = current.get(agent.id()) {
            return Err(AgentError::Duplicate {
                id: agent.id().to_string(),
                first: existing.bundle.display().to_string(),
                second: agent.bundle.display().to_string(),
            });
        }
        check_aic(&current, &agent)?;
        current.insert(agent.id().to_string(), Arc::new(agent));
        Ok(())
    }

    /// The id of the hosted partner whose AIC is `aic`, if any.
    pub fn holder_of_aic(&self, aic: &str) -> Option<String> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        current
            .values()
            .find(|a| a.aic() == aic)
            .map(|a| a.id().to_string())
    }

    /// Serve `agent` for new tasks in place of the version serving now (a tenant's partner only:
    /// the operator's bundles are not replaced). The replaced version stays reachable for the
    /// tasks that run on it.
    pub fn switch(&self, agent: Arc<Agent>) -> Result<(), AgentError> {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = current.get(agent.id()) {
            if existing.tenant.is_none() {
                return Err(AgentError::Duplicate {
                    id: agent.id().to_string(),
                    first: existing.bundle.display().to_string(),
                    second: agent.bundle.display().to_string(),
                });
            }
            self.remember(existing.clone());
        }
        check_aic(&current, &agent)?;
        self.remember(agent.clone());
        current.insert(agent.id().to_string(), agent);
        Ok(())
    }

    fn remember(&self, agent: Arc<Agent>) {
        if agent.version == 0 {
            return;
        }
        let mut pinned = self.pinned.lock().unwrap_or_else(|p| p.into_inner());
        pinned.insert((agent.id().to_string(), agent.version), agent);
    }

    /// Stop serving `id` to new requests.
    pub fn remove(&self, id: &str) {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        current.remove(id);
    }

    /// Where earlier versions are loaded from.
    pub fn set_loader(&self, loader: Weak<dyn VersionLoader>) {
        let _ = self.loader.set(loader);
    }

    /// The version serving new tasks.
    pub fn get(&self, id: &str) -> Option<Arc<Agent>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        current.get(id).cloned()
    }

    /// `version` of `id`, for a task that started on it: the current one if that is it, else a
    /// loaded or loadable earlier one.
    pub fn version(&self, id: &str, version: u64) -> Option<Arc<Agent>> {
        if let Some(agent) = self.get(id).filter(|a| a.version == version) {
            return Some(agent);
        }
        if version == 0 {
            return None;
        }
        let key = (id.to_string(), version);
        if let Some(agent) = self
            .pinned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Some(agent.clone());
        }
        let agent = self.loader.get()?.upgrade()?.load(id, version)?;
        self.remember(agent.clone());
        Some(agent)
    }

    /// Every partner serving now, by id.
    pub fn list(&self) -> Vec<Arc<Agent>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        current.values().cloned().collect()
    }

    /// How many partners are serving now.
    pub fn len(&self) -> usize {
        self.current.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no partner is serving now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
