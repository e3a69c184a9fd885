//! Rust partners: a crate on the `aiphost-sdk` crate, built by cargo for wasm32-wasip2.

use super::lang::Names;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// The partner's stack, linked into its memory: 64 KiB instead of rustc's 1 MiB. The stack sits
/// below the data, and every invocation dirties what it touches of the memory's first pages, which
/// the host keeps resident and resets in place (`host/runtime/src/layout.rs`); with a 1 MiB stack
/// those pages are past the kept range and fault in anew each time. A recursion that runs off
/// the small stack still traps and fails only its task (`tests/tests/all/sandbox.rs`). The
/// example partners are linked the same way (`plugins/.cargo/config.toml`).
const STACK_BYTES: u32 = 64 * 1024;

/// The SDK this aiphost was built with, when it still sits beside it.
fn default_sdk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/rust")
}

/// The version requirement a new partner puts on the SDK.
const SDK_REQUIREMENT: &str = "0.1";

pub fn template(names: &Names) -> anyhow::Result<Vec<(String, String)>> {
    let Names {
        id,
        title,
        type_name,
        ..
    } = names;
    // The partner depends on the SDK by version, as it would on any crate. Until aiphost-sdk is on
    // crates.io, that version is only found through a `[patch.crates-io]` to a checkout.
    // Without one the partner asks crates.io (and the patch is all a local build needs: with the
    // published crate, nothing has to be deleted, the patch merely takes precedence).
    let sdk = names.local_sdk(&default_sdk_path(), "Cargo.toml");
    let patch = match &sdk {
        Some(sdk) => format!(
            r#"
# aiphost-sdk from a local checkout instead of crates.io (`aiphost agent new` writes this when
# it knows one: --sdk-path, or the SDK beside the aiphost that scaffolded this partner). Delete it
# to use the published crate.
[patch.crates-io]
aiphost-sdk = {{ path = {sdk:?} }}
"#,
            sdk = sdk.display().to_string()
        ),
        None => String::new(),
    };
    let cargo_toml = format!(
        r#"[package]
name = "{id}"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]

[dependencies]
aiphost-sdk = "{SDK_REQUIREMENT}"

[profile.release]
opt-level = "s"
strip = "debuginfo"

# A partner is its own workspace; remove this if you add it to one (and move any
# [patch.crates-io] below to that workspace's Cargo.toml).
[workspace]
{patch}"#
    );
    let lib_rs = format!(
        r##"//! {title}: an aiphost partner.

use aiphost_sdk::serde_json::json;
use aiphost_sdk::{{
    DataItem, Decision, Form, Outcome, Partner, ReportError, Task, ToolOutput, form_answer,
}};

struct {type_name};

/// The longest text it shouts, in bytes.
const MAX_TEXT: usize = 4096;

impl Partner for {type_name} {{
    /// A new task: "ping" gets a plain reply at once, and no task is created; the rest is taken on.
    fn decide(_task: &Task, input: &[DataItem]) -> Decision {{
        if input.iter().any(|item| item.as_text() == Some("ping")) {{
            return Decision::reply("pong");
        }}
        Decision::Accept
    }}

    /// Runs after the task is accepted, and again on every `continue`.
    fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {{
        // The text comes as text items, or as the answer to the form asked below.
        let mut text: Vec<&str> = input.iter().filter_map(DataItem::as_text).collect();
        if let Some(answer) = form_answer(&input, "text") {{
            text.extend(answer.get("text").and_then(|t| t.as_str()));
        }}
        if text.is_empty() {{
            return Outcome::ask_form(text_form());
        }}
        let text = text.join(" ");
        if text.len() > MAX_TEXT {{
            return Outcome::fail_with("TEXT_TOO_LONG", format!("send at most {{MAX_TEXT}} bytes"));
        }}
        aiphost_sdk::log::info(&format!(
            "task {{}}: working on {{}} items",
            task.id(),
            input.len()
        ));
        match shout(task, &text) {{
            Ok(()) => Outcome::Done(vec![]), // the SDK closes the streamed answer
            Err(e) => e.into(),              // quiet if the Leader canceled meanwhile
        }}
    }}
}}

aiphost_sdk::export!({type_name});

/// The form it asks with when there is no text: a JSON Schema of the object it wants.
fn text_form() -> Form {{
    let schema = json!({{
        "type": "object",
        "required": ["text"],
        "properties": {{ "text": {{ "type": "string", "minLength": 1 }} }}
    }});
    Form::new("text", "Text to shout", schema).described("Send me some text to work on.")
}}

/// Shouts `text`, showing the work as it goes: its reasoning (when the Leader asks for it with the
/// commandParams {{"explain": true}}), a tool call and its result, then the answer, streamed.
fn shout(task: &mut Task, text: &str) -> Result<(), ReportError> {{
    if task.params().get("explain").and_then(|e| e.as_bool()) == Some(true) {{
        task.think("The Leader wants the text in capitals: count the words, then shout.")?;
    }}
    task.tool_call("call-1", "count_words", &json!({{ "text": text }}))?;
    let words = text.split_whitespace().count();
    task.tool_result("call-1", ToolOutput::Json(json!({{ "words": words }})), false)?;
    task.say(&text.to_uppercase())
}}

/// Native unit tests on the SDK's mock host: `cargo test` (no wasm, no aiphost).
#[cfg(test)]
mod tests {{
    use super::*;
    use aiphost_sdk::State;
    use aiphost_sdk::testing::{{MockHost, Start}};

    #[test]
    fn asks_with_a_form_then_shouts_the_answer() {{
        let mut host = MockHost::<{type_name}>::new();
        let turn = host.start(vec![]);
        assert_eq!(turn.state, Some(State::AwaitingInput));
        assert_eq!(turn.form, Some(text_form()));

        let turn = host.answer_form(&turn.task_id, json!({{ "text": "hello world" }}));
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        let reports: Vec<String> = turn.reports.iter().map(ToString::to_string).collect();
        assert_eq!(
            reports[..2],
            [
                r#"tool-call call-1 count_words {{"text":"hello world"}}"#,
                r#"tool-result call-1 error=false json:{{"words":2}}"#,
            ]
        );
        assert_eq!(turn.said(), "HELLO WORLD");
        assert_eq!(
            turn.logs[0].message,
            format!("task {{}}: working on 1 items", turn.task_id)
        );

        let turn = host.complete(&turn.task_id);
        assert_eq!(turn.state, Some(State::Completed));
    }}

    #[test]
    fn explains_replies_and_fails_with_a_code() {{
        let mut host = MockHost::<{type_name}>::new();
        let params = json!({{ "explain": true }}).as_object().cloned();
        let explain = Start {{
            params: params.unwrap_or_default(),
            ..Start::default()
        }};
        let turn = host.start_with(vec![DataItem::text("hi")], explain);
        assert!(turn.thought().starts_with("The Leader wants"));
        assert_eq!(turn.said(), "HI");

        let turn = host.start(vec![DataItem::text("ping")]);
        assert_eq!(turn.reply, Some(vec![DataItem::text("pong")]));
        assert_eq!(turn.state, None); // no task

        let turn = host.start(vec![DataItem::text("a".repeat(MAX_TEXT + 1))]);
        assert_eq!(turn.state, Some(State::Failed));
        let code = turn.failure.map(|f| f.code);
        assert_eq!(code.as_deref(), Some("TEXT_TOO_LONG"));
    }}
}}
"##
    );
    Ok(vec![
        ("Cargo.toml".into(), cargo_toml),
        ("src/lib.rs".into(), lib_rs),
        (".gitignore".into(), "/target\n/dist\n".into()),
    ])
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// `cargo test` in `dir`: the partner's tests, natively, on the SDK's mock host.
pub fn test(dir: &Path) -> anyhow::Result<()> {
    let status = cargo()
        .arg("test")
        .current_dir(dir)
        .status()
        .context("running cargo (install Rust: https://rustup.rs)")?;
    if !status.success() {
        bail!("the partner's tests failed (cargo test: {status}); cargo's report is above");
    }
    Ok(())
}

