//! Hostile partners (infinite loop, memory bomb, deep recursion, panic, product flood, nonsense
//! reports) each end in `failed` with a clear reason, while the host keeps serving other tasks;
//! they have no ambient authority, and none can read what an earlier invocation left in memory.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn hostile(url: String, mode: &'static str, params: Value) -> (&'static str, Value) {
    let id = format!("hostile-{mode}-{}", uuid());
    let answer = post(&url, &v2("start", &id, text(mode), params)).await;
    let answer = if state(&answer) == "failed" {
        answer
    } else {
        wait_for_state(&url, &id, "failed", Duration::from_secs(20)).await
    };
    (mode, result(&answer).clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hostile_partners_fail_alone() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let cases = [
        ("loop", json!({}), "time limit of 3000 ms"),
        ("alloc", json!({}), "memory limit of 32 MiB"),
        ("recurse", json!({}), "stack overflowed"),
        ("panic", json!({}), "hostile partner panicked on purpose"),
        (
            "flood",
            json!({"maxProductsBytes": 3 * 1024 * 1024}),
            "maxProductsBytes",
        ),
        (
            "err",
            json!({}),
            "cannot move a task from working to completed",
        ),
    ];
    let mut joins = Vec::new();
    for (mode, params, _) in &cases {
        joins.push(tokio::spawn(hostile(rpc.clone(), mode, params.clone())));
    }

    // Meanwhile ordinary tasks keep being served, promptly.
    let echo = host.rpc("echo");
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut served = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let t = Instant::now();
        let answer = post(
            &echo,
            &v2(
                "start",
                &format!("calm-{}", uuid()),
                text("still here"),
                json!({}),
            ),
        )
        .await;
        assert_eq!(state(&answer), "awaiting-completion");
        slowest = slowest.max(t.elapsed());
        served += 1;
    }
    assert!(
        served >= 10,
        "only {served} echo tasks were served while the hostile ones ran"
    );
    assert!(
        slowest < Duration::from_secs(2),
        "an echo round trip took {slowest:?}"
    );

    for (join, (mode, _, expected)) in joins.into_iter().zip(cases.iter()) {
        let (got_mode, task) = join.await.unwrap();
        assert_eq!(got_mode, *mode);
        assert_eq!(task["status"]["state"], "failed", "{mode}: {task}");
        let reason = task["status"]["dataItems"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            reason.contains(expected),
            "{mode}: reason {reason:?} should mention {expected:?}"
        );
        // The statuses went through the table's rows.
        let states = task_states(&host, &task).await;
        assert_eq!(states, ["accepted", "working", "failed"], "{mode}");
    }
    // Loop, alloc, recurse, panic and err failed in the invocation (the flood was failed by the
    // product limit while it ran).
    assert_eq!(
        metric(&host.url, "aiphost_invocation_failures_total").await,
        5
    );
}

async fn task_states(host: &TestHost, task: &Value) -> Vec<String> {
    let id = task["taskId"].as_str().unwrap();
    let answer = post(&host.rpc("hostile"), &v2("get", id, json!([]), json!({}))).await;
    result(&answer)["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap().to_string())
        .collect()
}

/// A flood is cut at the limit: the stored products never exceed `maxProductsBytes`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn product_flood_is_capped() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let limit = 2 * 1024 * 1024 + 10;
    let (_, task) = hostile(rpc.clone(), "flood", json!({"maxProductsBytes": limit})).await;
    let bytes: usize = task["products"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["dataItems"].as_array().unwrap())
        .map(|i| i["text"].as_str().unwrap_or_default().len())
        .sum();
    assert!(
        bytes <= limit,
        "{bytes} bytes stored over a limit of {limit}"
    );
    assert_eq!(
        bytes,
        2 * 1024 * 1024,
        "the two chunks that fitted are kept"
    );
}

/// No ambient authority: no environment, no arguments, no files, no network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partners_have_no_ambient_authority() {
    // SAFETY: set before the host starts; nothing else in this test process reads it concurrently.
    unsafe { std::env::set_var("AIPHOST_TEST_SECRET", "must-not-leak") };
    let host = TestHost::start(HostOptions::default()).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = post(
        &host.rpc("hostile"),
        &v2("start", "probe", text(&format!("probe:{port}")), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let seen = &result(&answer)["products"][0]["dataItems"][0]["data"];
    assert_eq!(seen["env"], json!([]), "the environment leaked: {seen}");
    assert!(seen["args"].as_array().unwrap().len() <= 1, "{seen}");
    for probe in ["readRoot", "readPasswd", "writeTmp", "connect"] {
        let outcome = seen[probe].as_str().unwrap();
        assert!(outcome.starts_with("denied"), "{probe}: {outcome}");
    }
    assert!(
        listener.accept().is_err(),
        "the partner reached a socket on the host"
    );
    assert!(!std::path::Path::new("/tmp/aiphost-probe").exists());
}

/// One invocation's memory never reaches the next, checked the hostile way: one invocation marks
/// a static and a 1 MiB heap block; the next reads the static and a fresh block at the same
/// address without initialising it, and must find no mark. With one invocation at a time the
/// pool has a single slot, so both run in the same memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invocation_cannot_read_what_the_previous_one_left_in_memory() {
    let host = TestHost::start(HostOptions {
        max_concurrent: 1,
        ..HostOptions::default()
    })
    .await;
    let rpc = host.rpc("hostile");
    let data = |answer: &Value| result(answer)["products"][0]["dataItems"][0]["data"].clone();
    let mut same_address = 0;
    for round in 0..5 {
        let planted = post(
            &rpc,
            &v2("start", &format!("plant-{round}"), text("plant"), json!({})),
        )
        .await;
        assert_eq!(state(&planted), "awaiting-completion", "{planted}");
        let sought = post(
            &rpc,
            &v2("start", &format!("seek-{round}"), text("seek"), json!({})),
        )
        .await;
        assert_eq!(state(&sought), "awaiting-completion", "{sought}");
        let (planted, sought) = (data(&planted), data(&sought));
        assert_eq!(sought["markedStatic"], false, "round {round}: {sought}");
        assert_eq!(sought["markedBytes"], 0, "round {round}: {sought}");
        if planted["heapAt"].as_u64().is_some() && planted["heapAt"] == sought["heapAt"] {
            same_address += 1;
        }
    }
    // Only a block at the guest address the marks were written to makes the check mean something.
    assert!(
        same_address > 0,
        "the reading invocations never got the marked block's address"
    );
}
