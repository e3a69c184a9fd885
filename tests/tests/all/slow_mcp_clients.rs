//! A slow client at the MCP door, as `slow_chat_clients.rs` shows them at the chat doors: a
//! 2026-07-28 `tools/call` with a progress token whose client stops reading its progress stream
//! is cut after the write timeout — the host drops the task's event stream (the open-stream
//! gauge falls to zero while the client still reads nothing, so at most a batch of events and
//! `rmcp`'s bounded channel were held for it) and closes the connection before the call's result
//! was delivered. A closed 2026-07-28 call is a cancelled one (that revision's MUST), so the task
//! ends (canceled, or completed if it finished first), and the host serves the next call.

use super::slow_chat_clients::{
    LONG_WORDS, NEVER, WAIT, WORD_BYTES, limits, open_streams_reach, slow_link,
};
use aiphost_tests::raw::until_closed;
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// A 2026-07-28 `tools/call` of the concierge with `text` (and a progress token), as JSON.
fn call(text: &str, progress: bool) -> String {
    let mut call = json!({
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
    if progress {
        call["params"]["_meta"]["progressToken"] = json!("p1");
    }
    call.to_string()
}

/// The raw request of `body` to the concierge's MCP server.
fn request(body: &str) -> Vec<u8> {
    format!(
        "POST /agents/concierge/mcp HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: concierge\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The task a progress stream names (`"aiphost.taskId":"task-…"`).
fn task_in(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let at = text.find("\"aiphost.taskId\":\"")? + "\"aiphost.taskId\":\"".len();
    let end = text[at..].find('"')?;
    Some(text[at..at + end].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_clients_that_stop_reading_are_cut_after_the_write_timeout() {
    let write = Duration::from_millis(500);
    let host = TestHost::start(HostOptions {
        http: limits(NEVER, NEVER, NEVER, write),
        ..HostOptions::default()
    })
    .await;
    let word = "w".repeat(WORD_BYTES - 1);
    let words = vec![word.as_str(); LONG_WORDS].join(" ");

    // Never a read until the host has given up on the client.
    let stream = slow_link(&host.url).await;
    let (mut reader, mut writer) = stream.into_split();
    let sent = request(&call(&words, true));
    let writing = tokio::spawn(async move {
        writer.write_all(&sent).await.expect("the request sent");
        writer
    });
    let opened = open_streams_reach(&host, 1, WAIT).await;
    let freed = open_streams_reach(&host, 0, write + Duration::from_secs(15)).await;
    let stalled_for = freed - opened;
    eprintln!("the stream was open {stalled_for:?} with its client not reading");
    assert!(
        stalled_for >= write - Duration::from_millis(50),
        "freed after {stalled_for:?}, before the write timeout"
    );
    let (got, closed) = until_closed(&mut reader, Duration::from_secs(10)).await;
    eprintln!("{} bytes were in the sockets", got.len());
    assert!(closed.is_some(), "the connection is closed");
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{:?}",
        &text[..text.len().min(300)]
    );
    assert!(
        text.contains("notifications/progress"),
        "{:?}",
        &text[..text.len().min(600)]
    );
    assert!(
        !text.contains("\"result\""),
        "the call's result ({} bytes) was delivered: the client was never cut",
        got.len()
    );
    let _ = writing.await;

    // The task ended: cancelled as its call closed, or completed had it finished first.
    let task = task_in(&got).expect("the progress names its task");
    let rpc = host.rpc("concierge");
    let deadline = Instant::now() + WAIT;
    let state = loop {
        let got = post(&rpc, &v2("get", &task, json!([]), json!({}))).await;
        let now = result(&got)["status"]["state"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if now == "canceled" || now == "completed" || Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        state == "canceled" || state == "completed",
        "task {task}: {state}"
    );

    // And the host serves others as before.
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/agents/concierge/mcp", host.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "concierge")
        .body(call("hello", false))
        .send()
        .await
        .expect("an answer")
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(answer["result"]["content"][0]["text"], "hello", "{answer}");
}
