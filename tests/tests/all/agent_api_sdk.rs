//! Interop with the Agent API's own client: `agentscope-runtime` 1.1.6.post2 from PyPI, its
//! `HTTPAgentAPIClient` and its schema classes, against the Agent API door.
//!
//! `scripts/python-env.sh agentscope` sets up `.venv-agentscope` (its own venv: it needs an
//! `a2a-sdk` below 1.0); `tests/interop/agent_api_client.py` then drives a tenant's concierge
//! whose Leaders take API keys through every flow with Leader A's key, every event parsed by the
//! client's schema classes (whose silent drops fail the scenario), and prints one JSON line per
//! scenario with the tasks behind its turns. Here, those tasks are read over the other doors
//! (AIP `get`, A2A `GetTask`) with A's key and found with B's by neither; and, over plain HTTP,
//! what the script cannot show: a session is its Leader's own (B in A's session starts its own
//! task), a conversation outlives a restart (a form asked before it is answered after it, in
//! the same task), a turn cut by a crash fails and the session goes on with a new task, and
//! the process route holds the body limit (413) and the tenant's request rate (429).

use aiphost_tests::interop::{agentscope_python, failed_scenarios, run_script};
use aiphost_tests::tenants::{
    create_tenant, example_component, example_manifest, publish, publish_keyed,
};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

/// The scenarios `agent_api_client.py` runs; each must be reported, and reported ok.
const SCENARIOS: &[&str] = &[
    "echo",
    "think",
    "tool",
    "form",
    "form-wrong",
    "form-answer",
    "fail",
    "reply",
    "stream-false",
    "slow-stop",
    "busy",
    "malformed",
    "unauthenticated",
];

/// Scenarios that fail because of a known incompatibility of the host, each with why: they must
/// be reported, and reported failing; once the host is mended, the test says so and the scenario
/// moves to `SCENARIOS`.
const KNOWN_INCOMPATIBLE: &[(&str, &str)] = &[];

/// The state each scenario's task ends in (the others leave no task of their own).
const TASK_STATES: &[(&str, &str, &str)] = &[
    ("echo", "completed", "TASK_STATE_COMPLETED"),
    ("think", "completed", "TASK_STATE_COMPLETED"),
    ("tool", "completed", "TASK_STATE_COMPLETED"),
    ("form-answer", "completed", "TASK_STATE_COMPLETED"),
    ("fail", "failed", "TASK_STATE_FAILED"),
    ("reply", "completed", "TASK_STATE_COMPLETED"),
    ("stream-false", "completed", "TASK_STATE_COMPLETED"),
    ("slow-stop", "canceled", "TASK_STATE_CANCELED"),
    ("busy", "canceled", "TASK_STATE_CANCELED"),
];

const LEADER_A: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const LEADER_B: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
/// The partner the tenant publishes (the concierge bundle), its Leaders taking API keys.
const AGENT: &str = "keyed";
const WAIT: Duration = Duration::from_secs(20);
/// The hosts' body limit (`--max-body-bytes`), small enough to pass with a test's body.
const MAX_BODY: usize = 64 * 1024;

fn options() -> HostOptions {
    HostOptions {
        max_body_bytes: MAX_BODY,
        ..HostOptions::default()
    }
}

/// A tenant publishing the concierge as [`AGENT`], and the keys of Leaders A and B.
async fn keyed_concierge(host: &TestHost) -> [String; 2] {
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let keys = publish_keyed(&host.url, &acme, "concierge", AGENT, &[LEADER_A, LEADER_B]).await;
    keys.try_into().expect("two keys")
}

fn process_url(host: &TestHost, agent: &str) -> String {
    format!("{}/agents/{agent}/process", host.url)
}

/// A request of one user message saying `words` in `session`.
fn say(words: &str, session: &str) -> Value {
    json!({"session_id": session, "input": [{"role": "user", "type": "message",
        "content": [{"type": "text", "text": words}]}]})
}

/// A request of one user message holding `data` (a form's answer) in `session`.
fn answer(data: Value, session: &str) -> Value {
    json!({"session_id": session, "input": [{"role": "user", "type": "message",
        "content": [{"type": "data", "data": data}]}]})
}