/// `cargo rustc --release --target wasm32-wasip2 --lib` in `dir`, linked with the partner's small
/// stack, with cargo's full diagnostics. (`cargo rustc`: the link flag reaches the partner's own
/// link and nothing else, whatever `RUSTFLAGS` or cargo configuration the author has.)
pub fn compile(dir: &Path) -> anyhow::Result<PathBuf> {
    let status = cargo()
        .args(["rustc", "--release", "--target", TARGET, "--lib", "--"])
        .arg(format!("-Clink-arg=-zstack-size={STACK_BYTES}"))
        .current_dir(dir)
        .status()
        .context("running cargo (is it installed and on PATH?)")?;
    if !status.success() {
        if target_missing() {
            bail!(
                "cargo rustc failed ({status}): the {TARGET} target is not installed; rustup target add {TARGET}"
            );
        }
        bail!("cargo rustc failed ({status}); its errors are above");
    }
    find_component(dir)
}

/// Whether rustup says the wasm target is not installed (false when there is no rustup to ask).
fn target_missing() -> bool {
    Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|out| {
            out.status.success()
                && !String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .any(|l| l.trim() == TARGET)
        })
}
/// The `.wasm` cargo produced for the crate at `path`.
fn find_component(path: &Path) -> anyhow::Result<PathBuf> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(path)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata")?;
    let target_dir = meta["target_directory"]
        .as_str()
        .context("cargo metadata has no target_directory")?;
    let here = path.canonicalize()?;
    let package = meta["packages"]
        .as_array()
        .and_then(|ps| {
            ps.iter().find(|p| {
                p["manifest_path"]
                    .as_str()
                    .and_then(|m| Path::new(m).parent().map(Path::to_path_buf))
                    .is_some_and(|dir| dir == here)
            })
        })
        .context("no cargo package at this path")?;
    let name = package["name"]
        .as_str()
        .unwrap_or_default()
        .replace('-', "_");
    let wasm = Path::new(target_dir)
        .join("wasm32-wasip2")
        .join("release")
        .join(format!("{name}.wasm"));
    if !wasm.is_file() {
        bail!(
            "expected {} after the build; is the crate a cdylib?",
            wasm.display()
        );
    }
    Ok(wasm)
}
