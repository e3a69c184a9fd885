//! The MCP door's limits, as at the other doors, both before `rmcp` reads a request: a body over
//! `--max-body-bytes` is HTTP 413 and a partner's request rate HTTP 429 with `Retry-After`, each
//! answered as a JSON-RPC error (`id: null`) carrying the kit's error object — and nothing is
//! started by a refused call.

use aiphost_tests::*;
use serde_json::{Value, json};

/// A 2026-07-28 `tools/call` of the concierge with `text`: the status, `Retry-After` and body.
async fn call(url: &str, text: &str) -> (u16, Option<String>, Value) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "concierge",
            "arguments": {"text": text},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "aiphost-tests", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "concierge")
        .body(body.to_string())
        .send()
        .await
        .expect("an HTTP answer");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.json().await.unwrap_or(Value::Null);
    (status, retry_after, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_and_request_rates_are_bounded_before_rmcp() {
    let host = TestHost::start(HostOptions {
        max_body_bytes: 8 * 1024,
        request_rate: Some((1, 1)),
        ..HostOptions::default()
    })
    .await;
    let url = format!("{}/agents/concierge/mcp", host.url);

    let (status, _, body) = call(&url, &"x".repeat(16 * 1024)).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["data"]["code"], "INVALID_REQUEST", "{body}");

    // One request a second, a burst of one: calls back to back are soon over it (however slow
    // this machine is, not one a second).
    let mut refused = None;
    for i in 0..5 {
        let (status, retry_after, body) = call(&url, &format!("call {i}")).await;
        if status == 429 {
            refused = Some((retry_after, body));
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["content"][0]["text"], format!("call {i}"));
    }
    let (retry_after, body) = refused.expect("MCP calls count against the partner's rate");
    assert!(retry_after.is_some(), "Retry-After: {body}");
    assert_eq!(
        body["error"]["data"]["code"], "RESOURCE_EXHAUSTED",
        "{body}"
    );
    assert_eq!(
        body["error"]["data"]["quota"], "requestsPerSecond",
        "{body}"
    );
}
