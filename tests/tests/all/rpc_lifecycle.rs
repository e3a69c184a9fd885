//! Task lifecycles over real HTTP against real partner components, in both dialects: the rows of
//! the spec's transition table that a Leader can drive, the timers, histories and their filters.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

fn task_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid())
}

/// The spec's own example (6.1.3 (1)) against the echo partner, then continue, get, complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_spec_example_round_trip() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let id = task_id("task-1234");
    let start = json!({
      "jsonrpc": "2.0", "method": "rpc", "id": "1",
      "params": {"message": {
          "type": "message", "id": "msg-5678", "sentAt": "2025-09-01T11:58:00+08:00",
          "senderRole": "leader", "senderId": "agent-leader-aic", "command": "start",
          "dataItems": [{"type": "text", "text": "请帮我做一个3天北京文化主体游的行程安排。"}],
          "taskId": id, "sessionId": "session-91011"
      }}
    });
    let answer = post(&rpc, &start).await;
    assert_eq!(answer["id"], "1");
    let task = result(&answer);
    assert_eq!(task["type"], "task");
    assert_eq!(task["id"], id.as_str());
    assert_eq!(task["sessionId"], "session-91011");
    assert_eq!(task["status"]["state"], "awaiting-completion");
    assert_eq!(
        task["products"][0]["dataItems"][0]["text"],
        "请帮我做一个3天北京文化主体游的行程安排。"
    );
    assert!(
        task.get("messageHistory").is_none(),
        "histories only come with get"
    );

    // Row 13 then 5: continue from awaiting-completion goes back to work and rests again.
    let answer = post(
        &rpc,
        &v1(
            "continue",
            &id,
            text("more culture, fewer sights"),
            json!({}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "more culture, fewer sights"
    );

    let answer = post(
        &rpc,
        &v1(
            "get",
            &id,
            json!([]),
            json!({"lastMessageSentAt": null, "lastStateChangedAt": null}),
        ),
    )
    .await;
    let task = result(&answer);
    let states: Vec<&str> = task["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "accepted",
            "working",
            "awaiting-completion",
            "working",
            "awaiting-completion"
        ]
    );
    let commands: Vec<&str> = task["messageHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["type"], "message");
            m["command"].as_str().unwrap()
        })
        .collect();
    assert_eq!(commands, ["start", "continue", "get"]);
    assert_eq!(task["messageHistory"][0]["id"], "msg-5678");
    assert_eq!(
        task["messageHistory"][0]["sentAt"],
        "2025-09-01T11:58:00+08:00"
    );

    // Row 12, then rows 16: nothing moves a completed task.
    let answer = post(&rpc, &v1("complete", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed");
    for command in ["complete", "cancel", "continue", "start"] {
        let answer = post(&rpc, &v1(command, &id, text("x"), json!({}))).await;
        assert_eq!(
            state(&answer),
            "completed",
            "{command} on a completed task is ignored"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_replies_are_task_results_with_fresh_ids() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let id = task_id("t");
    let a = post(&rpc, &v2("start", &id, text("hi"), json!({}))).await;
    let b = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    for answer in [&a, &b] {
        let r = result(answer);
        assert_eq!(r["type"], "task-result");
        assert_eq!(r["taskId"], id.as_str());
        assert_eq!(r["senderRole"], "partner");
        assert_eq!(r["senderId"], "1.2.156.3088.1.1.AIPHST.ECHO.1.0000");
        assert!(r["sentAt"].as_str().unwrap().ends_with("+00:00"));
    }
    assert_ne!(result(&a)["id"], result(&b)["id"]);
    let history = result(&b)["commandHistory"].as_array().unwrap();
    assert_eq!(history[0]["type"], "task-command");
    assert_eq!(history[0]["command"], "start");
    // A start without taskId gets one from the host.
    let answer = post(
        &rpc,
        &json!({"jsonrpc": "2.0", "method": "rpc", "id": 9, "params": {"command": {
            "type": "task-command", "id": "c1", "sentAt": now(), "senderRole": "leader",
            "senderId": "1.2.156.3088.1.1.TEST.LEADER.1.0000", "command": "start",
            "dataItems": [{"type": "text", "text": "no id"}]}}}),
    )
    .await;
    assert_eq!(answer["id"], 9);
    assert!(
        result(&answer)["taskId"]
            .as_str()
            .unwrap()
            .starts_with("task-")
    );
}

/// Start for an existing task id is ignored: the current task comes back, unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_for_an_existing_task_is_ignored() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let id = task_id("dup");
    let first = post(&rpc, &v2("start", &id, text("first"), json!({}))).await;
    let again = post(&rpc, &v2("start", &id, text("second"), json!({}))).await;
    assert_eq!(state(&again), "awaiting-completion");
    assert_eq!(result(&again)["products"], result(&first)["products"]);
    assert_eq!(result(&again)["status"], result(&first)["status"]);
    let got = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(result(&got)["statusHistory"].as_array().unwrap().len(), 3);
}

/// Rows 6, 9, 10: the trip planner asks for input, gets it, and a second task is canceled while
/// it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_input_continue_and_cancel() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("trip-planner");
    let id = task_id("trip");
    let answer = post(
        &rpc,
        &v1("start", &id, text("I want a trip to Beijing"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-input");
    let question = &result(&answer)["status"]["dataItems"];
    assert!(question.to_string().contains("dates"), "{question}");
    let answer = post(
        &rpc,
        &v1(
            "continue",
            &id,
            text("dates: 2025-10-01 to 2025-10-03, budget: 5000"),
            json!({}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert!(!result(&answer)["products"].as_array().unwrap().is_empty());
    let answer = post(&rpc, &v1("complete", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed");

    let other = task_id("trip");
    let answer = post(&rpc, &v2("start", &other, text("a trip please"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input");
    let answer = post(&rpc, &v2("complete", &other, json!([]), json!({}))).await;
    assert_eq!(
        state(&answer),
        "awaiting-input",
        "complete does not apply while awaiting input"
    );
    let answer = post(&rpc, &v2("cancel", &other, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
}

/// Rows 11 and 15: the awaiting timers, set per task by the Leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_timeouts_cancel_and_complete() {
    let host = TestHost::start(HostOptions::default()).await;
    let waiting = task_id("wait-input");
    let answer = post(
        &host.rpc("trip-planner"),
        &v1(
            "start",
            &waiting,
            text("a trip"),
            json!({"awaitingInputTimeout": 300}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-input");
    let done = task_id("wait-done");
    let answer = post(
        &host.rpc("echo"),
        &v2(
            "start",
            &done,
            text("x"),
            json!({"awaitingCompletionTimeout": 300}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion");

    let canceled = wait_for_state(
        &host.rpc("trip-planner"),
        &waiting,
        "canceled",
        Duration::from_secs(10),
    )
    .await;
    let note = result(&canceled)["status"]["dataItems"].to_string();
    assert!(note.contains("awaitingInputTimeout"), "{note}");
    let completed = wait_for_state(
        &host.rpc("echo"),
        &done,
        "completed",
        Duration::from_secs(10),
    )
    .await;
    assert!(
        result(&completed)["status"]["dataItems"]
            .to_string()
            .contains("awaitingCompletionTimeout")
    );
    // The products survive the timeout.
    assert_eq!(
        result(&completed)["products"][0]["dataItems"][0]["text"],
        "x"
    );
}

/// Row 14 and a continue that resets the awaiting-completion timer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_awaiting_completion_and_timer_reset() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let id = task_id("reset");
    post(
        &rpc,
        &v2(
            "start",
            &id,
            text("a"),
            json!({"awaitingCompletionTimeout": 800}),
        ),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answer = post(&rpc, &v2("continue", &id, text("b"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    // The first deadline (800 ms after start) has passed; the task still waits on the new one.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answer = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    let answer = post(&rpc, &v2("cancel", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
    // And the timer of a canceled task does nothing.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let answer = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
}

/// Row 2 (rejected with a reason) and row 7 (failed with a reason, honouring maxProductsBytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_and_failed_carry_reasons() {
    let host = TestHost::start(HostOptions::default()).await;
    let answer = post(
        &host.rpc("stats"),
        &v1(
            "start",
            &task_id("s"),
            json!([{"type": "data", "data": {"values": [1]}}]),
            json!({}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "rejected");
    assert!(
        !result(&answer)["status"]["dataItems"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let answer = post(
        &host.rpc("stats"),
        &v2(
            "start",
            &task_id("s"),
            json!([{"type": "data", "data": {"numbers": [1, 2, 3, 4.5]}}]),
            json!({}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion");
    let stats = &result(&answer)["products"][0]["dataItems"][0]["data"];
    assert_eq!(stats["count"], 4);
    assert_eq!(stats["max"], 4.5);

    let id = task_id("big");
    let answer = post(
        &host.rpc("chunked"),
        &v2(
            "start",
            &id,
            text("size=100000"),
            json!({"maxProductsBytes": 1000}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "failed");
    let reason = result(&answer)["status"]["dataItems"].to_string();
    assert!(reason.contains("maxProductsBytes"), "{reason}");
    assert!(
        result(&answer)["products"].as_array().unwrap().is_empty(),
        "it failed before streaming"
    );

    let answer = post(
        &host.rpc("chunked"),
        &v2(
            "start",
            &task_id("ok"),
            text("size=20000 chunkSize=4096"),
            json!({"maxProductsBytes": 20000}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion");
    let report = &result(&answer)["products"][0];
    let total: usize = report["dataItems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap().len())
        .sum();
    assert_eq!(total, 20000);
    assert_eq!(
        report["dataItems"].as_array().unwrap().len(),
        5,
        "streamed in 5 chunks"
    );
}

/// Row 8: cancel while the partner works; the reply came back at `responseTimeout` with the task
/// working, and the partner's later reports are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_timeout_then_cancel_while_working() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let id = task_id("slow");
    let started = std::time::Instant::now();
    let answer = post(
        &rpc,
        &v2(
            "start",
            &id,
            text("slow:1500"),
            json!({"responseTimeout": 200}),
        ),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "replied at the response timeout"
    );
    assert_eq!(state(&answer), "working");
    let answer = post(&rpc, &v2("cancel", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let answer = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
    assert!(result(&answer)["products"].as_array().unwrap().is_empty());

    // Without cancel, the partner carries on in the background and the task comes to rest.
    let id = task_id("slow");
    let answer = post(
        &rpc,
        &v2(
            "start",
            &id,
            text("slow:600"),
            json!({"responseTimeout": 100}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "working");
    let answer = wait_for_state(&rpc, &id, "awaiting-completion", Duration::from_secs(10)).await;
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "slept 600 ms"
    );
}

/// `get` filters compare instants, not strings: a `+08:00` bound against `+00:00` history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_filters_compare_instants() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let id = task_id("filter");
    post(&rpc, &v2("start", &id, text("a"), json!({}))).await;
    let full = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    let history = result(&full)["statusHistory"].as_array().unwrap().clone();
    let working_at = history[1]["stateChangedAt"].as_str().unwrap().to_string();
    // The same instant as `working`, written in Beijing time.
    let beijing = chrono_offset(&working_at, 8);
    assert!(beijing.ends_with("+08:00"));
    let answer = post(
        &rpc,
        &v2(
            "get",
            &id,
            json!([]),
            json!({"lastStateChangedAt": beijing}),
        ),
    )
    .await;
    let after: Vec<Value> = result(&answer)["statusHistory"].as_array().unwrap().clone();
    assert_eq!(
        after.len(),
        1,
        "only awaiting-completion is after working: {after:?}"
    );
    assert_eq!(after[0]["state"], "awaiting-completion");

    let first_command_at = result(&full)["commandHistory"][0]["sentAt"]
        .as_str()
        .unwrap()
        .to_string();
    let answer = post(
        &rpc,
        &v1(
            "get",
            &id,
            json!([]),
            json!({"lastMessageSentAt": first_command_at}),
        ),
    )
    .await;
    let commands: Vec<&str> = result(&answer)["messageHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["command"].as_str().unwrap())
        .collect();
    // The start is not after itself; the two earlier gets and this one are.
    assert_eq!(commands, ["get", "get", "get"]);
}

/// The same instant at UTC+`hours`.
fn chrono_offset(text: &str, hours: i32) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(text).expect("an RFC 3339 timestamp");
    let offset = chrono::FixedOffset::east_opt(hours * 3600).expect("a valid offset");
    t.with_timezone(&offset).to_rfc3339()
}

/// Commands to one task are serialised: five concurrent continues move it once; tasks run in
/// parallel.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_task_serialised_many_in_parallel() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let id = task_id("serial");
    assert_eq!(
        state(&post(&rpc, &v2("start", &id, text("echo me"), json!({}))).await),
        "awaiting-completion"
    );
    let mut joins = Vec::new();
    for _ in 0..5 {
        let (rpc, id) = (rpc.clone(), id.clone());
        joins.push(tokio::spawn(async move {
            post(&rpc, &v2("continue", &id, text("slow:400"), json!({}))).await
        }));
    }
    for j in joins {
        let answer = j.await.unwrap();
        assert!(answer.get("result").is_some(), "{answer}");
    }
    let answer = wait_for_state(&rpc, &id, "awaiting-completion", Duration::from_secs(10)).await;
    let states: Vec<&str> = result(&answer)["statusHistory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    let workings = states.iter().filter(|s| **s == "working").count();
    // One continue ran (400 ms); the others arrived while it worked and were ignored, or, if one
    // came after it rested, ran after it: never two at once.
    assert!((2..=6).contains(&workings), "{states:?}");
    for pair in states.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "no state entered twice in a row: {states:?}"
        );
    }

    // Many tasks at once, all answered.
    let started = std::time::Instant::now();
    let mut joins = Vec::new();
    for i in 0..40 {
        let rpc = host.rpc("hostile");
        joins.push(tokio::spawn(async move {
            post(
                &rpc,
                &v2(
                    "start",
                    &format!("par-{i}-{}", uuid()),
                    text("slow:300"),
                    json!({}),
                ),
            )
            .await
        }));
    }
    for j in joins {
        assert_eq!(state(&j.await.unwrap()), "awaiting-completion");
    }
    // 40 x 300 ms of work on two cores: far less than 12 s in series.
    assert!(
        started.elapsed() < Duration::from_secs(11),
        "{:?}",
        started.elapsed()
    );
}

/// A clean restart keeps tasks and their histories; a waiting task's timer still fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_tasks_and_timers() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let id = task_id("keep");
    post(
        &host.rpc("echo"),
        &v1("start", &id, text("kept"), json!({})),
    )
    .await;
    let waiting = task_id("timer");
    post(
        &host.rpc("trip-planner"),
        &v2(
            "start",
            &waiting,
            text("trip"),
            json!({"awaitingInputTimeout": 1500}),
        ),
    )
    .await;
    host.restart(HostOptions::default()).await;
    let answer = post(&host.rpc("echo"), &v1("get", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "kept"
    );
    let answer = wait_for_state(
        &host.rpc("trip-planner"),
        &waiting,
        "canceled",
        Duration::from_secs(10),
    )
    .await;
    assert!(
        result(&answer)["status"]["dataItems"]
            .to_string()
            .contains("awaitingInputTimeout")
    );
}

/// The partner key-value store: task entries are private to their task (two trips at once do not
/// mix), agent entries are shared by all tasks of the partner, and both survive a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partner_key_value_store_scopes() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("trip-planner");
    let (paris, rome) = (task_id("paris"), task_id("rome"));
    assert_eq!(
        state(
            &post(
                &rpc,
                &v2("start", &paris, text("destination: Paris"), json!({}))
            )
            .await
        ),
        "awaiting-input"
    );
    assert_eq!(
        state(
            &post(
                &rpc,
                &v2("start", &rome, text("destination: Rome"), json!({}))
            )
            .await
        ),
        "awaiting-input"
    );
    host.restart(HostOptions::default()).await;
    let rpc = host.rpc("trip-planner");
    let details = text("dates: 2025-10-01 to 2025-10-02, budget: 1000");
    let answer = post(&rpc, &v2("continue", &rome, details.clone(), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let plan = result(&answer)["products"][0].to_string();
    assert!(plan.contains("Rome") && !plan.contains("Paris"), "{plan}");
    assert!(plan.contains("\"itineraryNumber\":1"), "{plan}");
    let answer = post(&rpc, &v2("continue", &paris, details, json!({}))).await;
    let plan = result(&answer)["products"][0].to_string();
    assert!(plan.contains("Paris") && !plan.contains("Rome"), "{plan}");
    assert!(
        plan.contains("\"itineraryNumber\":2"),
        "the agent-wide count is shared: {plan}"
    );
}
