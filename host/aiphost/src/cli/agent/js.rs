//! JavaScript and TypeScript partners: an ES module on `@aiphost/sdk` (sdk/js), bundled and
//! componentized by the SDK's own build tool (`aiphost-build`, QuickJS or StarlingMonkey).

use super::lang::Names;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The SDK's build tool, relative to the SDK.
const BUILD_TOOL: &str = "bin/aiphost-build.mjs";

/// The SDK this aiphost was built with, when it still sits beside it.
fn default_sdk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/js")
}

/// The files of a new partner; `ts` writes TypeScript.
pub fn template(names: &Names, ts: bool) -> anyhow::Result<Vec<(String, String)>> {
    let Names {
        id,
        title,
        sdk_path,
        ..
    } = names;
    let sdk = match sdk_path {
        Some(sdk) => sdk.to_path_buf(),
        None => default_sdk_path().canonicalize().with_context(|| {
            format!(
                "the JavaScript SDK is not at {} (pass --sdk-path)",
                default_sdk_path().display()
            )
        })?,
    };
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
            "@aiphost/sdk": format!("file:{}", sdk.display()),
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
/// the `file:` one its package.json names, or the one beside this aiphost.
fn find_sdk(dir: &Path) -> anyhow::Result<PathBuf> {
    let installed = dir.join("node_modules/@aiphost/sdk");
    if installed.join(BUILD_TOOL).is_file() {
        return Ok(installed);
    }
    let named = std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|pkg| {
            ["dependencies", "devDependencies"].iter().find_map(|key| {
                pkg[key]["@aiphost/sdk"]
                    .as_str()
                    .and_then(|spec| spec.strip_prefix("file:"))
                    .map(|path| dir.join(path))
            })
        });
    for sdk in named.into_iter().chain([default_sdk_path()]) {
        if sdk.join(BUILD_TOOL).is_file() {
            return Ok(sdk);
        }
    }
    bail!(
        "the JavaScript SDK (@aiphost/sdk) was not found: not in {}, nor named by a file: dependency \
         in package.json, nor at {}; install it (npm install @aiphost/sdk) or scaffold with --sdk-path",
        installed.display(),
        default_sdk_path().display()
    )
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
