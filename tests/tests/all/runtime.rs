//! The partner runtime on its own: what it accepts as a partner, its precompiled cache on disk, and
//! the operator's caps on what a manifest may ask for.

use aiphost::runtime::{Runtime, RuntimeConfig, RuntimeError};
use aiphost_tests::*;
use std::path::Path;

fn runtime(cache: &Path) -> Runtime {
    let mut config = RuntimeConfig::with_data_dir(cache);
    config.cache_dir = cache.to_path_buf();
    config.max_concurrent = 4;
    Runtime::new(config).expect("a runtime")
}

fn artifacts(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        if entry.extension().is_some_and(|e| e == "cwasm") {
            found.push(entry);
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn compiled_components_are_cached_on_disk_and_self_heal() {
    let echo = plugins_dist().join("echo/partner.wasm");
    let cache = tempfile::tempdir().unwrap();
    runtime(cache.path())
        .load(&echo, None, None)
        .expect("echo loads");
    let cached = artifacts(cache.path());
    assert_eq!(cached.len(), 1, "one artifact: {cached:?}");
    let written = std::fs::metadata(&cached[0]).unwrap().modified().unwrap();

    // A new engine with the same configuration loads the artifact instead of compiling.
    runtime(cache.path())
        .load(&echo, None, None)
        .expect("echo loads from the cache");
    assert_eq!(
        std::fs::metadata(&cached[0]).unwrap().modified().unwrap(),
        written
    );

    // A damaged artifact is recompiled, not trusted.
    std::fs::write(&cached[0], b"garbage").unwrap();
    runtime(cache.path())
        .load(&echo, None, None)
        .expect("echo loads despite the damage");
    assert!(std::fs::metadata(&cached[0]).unwrap().len() > 1000);
}

#[test]
fn only_partner_components_are_accepted() {
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path());
    let core_module = b"\0asm\x01\0\0\0".to_vec();
    let err = rt.load_bytes(&core_module, None, None).unwrap_err();
    assert!(matches!(err, RuntimeError::Invalid(_)), "{err}");
    assert!(
        err.to_string().contains("not a WebAssembly component"),
        "{err}"
    );
    let err = rt.load_bytes(b"hello", None, None).unwrap_err();
    assert!(matches!(err, RuntimeError::Invalid(_)), "{err}");

    let command = std::fs::read(built_component("not-a-partner")).unwrap();
    let err = rt.load_bytes(&command, None, None).unwrap_err();
    assert!(matches!(err, RuntimeError::World(_)), "{err}");
    assert!(err.to_string().contains("aiphost:partner"), "{err}");

    let missing = rt
        .load(Path::new("/nonexistent/partner.wasm"), None, None)
        .unwrap_err();
    assert!(matches!(missing, RuntimeError::Read { .. }), "{missing}");
}

#[test]
fn manifests_cannot_ask_past_the_operator_caps() {
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path());
    let echo = plugins_dist().join("echo/partner.wasm");
    let err = rt.load(&echo, Some(100_000), None).unwrap_err();
    assert!(err.to_string().contains("limits.memory-mib"), "{err}");
    let err = rt.load(&echo, None, Some(10_000_000)).unwrap_err();
    assert!(err.to_string().contains("limits.invocation-ms"), "{err}");
    assert!(rt.load(&echo, Some(16), Some(1000)).is_ok());
}

/// The pool keeps each memory resident up to `RESIDENT_BYTES` and resets it in place: the
/// partners the Python and JavaScript SDKs build (a snapshotted CPython or QuickJS heap, written
/// all over by every start) start within that range, so their next invocation finds every page
/// mapped and writable instead of faulting the image in again (issue 35 point 4).
#[test]
fn the_sdk_built_partners_memories_fit_the_resident_range() {
    for agent in [
        "echo-py",
        "concierge-py",
        "lifecycle-py",
        "trip-planner-py",
        "echo-js",
        "lab-ts",
    ] {
        let wasm = std::fs::read(plugins_dist().join(agent).join("partner.wasm")).unwrap();
        let layouts = aiphost::runtime::layouts_of(&wasm).unwrap();
        assert!(!layouts.is_empty(), "{agent}: no memory found");
        for layout in layouts {
            assert!(
                layout.initial_bytes <= aiphost::runtime::RESIDENT_BYTES as u64,
                "{agent}: a memory of {} bytes, past the resident range: {layout:?}",
                layout.initial_bytes
            );
        }
    }
}

/// The example Rust partners are linked with a 64 KiB stack at the bottom of their memory and
/// their data right above it (`plugins/.cargo/config.toml`), all within the first 128 KiB that
/// the pool keeps resident and resets in place; with rustc's 1 MiB default, an invocation's
/// stack top and data lay past that range and faulted in anew each time.
#[test]
fn the_example_rust_partners_keep_stack_and_data_in_the_resident_range() {
    for agent in ["echo", "hostile", "concierge", "trip-planner", "tck"] {
        let wasm = std::fs::read(plugins_dist().join(agent).join("partner.wasm")).unwrap();
        let layouts = aiphost::runtime::layouts_of(&wasm).unwrap();
        let [layout] = layouts.as_slice() else {
            panic!("{agent}: one memory expected, found {layouts:?}");
        };
        assert_eq!(layout.stack_top, Some(64 * 1024), "{agent}: {layout:?}");
        assert!(layout.data_end <= 128 * 1024, "{agent}: {layout:?}");
    }
}
