//! Python partners (sdk/python) through the real host: lifecycle-py (the lifecycle fixture),
//! echo-py and trip-planner-py, built from source by scripts/build-plugins.sh with the SDK's build
//! command (componentize-py), served by the `aiphost` binary over real HTTP; and
//! `aiphost agent new --lang python` then `agent build`.
//!
//! The hosts here serve only the bundles a test names (copied out of plugins/dist), so they do not
//! load every example partner; compiled components go to the shared test cache (a Python component
//! is ~18 MB of wasm: compiling it is the slow part, once).

use aiphost_tests::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `aiphost serve` of the bundles `agents` of plugins/dist alone (copied out, so the host does
/// not load every example partner).
fn serve_bundles(dir: &Path, agents: &[&str]) -> ProcessHost {
    let dist = plugins_dist();
    let bundles = dir.join("agents");
    for agent in agents {
        let bundle = bundles.join(agent);
        std::fs::create_dir_all(&bundle).unwrap();
        for file in ["partner.toml", "partner.wasm"] {
            std::fs::copy(dist.join(agent).join(file), bundle.join(file)).unwrap();
        }
    }
    ProcessHost::serve(&dir.join("data"), &bundles, &[])
}

fn id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid())
}

fn status_text(answer: &Value) -> String {
    result(answer)["status"]["dataItems"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn product<'a>(answer: &'a Value, id: &str) -> &'a Value {
    result(answer)["products"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["id"] == id))
        .unwrap_or_else(|| panic!("no product {id} in {answer}"))
}

