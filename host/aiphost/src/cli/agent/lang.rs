//! The languages a partner can be written in: how each is scaffolded and compiled to a component.
//!
//! Everything else about a partner (its manifest, the check against the partner world, the
//! bundle) is the same for every language and lives in `new.rs` and `build.rs`.

use super::{js, python, rust};
use anyhow::bail;
use clap::ValueEnum;
use std::path::{Path, PathBuf};

/// A partner's language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// A Rust crate using the `aiphost-sdk` crate, built with cargo for wasm32-wasip2.
    Rust,
    /// A Python module using the `aiphost-sdk` package, built with componentize-py.
    Python,
    /// An ES module on `@aiphost/sdk` (sdk/js), componentized with QuickJS or StarlingMonkey.
    Js,
    /// Like `js`, in TypeScript (types stripped by esbuild at build time).
    Ts,
}

/// What a template needs to know about the partner it writes.
pub struct Names<'a> {
    /// The partner id, e.g. `trip-planner`.
    pub id: &'a str,
    /// Words for people, e.g. `Trip Planner`.
    pub title: &'a str,
    /// A type name, e.g. `TripPlanner`.
    pub type_name: &'a str,
    /// A local SDK checkout to use instead of the published SDK, if the author named one
    /// (`--sdk-path`).
    pub sdk_path: Option<&'a Path>,
}

impl Names<'_> {
    /// The local SDK checkout a new partner takes its SDK from until the SDK is published:
    /// `--sdk-path`, else `beside` (the SDK this aiphost was built from) if it is still there,
    /// recognised by its file `marker`. The partner still depends on the SDK by version; each
    /// language points its package manager at the checkout in its own way.
    pub fn local_sdk(&self, beside: &Path, marker: &str) -> Option<PathBuf> {
        match self.sdk_path {
            Some(sdk) => Some(sdk.to_path_buf()),
            None => beside
                .canonicalize()
                .ok()
                .filter(|dir| dir.join(marker).is_file()),
        }
    }
}

impl Lang {
    /// The language of the partner in `dir`, told by its project file.
    pub fn of(dir: &Path) -> anyhow::Result<Lang> {
        if dir.join("Cargo.toml").is_file() {
            return Ok(Lang::Rust);
        }
        if dir.join("package.json").is_file() {
            return Ok(Lang::Js);
        }
        if dir.join("pyproject.toml").is_file() {
            return Ok(Lang::Python);
        }
        bail!(
            "{} has no Cargo.toml, pyproject.toml or package.json: not a partner project (scaffold one with `aiphost agent new`)",
            dir.display()
        )
    }

    /// The files of a new partner (paths relative to its directory), besides its manifest.
    pub fn template(self, names: &Names) -> anyhow::Result<Vec<(String, String)>> {
        match self {
            Lang::Rust => rust::template(names),
            Lang::Js => js::template(names, false),
            Lang::Ts => js::template(names, true),
            Lang::Python => python::template(names),
        }
    }

    /// How `agent build` says what it compiles with.
    pub fn compiling(self) -> &'static str {
        match self {
            Lang::Rust => "compiling for wasm32-wasip2 (cargo rustc --release, a 64 KiB stack)",
            Lang::Js | Lang::Ts => {
                "bundling and componentizing (node sdk/js/bin/aiphost-build.mjs)"
            }
            Lang::Python => {
                "building a component with componentize-py (python -m aiphost_sdk build)"
            }
        }
    }

    /// Run the partner's own tests in `dir` with its language's tools (natively, on the SDK's
    /// mock host); fails when they fail.
    pub fn test(self, dir: &Path) -> anyhow::Result<()> {
        match self {
            Lang::Rust => rust::test(dir),
            Lang::Js | Lang::Ts => js::test(dir),
            Lang::Python => python::test(dir),
        }
    }

    /// Compile the partner in `dir`; returns the component it produced. The compiler's own
    /// diagnostics go to the terminal in full.
    pub fn compile(self, dir: &Path) -> anyhow::Result<PathBuf> {
        match self {
            Lang::Rust => rust::compile(dir),
            Lang::Js | Lang::Ts => js::compile(dir),
            Lang::Python => python::compile(dir),
        }
    }
}
