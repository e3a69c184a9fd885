//! Issue 29 item 4: what an operator's open partner (its Leaders do not authenticate, so all
//! share one namespace) offers anonymous clients. `ListTasks` would hand any client every
//! client's tasks: it is off unless the operator turns it on (`serve --list-tasks-on`). And an
//! operator partner can be given a request rate (`serve --requests-per-second`), refused as a
//! tenant's quota is. Both through the real binary.

use aiphost_tests::a2a::request;
use aiphost_tests::*;
use serde_json::{Value, json};

async fn a2a(host: &ProcessHost, agent: &str, method: &str, params: Value) -> Value {
    post(
        &format!("{}/agents/{agent}/a2a", host.url),
        &request(method, params),
    )
    .await
}

async fn send(host: &ProcessHost, agent: &str, id: &str) -> Value {
    let message = aiphost_tests::a2a::message(id, "hi");
    a2a(host, agent, "SendMessage", json!({"message": message})).await
}

/// By default ListTasks on an open partner is UnsupportedOperation in both bindings, saying
/// how the operator turns it on; `--list-tasks-on echo` turns it on for echo alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_an_open_partner_is_off_unless_the_operator_turns_it_on() {
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(&dir.path().join("off"), &[]);
    let sent = send(&host, "echo", "m-1").await;
    assert!(sent["result"]["task"]["id"].is_string(), "{sent}");
    let refused = a2a(&host, "echo", "ListTasks", json!({})).await;
    assert_eq!(error_code(&refused), -32004, "{refused}");
    let said = refused["error"]["data"][0]["metadata"]["reason"].to_string();
    assert!(said.contains("--list-tasks-on echo"), "{refused}");
    let rest = reqwest::get(format!("{}/agents/echo/a2a/rest/tasks", host.url))
        .await
        .unwrap();
    assert_eq!(rest.status(), 400);
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["error"]["status"], "UNIMPLEMENTED", "{body}");
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "UNSUPPORTED_OPERATION"
    );
    host.stop();

    let host = ProcessHost::start(&dir.path().join("on"), &["--list-tasks-on", "echo"]);
    let sent = send(&host, "echo", "m-1").await;
    let id = sent["result"]["task"]["id"].clone();
    let listed = a2a(&host, "echo", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["id"], id);
    // Only where the operator said.
    let other = a2a(&host, "tck", "ListTasks", json!({})).await;
    assert_eq!(error_code(&other), -32004, "{other}");
    host.stop();
}

/// `--list-tasks-on` naming no hosted partner is a typo: serve refuses to start.
#[test]
fn listing_on_a_partner_not_hosted_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(aiphost_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--agents"])
        .arg(plugins_dist())
        .arg("--data")
        .arg(dir.path())
        .args(["--list-tasks-on", "ecco"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("\"ecco\""), "{said}");
}

/// `--requests-per-second 1 --request-burst 2`: requests back to back to one operator partner
/// are soon refused, over AIP with -32009 and over A2A with -32042 / 429, naming the quota and
/// when to retry; another partner has its own bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_partner_over_its_request_rate_is_refused_as_a_quota() {
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(
        &dir.path().join("data"),
        &["--requests-per-second", "1", "--request-burst", "2"],
    );
    let mut refused = None;
    for i in 0..20 {
        let answer = post(
            &host.rpc("echo"),
            &v1("start", &format!("t-{i}"), text("hi"), json!({})),
        )
        .await;
        if answer.get("error").is_some() {
            refused = Some((i, answer));
            break;
        }
        assert!(answer["result"]["status"]["state"].is_string(), "{answer}");
    }
    let (i, answer) = refused.expect("a refusal within 20 requests at 1 a second");
    assert!(i >= 2, "the burst of 2 was admitted: refused at {i}");
    assert_eq!(error_code(&answer), -32009, "{answer}");
    let data = &answer["error"]["data"];
    assert_eq!(data["quota"], "requestsPerSecond", "{answer}");
    assert_eq!(
        (data["agent"].as_str(), data["limit"].as_u64()),
        (Some("echo"), Some(1))
    );
    assert!(
        data["retryAfterMs"].as_u64().is_some_and(|ms| ms <= 1000),
        "{answer}"
    );
    // The A2A door shares the bucket: refused as a quota too.
    let a2a_answer = send(&host, "echo", "m-over").await;
    assert_eq!(error_code(&a2a_answer), -32042, "{a2a_answer}");
    let rest = reqwest::Client::new()
        .post(format!("{}/agents/echo/a2a/rest/message:send", host.url))
        .json(&json!({"message": aiphost_tests::a2a::message("m-rest", "hi")}))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 429);
    // Another partner: its own bucket, full.
    let other = post(
        &host.rpc("trip-planner"),
        &v1("start", "t-other", text("a trip"), json!({})),
    )
    .await;
    assert!(other.get("result").is_some(), "{other}");
    host.stop();
}