/// Ask lifecycle-py (a new task each time) what the last end hook recorded, until it is
/// `expected`, for at most 10 s.
async fn wait_until_ended_says(rpc: &str, expected: &str) {
    let started = Instant::now();
    loop {
        let answer = post(rpc, &v2("start", &id("py-life"), text("ended?"), json!({}))).await;
        let said = product(&answer, "ended")["dataItems"][0]["text"].clone();
        if said == json!(expected) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the end hook did not record {expected:?}: {said}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The lifecycle of the Rust echo's tests, on a Python partner: start to awaiting-input, continue
/// (with commandParams) to awaiting-completion with the task's and the partner's KV counts carried
/// across turns, complete; a cancel of a waiting task; and both end hooks ran (they record in the
/// agent KV, read back by a later task).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_partner_walks_the_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let host = serve_bundles(dir.path(), &["lifecycle-py"]);
    let rpc = host.rpc("lifecycle-py");

    let t1 = id("py-life");
    let answer = post(&rpc, &v2("start", &t1, text("ask"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    assert_eq!(status_text(&answer), "what next? (turn 1)");

    let answer = post(&rpc, &v2("continue", &t1, text("ask"), json!({}))).await;
    assert_eq!(status_text(&answer), "what next? (turn 2)");

    let answer = post(&rpc, &v2("continue", &t1, text("hello"), json!({"k": 1}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let echo = product(&answer, "echo");
    assert_eq!(echo["name"], "echo");
    assert_eq!(echo["dataItems"][0]["text"], "hello");
    assert_eq!(
        echo["dataItems"][1]["data"],
        json!({"turn": 3, "totalTurns": 3, "params": {"k": 1}})
    );

    let answer = post(&rpc, &v2("complete", &t1, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed");

    // The end hooks run after the answer (in their own invocation): wait for what they record.
    wait_until_ended_says(&rpc, &format!("{t1} completed by leader")).await;

    // A second task: its own turn count, the partner's total goes on.
    let t2 = id("py-life");
    let answer = post(&rpc, &v2("start", &t2, text("ask"), json!({}))).await;
    assert_eq!(status_text(&answer), "what next? (turn 1)");
    let answer = post(&rpc, &v2("continue", &t2, text("ask"), json!({}))).await;
    assert_eq!(status_text(&answer), "what next? (turn 2)");
    let answer = post(&rpc, &v2("cancel", &t2, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
    wait_until_ended_says(&rpc, &format!("{t2} canceled by leader")).await;

    let answer = post(&rpc, &v2("get", &t1, json!([]), json!({}))).await;
    let states: Vec<&str> = result(&answer)["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["state"].as_str())
        .collect();
    assert_eq!(
        states,
        [
            "accepted",
            "working",
            "awaiting-input",
            "working",
            "awaiting-input",
            "working",
            "awaiting-completion",
            "completed"
        ]
    );
}

/// An exception escaping the partner fails the task with a short reason naming it, and its
/// traceback reaches the host's log at error level; Outcome.fail and a rejection report their
/// reasons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_fails_the_task_with_its_reason_and_logs_the_traceback() {
    let dir = tempfile::tempdir().unwrap();
    let host = serve_bundles(dir.path(), &["lifecycle-py"]);
    let rpc = host.rpc("lifecycle-py");

    let t = id("py-raise");
    let answer = post(&rpc, &v2("start", &t, text("ask"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input");
    let answer = post(&rpc, &v2("continue", &t, text("raise"), json!({}))).await;
    assert_eq!(state(&answer), "failed", "{answer}");
    let reason = status_text(&answer);
    assert!(
        reason.starts_with(
            "the partner failed: work raised ValueError: asked to raise on turn 2 (at app.py line"
        ),
        "{reason}"
    );
    let log = host.log();
    let line = log
        .lines()
        .find(|l| l.contains("partner raised an exception in work"))
        .unwrap_or_else(|| panic!("no partner error in the host's log:\n{log}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains(&t), "the log line names the task: {line}");
    assert!(
        line.contains("Traceback (most recent call last)") && line.contains("app.py"),
        "{line}"
    );
    // The source line too, though the component has no file system at run time.
    assert!(line.contains("raise ValueError(f"), "{line}");

    let t = id("py-fail");
    let answer = post(&rpc, &v2("start", &t, text("fail"), json!({}))).await;
    assert_eq!(state(&answer), "failed");
    assert_eq!(status_text(&answer), "asked to fail");

    let t = id("py-reject");
    let answer = post(&rpc, &v2("start", &t, text("reject"), json!({}))).await;
    assert_eq!(state(&answer), "rejected");
    assert_eq!(status_text(&answer), "asked to reject");
}

/// The Python examples answer as their Rust originals do: echo-py like echo, and trip-planner-py
/// like trip-planner over the same three-turn conversation (the same questions, the same
/// itinerary, text and data).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_examples_answer_like_their_rust_originals() {
    let dir = tempfile::tempdir().unwrap();
    let host = serve_bundles(
        dir.path(),
        &["echo", "echo-py", "trip-planner", "trip-planner-py"],
    );

    let items = json!([{"type": "text", "text": "hello"}, {"type": "data", "data": {"n": [1, 2]}}]);
    let mut echoed = Vec::new();
    for agent in ["echo", "echo-py"] {
        let t = id(agent);
        let answer = post(&host.rpc(agent), &v2("start", &t, items.clone(), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion", "{agent}: {answer}");
        echoed.push(result(&answer)["products"].clone());
    }
    assert_eq!(echoed[0], echoed[1]);
    assert_eq!(echoed[1][0]["dataItems"], items);

    let turns = [
        text("Plan a trip to New York, please"),
        json!([{"type": "data", "data": {"budget": "about 3,000 USD"}}]),
        text("dates: 2025-12-30 to 2026-01-02"),
    ];
    let mut conversations = Vec::new();
    for agent in ["trip-planner", "trip-planner-py"] {
        let rpc = host.rpc(agent);
        let t = id(agent);
        let mut said = Vec::new();
        for (i, items) in turns.iter().enumerate() {
            let command = if i == 0 { "start" } else { "continue" };
            let answer = post(&rpc, &v2(command, &t, items.clone(), json!({}))).await;
            let expected = if i + 1 < turns.len() {
                "awaiting-input"
            } else {
                "awaiting-completion"
            };
            assert_eq!(state(&answer), expected, "{agent}: {answer}");
            said.push(json!({
                "status": result(&answer)["status"]["dataItems"],
                "products": result(&answer)["products"],
            }));
        }
        conversations.push(said);
    }
    assert_eq!(conversations[0], conversations[1]);
    let itinerary = &conversations[1][2]["products"][0]["dataItems"];
    assert!(
        itinerary[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Trip to New York, 2025-12-30 to 2026-01-02 (4 days), budget 3000"),
        "{itinerary}"
    );
}

fn aiphost(args: &[&str], cwd: &Path) -> Output {
    Command::new(aiphost_bin())
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("running aiphost")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `aiphost agent new NAME --lang python`, its pytest test, `aiphost agent build`, and the bundle
/// served and answering: it upper-cases text, and asks when there is none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffold_build_serve_call_in_python() {
    // The checkout's .venv has the SDK, componentize-py and pytest (build-plugins.sh sets it up).
    plugins_dist();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("shouty");
    let out = aiphost(
        &[
            "agent",
            "new",
            "shouty",
            "--lang",
            "python",
            "--path",
            src.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for file in [
        "partner.toml",
        "pyproject.toml",
        "app.py",
        "tests/test_app.py",
    ] {
        assert!(src.join(file).is_file(), "{file} missing");
    }
    // The SDK by version; this checkout's SDK only as uv's source for it.
    let pyproject = std::fs::read_to_string(src.join("pyproject.toml")).unwrap();
    let (project, sources) = pyproject.split_once("[tool.uv.sources]").unwrap();
    assert!(
        project.contains(r#"dependencies = ["aiphost-sdk~=0.1.0"]"#),
        "{pyproject}"
    );
    assert!(!project.contains("file:"), "{pyproject}");
    assert!(sources.contains("sdk/python"), "{pyproject}");

    let pytest = Command::new(repo_root().join(".venv/bin/python"))
        .args(["-m", "pytest", "-q"])
        .current_dir(&src)
        .output()
        .expect("running pytest");
    assert!(
        pytest.status.success(),
        "the template's test fails:\n{}",
        String::from_utf8_lossy(&pytest.stdout)
    );
    assert!(String::from_utf8_lossy(&pytest.stdout).contains("1 passed"));

    let out = aiphost(&["agent", "build", src.to_str().unwrap()], dir.path());
    let progress = stderr(&out);
    assert!(out.status.success(), "{progress}");
    for step in [
        "[1/4]",
        "[2/4]",
        "componentize-py",
        "[3/4]",
        "[4/4]",
        "built shouty",
    ] {
        assert!(progress.contains(step), "{step} missing from:\n{progress}");
    }
    let bundle = src.join("dist/shouty");
    assert!(bundle.join("partner.wasm").is_file());

    // Serve the bundle (alone) and call it.
    let host = ProcessHost::serve(&dir.path().join("data"), &src.join("dist"), &[]);
    let rpc = host.rpc("shouty");
    let t = id("shouty");
    let answer = post(&rpc, &v2("start", &t, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    assert_eq!(status_text(&answer), "Send me some text to work on.");
    let answer = post(&rpc, &v2("continue", &t, text("hello python"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        product(&answer, "answer")["dataItems"][0]["text"],
        "HELLO PYTHON"
    );
}

/// `agent build` of a Python partner with a Python that lacks the SDK, then one that has the SDK
/// but not componentize-py: each time it says exactly what to install.
#[test]
fn agent_build_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("needy");
    let out = aiphost(
        &[
            "agent",
            "new",
            "needy",
            "--lang",
            "python",
            "--path",
            src.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // A bare Python: a venv of its own, whatever the machine's python3 has installed.
    let venv = dir.path().join("bare");
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("running python3 -m venv");
    assert!(made.success());
    let python = venv.join("bin/python");
    let build = |pythonpath: Option<&Path>| {
        let mut cmd = Command::new(aiphost_bin());
        cmd.args(["agent", "build", src.to_str().unwrap()])
            .env("AIPHOST_PYTHON", &python)
            .env_remove("PYTHONPATH");
        if let Some(path) = pythonpath {
            cmd.env("PYTHONPATH", path);
        }
        let out = cmd.output().expect("running aiphost");
        assert!(!out.status.success());
        stderr(&out)
    };

    let said = build(None);
    assert!(
        said.contains(&format!(
            "the Python SDK is not installed for {}",
            python.display()
        )) && said.contains("componentize-py==0.25.1"),
        "{said}"
    );

    let said = build(Some(&repo_root().join("sdk/python/src")));
    assert!(
        said.contains("componentize-py is not installed")
            && said.contains("-m pip install 'componentize-py==0.25.1'"),
        "{said}"
    );
    assert!(!src.join("dist").exists(), "no bundle without a build");
}
