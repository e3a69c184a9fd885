//! Traces and the access log: a host started with `--otlp-endpoint` exports its spans to a
//! small OTLP/HTTP receiver here (protobuf `ExportTraceServiceRequest`s, decoded with prost),
//! continuing the trace of a request's `traceparent`; and every request gets one access line on
//! the host's stderr, without its query string or its credentials.

use aiphost_tests::*;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the receiver was sent: every span, with its resource's `service.name`.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, Span)>>>);

impl Received {
    fn spans(&self) -> Vec<(String, Span)> {
        self.0.lock().expect("receiver lock").clone()
    }
}

/// Take one export request, as a collector on :4318 does: decoded, or a 400.
async fn export(State(received): State<Received>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    let mut spans = received.0.lock().expect("receiver lock");
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| as_text(kv.value.as_ref()?.value.as_ref()?))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            spans.extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
        }
    }
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

/// An attribute's value as text (strings as they are, numbers and booleans written out).
fn as_text(value: &Any) -> Option<String> {
    match value {
        Any::StringValue(s) => Some(s.clone()),
        Any::IntValue(i) => Some(i.to_string()),
        Any::BoolValue(b) => Some(b.to_string()),
        Any::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

/// The attribute `key` of `span`, as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| as_text(kv.value.as_ref()?.value.as_ref()?))
}

/// Start the receiver on 127.0.0.1: its base URL, and what it receives.
async fn receiver() -> (String, Received) {
    let received = Received::default();
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            post(export).layer(axum::extract::DefaultBodyLimit::max(16 << 20)),
        )
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding the receiver");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

/// Random hex of `bytes` bytes (a trace or span id).
fn hex_id(bytes: usize) -> String {
    let mut id = String::new();
    while id.len() < bytes * 2 {
        id.push_str(&uuid::Uuid::new_v4().simple().to_string());
    }
    id.truncate(bytes * 2);
    id
}

fn bytes_of(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The one span named `name` among `spans`.
fn only<'a>(spans: &'a [&'a Span], name: &str) -> &'a Span {
    let named: Vec<&&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(named.len(), 1, "one {name} span: {spans:#?}");
    named[0]
}

/// Start a task at `rpc` in the trace `trace`, as a child of the span `parent`, and check that
/// the partner answered it (`awaiting-completion`).
async fn traced_start(rpc: String, trace: &str, parent: &str, said: &str) {
    let answer: serde_json::Value = reqwest::Client::new()
        .post(rpc)
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .json(&v2("start", &uuid(), text(said), json!({})))
        .send()
        .await
        .expect("the start")
        .json()
        .await
        .expect("its answer");
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
}

/// An AIP start carrying `traceparent: 00-T-S-01` is traced as T's: `request` (parent S, with its
/// door, partner, route and status) → `engine.command` → `invocation` (partner and version),
/// and each wait of the command for the store is a `store.wait_durable` span of the same trace,
/// linked to the committer round (`store.commit`, a root of its own) that ended it. The spans
/// reach the collector when the host stops (SIGTERM): the last batch is flushed on the way out.
///
/// A reply whose write is already on disk when it asks waits for nothing and has no wait span
/// (the official CI run of c8e4b97 met exactly that with one start, and a loaded run of eight at
/// once met it too: the committer's sync can end before a busy worker gets to ask). So starts go
/// in waves of eight, each start in a trace of its own, until the collector has a wait of ours
/// (the host exports every 100 ms here, `OTEL_BSP_SCHEDULE_DELAY`); every traced start is then
/// checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_traced_from_the_door_to_the_store() {
    const AT_ONCE: usize = 8;
    const WAVES: usize = 40;
    let (collector, received) = receiver().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let host = ProcessHost::serve_with_env(
        &dir.path().join("data"),
        &plugins_dist(),
        &["--otlp-endpoint", &collector],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    let mut traced: Vec<(String, String)> = Vec::new();
    for _ in 0..WAVES {
        let wave: Vec<(String, String)> = (0..AT_ONCE).map(|_| (hex_id(16), hex_id(8))).collect();
        let starts = wave
            .iter()
            .map(|(trace, parent)| traced_start(host.rpc("echo"), trace, parent, "hello traces"));
        futures::future::join_all(starts).await;
        traced.extend(wave);
        // Two export periods and then some: a wait of this wave has reached the collector.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let ours: std::collections::HashSet<Vec<u8>> =
            traced.iter().map(|(trace, _)| bytes_of(trace)).collect();
        let waited = received
            .spans()
            .iter()
            .any(|(_, s)| s.name == "store.wait_durable" && ours.contains(&s.trace_id));
        if waited {
            break;
        }
    }
    tokio::task::spawn_blocking(move || host.stop())
        .await
        .expect("stopping the host");

    let all = received.spans();
    assert!(
        all.iter().all(|(service, _)| service == "aiphost"),
        "OTEL_SERVICE_NAME unset: the service is aiphost"
    );
    let rounds: Vec<&Span> = all
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.name == "store.commit")
        .collect();
    assert!(
        rounds.iter().all(|r| r.parent_span_id.is_empty()),
        "store.commit rounds are roots"
    );
    let mut waited = 0;
    for (trace, parent) in &traced {
        let trace_id = bytes_of(trace);
        let ours: Vec<&Span> = all
            .iter()
            .map(|(_, s)| s)
            .filter(|s| s.trace_id == trace_id)
            .collect();
        let request = only(&ours, "request");
        assert_eq!(request.parent_span_id, bytes_of(parent), "{request:#?}");
        for (key, value) in [
            ("door", "aip"),
            ("agent", "echo"),
            ("method", "POST"),
            ("route", "/agents/{agent}/rpc"),
            ("status", "200"),
        ] {
            assert_eq!(
                attribute(request, key).as_deref(),
                Some(value),
                "{key} of {request:#?}"
            );
        }
        let command = only(&ours, "engine.command");
        assert_eq!(command.parent_span_id, request.span_id, "{command:#?}");
        assert_eq!(attribute(command, "command").as_deref(), Some("start"));
        let invocation = only(&ours, "invocation");
        assert_eq!(
            invocation.parent_span_id, command.span_id,
            "{invocation:#?}"
        );
        assert_eq!(attribute(invocation, "agent").as_deref(), Some("echo"));
        assert_eq!(attribute(invocation, "version").as_deref(), Some("0"));

        // Every wait for the store is in the request's trace, under the command or its
        // invocation, and linked to the round that made its write durable.
        for wait in ours.iter().filter(|s| s.name == "store.wait_durable") {
            waited += 1;
            assert!(
                wait.parent_span_id == command.span_id || wait.parent_span_id == invocation.span_id,
                "{wait:#?}"
            );
            assert!(
                wait.links.iter().any(|link| rounds
                    .iter()
                    .any(|r| r.span_id == link.span_id && r.trace_id == link.trace_id)),
                "a link to a store.commit round: {wait:#?}"
            );
        }
    }
    assert!(
        waited > 0,
        "no start of {} in waves of {AT_ONCE} waited for the store",
        traced.len()
    );
}

/// One access line per request, target `access`: method, the matched route, status, latency,
/// door, partner and request id; never the query string, nor the bearer token sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_has_an_access_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let host = ProcessHost::start(&dir.path().join("data"), &[]);
    let secret = format!("secret-{}", uuid());
    let task = format!("task-{}", uuid());
    let response = reqwest::Client::new()
        .post(format!("{}?access_token={secret}", host.rpc("echo")))
        .bearer_auth(&secret)
        .json(&v2("start", &task, text("hello access"), json!({})))
        .send()
        .await
        .expect("the start");
    let status = response.status().as_u16();
    let missing = reqwest::get(format!("{}/no/such/route?{secret}", host.url))
        .await
        .expect("a 404");
    assert_eq!(missing.status(), 404);
    // Written as the response's head leaves: give the log a moment to reach the file.
    let mut log = String::new();
    for _ in 0..50 {
        log = host.log();
        if log.matches(" access: ").count() >= 2 && log.contains("route=-") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.stop();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(" access: ")).collect();
    let rpc = lines
        .iter()
        .find(|l| l.contains("route=/agents/{agent}/rpc"))
        .unwrap_or_else(|| panic!("an access line of the start: {log}"));
    for part in [
        "method=POST".to_string(),
        format!("status={status}"),
        "door=aip".into(),
        "agent=echo".into(),
        "latency_ms=".into(),
        "request=".into(),
    ] {
        assert!(rpc.contains(&part), "{part} in {rpc}");
    }
    let fallback = lines
        .iter()
        .find(|l| l.contains("route=-"))
        .unwrap_or_else(|| panic!("an access line of the 404: {log}"));
    assert!(
        fallback.contains("status=404") && fallback.contains("method=GET"),
        "{fallback}"
    );
    assert!(!log.contains(&secret), "the secret reached the log:\n{log}");
    assert!(
        lines.iter().all(|l| !l.contains(&task)),
        "a task id reached an access line:\n{log}"
    );
}

/// A partner's outbound HTTP request carries the trace on: the upstream gets a `traceparent` of
/// the Leader's trace whose parent is the invocation that sent it, from the invocation's first
/// moments and from one busy long enough to run on the guest threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partners_outbound_request_carries_the_trace() {
    use aiphost_tests::tenants::{create_tenant, example_manifest, publish};
    let (collector, received) = receiver().await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let upstream = axum::Router::new().route(
        "/hello",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let record = record.clone();
            async move {
                let parent = headers.get("traceparent").and_then(|v| v.to_str().ok());
                record
                    .lock()
                    .expect("upstream lock")
                    .push(parent.unwrap_or("").to_string());
                "hello"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding the upstream");
    let granted = listener.local_addr().expect("its address").to_string();
    tokio::spawn(async move { axum::serve(listener, upstream).await });
    let dir = tempfile::tempdir().expect("temp dir");
    let host = ProcessHost::start(
        &dir.path().join("data"),
        &[
            "--otlp-endpoint",
            &collector,
            "--outbound-hosts",
            &granted,
            "--outbound-allow-private",
        ],
    );
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let manifest = example_manifest("fetcher", "acme-fetch", "");
    let base = manifest.split("[capabilities]").next().expect("a manifest");
    let manifest = format!("{base}[capabilities]\nhttp = [{granted:?}]\n");
    let wasm = std::fs::read(plugins_dist().join("fetcher/partner.wasm")).expect("fetcher");
    let (status, body) = publish(&host.url, &acme, &manifest, &wasm).await;
    assert_eq!(status, 201, "{body}");

    let mut traces = Vec::new();
    for command in ["get", "after 40 get"] {
        let (trace, parent) = (hex_id(16), hex_id(8));
        let text = format!("{command} http://{granted}/hello");
        traced_start(host.rpc("acme-fetch"), &trace, &parent, &text).await;
        traces.push(trace);
    }
    tokio::task::spawn_blocking(move || host.stop())
        .await
        .expect("stopping the host");

    let seen = seen.lock().expect("upstream lock").clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let all = received.spans();
    for (trace, header) in traces.iter().zip(&seen) {
        let trace_id = bytes_of(trace);
        let ours: Vec<&Span> = all
            .iter()
            .map(|(_, s)| s)
            .filter(|s| s.trace_id == trace_id)
            .collect();
        let invocation = only(&ours, "invocation");
        let span_id: String = invocation
            .span_id
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(header, &format!("00-{trace}-{span_id}-01"), "{ours:#?}");
    }
}
