//! Every malformed or unsupported request gets a precise JSON-RPC error (HTTP 200, useful `data`)
//! and leaves no state behind.

use aiphost_tests::*;
use serde_json::{Value, json};

async fn expect_error(url: &str, body: &Value, code: i64) -> Value {
    let answer = post(url, body).await;
    assert_eq!(error_code(&answer), code, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(
        !answer["error"]["data"].is_null(),
        "every error carries data: {answer}"
    );
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelope_errors() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");

    let answer = post_raw(&rpc, b"{\"jsonrpc\": \"2.0\", \"method\": ".to_vec()).await;
    assert_eq!(error_code(&answer), -32700);
    assert_eq!(answer["id"], Value::Null);
    assert!(answer["error"]["data"]["reason"].as_str().is_some());

    let answer = post_raw(&rpc, b"[{\"jsonrpc\": \"2.0\"}]".to_vec()).await;
    assert_eq!(error_code(&answer), -32600);
    assert!(
        answer["error"]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("batch")
    );

    let answer = expect_error(
        &rpc,
        &json!({"jsonrpc": "1.0", "method": "rpc", "id": "x"}),
        -32600,
    )
    .await;
    assert_eq!(answer["id"], "x", "a readable id is echoed");

    let answer = expect_error(
        &rpc,
        &json!({"jsonrpc": "2.0", "method": "teleport", "id": 5, "params": {}}),
        -32601,
    )
    .await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["data"]["method"], "teleport");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_params_name_the_field_and_store_nothing() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let cases = [
        (
            v1("start", "bad-1", json!([{"type": "text"}]), json!({})),
            "params.message.dataItems[0].text",
        ),
        (
            v2(
                "start",
                "bad-2",
                json!([{"type": "file", "bytes": "***"}]),
                json!({}),
            ),
            "params.command.dataItems[0].bytes",
        ),
        (
            v2(
                "start",
                "bad-3",
                json!([{"type": "file", "uri": "https://x", "bytes": "aGk="}]),
                json!({}),
            ),
            "params.command.dataItems[0]",
        ),
        (
            v2("start", "bad-4", json!([{"type": "video"}]), json!({})),
            "params.command.dataItems[0].type",
        ),
        (
            v2(
                "start",
                "bad-5",
                text("x"),
                json!({"awaitingInputTimeout": "later"}),
            ),
            "commandParams.awaitingInputTimeout",
        ),
        (
            v2("start", "bad-6", text("x"), json!({"maxProductsBytes": -5})),
            "commandParams.maxProductsBytes",
        ),
        (
            v2("launch", "bad-7", text("x"), json!({})),
            "params.command.command",
        ),
        (
            v2("start", &"x".repeat(300), text("x"), json!({})),
            "params.command.taskId",
        ),
        (
            v1("start", "bad\u{0}id", text("x"), json!({})),
            "params.message.taskId",
        ),
    ];
    for (body, field) in cases {
        let answer = expect_error(&rpc, &body, -32602).await;
        assert_eq!(answer["error"]["data"]["field"], field, "{answer}");
        assert!(answer["error"]["data"]["reason"].as_str().is_some());
    }
    // Nothing of the refused starts was stored.
    for id in ["bad-1", "bad-2", "bad-3", "bad-4", "bad-5", "bad-6"] {
        expect_error(&rpc, &v2("get", id, json!([]), json!({})), -32001).await;
    }
    let answer = expect_error(
        &rpc,
        &v2(
            "get",
            "t",
            json!([]),
            json!({"lastCommandSentAt": "whenever"}),
        ),
        -32001,
    )
    .await;
    assert_eq!(answer["error"]["data"]["taskId"], "t");
    let answer = expect_error(
        &rpc,
        &json!({"jsonrpc": "2.0", "method": "rpc", "id": 1, "params": {"message": {"type": "message", "command": "get"}}}),
        -32602,
    )
    .await;
    assert_eq!(answer["error"]["data"]["field"], "params.message.taskId");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tasks_and_unsupported_operations() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    for command in ["get", "continue", "complete", "cancel"] {
        let answer = expect_error(
            &rpc,
            &v1(command, "never-started", text("x"), json!({})),
            -32001,
        )
        .await;
        assert_eq!(answer["error"]["data"]["taskId"], "never-started");
    }
    // re-stream belongs to the stream method.
    expect_error(&rpc, &v2("re-stream", "t", json!([]), json!({})), -32004).await;
    // A group over something other than RabbitMQ is not supported (-32007); a group invitation
    // without its params is invalid (-32602).
    let kafka =
        json!({"jsonrpc": "2.0", "method": "group", "id": 1, "params": {"protocol": "kafka:3.0"}});
    expect_error(&format!("{}/agents/echo/group", host.url), &kafka, -32007).await;
    let bare = json!({"jsonrpc": "2.0", "method": "group", "id": 1, "params": {}});
    expect_error(&format!("{}/agents/echo/group", host.url), &bare, -32602).await;
    // The method decides, not the path: rpc at the group path works.
    let answer = post(
        &format!("{}/agents/echo/group/rpc", host.url),
        &v2("start", "via-group-path", text("x"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion");
    // An agent that is not hosted: HTTP 404, a JSON-RPC error that names it and the list.
    let response = reqwest::Client::new()
        .post(format!("{}/agents/nobody/rpc", host.url))
        .json(&v2("get", "t", json!([]), json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_json(&response);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["error"]["data"]["agent"], "nobody", "{answer}");
    assert_eq!(answer["error"]["data"]["agents"], "/agents", "{answer}");
    let reason = answer["error"]["data"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("\"nobody\"") && reason.contains("GET /agents"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_types_are_checked_against_skills() {
    let host = TestHost::start(HostOptions::default()).await;
    // stats takes structured data only.
    let answer = expect_error(
        &host.rpc("stats"),
        &v2("start", "ct", text("1 2 3"), json!({})),
        -32005,
    )
    .await;
    assert_eq!(answer["error"]["data"]["mimeType"], "text/plain");
    assert_eq!(
        answer["error"]["data"]["accepted"],
        json!(["application/json"])
    );
    let pdf = json!([{"type": "file", "mimeType": "application/pdf", "uri": "https://example.com/a.pdf"}]);
    let answer = expect_error(
        &host.rpc("echo"),
        &v2("start", "ct2", pdf, json!({})),
        -32005,
    )
    .await;
    assert_eq!(answer["error"]["data"]["dataItem"], "dataItems[0]");
    expect_error(
        &host.rpc("stats"),
        &v2("get", "ct", json!([]), json!({})),
        -32001,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_refused_clearly() {
    let host = TestHost::start(HostOptions {
        max_body_bytes: 64 * 1024,
        ..HostOptions::default()
    })
    .await;
    let rpc = host.rpc("echo");
    let big = "x".repeat(100 * 1024);
    let answer = post(&rpc, &v2("start", "too-big", text(&big), json!({}))).await;
    assert_eq!(error_code(&answer), -32600);
    assert_eq!(answer["error"]["data"]["limitBytes"], 64 * 1024);
    assert!(
        answer["error"]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("larger than")
    );
    let answer = post(&rpc, &v2("get", "too-big", json!([]), json!({}))).await;
    assert_eq!(error_code(&answer), -32001);
    // Just under the limit is fine.
    let fits = "y".repeat(60 * 1024);
    assert_eq!(
        state(&post(&rpc, &v2("start", "fits", text(&fits), json!({}))).await),
        "awaiting-completion"
    );
}
