//! Durability: the `aiphost` process is SIGKILLed in the middle of a concurrent workload; after a
//! restart on the same data directory every acknowledged transition is there, and timers armed
//! before the crash still fire.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;

/// One acknowledged reply: the task, and the status the host said it had reached.
#[derive(Clone, Debug)]
struct Ack {
    agent: &'static str,
    task: String,
    status: Value,
}

async fn call(client: &reqwest::Client, url: &str, body: &Value) -> Option<Value> {
    let response = client.post(url).json(body).send().await.ok()?;
    let answer: Value = response.json().await.ok()?;
    answer.get("result").cloned()
}

/// Start, continue and complete echo tasks in a loop, recording every acknowledged status.
async fn echo_worker(
    url: String,
    worker: usize,
    stop: Arc<AtomicBool>,
    acks: Arc<Mutex<Vec<Ack>>>,
) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let task = format!("w{worker}-{n}");
        for (command, items) in [
            ("start", text("one")),
            ("continue", text("two")),
            ("complete", json!([])),
        ] {
            let Some(result) = call(&client, &url, &v2(command, &task, items, json!({}))).await
            else {
                return; // the host is gone: stop, recording nothing more
            };
            acks.lock().await.push(Ack {
                agent: "echo",
                task: task.clone(),
                status: result["status"].clone(),
            });
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_mid_workload_loses_no_acknowledged_transition() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &[]);

    // Tasks that wait for input with a timer that outlives the crash.
    let client = reqwest::Client::new();
    let mut waiting = Vec::new();
    for i in 0..5 {
        let task = format!("waiting-{i}");
        let body = v1(
            "start",
            &task,
            text("a trip"),
            json!({"awaitingInputTimeout": 6000}),
        );
        let result = call(&client, &host.rpc("trip-planner"), &body)
            .await
            .expect("start answered");
        assert_eq!(result["status"]["state"], "awaiting-input");
        waiting.push(task);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..8)
        .map(|w| tokio::spawn(echo_worker(host.rpc("echo"), w, stop.clone(), acks.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Kill while requests are in flight.
    host.kill();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let acks = acks.lock().await.clone();
    assert!(
        acks.len() >= 50,
        "the workload was too small to mean anything: {} acks",
        acks.len()
    );

    let host = ProcessHost::start(&data, &[]);
    let client = reqwest::Client::new();
    let mut checked = 0;
    for ack in &acks {
        let body = v2("get", &ack.task, json!([]), json!({}));
        let result = call(&client, &host.rpc(ack.agent), &body)
            .await
            .unwrap_or_else(|| panic!("acknowledged task {} is gone after the crash", ack.task));
        let history = result["statusHistory"].as_array().unwrap();
        assert!(
            history.contains(&ack.status),
            "task {}: acknowledged status {} missing from {history:?}",
            ack.task,
            ack.status
        );
        checked += 1;
    }
    eprintln!("{checked} acknowledged transitions survived SIGKILL");

    // The timers armed before the crash fire after the restart.
    for task in &waiting {
        let answer = wait_for_state(
            &host.rpc("trip-planner"),
            task,
            "canceled",
            Duration::from_secs(20),
        )
        .await;
        let note = result(&answer)["status"]["dataItems"].to_string();
        assert!(note.contains("awaitingInputTimeout"), "{note}");
    }
    host.kill();
}

/// A running invocation's changes that nobody has seen are kept back and written with the next
/// change somebody sees; an answer given while the partner still works (its response timeout
/// passed) first writes them out. So the state that answer names survives a SIGKILL right after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_given_while_the_partner_works_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &[]);
    let client = reqwest::Client::new();
    let start = v2(
        "start",
        "busy-1",
        text("slow:3000"),
        json!({"responseTimeout": 300}),
    );
    let answer = call(&client, &host.rpc("hostile"), &start)
        .await
        .expect("the start is answered when its response timeout passes");
    assert_eq!(answer["status"]["state"], "working", "{answer}");
    host.kill();

    let host = ProcessHost::start(&data, &[]);
    let got = call(
        &client,
        &host.rpc("hostile"),
        &v2("get", "busy-1", json!([]), json!({})),
    )
    .await
    .expect("the task survived the crash");
    let state = got["status"]["state"].as_str().unwrap_or_default();
    assert!(
        ["working", "failed"].contains(&state),
        "the task went back before the state it was answered in: {got}"
    );
    host.kill();
}
