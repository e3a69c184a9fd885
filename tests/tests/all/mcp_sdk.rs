//! Interop with the official MCP SDK: `mcp` 2.3.0 from PyPI, its `Client` over Streamable HTTP
//! (protocol revision 2026-07-28), against the MCP door of a partner.
//!
//! `scripts/python-env.sh` sets up `.venv` with it; `tests/interop/mcp_client.py` then drives a
//! tenant's concierge whose Leaders take API keys, with Leader A's key as its Bearer token —
//! discovery, the tool list, calls that complete (with progress notifications), ask a form
//! (answered through the client's elicitation callback, wrong first, declined, canceled, or by
//! `aiphost.continue_task` for a client that cannot be asked), fail, name no tool or carry
//! wrong arguments, and requests without a key or from a browser page — and prints one JSON line per scenario
//! with the task behind each call. Here, those tasks are read over AIP `get` with A's key, and
//! read over A2A `GetTask` with the same key, and found by B's key in no namespace over either: a
//! call's task is its caller's, as at every door.

use aiphost_tests::interop::{run_script, sdk_python};
use aiphost_tests::tenants::{create_tenant, publish_keyed};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

/// The scenarios `mcp_client.py` runs; each must be reported, and reported ok.
const SCENARIOS: &[&str] = &[
    "discover",
    "list",
    "echo",
    "think",
    "tool",
    "form",
    "form-wrong",
    "form-wrong-five",
    "form-closed",
    "decline",
    "cancel-form",
    "no-elicitation",
    "continue-decline",
    "fail",
    "reply",
    "concurrent",
    "slow-cancel",
    "legacy-form",
    "legacy-decline",
    "legacy-cancel",
    "unknown-tool",
    "bad-arguments",
    "unauthenticated",
    "origin",
];

/// The AIP state of each scenario's task (the others start none).
const TASK_STATES: &[(&str, &str)] = &[
    ("echo", "completed"),
    ("think", "completed"),
    ("tool", "completed"),
    ("form", "completed"),
    ("form-wrong", "completed"),
    ("form-wrong-five", "awaiting-input"),
    ("form-closed", "completed"),
    ("decline", "canceled"),
    ("cancel-form", "canceled"),
    ("no-elicitation", "completed"),
    ("continue-decline", "canceled"),
    ("fail", "failed"),
    ("slow-cancel", "canceled"),
    ("legacy-form", "completed"),
    ("legacy-decline", "canceled"),
    ("legacy-cancel", "canceled"),
];

const LEADER_A: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const LEADER_B: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
/// The partner the tenant publishes (the concierge bundle), its Leaders taking API keys.
const AGENT: &str = "keyed";

/// A tenant publishing the concierge as [`AGENT`], and the keys of Leaders A and B.
async fn keyed_concierge(host: &TestHost) -> [String; 2] {
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let keys = publish_keyed(&host.url, &acme, "concierge", AGENT, &[LEADER_A, LEADER_B]).await;
    keys.try_into().expect("two keys")
}

/// An AIP `get` of `task` by `sender` with `key`.
/// An A2A `GetTask` of `task` with `key`.
async fn a2a_get(host: &TestHost, key: &str, task: &str) -> Value {
    let endpoint = aiphost_tests::a2a::endpoint(host, AGENT);
    let request = aiphost_tests::a2a::request("GetTask", json!({"id": task}));
    post_as(&endpoint, Some(key), &request).await
}

/// The A2A v1.0 state of an AIP state (as the A2A door maps it).
fn a2a_state(aip: &str) -> &'static str {
    match aip {
        "completed" => "TASK_STATE_COMPLETED",
        "canceled" => "TASK_STATE_CANCELED",
        "failed" => "TASK_STATE_FAILED",
        "awaiting-input" => "TASK_STATE_INPUT_REQUIRED",
        _ => "unexpected",
    }
}