/// Every event of one streamed turn with `key`, the last one a response.
async fn turn(host: &TestHost, key: &str, body: &Value) -> Vec<Value> {
    let mut stream = SseStream::open_as(&process_url(host, AGENT), Some(key), body).await;
    assert_eq!(stream.status, 200, "{:?}", stream.json);
    let events = stream.until_closed(WAIT).await;
    let last = events.last().expect("a response");
    assert_eq!(last["object"], "response", "{events:#?}");
    events
}

/// The task behind a turn (its responses name it).
fn task_of(events: &[Value]) -> String {
    let id = events.first().expect("a response")["metadata"]["aiphost.taskId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!id.is_empty(), "{events:#?}");
    id
}

/// The text of the completed answer messages of a turn, joined.
fn answered(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["object"] == "message" && e["status"] == "completed")
        .filter(|e| e["type"] == "message")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect()
}

/// An AIP `get` of `task` by `sender` with `key`.
async fn aip_get(host: &TestHost, key: &str, sender: &str, task: &str) -> Value {
    let mut body = v2("get", task, json!([]), json!({}));
    body["params"]["command"]["senderId"] = json!(sender);
    post_as(&host.rpc(AGENT), Some(key), &body).await
}

/// An A2A `GetTask` of `task` with `key`.
async fn a2a_get(host: &TestHost, key: &str, task: &str) -> Value {
    let endpoint = aiphost_tests::a2a::endpoint(host, AGENT);
    let request = aiphost_tests::a2a::request("GetTask", json!({"id": task}));
    post_as(&endpoint, Some(key), &request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentscope_client_drives_the_agent_api_door() {
    let python = agentscope_python().await;
    let host = TestHost::start(options()).await;
    let [key_a, key_b] = keyed_concierge(&host).await;

    let ran = run_script(
        &python,
        "agent_api_client.py",
        &host.url,
        &[("AGENT_API_AGENT", AGENT), ("AGENT_API_KEY", &key_a)],
        Duration::from_secs(300),
    )
    .await;

    let results = ran.results();
    let reported = |scenario: &str| results.iter().find(|r| r["scenario"] == scenario);
    // The known incompatibilities are checked by themselves; each other scenario must be listed.
    let others: Vec<Value> = results
        .iter()
        .filter(|r| !KNOWN_INCOMPATIBLE.iter().any(|(s, _)| r["scenario"] == *s))
        .cloned()
        .collect();
    let mut failed = failed_scenarios(&others, SCENARIOS);
    for (scenario, why) in KNOWN_INCOMPATIBLE {
        match reported(scenario) {
            None => failed.push(format!("{scenario}: did not run")),
            Some(found) if found["ok"] == true => failed.push(format!(
                "{scenario}: passes now, so the known incompatibility is mended ({why}): \
                 move it to SCENARIOS"
            )),
            Some(_) => println!("known incompatibility, {scenario}: {why}"),
        }
    }
    for result in &others {
        let scenario = result["scenario"].as_str().unwrap_or_default();
        if !SCENARIOS.contains(&scenario) {
            failed.push(format!("{scenario}: not listed in this test: {result}"));
        }
    }
    ran.assert_none_failed(&failed);
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "agent_api_client.py failed\n{}",
        ran.report
    );

    // The tasks behind the turns: A's over AIP and A2A, in the turn's session; B's by neither.
    let detail = |scenario: &str| &reported(scenario).expect("reported")["detail"];
    for (scenario, aip_state, a2a_state) in TASK_STATES {
        let detail = detail(scenario);
        let tasks = detail["task_ids"].as_array().expect("task ids");
        assert_eq!(tasks.len(), 1, "{scenario}: {detail}");
        let task = tasks[0].as_str().expect("a task id");
        let session = detail["session_id"].as_str().expect("a session id");

        let got = aip_get(&host, &key_a, LEADER_A, task).await;
        assert_eq!(state(&got), *aip_state, "{scenario}: {got}");
        assert_eq!(result(&got)["sessionId"], session, "{scenario}: {got}");
        let got = a2a_get(&host, &key_a, task).await;
        assert_eq!(
            got["result"]["status"]["state"], *a2a_state,
            "{scenario}: {got}"
        );
        assert_eq!(got["result"]["contextId"], session, "{scenario}: {got}");

        let got = aip_get(&host, &key_b, LEADER_B, task).await;
        assert_eq!(error_code(&got), -32001, "{scenario}, B's key: {got}");
        let got = a2a_get(&host, &key_b, task).await;
        assert_eq!(error_code(&got), -32001, "{scenario}, B's key: {got}");
    }

    // think: its reasoning and its answer are the task's products.
    let think = detail("think")["task_ids"][0].as_str().unwrap_or_default();
    let got = aip_get(&host, &key_a, LEADER_A, think).await;
    let products: Vec<&Value> = result(&got)["products"]
        .as_array()
        .map(|p| p.iter().map(|p| &p["id"]).collect())
        .unwrap_or_default();
    assert_eq!(products, [&json!("reasoning"), &json!("answer")], "{got}");

    // form: the question and its answer are one task, which asked for the trip form.
    let form = detail("form")["task_ids"][0].as_str().unwrap_or_default();
    assert_eq!(detail("form-answer")["task_ids"][0], form);
    assert_eq!(detail("form-wrong")["task_ids"][0], form);
    let got = aip_get(&host, &key_a, LEADER_A, form).await;
    let history: Vec<&str> = result(&got)["statusHistory"]
        .as_array()
        .map(|h| h.iter().filter_map(|s| s["state"].as_str()).collect())
        .unwrap_or_default();
    assert!(history.contains(&"awaiting-input"), "{got}");
    let asked = result(&got)["statusHistory"]
        .as_array()
        .and_then(|h| h.iter().find(|s| s["state"] == "awaiting-input"))
        .map(|s| s["dataItems"].to_string())
        .unwrap_or_default();
    assert!(asked.contains("\"requestId\":\"trip\""), "{got}");
    assert_eq!(state(&got), "completed", "{got}");
}

/// One session id, two Leaders: B's turn in A's session starts B's own task, and A's form still
/// awaits A's answer. A host restart between the question and the answer changes nothing: the
/// answer continues the same task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_their_leaders_own_and_outlive_a_restart() {
    let mut host = TestHost::start(options()).await;
    let [key_a, key_b] = keyed_concierge(&host).await;
    let session = format!("s-{}", uuid());

    // A asks for a trip in S: the form awaits A's answer.
    let asked = turn(&host, &key_a, &say("form a trip", &session)).await;
    assert_eq!(asked.last().unwrap()["status"], "completed", "{asked:#?}");
    let form_task = task_of(&asked);
    let got = aip_get(&host, &key_a, LEADER_A, &form_task).await;
    assert_eq!(state(&got), "awaiting-input", "{got}");

    // B in the same session id: B's own task, started (not A's continued), B's answer.
    let theirs = turn(&host, &key_b, &say("think tea", &session)).await;
    assert_eq!(theirs.last().unwrap()["status"], "completed", "{theirs:#?}");
    assert_eq!(theirs.last().unwrap()["session_id"], session.as_str());
    let their_task = task_of(&theirs);
    assert_ne!(their_task, form_task);
    assert_eq!(answered(&theirs), "thought about tea", "{theirs:#?}");
    let got = aip_get(&host, &key_b, LEADER_B, &their_task).await;
    assert_eq!(state(&got), "completed", "{got}");
    let got = aip_get(&host, &key_a, LEADER_A, &their_task).await;
    assert_eq!(error_code(&got), -32001, "A does not see B's task: {got}");
    // A's form is untouched: it still awaits A's answer.
    let got = aip_get(&host, &key_a, LEADER_A, &form_task).await;
    assert_eq!(state(&got), "awaiting-input", "{got}");

    host.restart(options()).await;

    // A's answer in S, after the restart: the same task goes on to its answer.
    let answered_events = turn(
        &host,
        &key_a,
        &answer(json!({"city": "Oslo", "days": 3}), &session),
    )
    .await;
    assert_eq!(task_of(&answered_events), form_task, "{answered_events:#?}");
    assert_eq!(answered(&answered_events), "Oslo for 3 days");
    assert_eq!(answered_events.last().unwrap()["status"], "completed");
    let got = aip_get(&host, &key_a, LEADER_A, &form_task).await;
    assert_eq!(state(&got), "completed", "{got}");
}

/// A turn that a crash cuts short (SIGKILL while `slow` streams) fails once the host is back
/// (its partner was interrupted), and the next turn of its session starts a new task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_by_a_crash_fails_and_its_session_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &[]);
    let url = format!("{}/agents/concierge/process", host.url);
    let session = format!("s-{}", uuid());
    let mut slow = SseStream::open(&url, &say("slow count", &session)).await;
    assert_eq!(slow.status, 200, "{:?}", slow.json);
    let mut cut = Vec::new();
    while cut.last().is_none_or(|e: &Value| e["object"] != "content") {
        let (event, _) = slow.next_event(WAIT).await.expect("the answer streaming");
        cut.push(event);
    }
    let cut_task = task_of(&cut);
    drop(slow);
    host.kill();

    let host = ProcessHost::start(&data, &[]);
    let url = format!("{}/agents/concierge/process", host.url);
    let got = post(
        &host.rpc("concierge"),
        &v2("get", &cut_task, json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&got), "failed", "{got}");
    // Nothing of the session runs, so the next turn is a new task.
    let mut next = SseStream::open(&url, &say("think again", &session)).await;
    assert_eq!(next.status, 200, "{:?}", next.json);
    let events = next.until_closed(WAIT).await;
    assert_ne!(task_of(&events), cut_task);
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:#?}");
    assert_eq!(answered(&events), "thought about again");
    host.stop();
}

