//! The Agent API door as the host runs it, beside its protocol (`agent_api.rs`): its counters
//! on `/metrics` moving with real requests; a `stream: false` turn that outlives the
//! connection layer's idle timeout (answered, not cut) and one that outlives its task's
//! `responseTimeout` (answered as it is, the task going on); and the partner's listings —
//! the `/agents` index, the ACS document, the A2A card — naming the door's URLs, each of which
//! answers.

use aiphost::transport::connections::HttpLimits;
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);
const CHAT_DOORS_EXTENSION: &str = "https://aiphost.dev/ext/chat-doors/v1";

fn process_url(host: &TestHost, agent: &str) -> String {
    format!("{}/agents/{agent}/process", host.url)
}

/// A request of one user message saying `words`, in `session` if any.
fn say(words: &str, session: Option<&str>) -> Value {
    let mut body = json!({"input": [{"role": "user", "type": "message",
        "content": [{"type": "text", "text": words}]}]});
    if let Some(s) = session {
        body["session_id"] = json!(s);
    }
    body
}

/// The same, answered in one piece (`stream: false`).
fn say_at_once(words: &str, session: Option<&str>) -> Value {
    let mut body = say(words, session);
    body["stream"] = json!(false);
    body
}

/// A streamed turn to its end: its events.
async fn turn(url: &str, body: &Value) -> Vec<Value> {
    let mut stream = SseStream::open(url, body).await;
    assert_eq!(stream.status, 200, "{:?}", stream.json);
    stream.until_closed(WAIT).await
}

/// Open a `slow` turn in `session` and wait until its answer streams (its task is working).
async fn slow_turn(url: &str, session: &str) -> SseStream {
    let mut stream = SseStream::open(url, &say("slow count", Some(session))).await;
    assert_eq!(stream.status, 200, "{:?}", stream.json);
    loop {
        let (event, _) = stream.next_event(WAIT).await.expect("an event");
        if event["object"] == "content" {
            return stream;
        }
    }
}

/// POST a body that is not JSON by its content type: the status.
async fn post_text(url: &str) -> u16 {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("HTTP request");
    response.status().as_u16()
}

