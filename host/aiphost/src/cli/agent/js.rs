//! JavaScript and TypeScript partners: an ES module on `@aiphost/sdk` (sdk/js), bundled and
//! componentized by the SDK's own build tool (`aiphost-build`, QuickJS or StarlingMonkey).

use super::lang::Names;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The SDK's build tool, relative to the SDK.
const BUILD_TOOL: &str = "bin/aiphost-build.mjs";

/// The version requirement a new partner puts on the SDK.
const SDK_REQUIREMENT: &str = "^0.1.0";

/// The SDK this aiphost was built with, when it still sits beside it.
fn default_sdk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/js")
}

/// Install a local SDK into the new partner in `dir`, as `npm install --no-save SDK` would: a
/// link `node_modules/@aiphost/sdk` to it (the SDK's own tools stay installed beside it).
///
/// The partner's package.json depends on the SDK by version, as on any package; until
/// @aiphost/sdk is on npm, that version is only found in a checkout (`Names::local_sdk`). (npm has no
/// equivalent of cargo's [patch] for a direct dependency: its `overrides` refuse one.) The link
/// is machine-local and ignored by git; a later `npm install` keeps it, since the linked SDK's
/// version satisfies the requirement (npm records it in package-lock.json as a link).
/// Returns the SDK linked, or `None` when none is known (the partner then installs it from npm).
pub fn link_local_sdk(dir: &Path, names: &Names) -> anyhow::Result<Option<PathBuf>> {
    let Some(sdk) = names.local_sdk(&default_sdk_path(), BUILD_TOOL) else {
        return Ok(None);
    };
    if !sdk.join(BUILD_TOOL).is_file() {
        bail!(
            "{} is not the JavaScript SDK (it has no {BUILD_TOOL})",
            sdk.display()
        );
    }
    let scope = dir.join("node_modules/@aiphost");
    std::fs::create_dir_all(&scope).with_context(|| format!("creating {}", scope.display()))?;
    let link = scope.join("sdk");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&sdk, &link)
        .with_context(|| format!("linking {} to {}", link.display(), sdk.display()))?;
    #[cfg(not(unix))]
    bail!(
        "linking a local SDK needs a Unix host; run `npm install --no-save {}` in {}",
        sdk.display(),
        dir.display()
    );
    Ok(Some(sdk))
}

/// The files of a new partner; `ts` writes TypeScript.
pub fn template(names: &Names, ts: bool) -> anyhow::Result<Vec<(String, String)>> {
    let Names { id, title, .. } = names;
    let ext = if ts { "ts" } else { "js" };
    let test_cmd = if ts {
        "node --import @aiphost/sdk/register-ts --test test/partner.test.ts"
    } else {
        "node --test test/"
    };
    let package = serde_json::json!({
        "name": id,
        "version": "0.1.0",
        "private": true,
        "type": "module",
        "main": format!("src/partner.{ext}"),
        "scripts": {
            "build": "aiphost agent build .",
            "test": test_cmd,
        },
        "devDependencies": {
            "@aiphost/sdk": SDK_REQUIREMENT,
        },
    });
    let package = serde_json::to_string_pretty(&package)? + "\n";
    let (params, ret) = if ts {
        ("task: Task, input: DataItem[]", ": Outcome")
    } else {
        ("task, input", "")
    };
    let type_import = if ts { ", type Task" } else { "" };
    let text_filter = if ts {
        ".filter((t): t is string => t !== null)"
    } else {
        ".filter((t) => t !== null)"
    };
    let partner = format!(
        r#"// {title}: an aiphost partner.

import {{ DataItem, Outcome, Product, definePartner, log{type_import} }} from "@aiphost/sdk";

export default definePartner({{
  /** Runs after the task is accepted, and again on every `continue`. */
  work({params}){ret} {{
    const text = input.map((item) => item.asText()){text_filter};
    if (text.length === 0) {{
      return Outcome.ask("Send me some text to work on.");
    }}
    log.info(`task ${{task.id}}: working on ${{input.length}} items`);
    return Outcome.done([
      new Product("answer").named("answer").withItem(DataItem.text(text.join(" ").toUpperCase())),
    ]);
  }},
}});
"#
    );
    let test = format!(
        r#"import assert from "node:assert/strict";
import {{ test }} from "node:test";

import {{ DataItem }} from "@aiphost/sdk";
import {{ MockHost }} from "@aiphost/sdk/testing";
import partner from "../src/partner.{ext}";

test("upper-cases the text, and asks when there is none", async () => {{
  const host = new MockHost();
  const turn = await host.start(partner, [DataItem.text("hello")]);
  assert.equal(turn.state, "awaiting-completion");
  assert.equal(turn.products[0].dataItems[0].asText(), "HELLO");

  const empty = await new MockHost().start(partner, []);
  assert.equal(empty.state, "awaiting-input");
  assert.equal(empty.message[0].asText(), "Send me some text to work on.");
}});
"#
    );
    let mut files = vec![
        ("package.json".into(), package),
        (format!("src/partner.{ext}"), partner),
        (format!("test/partner.test.{ext}"), test),
        (
            ".gitignore".into(),
            "/node_modules\n/target\n/dist\n".into(),
        ),
    ];
    if ts {
        files.push(("tsconfig.json".into(), TSCONFIG.into()));
    }
    Ok(files)
}

