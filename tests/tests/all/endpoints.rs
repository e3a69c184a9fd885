//! The host's own endpoints: ACS documents built from manifests, the agent list, health, metrics.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

async fn get_json(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.expect("GET");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acs_documents_come_from_manifests() {
    let host = TestHost::start(HostOptions::default()).await;
    for (agent, aic) in [
        ("echo", "1.2.156.3088.1.1.AIPHST.ECHO.1.0000"),
        ("trip-planner", "1.2.156.3088.1.1.AIPHST.TRIPPLAN.1.0000"),
        ("stats", "1.2.156.3088.1.1.AIPHST.STATS.1.0000"),
    ] {
        let (status, doc) =
            get_json(&format!("{}/agents/{agent}/.well-known/acs.json", host.url)).await;
        assert_eq!(status, 200);
        assert_eq!(doc["aic"], aic, "{doc}");
        assert_eq!(doc["active"], true);
        assert!(!doc["name"].as_str().unwrap().is_empty());
        assert!(!doc["description"].as_str().unwrap().is_empty());
        assert_eq!(doc["version"], "0.1.0");
        assert_eq!(
            doc["endPoints"][0]["url"],
            format!("{}/agents/{agent}/rpc", host.url)
        );
        assert_eq!(doc["endPoints"][0]["transport"], "JSONRPC");
        assert_eq!(doc["capabilities"]["streaming"], true);
        assert_eq!(doc["capabilities"]["notification"], true);
        let skills = doc["skills"].as_array().unwrap();
        assert!(!skills.is_empty());
        for skill in skills {
            for field in ["id", "name", "description", "version"] {
                assert!(
                    skill[field].as_str().is_some_and(|s| !s.is_empty()),
                    "{field} in {skill}"
                );
            }
            assert!(skill["inputModes"].is_array() && skill["outputModes"].is_array());
        }
    }
    let (status, _) = get_json(&format!("{}/agents/nobody/.well-known/acs.json", host.url)).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_health_and_metrics() {
    let host = TestHost::start(HostOptions::default()).await;
    let (status, list) = get_json(&format!("{}/agents", host.url)).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "chunked",
            "concierge",
            "concierge-py",
            "echo",
            "echo-js",
            "echo-py",
            "fetcher",
            "hostile",
            "lab-ts",
            "lifecycle-py",
            "stats",
            "tck",
            "trip-planner",
            "trip-planner-py"
        ]
    );

    let health = reqwest::get(format!("{}/healthz", host.url)).await.unwrap();
    assert_eq!(health.status(), 200);

    post(&host.rpc("echo"), &v2("start", "m-1", text("x"), json!({}))).await;
    post(
        &host.rpc("echo"),
        &v2("complete", "m-1", json!([]), json!({})),
    )
    .await;
    let value = |name: &'static str| metric(&host.url, name);
    assert_eq!(value("aiphost_commands_total").await, 2);
    assert_eq!(
        value("aiphost_transitions_total").await,
        4,
        "accepted, working, awaiting-completion, completed"
    );
    assert_eq!(
        value("aiphost_events_total").await,
        5,
        "four statuses and the product chunk"
    );
    // Start, then the completion hook (counted when it ends, after the reply).
    metric_reaches(
        &host.url,
        "aiphost_invocations_total",
        2,
        Duration::from_secs(10),
    )
    .await;
    assert!(value("aiphost_store_flushes_total").await >= 1);
    // Every change the committer applied wrote at least one key (the start's record among them).
    let changes = value("aiphost_store_changes_total").await;
    let keys = value("aiphost_store_keys_written_total").await;
    assert!(
        changes >= 2 && keys >= changes,
        "{changes} changes, {keys} keys"
    );
    assert_eq!(value("aiphost_agents").await, ids.len() as u64);
    assert_eq!(value("aiphost_open_streams").await, 0);
}
