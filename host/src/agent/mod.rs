//! Hosted partners: their manifests, their loaded code, and the registry the transports look them
//! up in.
//!
//! An agent bundle is a directory holding `partner.toml` and `partner.wasm` (what
//! `aiphost agent build` writes); `serve --agents DIR` hosts every bundle below `DIR`.

pub mod acs;
pub mod manifest;

use crate::protocol::Timestamp;
use crate::runtime::{PartnerCode, Runtime, RuntimeError};
use manifest::{Manifest, ManifestError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The manifest file of a bundle.
pub const MANIFEST_FILE: &str = "partner.toml";
/// The component file of a bundle.
pub const COMPONENT_FILE: &str = "partner.wasm";

/// Why a bundle could not be hosted.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("{path}: {source}")]
    Runtime { path: String, source: RuntimeError },
    #[error("cannot list agent bundles in {path}: {source}")]
    List {
        path: String,
        source: std::io::Error,
    },
    #[error("two bundles declare agent id {id:?}: {first} and {second}")]
    Duplicate {
        id: String,
        first: String,
        second: String,
    },
}

/// A hosted partner.
pub struct Agent {
    pub manifest: Manifest,
    pub code: PartnerCode,
    pub loaded_at: Timestamp,
    pub bundle: PathBuf,
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

    /// Load the bundle in `dir`.
    pub fn load(runtime: &Runtime, dir: &Path) -> Result<Self, AgentError> {
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
        Ok(Agent {
            manifest,
            code,
            loaded_at: Timestamp::now(),
            bundle: dir.to_path_buf(),
        })
    }
}

/// The hosted partners by id.
#[derive(Default)]
pub struct Registry {
    agents: BTreeMap<String, Arc<Agent>>,
}

impl Registry {
    /// Load every bundle directly below each of `dirs` (a directory that is itself a bundle counts).
    pub fn load_dirs(runtime: &Runtime, dirs: &[PathBuf]) -> Result<Self, AgentError> {
        let mut registry = Registry::default();
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
            for bundle in bundles {
                let agent = Agent::load(runtime, &bundle)?;
                tracing::info!(agent = agent.id(), bundle = %bundle.display(), "loaded partner");
                registry.insert(agent)?;
            }
        }
        Ok(registry)
    }

    /// Host `agent`.
    pub fn insert(&mut self, agent: Agent) -> Result<(), AgentError> {
        if let Some(existing) = self.agents.get(agent.id()) {
            return Err(AgentError::Duplicate {
                id: agent.id().to_string(),
                first: existing.bundle.display().to_string(),
                second: agent.bundle.display().to_string(),
            });
        }
        self.agents.insert(agent.id().to_string(), Arc::new(agent));
        Ok(())
    }

    pub fn get(&self, id: &str) -> Option<Arc<Agent>> {
        self.agents.get(id).cloned()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Agent>> {
        self.agents.values()
    }

    pub fn len(&self) -> usize {
        self.agents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}
