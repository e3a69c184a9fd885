//! Streaming against the `aiphost` binary: the event log survives SIGKILL, a client that reads
//! nothing cannot make the host's memory grow, and `aiphost call` prints events as they arrive.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

fn stream_url(host: &ProcessHost, agent: &str) -> String {
    format!("{}/agents/{agent}/stream", host.url)
}

/// After SIGKILL a re-stream replays every event sent before the crash, identically, and
/// `eventSeq` goes on increasing across the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_log_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &[]);
    let id = "crash-stream";
    let start = stream_request("v2", "start", id, text("destination: Lisbon"), json!({}));
    let mut stream = SseStream::open(&stream_url(&host, "trip-planner"), &start).await;
    let mut before = Vec::new();
    while before.len() < 3 {
        before.push(stream.next_event(LIMIT).await.expect("open").0);
    }
    post(
        &host.rpc("trip-planner"),
        &v2(
            "continue",
            id,
            text("dates: 2025-10-01 to 2025-10-03"),
            json!({}),
        ),
    )
    .await;
    while before.len() < 5 {
        before.push(stream.next_event(LIMIT).await.expect("open").0);
    }
    assert_eq!(before.iter().map(seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    drop(stream);
    host.kill();

    let host = ProcessHost::start(&data, &[]);
    let restream = stream_request(
        "v2",
        "re-stream",
        id,
        json!([]),
        json!({"lastEventSeq": null}),
    );
    let mut stream = SseStream::open(&stream_url(&host, "trip-planner"), &restream).await;
    let mut after = Vec::new();
    while after.len() < 5 {
        let (mut event, _) = stream.next_event(LIMIT).await.expect("open");
        event["id"] = start["id"].clone();
        after.push(event);
    }
    assert_eq!(
        after, before,
        "the same events, byte for byte, after the crash"
    );
    post(
        &host.rpc("trip-planner"),
        &v2("continue", id, text("budget: 2000"), json!({})),
    )
    .await;
    let (next, _) = stream
        .next_event(LIMIT)
        .await
        .expect("the re-stream goes on live");
    assert_eq!(seq(&next), 6, "eventSeq continues across the restart");
    host.kill();
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .expect("VmRSS")
}

/// The same workload — continues of a task whose report streams as 4 chunks of 128 KiB —
/// followed by a stream that never reads (`silent_follower`) or by one that reads everything.
/// (A followed task is written change by change; comparing with a task nobody follows, whose
/// invocation's changes are written together, would compare two write patterns instead of two
/// readers.) The first `WARM_UP` continues bring the host to its plateau (sled's cache, the
/// allocator's arenas: 15-30 MiB, varying from process to process by as much as a leak would
/// show, so measured from the start the comparison failed now and then); the growth measured
/// is over the `MEASURED` continues after them, 48 MiB of events, which a host keeping unread
/// events would grow by. Returns that growth in KiB, and leaves the host running with the
/// silent follower's socket for more checks.
async fn rss_growth_with(
    silent_follower: bool,
) -> (
    u64,
    ProcessHost,
    Option<std::net::TcpStream>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(&dir.path().join("data"), &["--store-cache-mib", "8"]);
    let pid = host.child.id();
    let rpc = host.rpc("chunked");
    let report = "size=524288 chunkSize=131072";
    post(&rpc, &v2("start", "flood", text(report), json!({}))).await;
    let port: u16 = host.url.rsplit(':').next().unwrap().parse().unwrap();
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = stream_request("v2", "re-stream", "flood", json!([]), json!({})).to_string();
    write!(
        socket,
        "POST /agents/chunked/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let silent = if silent_follower {
        Some(socket)
    } else {
        // The reading follower drains its socket until the host goes away.
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while matches!(socket.read(&mut buf), Ok(n) if n > 0) {}
        });
        None
    };
    const WARM_UP: usize = 48;
    const MEASURED: usize = 96;
    for _ in 0..WARM_UP {
        post(&rpc, &v2("continue", "flood", text(report), json!({}))).await;
    }
    let before = rss_kib(pid);
    // Sampled every 16 continues, for the log: where the growth happens when it fails.
    let mut samples = Vec::new();
    for i in 0..MEASURED {
        let answer = post(&rpc, &v2("continue", "flood", text(report), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion");
        if i % 16 == 15 {
            samples.push(rss_kib(pid) / 1024);
        }
    }
    let after = rss_kib(pid);
    eprintln!(
        "silent follower: {silent_follower}; host RSS {before} KiB -> {after} KiB (MiB every 16 continues: {samples:?})"
    );
    (after.saturating_sub(before), host, silent, dir)
}

/// A client that reads nothing cannot make the host's memory grow: with 48 MiB of events unread
/// by it, the host grows no more than with a client that reads them all (the stream reads the log
/// only as its socket drains). The client can catch up through re-stream, and closing it frees
/// the stream at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_nothing_cannot_grow_the_host() {
    let (control, control_host, _, _control_dir) = rss_growth_with(false).await;
    control_host.kill();
    let (grown, host, silent, _dir) = rss_growth_with(true).await;
    assert!(
        grown <= control + 16 * 1024,
        "with a silent follower the host grew {} MiB, with a reading one {} MiB",
        grown / 1024,
        control / 1024
    );

    // The reader catches up through re-stream: the events are in the log.
    let request = stream_request(
        "v2",
        "re-stream",
        "flood",
        json!([]),
        json!({"lastEventSeq": 600}),
    );
    let mut catch_up = SseStream::open(&stream_url(&host, "chunked"), &request).await;
    let (first, _) = catch_up.next_event(LIMIT).await.expect("open");
    assert_eq!(seq(&first), 601);
    drop(catch_up);

    drop(silent);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if metric(&host.url, "aiphost_open_streams").await == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "streams still open after their clients left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.kill();
}

/// `aiphost call stream` and `call re-stream` print each event as it arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_prints_events_as_they_arrive() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(&dir.path().join("data"), &[]);
    let base = format!("{}/agents/chunked", host.url);
    let mut child = tokio::process::Command::new(aiphost_bin())
        .args([
            "call",
            &base,
            "stream",
            "--task",
            "cli-s",
            "--text",
            "size=400 chunkSize=100 delayMs=300",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    while printed.len() < 7 {
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("a line");
        let event: Value = serde_json::from_str(&line).unwrap();
        printed.push((event, Instant::now()));
    }
    let kinds: Vec<String> = printed.iter().map(|(e, _)| event_type(e)).collect();
    assert_eq!(kinds[2..6], ["product-chunk"; 4]);
    let spread = printed[5].1.duration_since(printed[2].1);
    assert!(
        spread >= Duration::from_millis(600),
        "printed as they came, not at the end: {spread:?}"
    );
    post(
        &host.rpc("chunked"),
        &v2("cancel", "cli-s", json!([]), json!({})),
    )
    .await;
    let status = tokio::time::timeout(LIMIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "the stream ended when the task did");

    let out = tokio::process::Command::new(aiphost_bin())
        .args([
            "call",
            &base,
            "re-stream",
            "--task",
            "cli-s",
            "--last-event-seq",
            "5",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let seqs: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| seq(&serde_json::from_str::<Value>(l).unwrap()))
        .collect();
    assert_eq!(seqs, [6, 7, 8]);
    let out = tokio::process::Command::new(aiphost_bin())
        .args(["call", &base, "re-stream", "--task", "nobody"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("-32001"));
    host.kill();
}
