//! The host-level MCP server (`POST /mcp`) and the MCP door's entry rules, through the real
//! `aiphost` binary (its `--mcp-*` flags as an operator gives them) and the official MCP SDK,
//! `mcp` 2.3.0's `Client` (`tests/interop/mcp_host_client.py`): one URL reaching every partner
//! its caller may use (a key's partner and the open ones; an anonymous caller the open ones
//! only), tools named `{agent}__{tool}` and routed to their partner; a skill's own input schema
//! and annotations as its tool's, arguments checked against that schema; API keys, the Origin
//! allow-list and the call timeout. The tasks the calls started are then read over AIP: a
//! keyed partner's in its Leader's namespace, and the task a call stopped waiting for goes on
//! to complete (the call timeout cancels nothing).

use aiphost_tests::interop::{run_script, sdk_python};
use aiphost_tests::tenants::{
    create_tenant, example_component, example_manifest, publish, publish_keyed,
};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The scenarios `mcp_host_client.py` runs; each must be reported, and reported ok.
const SCENARIOS: &[&str] = &[
    "host-discover",
    "host-list",
    "host-call",
    "host-form",
    "anonymous",
    "invalid-key",
    "unauthenticated",
    "other-partner-key",
    "origin-refused",
    "origin-allowed",
    "schema-list",
    "schema-call",
    "schema-wrong",
    "host-schema",
    "still-working",
    "unknown-agent",
];

const LEADER_A: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
/// The keyed concierge whose key the client holds.
const KEYED: &str = "keyed";
/// Another keyed concierge: the client's key was not issued for it.
const OTHER: &str = "keyed2";
/// An open echo whose skill has an input schema and annotations.
const TYPED: &str = "typed";

/// The echo bundle as [`TYPED`], its one skill with an input schema and annotations.
fn typed_manifest() -> String {
    let manifest = example_manifest("echo", TYPED, "");
    let skill = r#"
[skills.input-schema]
type = "object"
required = ["text"]
additionalProperties = false
properties.text = { type = "string", maxLength = 100 }
properties.days = { type = "integer", minimum = 1 }

[skills.annotations]
title = "Typed echo"
read-only = true
idempotent = true
open-world = false
"#;
    assert!(manifest.contains("\n[limits]"), "{manifest}");
    manifest.replacen("\n[limits]", &format!("\n{skill}\n[limits]"), 1)
}

/// An AIP `get` of `task` of `agent` by Leader A with `key` (`None`: an open partner).
async fn aip_get(url: &str, agent: &str, key: Option<&str>, task: &str) -> Value {
    let mut body = v2("get", task, json!([]), json!({}));
    if key.is_some() {
        body["params"]["command"]["senderId"] = json!(LEADER_A);
    }
    post_as(&format!("{url}/agents/{agent}/rpc"), key, &body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_sdk_reaches_every_partner_through_the_hosts_mcp_server() {
    let python = sdk_python().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let host = ProcessHost::start(
        &dir.path().join("data"),
        &[
            "--mcp-allow-origin",
            "https://app.example",
            "--mcp-allow-origin",
            "null",
            "--mcp-call-timeout",
            "1s",
        ],
    );
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let [key]: [String; 1] = publish_keyed(&host.url, &acme, "concierge", KEYED, &[LEADER_A])
        .await
        .try_into()
        .expect("one key");
    publish_keyed(&host.url, &acme, "concierge", OTHER, &[LEADER_A]).await;
    let (status, body) = publish(
        &host.url,
        &acme,
        &typed_manifest(),
        &example_component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    // The index names the host's MCP server; each partner's listing its own.
    let index: Value = reqwest::get(format!("{}/agents", host.url))
        .await
        .expect("GET /agents")
        .json()
        .await
        .expect("JSON");
    assert_eq!(index["mcp"], format!("{}/mcp", host.url), "{index}");
    let typed = index["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["id"] == TYPED))
        .expect("the typed partner is listed");
    assert_eq!(
        typed["mcp"],
        json!({"endpoint": format!("{}/agents/{TYPED}/mcp", host.url)})
    );

    let ran = run_script(
        &python,
        "mcp_host_client.py",
        &host.url,
        &[
            ("MCP_KEY", &key),
            ("MCP_KEYED", KEYED),
            ("MCP_OTHER", OTHER),
            ("MCP_TYPED", TYPED),
        ],
        Duration::from_secs(300),
    )
    .await;
    let results = ran.all_passed("mcp_host_client.py", SCENARIOS);
    let detail = |scenario: &str| {
        results
            .iter()
            .find(|r| r["scenario"] == scenario)
            .map(|r| r["detail"].clone())
            .expect("reported")
    };

    // The host-level calls ran at their partners: the keyed one in Leader A's namespace, the
    // open echo's in the shared one.
    let calls = detail("host-call");
    let keyed_task = calls["keyed_task"].as_str().expect("a task id");
    let got = aip_get(&host.url, KEYED, Some(&key), keyed_task).await;
    assert_eq!(state(&got), "completed", "{got}");
    let echo_task = calls["echo_task"].as_str().expect("a task id");
    let got = aip_get(&host.url, "echo", None, echo_task).await;
    assert_eq!(state(&got), "completed", "{got}");

    // The typed call's task got the arguments as one data item.
    let typed_task = detail("schema-call")["task_id"]
        .as_str()
        .expect("a task id")
        .to_string();
    let got = aip_get(&host.url, TYPED, None, &typed_task).await;
    let commands = result(&got)["commandHistory"].to_string();
    assert!(
        commands.contains(r#""data":{"days":3,"text":"hi"}"#)
            || commands.contains(r#""data":{"text":"hi","days":3}"#),
        "{got}"
    );

    // The call the timeout stopped waiting for: its task was not canceled, and completes.
    let slow = detail("still-working")["task_id"]
        .as_str()
        .expect("a task id")
        .to_string();
    let started = Instant::now();
    loop {
        let got = aip_get(&host.url, KEYED, Some(&key), &slow).await;
        match state(&got).as_str() {
            "completed" => break,
            "accepted" | "working" => {}
            other => panic!("the slow task is {other}: {got}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the slow task did not complete: {got}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    host.stop();
}