async fn aip_get(host: &TestHost, key: &str, sender: &str, task: &str) -> Value {
    let mut body = v2("get", task, json!([]), json!({}));
    body["params"]["command"]["senderId"] = json!(sender);
    post_as(&host.rpc(AGENT), Some(key), &body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_sdk_drives_the_mcp_door() {
    let python = sdk_python().await;
    let host = TestHost::start(HostOptions::default()).await;
    let [key_a, key_b] = keyed_concierge(&host).await;

    let ran = run_script(
        &python,
        "mcp_client.py",
        &host.url,
        &[("MCP_AGENT", AGENT), ("MCP_KEY", &key_a)],
        Duration::from_secs(300),
    )
    .await;
    let results = ran.all_passed("mcp_client.py", SCENARIOS);

    // The task behind each call: A's over AIP, started by the MCP door (its command params say
    // the tool and the skill); B's key finds it in no namespace.
    let reported = |scenario: &str| {
        results
            .iter()
            .find(|r| r["scenario"] == scenario)
            .expect("reported")
    };
    for (scenario, aip_state) in TASK_STATES {
        let detail = &reported(scenario)["detail"];
        let task = detail["task_id"].as_str().expect("a task id");
        // A call abandoned mid-`slow` is cancelled as the host hears the client go: wait for it.
        let mut got = aip_get(&host, &key_a, LEADER_A, task).await;
        for _ in 0..50 {
            if state(&got) == *aip_state {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            got = aip_get(&host, &key_a, LEADER_A, task).await;
        }
        assert_eq!(state(&got), *aip_state, "{scenario}: {got}");
        let commands = result(&got)["commandHistory"].to_string();
        assert!(
            commands.contains(r#""mcp":{"#) && commands.contains(r#""skill":"concierge""#),
            "{scenario}: {got}"
        );
        // A2A reads the same task with the same key, B's finds it nowhere.
        let got = a2a_get(&host, &key_a, task).await;
        assert_eq!(
            got["result"]["status"]["state"],
            a2a_state(aip_state),
            "{scenario}: {got}"
        );
        let got = aip_get(&host, &key_b, LEADER_B, task).await;
        assert_eq!(error_code(&got), -32001, "{scenario}, B's key: {got}");
        let got = a2a_get(&host, &key_b, task).await;
        assert_eq!(
            error_code(&got),
            -32001,
            "{scenario}, B's key over A2A: {got}"
        );
    }

    // A form answered over MCP is one task: its start and one continue carrying the answer (a
    // wrong answer, refused by the engine, recorded nothing); a declined or canceled form
    // cancels the task saying so.
    for scenario in ["form", "form-wrong", "no-elicitation"] {
        let task = reported(scenario)["detail"]["task_id"]
            .as_str()
            .expect("a task id");
        let got = aip_get(&host, &key_a, LEADER_A, task).await;
        let commands = result(&got)["commandHistory"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // (The AIP gets above are in the history too.)
        let commands: Vec<Value> = commands
            .into_iter()
            .filter(|c| c["command"] != "get")
            .collect();
        let kinds: Vec<&str> = commands
            .iter()
            .filter_map(|c| c["command"].as_str())
            .collect();
        assert_eq!(kinds, ["start", "continue"], "{scenario}: {got}");
        let answer = commands[1].to_string();
        assert!(
            answer.contains(r#""city":"Oslo""#) && answer.contains(r#""days":3"#),
            "{scenario}: {got}"
        );
    }
    for (scenario, how) in [
        ("decline", "declined"),
        ("cancel-form", "canceled"),
        ("continue-decline", "declined"),
    ] {
        let task = reported(scenario)["detail"]["task_id"]
            .as_str()
            .expect("a task id");
        let got = aip_get(&host, &key_a, LEADER_A, task).await;
        let said = format!("the user {how} form trip");
        assert!(got.to_string().contains(&said), "{scenario}: {got}");
    }

    // Without a key the door refuses before any MCP is read: 401, `WWW-Authenticate: Bearer`.
    let response = reqwest::Client::new()
        .post(format!("{}/agents/{AGENT}/mcp", host.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status(), 401);
    assert_eq!(
        response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["data"]["code"], "UNAUTHENTICATED", "{body}");
}
