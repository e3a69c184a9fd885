//! The streaming style (spec 6.2) through real HTTP and a real SSE client, in both dialects.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

fn stream_url(host: &TestHost, agent: &str) -> String {
    format!("{}/agents/{agent}/stream", host.url)
}

fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(event_type).collect()
}

fn assert_strictly_increasing(events: &[Value]) {
    for pair in events.windows(2) {
        assert!(
            seq(&pair[1]) > seq(&pair[0]),
            "eventSeq must increase: {} then {}",
            seq(&pair[0]),
            seq(&pair[1])
        );
    }
}

/// Headers, framing, event types, and the stream staying open until the Leader completes the
/// task on another connection; both dialects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_start_events_and_completion_on_another_connection() {
    let host = TestHost::start(HostOptions::default()).await;
    for (dialect, task_type, status_type) in [
        ("v1", "task", "status-update"),
        ("v2", "task-result", "task-status-update"),
    ] {
        let id = format!("s-{dialect}-{}", uuid());
        let request = stream_request(dialect, "start", &id, text("hello stream"), json!({}));
        let mut stream = SseStream::open(&stream_url(&host, "echo"), &request).await;
        assert_eq!(stream.status, 200);
        assert_eq!(stream.content_type, "text/event-stream");
        assert_eq!(stream.cache_control, "no-cache");
        let mut events = Vec::new();
        while events.last().and_then(event_state).as_deref() != Some("awaiting-completion") {
            let (event, _) = stream
                .next_event(LIMIT)
                .await
                .expect("the stream stays open");
            assert_eq!(
                event["id"], request["id"],
                "every event answers the stream request"
            );
            assert_eq!(event["jsonrpc"], "2.0");
            events.push(event);
        }
        assert_eq!(
            types(&events),
            [task_type, status_type, "product-chunk", status_type],
            "{dialect}"
        );
        assert_eq!(event_state(&events[0]).as_deref(), Some("accepted"));
        assert_eq!(event_state(&events[1]).as_deref(), Some("working"));
        let chunk = &events[2]["result"]["eventData"];
        assert_eq!(chunk["product"]["dataItems"][0]["text"], "hello stream");
        assert_eq!(
            (chunk["append"].as_bool(), chunk["lastChunk"].as_bool()),
            (Some(false), Some(true))
        );
        assert_eq!(chunk["taskId"], id.as_str());
        assert_eq!(chunk["sessionId"], "session-test");
        assert_strictly_increasing(&events);
        if dialect == "v2" {
            for e in &events {
                let data = &e["result"]["eventData"];
                assert_eq!(
                    data["senderRole"], "partner",
                    "v2 events are Messages: {data}"
                );
                assert!(data["id"].as_str().is_some() && data["sentAt"].as_str().is_some());
            }
        }

        // Complete arrives on a new connection: that request gets the final task, and the open
        // stream sends the final status and closes.
        let answer = post(
            &host.rpc("echo"),
            &v2("complete", &id, json!([]), json!({})),
        )
        .await;
        assert_eq!(state(&answer), "completed");
        let rest = stream.until_closed(LIMIT).await;
        assert_eq!(rest.len(), 1, "{rest:?}");
        assert_eq!(event_type(&rest[0]), status_type);
        assert_eq!(event_state(&rest[0]).as_deref(), Some("completed"));
        assert!(seq(&rest[0]) > seq(&events[3]));
    }
}

