//! Interop with the official reference Leader SDK, `acps-sdk` 2.1.0 from PyPI.
//!
//! `scripts/python-env.sh` sets up `.venv` with the SDK; `tests/interop/leader_rpc.py` then drives
//! a real host through the SDK's `AipRpcClient` (which validates every reply with its pydantic
//! models) and prints one JSON line per scenario.

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

/// The python of `.venv`, with acps-sdk 2.1.0 installed (the last line `python-env.sh` prints).
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
async fn reference_leader_sdk_drives_the_host() {
    let python = sdk_python().await;
    let host = TestHost::start(HostOptions::default()).await;

    let mut command = Command::new(&python);
    command
        .arg(repo_root().join("tests/interop/leader_rpc.py"))
        .arg(&host.url)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = run(command, "leader_rpc.py", Duration::from_secs(120)).await;
    let report = show(&output);
    println!("{report}");
    assert!(output.status.success(), "leader_rpc.py failed\n{report}");

    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<Value> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with('{'))
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON scenario line ({e}): {line}\n{report}"))
        })
        .collect();
    for scenario in SCENARIOS {
        let found = results
            .iter()
            .find(|r| r["scenario"] == *scenario)
            .unwrap_or_else(|| panic!("scenario {scenario} did not run\n{report}"));
        assert_eq!(
            found["ok"], true,
            "scenario {scenario} failed: {found}\n{report}"
        );
    }
    for result in &results {
        assert_eq!(result["ok"], true, "scenario failed: {result}\n{report}");
    }
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
    let mut command = Command::new(&python);
    command
        .arg(repo_root().join("tests/interop/leader_group.py"))
        .arg(&host.url)
        .env("INTEROP_INBOX", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = run(command, "leader_group.py", Duration::from_secs(240)).await;
    let report = show(&output);
    println!("{report}");
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
    assert!(output.status.success(), "leader_group.py failed\n{report}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<Value> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with('{'))
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    for scenario in GROUP_SCENARIOS {
        let found = results
            .iter()
            .find(|r| r["scenario"] == *scenario)
            .unwrap_or_else(|| panic!("group scenario {scenario} did not run\n{report}"));
        assert_eq!(
            found["ok"], true,
            "group scenario {scenario} failed: {found}\n{report}"
        );
    }
}
