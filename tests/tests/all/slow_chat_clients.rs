//! Slow clients at the two chat doors — the Agent API (`POST /agents/{id}/process`) and AIFlowy
//! chat (`POST /agents/{id}/aiflowy/chat`, `…/aiflowy/form`) — with the concierge, as
//! `slow_clients.rs` shows them at AIP and A2A: a client that stops reading a long turn is cut
//! after the write timeout, its stream freed, its task ending on its own and its session free
//! for the next turn; a body that does not arrive within the body timeout gets the door's 408
//! JSON and leaves no task behind; a slow turn read by its client outlives every timeout. Every
//! host runs with timeouts of a fraction of a second, so each test ends in a few seconds.

use aiphost::transport::connections::HttpLimits;
use aiphost_tests::raw::{authority, connect, json_body, read_response, until_closed};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Long enough never to fire in a test that is about another limit.
pub(super) const NEVER: Duration = Duration::from_secs(30);
pub(super) const WAIT: Duration = Duration::from_secs(20);

pub(super) fn limits(
    header: Duration,
    body: Duration,
    idle: Duration,
    write: Duration,
) -> HttpLimits {
    HttpLimits {
        header_timeout: header,
        body_timeout: body,
        idle_timeout: idle,
        write_timeout: write,
        max_connections: 1000,
    }
}

/// One of the two chat doors, as a client speaks to it.
#[derive(Clone, Copy, Debug)]
enum Door {
    AgentApi,
    Aiflowy,
}

impl Door {
    /// The path of a turn at the concierge.
    fn path(self) -> &'static str {
        match self {
            Door::AgentApi => "/agents/concierge/process",
            Door::Aiflowy => "/agents/concierge/aiflowy/chat",
        }
    }

    /// A turn saying `words` in `session` (the Agent API's `session_id`, AIFlowy's
    /// `conversation_id`).
    fn say(self, words: &str, session: &str) -> Value {
        match self {
            Door::AgentApi => json!({"session_id": session, "input": [{"role": "user",
                "type": "message", "content": [{"type": "text", "text": words}]}]}),
            Door::Aiflowy => json!({"prompt": words, "conversation_id": session, "botId": 1,
                "messages": []}),
        }
    }

    /// The task a turn's stream names, found in its raw bytes (the Agent API's
    /// `metadata["aiphost.taskId"]` on its first response event, AIFlowy's `message_id`).
    fn task_in(self, raw: &[u8]) -> Option<String> {
        let key = match self {
            Door::AgentApi => "\"aiphost.taskId\":\"",
            Door::Aiflowy => "\"message_id\":\"",
        };
        let text = String::from_utf8_lossy(raw);
        let start = text.find(key)? + key.len();
        let end = text[start..].find('"')?;
        Some(text[start..start + end].to_string())
    }

    /// Whether a turn's events (`(SSE name, data)`, in order) end it as answered: the Agent
    /// API's last response `completed`, AIFlowy's `done` after no `error`.
    fn answered(self, events: &[(Option<String>, Value)]) -> bool {
        match self {
            Door::AgentApi => events
                .last()
                .is_some_and(|(_, e)| e["object"] == "response" && e["status"] == "completed"),
            Door::Aiflowy => {
                events
                    .last()
                    .is_some_and(|(n, _)| n.as_deref() == Some("done"))
                    && !events.iter().any(|(n, _)| n.as_deref() == Some("error"))
            }
        }
    }

    /// Whether the raw bytes of a stream hold the event that ends an answered turn.
    fn ended_in(self, raw: &[u8]) -> bool {
        let text = String::from_utf8_lossy(raw);
        match self {
            // The final response is the only event with `completed_at`.
            Door::AgentApi => text.contains("\"completed_at\""),
            Door::Aiflowy => text.contains("event: done"),
        }
    }
}

/// Every event of a turn until the host closes its stream: `(event name, data)`.
async fn turn(host: &TestHost, door: Door, body: &Value) -> Vec<(Option<String>, Value)> {
    let mut stream = SseStream::open(&format!("{}{}", host.url, door.path()), body).await;
    assert_eq!(stream.status, 200, "{door:?}: {:?}", stream.json);
    let deadline = Instant::now() + WAIT;
    let mut events = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.frames.recv()).await {
            Ok(Some(Frame::Event { event, data, .. })) => events.push((event, data)),
            Ok(Some(Frame::Comment(_))) => {}
            Ok(None) => return events,
            Err(_) => panic!("{door:?}: the turn did not end within {WAIT:?}: {events:#?}"),
        }
    }
}