/// Product chunks reach the client while the partner is still producing the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn product_chunks_arrive_live() {
    let host = TestHost::start(HostOptions::default()).await;
    let params = json!({"size": 500, "chunkSize": 100, "delayMs": 300});
    let request = stream_request(
        "v2",
        "start",
        &format!("live-{}", uuid()),
        text("report"),
        params,
    );
    let mut stream = SseStream::open(&stream_url(&host, "chunked"), &request).await;
    let mut chunks = Vec::new();
    loop {
        let (event, at) = stream.next_event(LIMIT).await.expect("open");
        let resting = event_state(&event).as_deref() == Some("awaiting-completion");
        if event_type(&event) == "product-chunk" {
            chunks.push((event, at));
        }
        if resting {
            break;
        }
    }
    assert_eq!(chunks.len(), 5);
    let flags: Vec<(bool, bool)> = chunks
        .iter()
        .map(|(e, _)| {
            let d = &e["result"]["eventData"];
            (
                d["append"].as_bool().unwrap(),
                d["lastChunk"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        [
            (false, false),
            (true, false),
            (true, false),
            (true, false),
            (true, true)
        ]
    );
    // The partner pauses 300 ms between chunks: the first chunk was in the client's hands four
    // pauses (1.2 s) before the last was produced. Without live delivery they would arrive together.
    let spread = chunks[4].1.duration_since(chunks[0].1);
    assert!(
        spread >= Duration::from_millis(900),
        "chunks arrived within {spread:?} of each other"
    );
}

/// Rejected and failed end the stream after the final event; a cancel sent with the stream
/// method closes the task's other streams too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_close_on_rejected_failed_and_cancel() {
    let host = TestHost::start(HostOptions::default()).await;
    let request = stream_request(
        "v1",
        "start",
        "rejected-1",
        json!([{"type": "data", "data": {"x": 1}}]),
        json!({}),
    );
    let events = SseStream::open(&stream_url(&host, "stats"), &request)
        .await
        .until_closed(LIMIT)
        .await;
    assert_eq!(types(&events), ["task"]);
    assert_eq!(event_state(&events[0]).as_deref(), Some("rejected"));

    let request = stream_request("v2", "start", "failed-1", text("panic"), json!({}));
    let events = SseStream::open(&stream_url(&host, "hostile"), &request)
        .await
        .until_closed(LIMIT)
        .await;
    let states: Vec<_> = events.iter().filter_map(event_state).collect();
    assert_eq!(states, ["accepted", "working", "failed"]);

    let id = format!("cancel-{}", uuid());
    let start = stream_request("v2", "start", &id, text("trip"), json!({}));
    let mut first = SseStream::open(&stream_url(&host, "trip-planner"), &start).await;
    let mut seen = Vec::new();
    while seen.last().and_then(event_state).as_deref() != Some("awaiting-input") {
        seen.push(first.next_event(LIMIT).await.expect("open").0);
    }
    let cancel = stream_request("v2", "cancel", &id, json!([]), json!({}));
    let answer = SseStream::open(&stream_url(&host, "trip-planner"), &cancel)
        .await
        .until_closed(LIMIT)
        .await;
    assert_eq!(answer.len(), 1);
    assert_eq!(event_state(&answer[0]).as_deref(), Some("canceled"));
    let rest = first.until_closed(LIMIT).await;
    assert_eq!(
        rest,
        answer
            .iter()
            .map(|e| with_id(e, &start["id"]))
            .collect::<Vec<_>>()
    );
}

/// The same event as another stream request would see it.
fn with_id(event: &Value, id: &Value) -> Value {
    let mut e = event.clone();
    e["id"] = id.clone();
    e
}

/// Several streams on one task see identical events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_streams_see_identical_events() {
    let host = TestHost::start(HostOptions::default()).await;
    for dialect in ["v1", "v2"] {
        let id = format!("fan-{dialect}-{}", uuid());
        let answer = post(
            &host.rpc("chunked"),
            &v2("start", &id, text("size=10 chunkSize=10"), json!({})),
        )
        .await;
        assert_eq!(state(&answer), "awaiting-completion");
        let restream = stream_request(
            dialect,
            "re-stream",
            &id,
            json!([]),
            json!({"lastEventSeq": null}),
        );
        let mut streams = Vec::new();
        for _ in 0..3 {
            streams.push(SseStream::open(&stream_url(&host, "chunked"), &restream).await);
        }
        post(
            &host.rpc("chunked"),
            &v2(
                "continue",
                &id,
                text("size=300 chunkSize=100 delayMs=50"),
                json!({}),
            ),
        )
        .await;
        post(
            &host.rpc("chunked"),
            &v2("complete", &id, json!([]), json!({})),
        )
        .await;
        let mut seen = Vec::new();
        for stream in &mut streams {
            seen.push(stream.until_closed(LIMIT).await);
        }
        assert!(seen[0].len() >= 10, "{dialect}: {:?}", types(&seen[0]));
        assert_eq!(seen[0], seen[1], "{dialect}");
        assert_eq!(seen[1], seen[2], "{dialect}");
        assert_strictly_increasing(&seen[0]);
    }
}