/// Each labelled sample of the door's families, read from `/metrics`.
async fn door_metrics(host: &TestHost) -> Vec<(String, u64)> {
    let text = reqwest::get(format!("{}/metrics", host.url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .filter(|l| l.starts_with("aiphost_agent_api_"))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_doors_counters_move_with_its_requests() {
    let host = TestHost::start(HostOptions::default()).await;
    let url = process_url(&host, "concierge");
    let stop = format!("{url}/stop");
    // A fresh host: every family is there from the start, at zero.
    let before = door_metrics(&host).await;
    assert!(
        before.iter().all(|(_, n)| *n == 0) && before.len() >= 6 + 5,
        "{before:#?}"
    );

    // Two turns that start tasks and complete, streamed and folded.
    let events = turn(&url, &say("think about tea", None)).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
    let (status, folded) = post_status(&url, &say_at_once("think about coffee", None)).await;
    assert_eq!((status, &folded["status"]), (200, &json!("completed")));
    // A form (a start that completes its turn) and its answer (a continue).
    let session = format!("s-{}", uuid());
    let events = turn(&url, &say("form a trip", Some(&session))).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
    let answer = json!({"session_id": session, "input": [{"role": "user",
        "content": [{"type": "data", "data": {"city": "Oslo", "days": 3}}]}]});
    let events = turn(&url, &answer).await;
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:#?}");
    // A slow turn (a start), a second one in its session (busy), its stop (canceled).
    let session = format!("s-{}", uuid());
    let mut slow = slow_turn(&url, &session).await;
    let busy = turn(&url, &say("think again", Some(&session))).await;
    assert_eq!(busy[0]["error"]["code"], "SESSION_BUSY");
    let (status, _) = post_status(&stop, &json!({"session_id": session})).await;
    assert_eq!(status, 200);
    let rest = slow.until_closed(WAIT).await;
    assert_eq!(rest.last().unwrap()["status"], "canceled", "{rest:#?}");
    // Refusals: a stop with nothing running (404), a malformed turn (400), a body not sent as
    // JSON (415).
    let (status, _) = post_status(&stop, &json!({"session_id": session})).await;
    assert_eq!(status, 404);
    let (status, _) = post_status(&url, &json!({"stream": true})).await;
    assert_eq!(status, 400);
    assert_eq!(post_text(&url).await, 415);

    let after = door_metrics(&host).await;
    let value = |name: &str| {
        after
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{name} not in {after:#?}"))
    };
    let requests = "aiphost_agent_api_requests_total";
    for (labels, n) in [
        (r#"route="process",outcome="start""#, 4),
        (r#"route="process",outcome="continue""#, 1),
        (r#"route="process",outcome="busy""#, 1),
        (r#"route="process",outcome="refused""#, 2),
        (r#"route="stop",outcome="stopped""#, 1),
        (r#"route="stop",outcome="refused""#, 1),
    ] {
        assert_eq!(value(&format!("{requests}{{{labels}}}")), n, "{labels}");
    }
    let refusals = "aiphost_agent_api_refusals_total";
    for (labels, n) in [
        (r#"route="process",status="400""#, 1),
        (r#"route="process",status="415""#, 1),
        (r#"route="stop",status="404""#, 1),
    ] {
        assert_eq!(value(&format!("{refusals}{{{labels}}}")), n, "{labels}");
    }
    let responses = "aiphost_agent_api_responses_total";
    for (status, n) in [
        ("completed", 4),
        ("rejected", 1),
        ("canceled", 1),
        ("failed", 0),
        ("in_progress", 0),
    ] {
        let name = format!("{responses}{{status=\"{status}\"}}");
        assert_eq!(value(&name), n, "{name}");
    }
}

/// A folded turn holds its connection with no bytes until the turn rests; the connection
/// layer's idle timeout (a connection with no request under way) must not cut it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folded_turn_outlives_the_idle_timeout() {
    let idle = Duration::from_millis(400);
    let host = TestHost::start(HostOptions {
        http: HttpLimits {
            idle_timeout: idle,
            write_timeout: idle,
            ..HttpLimits::default()
        },
        ..HostOptions::default()
    })
    .await;
    let started = Instant::now();
    let (status, folded) = post_status(
        &process_url(&host, "concierge"),
        &say_at_once("slow count", None),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{folded}");
    assert_eq!(folded["object"], "response");
    assert_eq!(folded["status"], "completed", "{folded}");
    let texts: Vec<&str> = folded["output"][0]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect();
    let counted: Vec<String> = (1..=20).map(|n| n.to_string()).collect();
    assert_eq!(
        texts.concat().split_whitespace().collect::<Vec<_>>(),
        counted,
        "{folded}"
    );
    // 20 deltas 250 ms apart: many idle timeouts long.
    assert!(took > idle * 8, "the turn took {took:?}");
}

/// A folded turn still running at its task's `responseTimeout` is answered as it is — its
/// response `in_progress`, the timeout in its metadata — and its task goes on: the session is
/// busy meanwhile, and the task completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folded_turn_is_answered_as_it_is_at_its_response_timeout() {
    let host = TestHost::start(HostOptions {
        response_timeout_ms: 1_000,
        ..HostOptions::default()
    })
    .await;
    let url = process_url(&host, "concierge");
    let session = format!("s-{}", uuid());
    let started = Instant::now();
    let (status, folded) = post_status(&url, &say_at_once("slow count", Some(&session))).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{folded}");
    assert_eq!(folded["object"], "response");
    assert_eq!(folded["status"], "in_progress", "{folded}");
    assert_eq!(folded["session_id"], session.as_str());
    assert_eq!(folded["metadata"]["aiphost.responseTimeoutMs"], 1_000);
    // The answer still streams: no message has completed.
    assert_eq!(folded["output"], json!([]), "{folded}");
    assert!(
        took >= Duration::from_millis(1_000) && took < Duration::from_millis(4_000),
        "answered after {took:?}"
    );

    // The turn goes on: the session is busy.
    let (status, busy) = post_status(&url, &say_at_once("think again", Some(&session))).await;
    assert_eq!(status, 200, "{busy}");
    assert_eq!(busy["status"], "rejected");
    assert_eq!(busy["error"]["code"], "SESSION_BUSY");

    // Its task completes, with the whole answer.
    let task_id = folded["metadata"]["aiphost.taskId"].as_str().unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let got = post(
            &host.rpc("concierge"),
            &v2("get", task_id, json!([]), json!({})),
        )
        .await;
        if state(&got) == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "not completed: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let in_progress = r#"aiphost_agent_api_responses_total{status="in_progress"}"#;
    assert_eq!(metric(&host.url, in_progress).await, 1);
}

/// The URLs each listing names for the Agent API door, checked against where it is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listings_name_the_doors_urls_and_each_answers() {
    let host = TestHost::start(HostOptions::default()).await;
    let agent_url = format!("{}/agents/concierge", host.url);
    let get = |url: String| async move {
        let response = reqwest::get(&url).await.expect("GET");
        assert_eq!(response.status(), 200, "{url}");
        response.json::<Value>().await.expect("JSON")
    };

    // The /agents index: the door's URLs grouped under its key.
    let listed = get(format!("{}/agents", host.url)).await;
    let concierge = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "concierge")
        .expect("the concierge is listed")
        .clone();
    assert_eq!(
        concierge["agentApi"],
        json!({"process": format!("{agent_url}/process"), "stop": format!("{agent_url}/process/stop")})
    );
    assert_eq!(
        concierge["aiflowy"],
        json!({"chat": format!("{agent_url}/aiflowy/chat"), "form": format!("{agent_url}/aiflowy/form"),
               "events": format!("{agent_url}/aiflowy/chat/events"),
               "stop": format!("{agent_url}/aiflowy/chat/stop")})
    );
    assert_eq!(
        concierge["mcp"],
        json!({"endpoint": format!("{agent_url}/mcp")})
    );
    // The host's own MCP server, beside the partners.
    assert_eq!(listed["mcp"], format!("{}/mcp", host.url), "{listed}");
    let one = get(agent_url.clone()).await;
    assert_eq!(one["agentApi"], concierge["agentApi"]);
    assert_eq!(one["aiflowy"], concierge["aiflowy"]);
    assert_eq!(one["mcp"], concierge["mcp"]);

    // ACS: JSON-RPC first, then the door's entry URL.
    let acs = get(format!("{agent_url}/.well-known/acs.json")).await;
    let end_points = acs["endPoints"].as_array().unwrap();
    assert_eq!(
        end_points[0],
        json!({"url": format!("{agent_url}/rpc"), "transport": "JSONRPC"})
    );
    assert!(
        end_points
            .contains(&json!({"url": format!("{agent_url}/process"), "transport": "AGENT_API"})),
        "{acs}"
    );
    assert!(
        end_points.contains(
            &json!({"url": format!("{agent_url}/aiflowy/chat"), "transport": "AIFLOWY_CHAT"})
        ),
        "{acs}"
    );
    assert!(
        end_points.contains(&json!({"url": format!("{agent_url}/mcp"), "transport": "MCP"})),
        "{acs}"
    );

    // The A2A card: one optional extension naming the doors; its bindings unchanged.
    let card = get(format!("{agent_url}/.well-known/agent-card.json")).await;
    let extensions: Vec<&Value> = card["capabilities"]["extensions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["uri"] == CHAT_DOORS_EXTENSION)
        .collect();
    assert_eq!(extensions.len(), 1, "{card}");
    assert_eq!(extensions[0]["required"], false);
    assert_eq!(
        extensions[0]["params"],
        json!({"agentApi": format!("{agent_url}/process"),
               "aiflowyChat": format!("{agent_url}/aiflowy/chat"),
               "aiflowyForm": format!("{agent_url}/aiflowy/form"),
               "mcp": format!("{agent_url}/mcp")})
    );
    let bindings: Vec<&Value> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["protocolBinding"])
        .collect();
    assert_eq!(
        bindings,
        [&json!("JSONRPC"), &json!("HTTP+JSON"), &json!("JSONRPC")]
    );

    // Every URL any listing names — the index's chat-door groups, ACS's endPoints besides
    // JSON-RPC, the extension's params — answers at its door: a request with nothing in it is
    // refused by the door (its JSON error), never 404 for want of a route. (A URL that is read,
    // not posted to, answers POST 405; it is asked with GET.)
    let mut urls: Vec<String> = Vec::new();
    for (key, group) in concierge.as_object().unwrap() {
        let is_door_group = group.is_object() && !["aip", "a2a"].contains(&key.as_str());
        if is_door_group {
            urls.extend(group.as_object().unwrap().values().map(|u| u.to_string()));
        }
    }
    urls.extend(
        end_points
            .iter()
            .filter(|e| e["transport"] != "JSONRPC")
            .map(|e| e["url"].to_string()),
    );
    for extension in &extensions {
        urls.extend(
            extension["params"]
                .as_object()
                .unwrap()
                .values()
                .map(|u| u.to_string()),
        );
    }
    let mut urls: Vec<String> = urls
        .into_iter()
        .map(|u| u.trim_matches('"').to_string())
        .collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), 7, "{urls:?}");
    let client = reqwest::Client::new();
    for url in &urls {
        assert!(url.starts_with(&agent_url), "{url}");
        // The MCP door's URL is a JSON-RPC server (`rmcp` answers a body that is not MCP in
        // plain text): asked who it is, it answers as the partner.
        if url.ends_with("/mcp") {
            let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {}});
            let response = client
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "server/discover")
                .json(
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                              "params": {"_meta": meta}}),
                )
                .send()
                .await
                .expect("POST");
            assert_eq!(response.status(), 200, "{url}");
            let body: Value = response.json().await.expect("JSON");
            let name = &body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"];
            assert_eq!(name, "Concierge", "{url}: {body}");
            continue;
        }
        let mut response = client
            .post(url)
            .json(&json!({}))
            .send()
            .await
            .expect("POST");
        if response.status() == 405 {
            response = client.get(url).send().await.expect("GET");
        }
        let status = response.status().as_u16();
        assert_ne!(status, 404, "{url}");
        assert!((400..500).contains(&status), "{url}: {status}");
        assert_json(&response);
        let body: Value = response.json().await.expect("JSON");
        assert!(body["error"]["code"].is_string(), "{url}: {body}");
    }

    // And the ACS entry URL is the door itself: a real turn through it.
    let entry = end_points
        .iter()
        .find(|e| e["transport"] == "AGENT_API")
        .and_then(|e| e["url"].as_str())
        .unwrap();
    let (status, folded) = post_status(entry, &say_at_once("think about maps", None)).await;
    assert_eq!(status, 200, "{folded}");
    assert_eq!(folded["status"], "completed", "{folded}");
}
