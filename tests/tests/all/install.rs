//! The installs that the README's two commands run on a fresh machine: `scripts/js-env.sh` on a
//! copy of the JavaScript SDK, from the npm registry, as the registry is today.
//!
//! Why these tests: the registry keeps publishing packages of versions we pinned long ago (platform
//! bindings for other systems), and npm adds them to the lock. The install must take that in its
//! stride and still refuse a tool whose version is not the pinned one.

use aiphost_tests::repo_root;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// A copy of `sdk/js` without its `node_modules`, in a temporary directory.
fn sdk_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = repo_root().join("sdk/js");
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(from.join(file), dir.path().join(file)).unwrap();
    }
    dir
}

fn js_env(sdk: &Path) -> Output {
    Command::new("bash")
        .arg(repo_root().join("scripts/js-env.sh"))
        .arg(sdk)
        .output()
        .expect("running scripts/js-env.sh")
}

fn lock(sdk: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(sdk.join("package-lock.json")).unwrap()).unwrap()
}

fn write_lock(sdk: &Path, lock: &Value) {
    std::fs::write(
        sdk.join("package-lock.json"),
        serde_json::to_vec_pretty(lock).unwrap(),
    )
    .unwrap();
}

fn show(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A lock written before the registry had some foreign-platform packages (here: two of them taken
/// out again) installs, npm's additions to it are dropped, and the tools are the pinned ones.
#[test]
fn a_lock_the_registry_has_outgrown_still_installs() {
    let sdk = sdk_copy();
    let mut old = lock(sdk.path());
    let packages = old["packages"].as_object_mut().unwrap();
    for foreign in [
        "node_modules/@andreiltd/componentize-qjs-binding-darwin-x64",
        "node_modules/@andreiltd/componentize-qjs-binding-linux-arm64-gnu",
    ] {
        assert!(
            packages.remove(foreign).is_some(),
            "{foreign} is in the lock"
        );
    }
    write_lock(sdk.path(), &old);
    let before = std::fs::read(sdk.path().join("package-lock.json")).unwrap();

    let output = js_env(sdk.path());
    assert!(output.status.success(), "{}", show(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("at their pinned versions"),
        "{}",
        show(&output)
    );
    // The committed lock is left as it was, whatever npm wanted to add to it.
    assert_eq!(
        std::fs::read(sdk.path().join("package-lock.json")).unwrap(),
        before
    );
    let installed: Value =
        serde_json::from_slice(
            &std::fs::read(sdk.path().join(
                "node_modules/@andreiltd/componentize-qjs-binding-linux-x64-gnu/package.json",
            ))
            .unwrap(),
        )
        .unwrap();
    assert_eq!(installed["version"], "0.4.5");

    // Installed once, the second run is a no-op.
    let again = js_env(sdk.path());
    assert!(again.status.success(), "{}", show(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already installed"),
        "{}",
        show(&again)
    );

    // An installed native binding that is not the pinned version is found by the check itself.
    let binding = sdk
        .path()
        .join("node_modules/@esbuild/linux-x64/package.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&binding).unwrap()).unwrap();
    manifest["version"] = "0.28.1".into();
    std::fs::write(&binding, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let check = Command::new("node")
        .arg(repo_root().join("scripts/js-tools-check.mjs"))
        .arg(sdk.path())
        .arg(sdk.path().join("package-lock.json"))
        .output()
        .unwrap();
    assert!(!check.status.success(), "{}", show(&check));
    assert!(
        String::from_utf8_lossy(&check.stderr)
            .contains("@esbuild/linux-x64: installed 0.28.1, pinned 0.28.2"),
        "{}",
        show(&check)
    );
}

/// A lock whose pinned tool version is not the one npm installs fails with a message naming the
/// tool and both versions, and marks nothing as installed.
#[test]
fn a_tool_at_another_version_fails_the_install() {
    let sdk = sdk_copy();
    let mut changed = lock(sdk.path());
    changed["packages"]["node_modules/componentize-qjs"]["version"] = "0.4.4".into();
    write_lock(sdk.path(), &changed);

    let output = js_env(sdk.path());
    assert!(!output.status.success(), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("componentize-qjs: installed 0.4.5, pinned 0.4.4"),
        "{}",
        show(&output)
    );
    assert!(
        stderr.contains("componentize-qjs: package.json pins 0.4.5 but the lock pins 0.4.4"),
        "{}",
        show(&output)
    );
    assert!(!sdk.path().join("node_modules/.aiphost-lock").exists());
}

/// Issue 28 item 2: building the example partners again when nothing changed rebuilds nothing
/// (no Python or JavaScript partner built again), so `scripts/serve.sh` starts serving
/// at once the second time.
#[test]
fn unchanged_partners_are_not_rebuilt() {
    aiphost_tests::plugins_dist();
    let output = Command::new("bash")
        .arg(repo_root().join("scripts/build-plugins.sh"))
        .output()
        .expect("running scripts/build-plugins.sh");
    assert!(output.status.success(), "{}", show(&output));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // (Rust partners are cargo's to judge; other tests may share its target directory.)
    for rebuilt in ["building python partner", "built "] {
        assert!(
            !said.contains(rebuilt),
            "{rebuilt:?} on an unchanged tree:\n{said}"
        );
    }
    assert!(
        said.contains("unchanged") && said.contains("up to date"),
        "{said}"
    );
}
