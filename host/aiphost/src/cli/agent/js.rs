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
    // The TypeScript spelling of the same partner: its types, and no more.
    let t = |ty: &'static str| if ts { ty } else { "" };
    let type_imports = t(", type DataItem, type Task");
    let (input_ty, task_ty) = (t(": DataItem[]"), t(": Task"));
    let (decision_ty, outcome_ty, string_ty) = (t(": Decision"), t(": Outcome"), t(": string"));
    let text_filter = if ts {
        ".filter((t): t is string => t !== null)"
    } else {
        ".filter((t) => t !== null)"
    };
    let (trip_type, trip_arg) = if ts {
        (
            "\n/** The answer to the form, as its schema says. */\ninterface Trip {\n  city: string;\n  days: number;\n}\n",
            "<Trip>",
        )
    } else {
        ("", "")
    };
    let partner = format!(
        r#"// {title}: an aiphost partner. It upper-cases the text it is given, and asks for text when there
// is none. A first word shows what else a partner can say: `think`, `tool`, `form`, `fail`, `reply`.

import {{ Decision, Form, Outcome, definePartner, formAnswer, log{type_imports} }} from "@aiphost/sdk";

/** What `form` asks for: the JSON Schema of an object. */
const TRIP = new Form({{
  requestId: "trip",
  title: "Trip",
  schema: {{
    type: "object",
    required: ["city", "days"],
    properties: {{ city: {{ type: "string" }}, days: {{ type: "integer", minimum: 1 }} }},
  }},
}});
{trip_type}
function textOf(input{input_ty}){string_ty} {{
  return input
    .map((item) => item.asText())
    {text_filter}
    .join(" ")
    .trim();
}}

export default definePartner({{
  /** A new task: `reply X` answers at once with a plain message and no task; the rest is taken on. */
  decide(_task{task_ty}, input{input_ty}){decision_ty} {{
    const text = textOf(input);
    return text.startsWith("reply ") ? Decision.reply(text.slice(6)) : Decision.accept();
  }},

  /** Runs after the task is accepted, and again on every `continue`. */
  work(task{task_ty}, input{input_ty}){outcome_ty} {{
    // The continue that answers the form (the host checked it against the schema).
    const trip = formAnswer{trip_arg}(input, TRIP.requestId);
    if (trip !== null) {{
      task.say(`${{trip.city}} for ${{trip.days}} days`);
      return Outcome.done();
    }}
    const text = textOf(input);
    if (text === "") {{
      return Outcome.ask("Send me some text to work on.");
    }}
    log.info(`task ${{task.id}}: working on ${{input.length}} items`);
    switch (text.split(/\s+/)[0]) {{
      case "think": // reasoning, streamed as it comes (a chat UI may fold it away)
        task.think(`Upper-casing ${{text.length}} characters.`);
        break;
      case "tool": // tool activity: shown to the Leader, never stored as a product
        task.toolCall("call-1", "upper", {{ text }});
        task.toolResult("call-1", {{ upper: text.toUpperCase() }});
        break;
      case "form": // structured input: the answer comes with the next continue
        return Outcome.ask({{ form: TRIP }});
      case "fail": // a failure with a code a client can act on
        return Outcome.fail({{ code: "TOLD_TO_FAIL", message: text, retryable: false }});
    }}
    task.usage({{ model: "none", inputTokens: text.length, outputTokens: text.length }});
    // The answer, streamed into the product `answer` (the SDK closes it when work returns).
    task.say(text.toUpperCase());
    return Outcome.done();
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

test("upper-cases the text, asks when there is none, and shows each kind of report", async () => {{
  const host = new MockHost();
  const turn = await host.start(partner, [DataItem.text("hello")]);
  assert.equal(turn.state, "awaiting-completion");
  assert.equal(turn.answer, "HELLO");
  assert.equal(turn.products[0].dataItems[0].asText(), "HELLO");
  assert.equal(turn.usage[0].inputTokens, 5);

  const empty = await new MockHost().start(partner, []);
  assert.equal(empty.state, "awaiting-input");
  assert.equal(empty.message[0].asText(), "Send me some text to work on.");

  assert.match((await host.start(partner, [DataItem.text("think hard")])).reasoning, /^Upper-casing/);
  const tool = await host.start(partner, [DataItem.text("tool x")]);
  assert.deepEqual(tool.toolCalls[0].arguments, {{ text: "tool x" }});
  assert.deepEqual(tool.toolResults[0].output, {{ upper: "TOOL X" }});

  const form = await host.start(partner, [DataItem.text("form")]);
  assert.equal(form.form?.requestId, "trip");
  const answered = await host.answer(partner, {{ city: "Oslo", days: 3 }});
  assert.equal(answered.answer, "Oslo for 3 days");

  const failed = await host.start(partner, [DataItem.text("fail now")]);
  assert.equal(failed.failure?.code, "TOLD_TO_FAIL");
  const reply = await host.start(partner, [DataItem.text("reply hi")]);
  assert.equal(reply.state, null);
  assert.equal(reply.reply?.[0].asText(), "hi");
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
