//! A hostile partner with the talking contract (`aiphost:partner@0.2.0`, issue 31 point 6),
//! through the real host: a 10 MiB form schema, schemas that are not JSON Schemas of an object,
//! tool arguments that are not a JSON object, a million text deltas, and reports after the task
//! came to rest or ended. Each is refused with the contract's error, the host stores nothing of
//! what it refused, and a flood of deltas leaves the task, the host's memory and its latency
//! bounded.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Start hostile task `id` with `command`; the answer once it rests.
async fn run(rpc: &str, id: &str, command: &str) -> Value {
    let answer = post(rpc, &v2("start", id, text(command), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{command}: {answer}");
    answer
}

/// The `data` of the product `report` of a hostile task (what the host answered it).
fn report(answer: &Value) -> Value {
    result(answer)["products"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"] == "report")
        .map(|p| p["dataItems"][0]["data"].clone())
        .unwrap_or_else(|| panic!("no report: {answer}"))
}

/// Assert that `answer` (one of a report's) is a refusal of `kind` whose message says `says`.
#[track_caller]
fn refused(answer: &Value, kind: &str, says: &str) {
    assert_eq!(answer["kind"], kind, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{says:?} not in {answer}");
}

/// Every event of task `id` replayed from the start, up to its status in `last` (the state it is
/// in now: an AIP stream stays open while its task rests).
async fn replay(rpc: &str, id: &str, last: &str) -> Vec<Value> {
    let mut stream = SseStream::open(
        rpc,
        &stream_request("v2", "re-stream", id, json!([]), json!({"lastEventSeq": 0})),
    )
    .await;
    stream.until_state(last, Duration::from_secs(20)).await
}

/// The data items of every event that carry the mark `kind` (`aiphost.kind`).
fn marked(events: &[Value], kind: &str) -> Vec<Value> {
    events
        .iter()
        .flat_map(|e| {
            e["result"]["eventData"]["status"]["dataItems"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|i| i["metadata"]["aiphost.kind"] == kind)
        .collect()
}

/// The states the task went through, as its status history tells.
fn states(answer: &Value) -> Vec<String> {
    result(answer)["statusHistory"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["state"].as_str().map(str::to_string))
        .collect()
}

/// A form whose schema is 10 MiB, or is not a JSON Schema of an object, is refused with
/// `invalid-data` (the huge one before it is parsed, by its size); the task stays working and never
/// asks: no awaiting-input, no form, nothing of the schema stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_and_invalid_form_schemas_are_refused_and_nothing_is_stored() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let store = host.data.path().join("store");

    let before = dir_bytes(&store);
    let id = format!("huge-{}", uuid());
    let answer = run(&rpc, &id, "schema-huge").await;
    let said = report(&answer);
    let bytes = said["bytes"].as_u64().expect("the schema's size");
    assert!(bytes > 10 << 20, "{said}");
    refused(&said["ask"], "invalid-data", &format!("{bytes} bytes"));
    refused(&said["ask"], "invalid-data", "at most 65536");
    let got = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(
        states(&got),
        ["accepted", "working", "awaiting-completion"],
        "the task never asked: {got}"
    );
    let text = got.to_string();
    assert!(!text.contains("input-request"), "a form was stored: {got}");
    assert!(text.len() < 16 * 1024, "{} bytes in get", text.len());
    let events = replay(&rpc, &id, "awaiting-completion").await;
    assert!(marked(&events, "input-request").is_empty(), "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| event_state(e).as_deref() != Some("awaiting-input")),
        "{events:?}"
    );
    let grown = dir_bytes(&store).saturating_sub(before);
    eprintln!("schema-huge: the store grew by {grown} bytes");
    assert!(grown < 10 << 20, "the store grew by {grown} bytes");

    let id = format!("bad-{}", uuid());
    let answer = run(&rpc, &id, "schema-bad").await;
    let said = report(&answer);
    refused(
        &said["invalidKeyword"],
        "invalid-data",
        "not a valid JSON Schema",
    );
    for case in ["arrayType", "untyped"] {
        refused(&said[case], "invalid-data", r#""type": "object""#);
    }
    refused(
        &said["topLevelArray"],
        "invalid-data",
        "must be a JSON object",
    );
    refused(&said["notJson"], "invalid-data", "not valid JSON");
    refused(&said["tooDeep"], "invalid-data", "deeper than 32 levels");
    let got = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(
        states(&got),
        ["accepted", "working", "awaiting-completion"],
        "{got}"
    );
    assert!(!got.to_string().contains("input-request"), "{got}");
}

/// Tool arguments that are not a JSON object, and a tool output that claims to be JSON and is
/// not, are refused with `invalid-data`; only the well-formed call reaches the task's events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_arguments_that_are_not_a_json_object_are_refused() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let id = format!("args-{}", uuid());
    let said = report(&run(&rpc, &id, "args-not-json").await);
    refused(
        &said["notJson"],
        "invalid-data",
        "tool arguments is not valid JSON",
    );
    refused(
        &said["array"],
        "invalid-data",
        "tool arguments must be a JSON object",
    );
    refused(
        &said["string"],
        "invalid-data",
        "tool arguments must be a JSON object",
    );
    refused(
        &said["resultNotJson"],
        "invalid-data",
        "a tool output is not valid JSON",
    );
    assert_eq!(said["valid"], json!({"kind": "accepted"}), "{said}");

    let events = replay(&rpc, &id, "awaiting-completion").await;
    let calls = marked(&events, "tool-call");
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0]["data"]["callId"], "good-1");
    assert!(marked(&events, "tool-result").is_empty(), "{events:?}");
}

/// The agent-kv entry `key` of partner `hostile`, once there is one (read by `kv-read` tasks).
async fn kv_entry(rpc: &str, key: &str) -> Value {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let said = report(&run(rpc, &format!("read-{}", uuid()), &format!("kv-read:{key}")).await);
        assert_eq!(said["key"], key, "{said}");
        if !said["value"].is_null() {
            return said["value"].clone();
        }
        assert!(Instant::now() < until, "no entry {key} within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Once the task rests, a delta, a tool call and usage are refused (`invalid-transition`: the
/// task is not working) and change nothing; the partner's error after it rested does not fail
/// the task. Once the task is completed, the completion hook's delta is refused with
/// `task-ended`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_after_the_task_rests_or_ends_are_refused() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let id = format!("late-{}", uuid());
    let answer = run(&rpc, &id, "after-end").await;
    assert_eq!(
        result(&answer)["status"]["dataItems"][0]["text"],
        "resting; reports follow anyway"
    );
    let said = kv_entry(&rpc, &format!("after-end/{id}")).await;
    for report in ["delta", "toolCall", "usage"] {
        refused(
            &said[report],
            "invalid-transition",
            "not one that is awaiting-completion",
        );
    }
    let got = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(
        states(&got),
        ["accepted", "working", "awaiting-completion"],
        "{got}"
    );
    assert!(
        result(&got)["products"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{got}"
    );
    let events = replay(&rpc, &id, "awaiting-completion").await;
    assert_eq!(events.len(), 3, "statuses only: {events:?}");

    let answer = post(&rpc, &v2("complete", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");
    let said = kv_entry(&rpc, &format!("completed/{id}")).await;
    assert_eq!(
        said["delta"],
        json!({"kind": "task-ended", "message": null})
    );
    let got = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(state(&got), "completed", "{got}");
    assert!(!got.to_string().contains("after the end"), "{got}");
}

/// The resident memory of process `pid` in bytes (`VmRSS` of `/proc/PID/status`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the host's status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("no VmRSS in {status}"))
}

/// The text of `count` deltas as the hostile partner streams them: `abc…zab…`.
fn letters(count: usize) -> String {
    ('a'..='z').cycle().take(count).collect()
}

/// The text items of the product `answer` among a task result's products, joined.
fn answer_text(answer: &Value) -> String {
    result(answer)["products"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["id"] == "answer")
        .flat_map(|p| p["dataItems"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i["text"].as_str().map(str::to_string))
        .collect()
}

/// How long the hammering partner may take. A million deltas took ~10 s on a debug host with two
/// shared cores (the stock hostile's 3 s deadline stops it first); the margin is for a loaded
/// machine running the whole suite.
const HAMMER_DEADLINE_MS: u64 = 120_000;

/// A partner streams a million one-byte deltas as fast as it can and keeps calling after it is
/// refused. The task takes 4096 (its activity cap) and refuses every other with `limit-reached`,
/// storing nothing of them: a replay from the start holds the 4096 deltas and the statuses, and
/// the answer is exactly the accepted bytes. Meanwhile the host answers other tasks and reads of
/// the hammered one promptly, its memory stays within 100 MiB of what it was, and the invocation
/// ends within its deadline. Another task of the same partner has its own cap.
///
/// The host runs as a process of its own, so its memory is not mixed with other tests'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_deltas_are_capped_and_leave_the_host_bounded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents = dir.path().join("agents");
    let hammerer = agents.join("hammerer");
    std::fs::create_dir_all(&hammerer).expect("agents dir");
    let manifest = aiphost_tests::tenants::example_manifest("hostile", "hammerer", "").replacen(
        "invocation-ms = 3000",
        &format!("invocation-ms = {HAMMER_DEADLINE_MS}"),
        1,
    );
    assert!(manifest.contains(&format!("invocation-ms = {HAMMER_DEADLINE_MS}")));
    std::fs::write(hammerer.join("partner.toml"), manifest).expect("manifest");
    let wasm = aiphost_tests::tenants::example_component("hostile");
    std::fs::write(hammerer.join("partner.wasm"), wasm).expect("component");
    let echo = agents.join("echo");
    std::fs::create_dir_all(&echo).expect("echo dir");
    for file in ["partner.toml", "partner.wasm"] {
        std::fs::copy(plugins_dist().join("echo").join(file), echo.join(file)).expect("echo");
    }
    let host = ProcessHost::serve(&dir.path().join("data"), &agents, &[]);
    let pid = host.child.id();
    let rpc = host.rpc("hammerer");

    // Stopping at the first refusal: the 4097th delta.
    let answer = run(&rpc, "capped", "deltas:5000").await;
    let said = report(&answer);
    assert_eq!(said["accepted"], 4096, "{said}");
    assert_eq!(said["refused"], 1, "{said}");
    assert_eq!(said["firstRefusal"]["at"], 4096, "{said}");
    refused(
        &said["firstRefusal"]["answer"],
        "limit-reached",
        "4096 activity events",
    );
    assert_eq!(answer_text(&answer), letters(4096));

    // Hammering on: a million calls, with probes of the host meanwhile.
    let before = rss(pid);
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::task::spawn_blocking(move || {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss(pid));
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };
    let started = Instant::now();
    let hammer = tokio::spawn({
        let rpc = rpc.clone();
        let params = json!({"responseTimeout": HAMMER_DEADLINE_MS + 30_000});
        async move {
            post(
                &rpc,
                &v2("start", "hammered", text("hammer:1000000"), params),
            )
            .await
        }
    });
    let (mut served, mut slowest) = (0, Duration::ZERO);
    while !hammer.is_finished() {
        let t = Instant::now();
        let echoed = post(
            &host.rpc("echo"),
            &v2(
                "start",
                &format!("calm-{}", uuid()),
                text("still here"),
                json!({}),
            ),
        )
        .await;
        assert_eq!(state(&echoed), "awaiting-completion", "{echoed}");
        let read = post(&rpc, &v2("get", "hammered", json!([]), json!({}))).await;
        assert!(
            read.get("result").is_some() || error_code(&read) == -32001,
            "{read}"
        );
        slowest = slowest.max(t.elapsed());
        served += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answer = hammer.await.expect("the hammer's answer");
    let took = started.elapsed();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.await.expect("the sampler").max(rss(pid));
    let after = rss(pid);
    eprintln!(
        "hammer:1000000 took {took:?}; {served} probes, the slowest {slowest:?}; host RSS {} MiB \
         before, {} MiB at most, {} MiB after",
        before >> 20,
        peak >> 20,
        after >> 20
    );

    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert!(took < Duration::from_millis(HAMMER_DEADLINE_MS), "{took:?}");
    let said = report(&answer);
    assert_eq!(said["accepted"], 4096, "{said}");
    assert_eq!(said["refused"], 1_000_000 - 4096, "{said}");
    assert_eq!(said["acceptedAfterRefusal"], 0, "{said}");
    assert_eq!(said["refusals"], json!({"limit-reached": 1_000_000 - 4096}));
    assert_eq!(answer_text(&answer), letters(4096));
    assert!(served >= 3, "only {served} probes were answered meanwhile");
    assert!(slowest < Duration::from_secs(2), "a probe took {slowest:?}");
    let grown = peak.saturating_sub(before);
    assert!(grown < 100 << 20, "the host grew by {} MiB", grown >> 20);

    // What is stored: the accepted deltas and the statuses, nothing of the refused ones.
    let events = replay(&rpc, "hammered", "awaiting-completion").await;
    let deltas: Vec<&Value> = events
        .iter()
        .map(|e| &e["result"]["eventData"])
        .filter(|d| d["type"] == "product-chunk" && d["product"]["id"] == "answer")
        .collect();
    assert_eq!(deltas.len(), 4096);
    assert!(events.len() <= 4096 + 8, "{} events", events.len());
    let replayed: String = deltas
        .iter()
        .filter_map(|d| d["product"]["dataItems"][0]["text"].as_str())
        .collect();
    assert_eq!(replayed, letters(4096));
    let got = post(&rpc, &v2("get", "hammered", json!([]), json!({}))).await;
    assert_eq!(answer_text(&got), letters(4096));

    // The cap is the task's: a new task of the same partner streams.
    let said = report(&run(&rpc, "after", "deltas:10").await);
    assert_eq!(said["accepted"], 10, "{said}");
    host.stop();
}