/// The process route refuses a body over `--max-body-bytes` with 413 before anything runs, and
/// a turn over the tenant's request rate with 429 and `Retry-After`, naming the quota, leaving
/// no task behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_route_holds_the_body_limit_and_the_tenants_rate() {
    let host = TestHost::start(options()).await;
    let busy = create_tenant(
        &host.url,
        "busy",
        json!({"requestsPerSecond": 1, "requestBurst": 1}),
    )
    .await;
    let manifest = example_manifest("concierge", "metered", "");
    let (status, body) =
        publish(&host.url, &busy, &manifest, &example_component("concierge")).await;
    assert_eq!(status, 201, "{body}");
    let url = process_url(&host, "metered");
    let client = reqwest::Client::new();

    // Over the body limit: 413, the limit said.
    let big = say(&"x".repeat(MAX_BODY), &format!("s-{}", uuid()));
    let response = client.post(&url).json(&big).send().await.expect("request");
    assert_eq!(response.status(), 413);
    let refused: Value = response.json().await.expect("a JSON error");
    assert_eq!(refused["error"]["limitBytes"], MAX_BODY, "{refused}");
    assert!(refused["error"]["message"].is_string(), "{refused}");

    // Forms asked back to back at one request a second: one is soon refused.
    let mut refusal = None;
    for _ in 0..50 {
        let session = format!("s-{}", uuid());
        let mut body = say("form a trip", &session);
        body["stream"] = json!(false);
        let response = client.post(&url).json(&body).send().await.expect("request");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let answer: Value = response.json().await.expect("JSON");
        if status != 200 {
            refusal = Some((session, status, answer, retry_after));
            break;
        }
        assert_eq!(answer["status"], "completed", "{answer}");
    }
    let (session, status, answer, retry_after) =
        refusal.expect("a refusal within 50 requests at 1 a second");
    assert_eq!(status, 429, "{answer}");
    assert_eq!(answer["error"]["code"], "RESOURCE_EXHAUSTED", "{answer}");
    assert_eq!(answer["error"]["quota"], "requestsPerSecond", "{answer}");
    assert_eq!(answer["error"]["tenant"], "busy", "{answer}");
    assert!(
        retry_after
            .as_deref()
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|s| s >= 1),
        "Retry-After: {retry_after:?}"
    );
    // The refused form left no task awaiting an answer in its session.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, none) = post_status(&format!("{url}/stop"), &json!({"session_id": session})).await;
    assert_eq!(status, 404, "{none}");
    assert_eq!(none["error"]["code"], "NO_RUNNING_TASK", "{none}");
}
