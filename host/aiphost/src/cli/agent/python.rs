//! Python partners: a module on the `aiphost-sdk` Python package, built into a component by the
//! SDK's own build command (`python -m aiphost_sdk build`, which runs componentize-py with the WIT
//! the SDK ships). The componentize-py invocation lives in the SDK only, so the CLI and
//! `scripts/build-plugins.sh` build the same way.

use super::lang::Names;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-py the SDK is made for (what to install when it is missing).
const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// The repository this aiphost was built from (its SDK and `.venv` may still sit there).
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The version requirement a new partner puts on the SDK (`~=0.1.0`: any 0.1.x).
const SDK_REQUIREMENT: &str = "0.1.0";

/// The Python SDK this aiphost was built with, when it still sits beside it.
fn default_sdk_path() -> PathBuf {
    checkout().join("sdk/python")
}

pub fn template(names: &Names) -> anyhow::Result<Vec<(String, String)>> {
    let Names {
        id,
        title,
        type_name,
        ..
    } = names;
    // The partner depends on the SDK by version, as on any package. Until aiphost-sdk is on PyPI,
    // that version is found in a local checkout: uv takes it from `[tool.uv.sources]` (the
    // equivalent of cargo's [patch]); pip users install it first (`pip install -e SDK`), which
    // satisfies the requirement. `aiphost agent build` does not read the dependency at all: it
    // builds with the Python that has the SDK installed.
    let sdk = names.local_sdk(&default_sdk_path(), "pyproject.toml");
    let sources = match &sdk {
        Some(sdk) => format!(
            r#"
# aiphost-sdk from a local checkout instead of PyPI (`aiphost agent new` writes this when it
# knows one: --sdk-path, or the SDK beside the aiphost that scaffolded this partner). uv reads
# it; with pip, run `pip install -e {sdk}` first. Delete it to use the published package.
[tool.uv.sources]
aiphost-sdk = {{ path = {sdk:?}, editable = true }}
"#,
            sdk = sdk.display().to_string()
        ),
        None => String::new(),
    };
    let pyproject = format!(
        r#"[project]
name = "{id}"
version = "0.1.0"
description = "{title}: an aiphost partner."
requires-python = ">=3.11"
dependencies = ["aiphost-sdk~={SDK_REQUIREMENT}"]

# The module `aiphost agent build` makes the component from.
[tool.aiphost]
module = "app"

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
{sources}"#
    );
    // One of each kind of answer a partner has, kept short: the real work (upper-casing) streams
    // its answer with what it thinks and the tool it calls; a few words show a form, a failure
    // with a code and a plain reply.
    let app = format!(
        r#""""{title}: an aiphost partner."""

from aiphost_sdk import DataItem, Decision, Form, Outcome, Partner, Task, export, form_answer, log

TEXT_FORM = Form(
    "text",
    "Text to upper-case",
    {{"type": "object", "required": ["text"], "properties": {{"text": {{"type": "string"}}}}}},
)
"""The form `form` asks with: its answer is another way to send the text."""


def text_of(input: list[DataItem]) -> str:
    """The text items of the input, joined by spaces."""
    return " ".join(t for t in (item.as_text() for item in input) if t is not None)


@export
class {type_name}(Partner):
    """Upper-cases the text it is given; asks for text when there is none. A few words show the
    other answers a partner has: `hi` (a plain reply, no task), `form` (asks with a form) and
    `fail` (fails with a code)."""

    def decide(self, task: Task, input: list[DataItem]) -> Decision:
        """Runs first on a new task: take it on, or answer `hi` at once with no task."""
        if text_of(input) == "hi":
            return Decision.reply("Hi! Send me some text to upper-case.")
        return Decision.accept()

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        """Runs after the task is accepted, and again on every continue."""
        answer = form_answer(input, TEXT_FORM.request_id)
        text = answer["text"] if answer is not None else text_of(input)
        if not text:
            return Outcome.ask("Send me some text to work on.")
        if text == "form":
            return Outcome.ask(TEXT_FORM)
        if text == "fail":
            return Outcome.fail_with("ASKED_TO_FAIL", "you asked me to fail", retryable=False)
        log.info(f"task {{task.id}}: working on {{len(input)}} items")
        task.think(f"upper-casing {{len(text)}} characters")
        task.tool_call("upper-1", "upper", {{"text": text}})
        upper = text.upper()
        task.tool_result("upper-1", {{"upper": upper}})
        task.usage(model="str.upper", input_tokens=len(text), output_tokens=len(upper))
        # Streamed into the product `answer`; an LLM's tokens would be one `say` each.
        task.say(upper)
        return Outcome.done()
"#
    );
    let test = format!(
        r#""""{title}'s unit tests: the partner runs natively against the SDK's mock host."""

from app import TEXT_FORM, {type_name}

from aiphost_sdk import DataItem, Failure, Json, State, ToolResult
from aiphost_sdk.testing import MockHost


def test_each_kind_of_answer() -> None:
    host = MockHost({type_name})
    # No text: it asks for some.
    turn = host.start([])
    assert turn.state == State.AWAITING_INPUT
    assert turn.text() == "Send me some text to work on."
    # Text: it thinks, calls its tool, reports usage and streams the answer.
    turn = host.continue_(turn.task_id, [DataItem.text("hello"), DataItem.text("world")])
    assert turn.state == State.AWAITING_COMPLETION
    assert turn.said() == "HELLO WORLD"
    assert turn.product("answer").items[0].as_text() == "HELLO WORLD"
    assert turn.thought() == "upper-casing 11 characters"
    assert turn.tool_results == [ToolResult("upper-1", Json({{"upper": "HELLO WORLD"}}))]
    # `form` asks with a form; its answer is upper-cased.
    turn = host.start([DataItem.text("form")])
    assert turn.form == TEXT_FORM
    assert host.answer_form(turn.task_id, {{"text": "from a form"}}).said() == "FROM A FORM"
    # `fail` fails with a code; `hi` gets a plain reply and no task.
    failed = host.start([DataItem.text("fail")])
    assert failed.failure == Failure("ASKED_TO_FAIL", "you asked me to fail")
    replied = host.start([DataItem.text("hi")])
    assert replied.reply == [DataItem.text("Hi! Send me some text to upper-case.")]
"#
    );
    Ok(vec![
        ("pyproject.toml".into(), pyproject),
        ("app.py".into(), app),
        ("tests/test_app.py".into(), test),
        (
            ".gitignore".into(),
            "/build\n/dist\n__pycache__/\n.pytest_cache/\n".into(),
        ),
    ])
}