/// re-stream replays what follows `lastEventSeq` and goes on live with no gap and no duplicate,
/// while the partner keeps emitting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restream_switches_from_replay_to_live_without_gap_or_duplicate() {
    let host = TestHost::start(HostOptions::default()).await;
    let id = format!("gapless-{}", uuid());
    let params = json!({"size": 6000, "chunkSize": 50, "delayMs": 4, "responseTimeout": 50});
    let answer = post(&host.rpc("chunked"), &v2("start", &id, text("go"), params)).await;
    assert_eq!(state(&answer), "working", "the partner is still emitting");
    // Reconnect at several points while the 120 chunks are being produced.
    let mut streams = Vec::new();
    for (i, last) in [json!(null), json!(0), json!(1), json!(3)]
        .into_iter()
        .enumerate()
    {
        tokio::time::sleep(Duration::from_millis(60 * i as u64)).await;
        let request = stream_request(
            "v2",
            "re-stream",
            &id,
            json!([]),
            json!({"lastEventSeq": last.clone()}),
        );
        streams.push((
            last.as_u64().unwrap_or(0),
            SseStream::open(&stream_url(&host, "chunked"), &request).await,
        ));
    }
    wait_for_state(&host.rpc("chunked"), &id, "awaiting-completion", LIMIT).await;
    post(
        &host.rpc("chunked"),
        &v2("complete", &id, json!([]), json!({})),
    )
    .await;
    let mut last_seqs = HashSet::new();
    for (after, mut stream) in streams {
        let events = stream.until_closed(LIMIT).await;
        let seqs: Vec<u64> = events.iter().map(seq).collect();
        let expected: Vec<u64> = (after + 1..=after + seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "events after {after}: no gap, no duplicate");
        assert_eq!(
            event_state(events.last().unwrap()).as_deref(),
            Some("completed")
        );
        last_seqs.insert(*seqs.last().unwrap());
        let chunks = events
            .iter()
            .filter(|e| event_type(e) == "product-chunk")
            .count();
        assert!(chunks >= 117, "chunks seen after {after}: {chunks}");
    }
    assert_eq!(last_seqs.len(), 1, "every stream ends on the same event");
}

/// re-stream of an ended task sends what remains and closes; bad or unavailable requests get a
/// JSON-RPC error before any stream starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restream_of_ended_tasks_and_errors() {
    let host = TestHost::start(HostOptions {
        event_retention_count: 5,
        ..HostOptions::default()
    })
    .await;
    let url = stream_url(&host, "hostile");
    post(
        &host.rpc("hostile"),
        &v2("start", "ended", text("panic"), json!({})),
    )
    .await;
    let all = SseStream::open(
        &url,
        &stream_request("v1", "re-stream", "ended", json!([]), json!({})),
    )
    .await
    .until_closed(LIMIT)
    .await;
    assert_eq!(all.iter().map(seq).collect::<Vec<_>>(), [1, 2, 3]);
    let rest = SseStream::open(
        &url,
        &stream_request(
            "v1",
            "re-stream",
            "ended",
            json!([]),
            json!({"lastEventSeq": 1}),
        ),
    )
    .await
    .until_closed(LIMIT)
    .await;
    assert_eq!(rest.iter().map(seq).collect::<Vec<_>>(), [2, 3]);
    let none = SseStream::open(
        &url,
        &stream_request(
            "v1",
            "re-stream",
            "ended",
            json!([]),
            json!({"lastEventSeq": 3}),
        ),
    )
    .await
    .until_closed(LIMIT)
    .await;
    assert!(none.is_empty());

    let errors = [
        (
            stream_request("v2", "re-stream", "nobody", json!([]), json!({})),
            -32001,
        ),
        (
            stream_request(
                "v2",
                "re-stream",
                "ended",
                json!([]),
                json!({"lastEventSeq": 9}),
            ),
            -32602,
        ),
        (
            stream_request(
                "v2",
                "re-stream",
                "ended",
                json!([]),
                json!({"lastEventSeq": "x"}),
            ),
            -32602,
        ),
    ];
    for (request, code) in errors {
        let stream = SseStream::open(&url, &request).await;
        assert_eq!(stream.content_type, "application/json");
        let answer = stream.json.clone().expect("a JSON-RPC error");
        assert_eq!(error_code(&answer), code, "{answer}");
        assert_eq!(answer["id"], request["id"]);
    }

    // Retention keeps the newest 5 events: older ones are gone, and asking for them says so.
    post(
        &host.rpc("chunked"),
        &v2("start", "long", text("size=100 chunkSize=10"), json!({})),
    )
    .await;
    let request = stream_request(
        "v2",
        "re-stream",
        "long",
        json!([]),
        json!({"lastEventSeq": 0}),
    );
    let answer = SseStream::open(&stream_url(&host, "chunked"), &request)
        .await
        .json
        .clone()
        .expect("an error");
    assert_eq!(error_code(&answer), -32001);
    assert_eq!(answer["error"]["data"]["oldestAvailableSeq"], 9);
    let request = stream_request(
        "v2",
        "re-stream",
        "long",
        json!([]),
        json!({"lastEventSeq": 8}),
    );
    let mut stream = SseStream::open(&stream_url(&host, "chunked"), &request).await;
    let mut seqs = Vec::new();
    while seqs.len() < 5 {
        seqs.push(seq(&stream.next_event(LIMIT).await.expect("open").0));
    }
    assert_eq!(seqs, [9, 10, 11, 12, 13]);
}

