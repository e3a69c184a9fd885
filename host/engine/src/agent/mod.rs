//! Hosted partners: their manifests, their loaded code, and the registry the transports look them
//! up in.
//!
//! An agent bundle is a directory holding `partner.toml` and `partner.wasm` (what
//! `aiphost agent build` writes); `serve --agents DIR` hosts every bundle below `DIR`.

pub mod code;
pub mod imports;
pub mod manifest;
pub mod parallel;
pub mod policy;
pub mod skill_schema;

use crate::quota::{QuotaError, TenantState};
use aiphost_model::Timestamp;
use aiphost_runtime::outbound::{AgentValues, Capabilities, OutboundPolicy};
use aiphost_runtime::{Prechecked, Runtime, RuntimeError};
use code::{Code, CodeSetter};
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
    /// The operator named a partner (`--list-tasks-on`) that no bundle of `--agents` is.
    #[error("--list-tasks-on names {id:?}, which no bundle in --agents is")]
    NotHosted {
        /// The name given.
        id: String,
    },
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
    /// A directory of bundles does not exist.
    #[error(
        "the agents directory {path} does not exist; give a directory of partner bundles (each with partner.toml and partner.wasm), such as plugins/dist or a partner's dist/"
    )]
    NoDir {
        /// The directory.
        path: String,
    },
    /// A directory given as bundles is a partner's project (its sources), not its bundle.
    #[error(
        "{path} is a partner's project, not a bundle; serve its bundle {path}/dist (`aiphost agent build {path}` writes it)"
    )]
    Project {
        /// The directory.
        path: String,
    },
    /// A directory of bundles could not be listed.
    #[error("cannot list the agent bundles in {path}: {source}")]
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
    /// Its compiled component, with the capabilities granted to it: ready, or still compiling
    /// (start-up compiles in the background; see [`code`]).
    pub code: Code,
    /// When this version was loaded (the ACS `lastModifiedTime`).
    pub loaded_at: Timestamp,
    /// The bundle directory it was loaded from.
    pub bundle: PathBuf,
    /// Its published version (0: a bundle the operator serves from a directory).
    pub version: u64,
    /// The tenant it belongs to (`None`: the operator's own).
    pub tenant: Option<Arc<TenantState>>,
    /// An operator partner's `ListTasks` is on although its Leaders do not authenticate
    /// (`serve --list-tasks-on`; a tenant's partner: its tenant's quotas say).
    pub list_tasks: bool,
    /// An operator partner's request rate (`serve --requests-per-second`; a tenant's partner:
    /// its tenant's quota).
    pub rate: Option<policy::PartnerRate>,
    /// Its skills' input schemas, compiled once (the MCP door checks a call's arguments).
    pub skill_inputs: skill_schema::SkillInputs,
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

    /// Count one request to this partner against its rate: its tenant's quota, or the one the
    /// operator set for its own partners.
    pub fn admit_request(&self) -> Result<(), QuotaError> {
        match (&self.tenant, &self.rate) {
            (Some(tenant), _) => tenant.admit_request(),
            (None, Some(rate)) => rate.admit(self.id()),
            (None, None) => Ok(()),
        }
    }

    /// Whether `ListTasks` answers in the shared namespace of Leaders that do not
    /// authenticate, where it shows every client's tasks to any client.
    pub fn lists_shared_tasks(&self) -> bool {
        match &self.tenant {
            Some(tenant) => tenant.quotas.list_tasks_on_open_partners,
            None => self.list_tasks,
        }
    }

    /// Load the bundle in `dir`, reading config values and secrets from `values`: compiled
    /// before this returns.
    pub fn load_with(
        runtime: &Runtime,
        dir: &Path,
        values: Arc<RwLock<AgentValues>>,
    ) -> Result<Self, AgentError> {
        let (agent, compile) = Self::prepare(runtime, dir, values)?;
        compile.run(runtime)?;
        Ok(agent)
    }

    /// Read and check the bundle in `dir` (its manifest, its limits, its component's footprint:
    /// all quick), leaving the compile to [`Compile::run`]; until that ends the partner's code is
    /// [`code::Readiness::Compiling`].
    pub fn prepare(
        runtime: &Runtime,
        dir: &Path,
        values: Arc<RwLock<AgentValues>>,
    ) -> Result<(Self, Compile), AgentError> {
        // A stored bundle: a rule added since it was accepted warns rather than refuses it.
        let manifest = Manifest::load(&dir.join(MANIFEST_FILE), manifest::Rules::Stored)?;
        let path = dir.join(COMPONENT_FILE);
        let refused = |source| AgentError::Runtime {
            path: path.display().to_string(),
            source,
        };
        let wasm = std::fs::read(&path)
            .map_err(|source| RuntimeError::Read {
                path: path.display().to_string(),
                source,
            })
            .map_err(refused)?;
        let checked = runtime
            .precheck(
                &wasm,
                manifest.limits.memory_mib,
                manifest.limits.invocation_ms,
            )
            .map_err(refused)?;
        let (code, setter) = Code::compiling();
        let compile = Compile {
            agent: manifest.agent.id.clone(),
            checked,
            capabilities: grant(&manifest, runtime.outbound_policy(), values),
            path: path.clone(),
            wasm,
            setter,
        };
        let agent = Agent {
            skill_inputs: skill_schema::SkillInputs::compile(&manifest),
            manifest,
            code,
            loaded_at: Timestamp::now(),
            bundle: dir.to_path_buf(),
            version: 0,
            tenant: None,
            list_tasks: false,
            rate: None,
        };
        Ok((agent, compile))
    }
}

