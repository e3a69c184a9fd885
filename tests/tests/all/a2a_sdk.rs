//! Interop with the official A2A Python SDK, `a2a-sdk` 1.3.0 from PyPI, as a client.
//!
//! `scripts/python-env.sh` sets up `.venv` with the SDK; `tests/interop/a2a_client.py` then drives
//! a real host through the SDK alone — the card fetched by its `A2ACardResolver`, the client made
//! by its `ClientFactory` for each protocol binding (JSON-RPC and HTTP+JSON), every answer parsed
//! by its transports and every error mapped to its exception classes — and prints one JSON line
//! per scenario. `tests/interop/a2a_concierge.py` drives the `concierge` partners
//! (`aiphost:partner@0.2.0`) through every flow the same way.

use aiphost_tests::interop::{failed_scenarios, run_script, sdk_python};
use aiphost_tests::{HostOptions, TestHost};
use serde_json::Value;
use std::time::Duration;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_a2a_sdk_client_drives_the_host() {
    let python = sdk_python().await;
    // Its list-tasks scenario lists echo's tasks (an open partner: the operator's opt-in).
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["echo".into()],
        ..HostOptions::default()
    })
    .await;

    let ran = run_script(
        &python,
        "a2a_client.py",
        &host.url,
        &[],
        Duration::from_secs(300),
    )
    .await;

    let results = ran.results();
    let reported = |scenario: &str| results.iter().find(|r| r["scenario"] == scenario);
    let per_binding = |name: &'static str| ["jsonrpc", "rest"].map(|b| format!("{b}/{name}"));
    let expected: Vec<String> = std::iter::once("card".to_string())
        .chain(BINDING_SCENARIOS.iter().flat_map(|s| per_binding(s)))
        .collect();
    let known: Vec<(String, &str)> = KNOWN_INCOMPATIBLE
        .iter()
        .flat_map(|(name, why)| per_binding(name).map(|s| (s, *why)))
        .collect();
    // The known incompatibilities are checked by themselves; each other scenario must be listed.
    let others: Vec<Value> = results
        .iter()
        .filter(|r| !known.iter().any(|(s, _)| r["scenario"] == s.as_str()))
        .cloned()
        .collect();
    let mut failed = failed_scenarios(&others, &expected);
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
    for result in &others {
        let scenario = result["scenario"].as_str().unwrap_or_default();
        if !expected.iter().any(|s| s == scenario) {
            failed.push(format!("{scenario}: not listed in this test: {result}"));
        }
    }
    ran.assert_none_failed(&failed);
    // 1 is the script's "a scenario failed"; anything else is the script itself failing.
    assert!(
        matches!(ran.output.status.code(), Some(0 | 1)),
        "a2a_client.py failed\n{}",
        ran.report
    );
}

/// The partners `a2a_concierge.py` drives, the flows it runs for each over each binding
/// ("<agent>/<binding>/<flow>"): each must be reported, and reported ok.
const CONCIERGES: &[&str] = &["concierge", "concierge-py"];
const CONCIERGE_FLOWS: &[&str] = &[
    "think",
    "tool",
    "form",
    "form-stream",
    "fail",
    "reply",
    "cancel",
];

/// The official SDK's client through every flow of both concierges (Rust and Python): reasoning
/// and answer artifacts, tool activity as WORKING status updates with a DataPart, a form as
/// input-required with its schema (a wrong DataPart answer raised as -32602 with the field paths,
/// the right one answered), a coded failure, a plain reply as a `Message`, a cancel mid-stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_a2a_sdk_client_drives_the_concierge() {
    let python = sdk_python().await;
    let host = TestHost::start(HostOptions::default()).await;
    let ran = run_script(
        &python,
        "a2a_concierge.py",
        &host.url,
        &[],
        Duration::from_secs(300),
    )
    .await;
    let expected: Vec<String> = CONCIERGES
        .iter()
        .flat_map(|agent| {
            ["jsonrpc", "rest"].into_iter().flat_map(move |binding| {
                CONCIERGE_FLOWS
                    .iter()
                    .map(move |flow| format!("{agent}/{binding}/{flow}"))
            })
        })
        .collect();
    ran.assert_none_failed(&failed_scenarios(&ran.results(), &expected));
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "a2a_concierge.py failed\n{}",
        ran.report
    );
}
