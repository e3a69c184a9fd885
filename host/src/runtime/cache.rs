//! Precompiled components on disk, keyed by the engine's compatibility hash and the component's
//! content hash, so a restart loads a partner in about a millisecond instead of compiling it.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The directory for artifacts of this engine configuration under `root`.
pub fn engine_dir(root: &Path, engine: &Engine) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    root.join(format!(
        "wasmtime-{}-{:016x}",
        wasmtime_version(),
        hasher.finish()
    ))
}

fn wasmtime_version() -> &'static str {
    "48"
}

/// Compile `wasm` for `engine`, or load the artifact compiled earlier.
pub fn load_or_compile(engine: &Engine, dir: &Path, wasm: &[u8]) -> wasmtime::Result<Component> {
    let digest = Sha256::digest(wasm);
    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let artifact = dir.join(format!("{name}.cwasm"));
    if artifact.exists() {
        // SAFETY: the artifact was written by this host into its own data directory, for an engine
        // with the same compatibility hash (the directory name), and is replaced atomically.
        match unsafe { Component::deserialize_file(engine, &artifact) } {
            Ok(component) => return Ok(component),
            Err(e) => {
                tracing::warn!(path = %artifact.display(), error = %e, "recompiling an unusable cached artifact")
            }
        }
    }
    let bytes = engine.precompile_component(wasm)?;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{name}.cwasm.tmp-{}", std::process::id()));
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, &artifact)?;
    // SAFETY: produced by `precompile_component` on this very engine a moment ago.
    unsafe { Component::deserialize(engine, &bytes) }
}
