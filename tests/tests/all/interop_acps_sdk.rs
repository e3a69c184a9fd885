//! Interop with the official reference Leader SDK, `acps-sdk` 2.1.0 from PyPI.
//!
//! `scripts/python-env.sh` sets up `.venv` with the SDK; `tests/interop/leader_rpc.py` then drives
//! a real host through the SDK's `AipRpcClient` (which validates every reply with its pydantic
//! models) and prints one JSON line per scenario.

use aiphost_tests::interop::{failed_scenarios, run, run_script, sdk_python, show};
use aiphost_tests::{HostOptions, TestHost, repo_root};
use serde_json::Value;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::process::Command;

/// Every scenario of `leader_rpc.py`; each must be reported, and reported ok.
const SCENARIOS: &[&str] = &[
    "start",
    "get",
    "continue",
    "complete",
    "cancel",
    "unknown-task",
    "trip-planner",
    "acs",
    "timestamps",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_leader_sdk_drives_the_host() {
    let python = sdk_python().await;
    let host = TestHost::start(HostOptions::default()).await;

    let ran = run_script(
        &python,
        "leader_rpc.py",
        &host.url,
        &[],
        Duration::from_secs(120),
    )
    .await;
    assert!(
        ran.output.status.success(),
        "leader_rpc.py failed\n{}",
        ran.report
    );
    ran.assert_none_failed(&failed_scenarios(&ran.results(), SCENARIOS));
}

/// The other direction: `aiphost call` as the Leader against acps-sdk's own partner server (the
/// reference partner, FastAPI + uvicorn, with an echo handler).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aiphost_call_drives_the_reference_partner() {
    let python = sdk_python().await;
    let port = aiphost_tests::free_port();
    let mut partner = Command::new(&python)
        .arg(repo_root().join("tests/interop/reference_partner.py"))
        .arg(port.to_string())
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the reference partner");
    let url = format!("http://127.0.0.1:{port}/rpc");
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the reference partner did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let call = |args: &[&str]| {
        let mut command = Command::new(aiphost_tests::aiphost_bin());
        command.arg("call").arg(&url).args(args);
        command
    };
    let task = |output: &Output| -> Value {
        assert!(output.status.success(), "{}", show(output));
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", show(output)))
    };
    let limit = Duration::from_secs(60);
    let started = task(
        &run(
            call(&[
                "start",
                "--task",
                "ref-1",
                "--session",
                "s",
                "--text",
                "hello",
            ]),
            "call start",
            limit,
        )
        .await,
    );
    assert_eq!(started["type"], "task-result");
    assert_eq!(started["status"]["state"], "awaiting-completion");
    assert_eq!(started["products"][0]["dataItems"][0]["text"], "hello");
    let got = task(
        &run(
            call(&["get", "--task", "ref-1", "--session", "s"]),
            "call get",
            limit,
        )
        .await,
    );
    assert_eq!(got["commandHistory"][0]["command"], "start");
    let done = task(
        &run(
            call(&["complete", "--task", "ref-1", "--session", "s"]),
            "call complete",
            limit,
        )
        .await,
    );
    assert_eq!(done["status"]["state"], "completed");
    let unknown = run(
        call(&["get", "--task", "nope", "--session", "s"]),
        "call get unknown",
        limit,
    )
    .await;
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stdout).contains("-32001"),
        "{}",
        show(&unknown)
    );
    partner.kill().await.ok();
}

/// Group mode: acps-sdk's own group Leader (`GroupLeader` over `GroupLeaderMqClient`) invites the
/// host's partners into a group on the real RabbitMQ and drives them through
/// `tests/interop/leader_group.py`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_group_leader_drives_the_host() {
    const GROUP_SCENARIOS: &[&str] = &[
        "invite",
        "start",
        "complete",
        "mentions",
        "get-status",
        "mute-unmute",
        "leave-group",
        "disband",
        "inbox-invite",
        "inbox-expired",
    ];
    let python = sdk_python().await;
    // The inbox route too: the host consumes its partners' inboxes on the test broker.
    let host = TestHost::start(HostOptions {
        inbox_broker: Some(format!(
            "amqp://guest:guest@{}/%2f",
            aiphost_tests::group::BROKER
        )),
        ..HostOptions::default()
    })
    .await;
    let ran = run_script(
        &python,
        "leader_group.py",
        &host.url,
        &[("INTEROP_INBOX", "1")],
        Duration::from_secs(240),
    )
    .await;
    // Memberships the script leaves standing (trip-planner in its first group) keep durable
    // queues on the broker: remove them.
    let (_, left) = aiphost_tests::admin(
        &host.url,
        reqwest::Method::GET,
        "/admin/groups",
        aiphost_tests::OPERATOR_TOKEN,
        None,
    )
    .await;
    for m in left["memberships"].as_array().into_iter().flatten() {
        if let Some(queue) = m["queue"].as_str() {
            aiphost_tests::group::delete_queue(queue).await;
        }
    }
    assert!(
        ran.output.status.success(),
        "leader_group.py failed\n{}",
        ran.report
    );
    ran.assert_none_failed(&failed_scenarios(&ran.results(), GROUP_SCENARIOS));
}
