//! Retention of ended tasks (`--task-retention`): an ended task goes with everything kept for
//! it once its time is up, and then answers like a task never started; a task that has not
//! ended stays whatever its age.

use aiphost_tests::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_tasks_go_after_their_retention_and_resting_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let host = ProcessHost::start(
        &data,
        &["--task-retention", "2s", "--webhook-allow-private"],
    );
    let rpc = host.rpc("echo");

    let config = post(
        &rpc,
        &notification_request(
            "notification/set",
            json!({"url": "http://127.0.0.1:9/hook", "token": "t", "taskId": "done"}),
        ),
    )
    .await;
    assert!(config["result"]["id"].is_string(), "{config}");
    for task in ["done", "resting"] {
        let answer = post(&rpc, &v2("start", task, text("hi"), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    }
    let answer = post(&rpc, &v2("complete", "done", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");
    let ended = Instant::now();
    // Kept until its retention is up.
    let answer = post(&rpc, &v2("get", "done", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");

    let gone = loop {
        let answer = post(&rpc, &v2("get", "done", json!([]), json!({}))).await;
        if answer["error"]["code"] == -32001 {
            break ended.elapsed();
        }
        assert_eq!(state(&answer), "completed", "{answer}");
        assert!(
            ended.elapsed() < Duration::from_secs(15),
            "the ended task was never deleted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        gone >= Duration::from_millis(1900),
        "deleted after {gone:?}, before its retention"
    );
    let get = notification_request("notification/get", json!({"taskId": "done"}));
    let answer = post(&rpc, &get).await;
    assert_eq!(
        error_code(&answer),
        -32001,
        "its configs went too: {answer}"
    );
    let replay = stream_request("v2", "re-stream", "done", json!([]), json!({}));
    let answer = post(&rpc, &replay).await;
    assert_eq!(error_code(&answer), -32001, "its events went too: {answer}");
    // The task id is free again: a start makes a new task.
    let answer = post(&rpc, &v2("start", "done", text("again"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    // A task that has not ended is not touched, however old.
    let answer = post(&rpc, &v2("get", "resting", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    drop(host);

    // The flag is checked.
    let refused = std::process::Command::new(aiphost_bin())
        .args(["serve", "--task-retention", "0s"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("off"), "{said}");
}

/// A tenant's `taskRetentionSecs` overrides the operator's retention for its partners' tasks;
/// the operator's own tasks keep the operator's (here the default, 7 days).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_keeps_its_ended_tasks_as_long_as_its_quota_says() {
    use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
    let host = TestHost::start(HostOptions::default()).await;
    let brief = create_tenant(&host.url, "brief", json!({"taskRetentionSecs": 1})).await;
    let (status, body) = publish(
        &host.url,
        &brief,
        &example_manifest("echo", "brief-echo", ""),
        &example_component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    for rpc in [host.rpc("brief-echo"), host.rpc("echo")] {
        let answer = post(&rpc, &v2("start", "t", text("hi"), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
        let answer = post(&rpc, &v2("complete", "t", json!([]), json!({}))).await;
        assert_eq!(state(&answer), "completed", "{answer}");
    }
    let ended = Instant::now();
    let brief_rpc = host.rpc("brief-echo");
    loop {
        let answer = post(&brief_rpc, &v2("get", "t", json!([]), json!({}))).await;
        if answer["error"]["code"] == -32001 {
            break;
        }
        assert!(
            ended.elapsed() < Duration::from_secs(15),
            "the tenant's ended task was never deleted: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended.elapsed() >= Duration::from_millis(900));
    let answer = post(&host.rpc("echo"), &v2("get", "t", json!([]), json!({}))).await;
    assert_eq!(
        state(&answer),
        "completed",
        "the operator's task stays: {answer}"
    );

    // A retention of 0 is refused.
    let (status, body) = aiphost_tests::admin(
        &host.url,
        reqwest::Method::POST,
        "/admin/tenants",
        OPERATOR_TOKEN,
        Some(json!({"id": "never", "quotas": {"taskRetentionSecs": 0}})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["details"]["field"],
        "quotas.taskRetentionSecs"
    );
}