/// The Python to build with: `$AIPHOST_PYTHON`, else the `.venv` of the checkout this aiphost
/// was built from (where `scripts/python-env.sh` installs the SDK and componentize-py), else
/// `python3` on PATH.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("AIPHOST_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let venv = checkout().join(".venv/bin/python");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("python3")
}

/// Run `python ARGS` for what it says (its output), saying what to install when it cannot run.
fn probe(python: &Path, args: &[&str]) -> anyhow::Result<std::process::Output> {
    Command::new(python).args(args).output().with_context(|| {
        format!(
            "running {} (install Python 3.11 or later, or set AIPHOST_PYTHON to one)",
            python.display()
        )
    })
}

/// `python -m pytest` in `dir` with the Python that builds partners (`AIPHOST_PYTHON`, this
/// checkout's `.venv`, or `python3`): the one that has the SDK, so the tests import it as the
/// build does.
pub fn test(dir: &Path) -> anyhow::Result<()> {
    let python = python();
    let has = probe(&python, &["-c", "import aiphost_sdk, pytest"])?;
    if !has.status.success() {
        bail!(
            "{py} has no Python SDK or no pytest to run the partner's tests with; install them with \
             `{py} -m pip install ./sdk/python pytest` (in this repository: scripts/python-env.sh), \
             or set AIPHOST_PYTHON to a Python that has them",
            py = python.display()
        );
    }
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q"])
        .current_dir(dir)
        .status()
        .with_context(|| format!("running {}", python.display()))?;
    if !status.success() {
        bail!("the partner's tests failed (pytest: {status}); pytest's report is above");
    }
    Ok(())
}

/// `python -m aiphost_sdk build DIR -o DIR/build/partner.wasm`, with componentize-py's full
/// diagnostics (an exception raised while importing the partner's module shows there).
pub fn compile(dir: &Path) -> anyhow::Result<PathBuf> {
    let python = python();
    let check = probe(&python, &["-m", "aiphost_sdk", "check"])?;
    if !check.status.success() {
        let stderr = String::from_utf8_lossy(&check.stderr);
        if stderr.contains("No module named aiphost_sdk") {
            bail!(
                "the Python SDK is not installed for {py}; install it and componentize-py with \
                 `{py} -m pip install ./sdk/python '{COMPONENTIZE_PY}'` (in this repository: \
                 scripts/python-env.sh), or set AIPHOST_PYTHON to a Python that has them",
                py = python.display()
            );
        }
        bail!(
            "{} cannot build Python partners: {}",
            python.display(),
            stderr.trim().trim_start_matches("error: ")
        );
    }
    let wasm = dir.join("build").join("partner.wasm");
    let status = Command::new(&python)
        .args(["-m", "aiphost_sdk", "build"])
        .arg(dir)
        .arg("--output")
        .arg(&wasm)
        .status()
        .with_context(|| format!("running {}", python.display()))?;
    if !status.success() {
        bail!("building the component failed ({status}); the errors are above");
    }
    if !wasm.is_file() {
        bail!("expected {} after the build", wasm.display());
    }
    Ok(wasm)
}
