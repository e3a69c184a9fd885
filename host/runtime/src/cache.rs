//! Precompiled components on disk, keyed by the engine's compatibility hash and the component's
//! content hash, so a restart loads a partner in about a millisecond instead of compiling it.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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
    let name = artifact_name(wasm);
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
    write_artifact(dir, &name, &bytes)?;
    // SAFETY: produced by `precompile_component` on this very engine a moment ago.
    unsafe { Component::deserialize(engine, &bytes) }
}

/// Keep `component`, compiled from `wasm` on `engine`, so later loads skip compiling.
pub fn keep(dir: &Path, wasm: &[u8], component: &Component) -> wasmtime::Result<()> {
    write_artifact(dir, &artifact_name(wasm), &component.serialize()?)
}

/// Delete the artifact compiled from the component whose SHA-256 is `sha256` (hex), if any: its
/// publisher was removed. A name that is not 64 hex digits names no artifact.
pub fn forget(dir: &Path, sha256: &str) -> std::io::Result<()> {
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    match std::fs::remove_file(dir.join(format!("{sha256}.cwasm"))) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn artifact_name(wasm: &[u8]) -> String {
    Sha256::digest(wasm)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Write an artifact so that it appears whole or not at all.
fn write_artifact(dir: &Path, name: &str, bytes: &[u8]) -> wasmtime::Result<()> {
    std::fs::create_dir_all(dir)?;
    // Unique per call, not just per process: concurrent loads of the same component in one
    // process (several hosts in one test binary, or agents sharing a component) must not rename
    // each other's half-written file away.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        "{name}.cwasm.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    std::fs::rename(&tmp, dir.join(format!("{name}.cwasm")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Several loads of one component at once in one process (hosts in one test binary, agents
    /// sharing a component) all succeed and leave exactly one artifact behind.
    #[test]
    fn concurrent_compiles_of_one_component_all_succeed() {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let engine = Engine::new(&config).expect("engine");
        let dir = std::env::temp_dir().join(format!("aiphost-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // wasmtime's default `wat` feature accepts the text format here.
        let wasm = b"(component (core module))".to_vec();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| load_or_compile(&engine, &dir, &wasm).map(|_| ())))
                .collect();
            for handle in handles {
                handle.join().expect("thread").expect("load_or_compile");
            }
        });
        let names: Vec<_> = std::fs::read_dir(&dir)
            .expect("cache dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(names[0].ends_with(".cwasm"), "{names:?}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