/// The request head and body of a POST of `body` as JSON to `path`.
fn post_request(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// Wait until the host's gauge of open event streams is `wanted`: when it got there.
pub(super) async fn open_streams_reach(host: &TestHost, wanted: u64, limit: Duration) -> Instant {
    let deadline = Instant::now() + limit;
    loop {
        let open = metric(&host.url, "aiphost_open_streams").await;
        if open == wanted {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "{open} event streams open after {limit:?}, not {wanted}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---- a client that stops reading ----

/// How many words the long turn's prompt has (each one answer delta of the concierge, which
/// echoes its text word by word), and how long each is: two thousand deltas, under the task's
/// cap of 4096 activity events, some 700 KB of events at either door. (Small deltas: a followed
/// task is written change by change, each change with the answer so far, so large ones make a
/// turn slow before it is long.)
pub(super) const LONG_WORDS: usize = 2000;
pub(super) const WORD_BYTES: usize = 16;

/// A connection to the host at `url` as a client on a slow link has it: a small receive window,
/// and small segments. (On loopback a segment is 64 KiB, and the host's send buffer grows to
/// hold ten of them; with 536-byte segments it stays a few KiB, so a turn of a few hundred KB
/// is far more than the sockets between host and client hold.)
pub(super) async fn slow_link(url: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small window");
    socket2::SockRef::from(&socket)
        .set_tcp_mss(536)
        .expect("small segments");
    socket
        .connect(authority(url).parse().expect("an address"))
        .await
        .expect("connect")
}

/// A client that sends a long turn and reads nothing is cut after the write timeout: the host
/// drops its stream (the open-stream gauge falls to zero while the client still reads nothing,
/// so the one batch the feed loop held is freed) and closes the connection before the turn's
/// end was delivered. The task ends on its own (readable over AIP `get`), and the session is
/// not left busy: the next turn in it is answered.
async fn a_client_that_stops_reading_is_cut(door: Door) {
    let write = Duration::from_millis(500);
    let host = TestHost::start(HostOptions {
        http: limits(NEVER, NEVER, NEVER, write),
        ..HostOptions::default()
    })
    .await;
    let session = format!("s-{}", uuid());
    let word = "w".repeat(WORD_BYTES - 1);
    let words = vec![word.as_str(); LONG_WORDS].join(" ");
    let body = door.say(&words, &session).to_string();

    // Never a read until the host has given up on the client.
    let stream = slow_link(&host.url).await;
    let (mut reader, mut writer) = stream.into_split();
    let request = post_request(door.path(), body.as_bytes());
    let writing = tokio::spawn(async move {
        writer.write_all(&request).await.expect("the request sent");
        writer
    });
    let opened = open_streams_reach(&host, 1, WAIT).await;
    // The turn's events fill the sockets in a second or two, then the write timeout runs; the
    // rest of the margin is for a loaded machine.
    let freed = open_streams_reach(&host, 0, write + Duration::from_secs(15)).await;
    let stalled_for = freed - opened;
    eprintln!("{door:?}: the stream was open {stalled_for:?} with its client not reading");
    assert!(
        stalled_for >= write - Duration::from_millis(50),
        "{door:?}: freed after {stalled_for:?}, before the write timeout"
    );
    // Now reading: what the sockets held, then the end of the connection, without the turn's
    // end (an idle connection is not closed before NEVER).
    let (got, closed) = until_closed(&mut reader, Duration::from_secs(10)).await;
    eprintln!("{door:?}: {} bytes were in the sockets", got.len());
    assert!(closed.is_some(), "{door:?}: the connection is closed");
    assert!(
        String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"),
        "{door:?}: {:?}",
        String::from_utf8_lossy(&got[..got.len().min(300)])
    );
    assert!(
        !door.ended_in(&got),
        "{door:?}: the whole turn ({} bytes) was delivered: the client was never cut",
        got.len()
    );
    let _ = writing.await;

    // The task ended on its own: the concierge rests it once it has echoed everything, and the
    // chat doors' tasks complete on their result.
    let task = door.task_in(&got).expect("the stream names its task");
    let got = wait_for_state(&host.rpc("concierge"), &task, "completed", WAIT).await;
    let answer: usize = result(&got)["products"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["id"] == "answer")
        .flat_map(|p| p["dataItems"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i["text"].as_str().map(str::len))
        .sum();
    assert_eq!(
        answer,
        words.len(),
        "{door:?}: the whole answer is the task's"
    );

    // The session is free: the next turn in it is answered, not refused as busy.
    let next = turn(&host, door, &door.say("hello again", &session)).await;
    assert!(door.answered(&next), "{door:?}: {next:#?}");
    // And the host serves others as before.
    let other = turn(&host, door, &door.say("hello", &format!("s-{}", uuid()))).await;
    assert!(door.answered(&other), "{door:?}: {other:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_api_clients_that_stop_reading_are_cut_after_the_write_timeout() {
    a_client_that_stops_reading_is_cut(Door::AgentApi).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aiflowy_clients_that_stop_reading_are_cut_after_the_write_timeout() {
    a_client_that_stops_reading_is_cut(Door::Aiflowy).await;
}

// ---- slow bodies ----

/// At every chat route, a body that stops coming (sent in part, then nothing) and one dribbled
/// a byte at a time are both answered 408 with the door's JSON error and the timeout, after the
/// body timeout; the connection is closed, and no task was started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_at_the_chat_doors_get_408_and_leave_no_task() {
    let body_timeout = Duration::from_millis(500);
    let host = TestHost::start(HostOptions {
        http: limits(NEVER, body_timeout, NEVER, NEVER),
        list_tasks_on: vec!["concierge".into()],
        ..HostOptions::default()
    })
    .await;
    let routes = [
        "/agents/concierge/process",
        "/agents/concierge/aiflowy/chat",
        "/agents/concierge/aiflowy/form",
    ];
    for path in routes {
        for dribbled in [false, true] {
            let what = if dribbled { "dribbled" } else { "stalled" };
            let mut c = connect(&host.url).await;
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
                 Content-Length: 1000\r\n\r\n"
            );
            c.write_all(head.as_bytes()).await.expect("a head");
            c.write_all(b"{\"prompt\":").await.expect("a start");
            let started = Instant::now();
            let mut answer = Vec::new();
            let mut buf = [0u8; 4096];
            // The dribbler sends a byte every 50 ms (never enough to end its body); both read
            // until the host closes.
            let closed = loop {
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "{path} ({what}): still open after {:?}: {}",
                    started.elapsed(),
                    String::from_utf8_lossy(&answer)
                );
                tokio::select! {
                    read = c.read(&mut buf) => match read {
                        Ok(0) | Err(_) => break Instant::now(),
                        Ok(n) => answer.extend_from_slice(&buf[..n]),
                    },
                    _ = tokio::time::sleep(Duration::from_millis(50)), if dribbled => {
                        let _ = c.write_all(b" ").await;
                    }
                }
            };
            let (status, head, body) = read_response(
                &mut std::io::Cursor::new(answer.clone()),
                Duration::from_secs(1),
            )
            .await;
            let error = json_body(&head, &body);
            assert_eq!(status, 408, "{path} ({what}): {error}");
            assert_eq!(error["error"]["code"], "INVALID_REQUEST", "{path}: {error}");
            assert_eq!(error["error"]["timeoutMs"], 500, "{path}: {error}");
            assert!(
                closed - started >= body_timeout - Duration::from_millis(50),
                "{path} ({what}): answered after {:?}, before the body timeout",
                closed - started
            );
        }
    }

    // No task was started by any of them.
    let listed = aiphost_tests::a2a::call(&host, "concierge", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    assert_eq!(metric(&host.url, "aiphost_open_streams").await, 0);
    // The doors answer as before.
    let session = format!("s-{}", uuid());
    for door in [Door::AgentApi, Door::Aiflowy] {
        let events = turn(
            &host,
            door,
            &door.say("hello", &format!("{session}-{door:?}")),
        )
        .await;
        assert!(door.answered(&events), "{door:?}: {events:#?}");
    }
    let listed = aiphost_tests::a2a::call(&host, "concierge", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 2, "{listed}");
}

// ---- slow turns read by their clients ----

/// A turn whose answer comes slowly (the concierge's `slow`: 20 deltas 250 ms apart, with no
/// keep-alive between them) to a client that reads it stays open however long it lasts: every
/// timeout is shorter than one pause, none cuts it, and it ends with the whole answer.
async fn a_slow_turn_outlives_every_timeout(door: Door) {
    let short = Duration::from_millis(100);
    let host = TestHost::start(HostOptions {
        // Longer than the pauses: nothing at all is sent during one.
        sse_keep_alive: Duration::from_secs(5),
        http: limits(short, short, short, short),
        ..HostOptions::default()
    })
    .await;
    let started = Instant::now();
    let events = turn(
        &host,
        door,
        &door.say("slow count", &format!("s-{}", uuid())),
    )
    .await;
    let took = started.elapsed();
    assert!(door.answered(&events), "{door:?}: {events:#?}");
    let deltas: String = events
        .iter()
        .filter_map(|(_, e)| match door {
            Door::AgentApi => (e["object"] == "content" && e["delta"] == true)
                .then(|| e["text"].as_str())
                .flatten(),
            Door::Aiflowy => (e["domain"] == "llm" && e["type"] == "message")
                .then(|| e["payload"]["delta"].as_str())
                .flatten(),
        })
        .collect();
    let counted: Vec<String> = (1..=20).map(|n| n.to_string()).collect();
    assert_eq!(
        deltas.split_whitespace().collect::<Vec<_>>(),
        counted,
        "{door:?}: {events:#?}"
    );
    // 19 pauses of 250 ms: many times every timeout.
    assert!(took > short * 40, "{door:?}: the turn took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_agent_api_turns_outlive_every_timeout() {
    a_slow_turn_outlives_every_timeout(Door::AgentApi).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_aiflowy_turns_outlive_every_timeout() {
    a_slow_turn_outlives_every_timeout(Door::Aiflowy).await;
}
