//! Interop with the official A2A Python SDK, `a2a-sdk` 1.3.0 from PyPI, as a client.
//!
//! `scripts/python-env.sh` sets up `.venv` with the SDK; `tests/interop/a2a_client.py` then drives
//! a real host through the SDK alone — the card fetched by its `A2ACardResolver`, the client made
//! by its `ClientFactory` for each protocol binding (JSON-RPC and HTTP+JSON), every answer parsed
//! by its transports and every error mapped to its exception classes — and prints one JSON line
//! per scenario.

use aiphost_tests::{HostOptions, TestHost, repo_root};
use serde_json::Value;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::process::Command;

/// The scenarios `a2a_client.py` runs over each binding ("jsonrpc/…", "rest/…"); each must be
/// reported, and reported ok.
const BINDING_SCENARIOS: &[&str] = &[
    "send",
    "stream",
    "stream-chunks",
    "stream-chunks-fold",
    "input-required",
    "input-required-stream",
    "resubscribe",
    "resubscribe-working",
    "resubscribe-chunks",
    "cancel",
    "cancel-working",
    "ended-task",
    "get-task",
    "list-tasks",
    "push",
];

/// Scenarios that fail over each binding because of a known incompatibility of the host, each
/// with why: they must be reported, and reported failing (like a strict expected failure); once
/// the host is mended, the test says so and the scenario moves to `BINDING_SCENARIOS`.
const KNOWN_INCOMPATIBLE: &[(&str, &str)] = &[];

fn show(output: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Run `command` to completion within `limit`, killing it if it takes longer.
async fn run(mut command: Command, what: &str, limit: Duration) -> Output {
    command
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
    tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
        .unwrap_or_else(|e| panic!("waiting for {what}: {e}"))
}

/// The python of `.venv` (the last line `python-env.sh` prints).
async fn sdk_python() -> String {
    let mut command = Command::new("bash");
    command.arg(repo_root().join("scripts/python-env.sh"));
    let output = run(command, "scripts/python-env.sh", Duration::from_secs(600)).await;
    assert!(
        output.status.success(),
        "scripts/python-env.sh failed\n{}",
        show(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let python = stdout.lines().last().unwrap_or_default().trim().to_string();
    assert!(
        !python.is_empty(),
        "scripts/python-env.sh printed no python path\n{}",
        show(&output)
    );
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_a2a_sdk_client_drives_the_host() {
    let python = sdk_python().await;
    let host = TestHost::start(HostOptions::default()).await;

    let mut command = Command::new(&python);
    command
        .arg(repo_root().join("tests/interop/a2a_client.py"))
        .arg(&host.url)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = run(command, "a2a_client.py", Duration::from_secs(300)).await;
    let report = show(&output);
    println!("{report}");

    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<Value> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with('{'))
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON scenario line ({e}): {line}\n{report}"))
        })
        .collect();
    let reported = |scenario: &str| results.iter().find(|r| r["scenario"] == scenario);
    let per_binding = |name: &'static str| ["jsonrpc", "rest"].map(|b| format!("{b}/{name}"));
    let expected: Vec<String> = std::iter::once("card".to_string())
        .chain(BINDING_SCENARIOS.iter().flat_map(|s| per_binding(s)))
        .collect();
    let known: Vec<(String, &str)> = KNOWN_INCOMPATIBLE
        .iter()
        .flat_map(|(name, why)| per_binding(name).map(|s| (s, *why)))
        .collect();
    let mut failed = Vec::new();
    for scenario in &expected {
        match reported(scenario) {
            None => failed.push(format!("{scenario}: did not run")),
            Some(found) if found["ok"] != true => failed.push(format!("{scenario}: {found}")),
            Some(_) => {}
        }
    }
    for (scenario, why) in &known {
        match reported(scenario) {
            None => failed.push(format!("{scenario}: did not run")),
            Some(found) if found["ok"] == true => failed.push(format!(
                "{scenario}: passes now, so the known incompatibility is mended ({why}): \
                 move it to BINDING_SCENARIOS"
            )),
            Some(_) => println!("known incompatibility, {scenario}: {why}"),
        }
    }
    for result in &results {
        let scenario = result["scenario"].as_str().unwrap_or_default();
        if !expected
            .iter()
            .chain(known.iter().map(|(s, _)| s))
            .any(|s| s == scenario)
        {
            failed.push(format!("{scenario}: not listed in this test: {result}"));
        }
    }
    assert!(
        failed.is_empty(),
        "failed scenarios:\n{}\n{report}",
        failed.join("\n")
    );
    // 1 is the script's "a scenario failed"; anything else is the script itself failing.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "a2a_client.py failed\n{report}"
    );
}