/// The compile of a bundle [`Agent::prepare`] read: run it once, on any thread.
pub struct Compile {
    agent: String,
    path: PathBuf,
    wasm: Vec<u8>,
    checked: Prechecked,
    capabilities: Capabilities,
    setter: CodeSetter,
}

impl Compile {
    /// The partner it compiles.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The component's size in bytes (small ones compile first: they are ready soonest).
    pub fn size(&self) -> usize {
        self.wasm.len()
    }

    /// Compile (or take from the compiled cache) and link the component; the partner's code is
    /// ready, or failed with why, when this returns.
    pub fn run(self, runtime: &Runtime) -> Result<(), AgentError> {
        let loaded = runtime
            .load_prechecked(&self.wasm, &self.checked)
            .map(|code| code.granted(self.capabilities));
        match loaded {
            Ok(code) => {
                self.setter.set(Ok(code));
                Ok(())
            }
            Err(source) => {
                self.setter.set(Err(source.to_string()));
                Err(AgentError::Runtime {
                    path: self.path.display().to_string(),
                    source,
                })
            }
        }
    }
}

/// The bundles in `dir`: itself if it is one, else those directly below it, sorted.
fn bundles_in(dir: &Path) -> Result<Vec<PathBuf>, AgentError> {
    if dir.join(MANIFEST_FILE).is_file() && dir.join(COMPONENT_FILE).is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let shown = dir.display().to_string();
    if !dir.exists() {
        return Err(AgentError::NoDir { path: shown });
    }
    // A project: sources of a partner in one of the SDKs' languages, with its partner.toml.
    let project = ["Cargo.toml", "pyproject.toml", "package.json"]
        .iter()
        .any(|file| dir.join(file).is_file());
    if project && dir.join(MANIFEST_FILE).is_file() {
        return Err(AgentError::Project { path: shown });
    }
    let entries = std::fs::read_dir(dir).map_err(|source| AgentError::List {
        path: dir.display().to_string(),
        source,
    })?;
    let mut bundles: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join(MANIFEST_FILE).is_file())
        .collect();
    bundles.sort();
    Ok(bundles)
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
    /// Read every bundle directly below each of `dirs` (a directory that is itself a bundle
    /// counts) and host it as compiling; the compiles are returned, to be run by
    /// [`Registry::compile_all`] while the host already serves.
    ///
    /// A directory that cannot be listed, holds no bundle, or whose bundle cannot be read
    /// (manifest, component file, limits, footprint) is refused here, before anything is served.
    pub fn load_dirs(
        runtime: &Runtime,
        dirs: &[PathBuf],
        policy: &policy::OperatorPolicy,
    ) -> Result<(Self, Vec<Compile>), AgentError> {
        let registry = Registry::default();
        let mut all = Vec::new();
        for dir in dirs {
            all.extend(bundles_in(dir)?);
        }
        let mut compiles = Vec::new();
        for bundle in &all {
            let (mut agent, compile) = Agent::prepare(runtime, bundle, Arc::default())?;
            agent.list_tasks = policy.list_tasks_on.iter().any(|id| id == agent.id());
            agent.rate = policy
                .request_rate
                .map(|(rate, burst)| policy::PartnerRate::new(rate, burst));
            registry.insert(agent)?;
            compiles.push(compile);
        }
        // A name that is no partner is a typo: said now, not found out when listing fails.
        if let Some(id) = policy
            .list_tasks_on
            .iter()
            .find(|id| registry.get(id).is_none())
        {
            return Err(AgentError::NotHosted { id: id.clone() });
        }
        Ok((registry, compiles))
    }

    /// Run `compiles` on every core, smallest component first, logging each partner as it becomes
    /// ready (with how many are left) or fails. A partner whose compile fails stays hosted as
    /// failed: its doors say why. Once `stopped` says so (the host is shutting down), the
    /// compiles not begun are dropped.
    pub fn compile_all(
        runtime: &Runtime,
        mut compiles: Vec<Compile>,
        stopped: &(dyn Fn() -> bool + Sync),
    ) {
        if compiles.is_empty() {
            return;
        }
        compiles.sort_by_key(Compile::size);
        let total = compiles.len();
        tracing::info!(
            partners = total,
            "compiling partners in the background (on every core; those in the compiled cache load at once)"
        );
        let done = std::sync::atomic::AtomicUsize::new(0);
        let compiles: Vec<Mutex<Option<Compile>>> =
            compiles.into_iter().map(|c| Mutex::new(Some(c))).collect();
        parallel::map(&compiles, |compile| {
            let Some(compile) = compile.lock().unwrap_or_else(|p| p.into_inner()).take() else {
                return;
            };
            if stopped() {
                return;
            }
            let started = std::time::Instant::now();
            let agent = compile.agent().to_string();
            let outcome = compile.run(runtime);
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let ms = started.elapsed().as_millis() as u64;
            match outcome {
                Ok(()) => tracing::info!(agent, ms, "partner ready ({n} of {total})"),
                Err(e) => {
                    tracing::error!(agent, ms, error = %e, "partner not served: its component does not compile ({n} of {total})")
                }
            }
        });
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

    /// Once no partner serving now is still compiling.
    pub async fn compiled(&self) {
        for agent in self.list() {
            let _ = agent.code.get().await;
        }
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