/// For editors and `tsc --noEmit`; the build itself only strips the types (esbuild).
const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "target": "es2022",
    "module": "esnext",
    "moduleResolution": "bundler",
    "strict": true,
    "noEmit": true,
    "allowImportingTsExtensions": true,
    "skipLibCheck": true
  },
  "include": ["src"]
}
"#;

/// The SDK the partner in `dir` builds with: the one it installed (`node_modules/@aiphost/sdk`),
/// else the one beside this aiphost.
fn find_sdk(dir: &Path) -> anyhow::Result<PathBuf> {
    let installed = dir.join("node_modules/@aiphost/sdk");
    for sdk in [installed.clone(), default_sdk_path()] {
        if sdk.join(BUILD_TOOL).is_file() {
            return Ok(sdk);
        }
    }
    bail!(
        "the JavaScript SDK (@aiphost/sdk) was not found: not in {}, nor at {}; install it \
         (npm install @aiphost/sdk, or npm install --no-save PATH-TO-SDK from a checkout)",
        installed.display(),
        default_sdk_path().display()
    )
}

/// `npm test` in `dir`: the partner's `node --test` tests (its package.json says how), on the
/// SDK's mock host.
pub fn test(dir: &Path) -> anyhow::Result<()> {
    let npm = std::env::var("NPM").unwrap_or_else(|_| "npm".into());
    let status = Command::new(&npm)
        .args(["test", "--silent"])
        .current_dir(dir)
        .status()
        .with_context(|| {
            format!("running `{npm}` (install Node.js 20 or later with npm: https://nodejs.org)")
        })?;
    if !status.success() {
        bail!("the partner's tests failed (npm test: {status}); node's report is above");
    }
    Ok(())
}

/// `node aiphost-build.mjs DIR -o DIR/target/partner.wasm`, with the tool's own diagnostics.
pub fn compile(dir: &Path) -> anyhow::Result<PathBuf> {
    let node = std::env::var("NODE").unwrap_or_else(|_| "node".into());
    let version = Command::new(&node).arg("--version").output();
    match version {
        Ok(out) if out.status.success() => {}
        _ => bail!(
            "Node.js 20 or later is needed to build JavaScript partners, and `{node}` did not run; \
             install it (https://nodejs.org) or set NODE to its path"
        ),
    }
    let sdk = find_sdk(dir)?;
    if !sdk.join("node_modules/componentize-qjs").is_dir() {
        bail!(
            "the JavaScript SDK at {} has no build tools installed; run `npm install` there \
             (in the aiphost repository: scripts/js-env.sh)",
            sdk.display()
        );
    }
    let out = dir.join("target/partner.wasm");
    let status = Command::new(&node)
        .arg(sdk.join(BUILD_TOOL))
        .arg(dir)
        .arg("-o")
        .arg(&out)
        .status()
        .with_context(|| format!("running {node}"))?;
    if !status.success() {
        bail!("the JavaScript build failed ({status}); its errors are above");
    }
    if !out.is_file() {
        bail!(
            "{} ran but wrote no {}",
            sdk.join(BUILD_TOOL).display(),
            out.display()
        );
    }
    Ok(out)
}
