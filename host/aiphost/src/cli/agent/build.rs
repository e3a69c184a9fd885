//! `aiphost agent build`: compile a partner in its language, check the component against the
//! partner world as a host would, and write the bundle.

use super::lang::Lang;
use super::step;
use aiphost::agent::manifest::{Manifest, Rules};
use aiphost::agent::{COMPONENT_FILE, MANIFEST_FILE};
use aiphost::runtime::{Runtime, RuntimeConfig};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Build the partner in `path` into `out/<agent id>/`; returns that bundle directory.
///
/// `check_world`: compile the component once to check it against the partner world, as a host
/// would. `aiphost dev` leaves it to the host it publishes to, which compiles it anyway (a Python
/// partner's compile is the slow part of its build).
pub fn build(path: &Path, out: &Path, check_world: bool) -> anyhow::Result<PathBuf> {
    let started = Instant::now();
    let steps = if check_world { 4 } else { 3 };
    let manifest_path = path.join(MANIFEST_FILE);
    step(1, steps, &format!("reading {}", manifest_path.display()));
    let manifest = Manifest::load(&manifest_path, Rules::New)?;
    let lang = Lang::of(path)?;

    step(2, steps, lang.compiling());
    let wasm = lang.compile(path)?;
    let bytes = std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;

    if check_world {
        step(
            3,
            steps,
            &format!("checking {} against the partner world", wasm.display()),
        );
        let check_dir = tempfile::tempdir().context("creating a scratch directory")?;
        let runtime = Runtime::new(RuntimeConfig::with_data_dir(check_dir.path()))?;
        runtime
            .load_bytes(
                &bytes,
                manifest.limits.memory_mib,
                manifest.limits.invocation_ms,
            )
            .with_context(|| format!("{} is not a valid partner", wasm.display()))?;
    }

    let bundle = out.join(&manifest.agent.id);
    step(
        steps,
        steps,
        &format!("writing the bundle to {}", bundle.display()),
    );
    std::fs::create_dir_all(&bundle).with_context(|| format!("creating {}", bundle.display()))?;
    install(&manifest_path, &bundle.join(MANIFEST_FILE))?;
    install(&wasm, &bundle.join(COMPONENT_FILE))?;
    eprintln!(
        "built {} {} ({} KiB) in {:.1}s",
        manifest.agent.id,
        manifest.agent.version,
        bytes.len() / 1024,
        started.elapsed().as_secs_f64()
    );
    Ok(bundle)
}

/// Copy `from` to `to` through a temporary file and a rename, so that a host watching the bundle
/// never reads half a component.
fn install(from: &Path, to: &Path) -> anyhow::Result<()> {
    let tmp = to.with_extension("tmp");
    std::fs::copy(from, &tmp).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("writing {}", to.display()))?;
    Ok(())
}