/// Idle streams get keep-alive comments; a client that goes away is forgotten at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_and_disconnect() {
    let host = TestHost::start(HostOptions {
        sse_keep_alive: Duration::from_millis(200),
        ..HostOptions::default()
    })
    .await;
    let request = stream_request("v2", "start", "idle", text("a trip"), json!({}));
    let mut stream = SseStream::open(&stream_url(&host, "trip-planner"), &request).await;
    let mut comments = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while comments < 3 && std::time::Instant::now() < deadline {
        if let Ok(Some(Frame::Comment(text))) =
            tokio::time::timeout(Duration::from_secs(1), stream.frames.recv()).await
        {
            assert_eq!(text, "keep-alive");
            comments += 1;
        }
    }
    assert_eq!(comments, 3, "keep-alive comments on an idle stream");
    assert_eq!(open_streams(&host).await, 1);
    drop(stream);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while open_streams(&host).await != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the stream of a gone client is still open"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn open_streams(host: &TestHost) -> u64 {
    metric(&host.url, "aiphost_open_streams").await
}

/// get and continue with the stream method.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_continue_over_stream() {
    let host = TestHost::start(HostOptions::default()).await;
    let url = stream_url(&host, "trip-planner");
    post(
        &host.rpc("trip-planner"),
        &v2("start", "sg", text("destination: Oslo"), json!({})),
    )
    .await;
    let got = SseStream::open(
        &url,
        &stream_request("v2", "get", "sg", json!([]), json!({})),
    )
    .await
    .until_closed(LIMIT)
    .await;
    assert_eq!(got.len(), 1);
    assert_eq!(event_type(&got[0]), "task-result");
    assert_eq!(seq(&got[0]), 3, "the snapshot is as of the newest event");
    assert!(got[0]["result"]["eventData"]["commandHistory"].is_array());
    let mut cont = SseStream::open(
        &url,
        &stream_request(
            "v2",
            "continue",
            "sg",
            text("dates: 2025-10-01 to 2025-10-02, budget: 900"),
            json!({}),
        ),
    )
    .await;
    let mut states = Vec::new();
    while states.last().map(String::as_str) != Some("awaiting-completion") {
        let (event, _) = cont.next_event(LIMIT).await.expect("open");
        assert!(seq(&event) > 3, "only what the continue caused");
        states.extend(event_state(&event));
    }
    assert_eq!(states, ["working", "awaiting-completion"]);
}

/// The events of an ended task are dropped once its retention age passes; the task stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_ended_tasks_expire_by_age() {
    let host = TestHost::start(HostOptions {
        event_retention_ms: 400,
        ..HostOptions::default()
    })
    .await;
    post(
        &host.rpc("echo"),
        &v2("start", "aged", text("x"), json!({})),
    )
    .await;
    let waiting = stream_request("v2", "re-stream", "aged", json!([]), json!({}));
    let open = SseStream::open(&stream_url(&host, "echo"), &waiting).await;
    assert_eq!(
        open.content_type, "text/event-stream",
        "a task that has not ended keeps its events"
    );
    drop(open);
    post(
        &host.rpc("echo"),
        &v2("complete", "aged", json!([]), json!({})),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stream = SseStream::open(&stream_url(&host, "echo"), &waiting).await;
        if let Some(answer) = &stream.json {
            assert_eq!(error_code(answer), -32001);
            assert!(
                answer["error"]["data"]["details"]
                    .as_str()
                    .unwrap()
                    .contains("retention")
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the events never expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answer = post(&host.rpc("echo"), &v2("get", "aged", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "the task itself is kept");
}
