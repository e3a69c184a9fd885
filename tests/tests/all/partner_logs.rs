//! Partners' own log lines (issue 34 point 4), through real hosts and the hostile partner's `log`
//! calls: each line keeps its fields as a JSON object in the partner's order and says whose it
//! is (partner, version, tenant, the Leader and its task id, never the store's key); a tenant
//! reads only its own partners'; a follower gets live lines and resumes after its
//! `Last-Event-ID`; a chatty partner is held to its ring and its rate (stderr included); and
//! `aiphost logs` prints them and follows.

use aiphost_tests::tenants::{create_tenant, publish_keyed};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Leader of every test command ([`v2`]'s `senderId`).
const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";

/// `GET /admin/agents/{agent}/logs?{query}` with `token`: the status and the raw body.
async fn logs_raw(host_url: &str, agent: &str, query: &str, token: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("{host_url}/admin/agents/{agent}/logs?{query}"))
        .bearer_auth(token)
        .send()
        .await
        .expect("logs request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("logs answer"))
}

/// The lines of an answer asserted 200.
async fn lines(host_url: &str, agent: &str, query: &str, token: &str) -> Vec<Value> {
    let (status, body) = logs_raw(host_url, agent, query, token).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    answer["lines"].as_array().cloned().expect("lines")
}

/// Start a task of `agent` with `text` (with API key `key`, if any); asserts it completed.
async fn run(rpc: &str, key: Option<&str>, task: &str, text_item: &str) {
    let answer = post_as(rpc, key, &v2("start", task, text(text_item), json!({}))).await;
    let reached = state(&answer);
    assert!(
        reached == "completed" || reached == "awaiting-completion",
        "{answer}"
    );
}

/// The next frame of a log stream: `(event, id, data)`; `None` once the host closed it.
async fn next_log_event(
    stream: &mut SseStream,
    limit: Duration,
) -> Option<(String, Option<u64>, Value)> {
    loop {
        let frame = tokio::time::timeout(limit, stream.frames.recv())
            .await
            .unwrap_or_else(|_| panic!("no event within {limit:?}"))?;
        if let Frame::Event {
            raw, event, data, ..
        } = frame
        {
            let id = raw
                .lines()
                .find_map(|l| l.strip_prefix("id: "))
                .and_then(|id| id.parse().ok());
            return Some((event.expect("a named event"), id, data));
        }
    }
}

/// A line is the partner's, with its fields as an object in its order; an operator's open
/// partner's line has no tenant and no Leader, a tenant's keyed partner's line names its tenant,
/// its version, the Leader and the Leader's task id, and never the store's key; filters work; a
/// tenant cannot read another tenant's partner (404, as one that does not exist), and an
/// unpublished partner's log goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_keep_their_fields_and_say_whose_they_are() {
    let host = TestHost::start(HostOptions::default()).await;
    run(&host.rpc("hostile"), None, "t-open", "chatty:3").await;

    let (status, body) = logs_raw(&host.url, "hostile", "task=t-open", OPERATOR_TOKEN).await;
    assert_eq!(status, 200, "{body}");
    // The fields as the partner gave them: an object, in its order (not sorted, not a string).
    assert!(
        body.contains(r#""fields":{"step":"1","total":"3","command":"chatty"}"#),
        "{body}"
    );
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    let all = answer["lines"].as_array().expect("lines");
    assert_eq!(all.len(), 4, "the work line and three chatty ones: {body}");
    let first = &all[0];
    assert_eq!(first["message"], "hostile partner at work");
    assert_eq!(first["level"], "info");
    assert_eq!(first["fields"], json!({"command": "chatty:3"}));
    assert_eq!(first["agent"], "hostile");
    assert_eq!(first["version"], 0);
    assert_eq!(first["tenant"], Value::Null);
    assert_eq!(first["leader"], Value::Null);
    assert_eq!(first["task"], "t-open");
    assert!(aiphost::model::Timestamp::parse(first["time"].as_str().expect("time")).is_some());
    let seqs: Vec<u64> = all
        .iter()
        .map(|l| l["seq"].as_u64().expect("seq"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(answer["next"], seqs[3]);
    assert_eq!(all[3]["message"], "chatty line 3 of 3");
    assert_eq!(all[3]["level"], "debug");

    // Filters: a minimum level, and paging with since/limit.
    let info = lines(
        &host.url,
        "hostile",
        "task=t-open&level=info",
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(info.len(), 1, "{info:?}");
    let page = lines(
        &host.url,
        "hostile",
        &format!("since={}&limit=2", seqs[0]),
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(
        page.iter().map(|l| l["seq"].clone()).collect::<Vec<_>>(),
        [seqs[1], seqs[2]]
    );
    let (_, body) = logs_raw(
        &host.url,
        "hostile",
        &format!("since={}&limit=2", seqs[0]),
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON")["next"],
        seqs[2]
    );

    // A tenant's partner behind API keys: the Leader and its task id, apart.
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let keys = publish_keyed(&host.url, &acme, "hostile", "acme-hostile", &[LEADER]).await;
    run(
        &host.rpc("acme-hostile"),
        Some(&keys[0]),
        "t-keyed",
        "hello",
    )
    .await;
    let (status, body) = logs_raw(&host.url, "acme-hostile", "", &acme).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains('\u{1f}') && !body.to_ascii_lowercase().contains("\\u001f"),
        "the store's key never goes out: {body}"
    );
    let keyed: Value = serde_json::from_str(&body).expect("JSON");
    let line = &keyed["lines"][0];
    assert_eq!(line["tenant"], "acme", "{body}");
    assert_eq!(line["leader"], LEADER, "{body}");
    assert_eq!(line["task"], "t-keyed", "{body}");
    assert_eq!(line["version"], 1, "{body}");
    assert_eq!(line["fields"], json!({"command": "hello"}), "{body}");
    assert_eq!(
        lines(&host.url, "acme-hostile", "task=t-keyed", OPERATOR_TOKEN)
            .await
            .len(),
        1,
        "the operator reads every partner's log"
    );
    assert_eq!(
        lines(
            &host.url,
            "acme-hostile",
            &format!("leader={LEADER}"),
            &acme
        )
        .await
        .len(),
        1
    );
    assert!(
        lines(&host.url, "acme-hostile", "leader=someone-else", &acme)
            .await
            .is_empty()
    );

    // Another tenant reads neither acme's partner nor the operator's: 404, as a partner that is
    // not there.
    let globex = create_tenant(&host.url, "globex", json!({})).await;
    for agent in ["acme-hostile", "hostile", "no-such-partner"] {
        let (status, body) = logs_raw(&host.url, agent, "", &globex).await;
        assert_eq!(status, 404, "{agent}: {body}");
        assert!(body.contains("not-found"), "{body}");
    }
    let (status, _) = logs_raw(&host.url, "hostile", "", "not-a-token").await;
    assert_eq!(status, 401);
    // A query that does not parse is refused with what is wrong.
    for (query, field) in [
        ("level=loud", "level"),
        ("follow=maybe", "follow"),
        ("colour=1", "query"),
    ] {
        let (status, body) = logs_raw(&host.url, "hostile", query, OPERATOR_TOKEN).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert!(
            body.contains(&format!(r#""field":"{field}""#)),
            "{query}: {body}"
        );
    }

    // Unpublished: its log goes, and a follower's stream ends.
    let mut follower = SseStream::get_as(
        &format!("{}/admin/agents/acme-hostile/logs?follow=1", host.url),
        Some(&acme),
    )
    .await;
    assert_eq!(follower.status, 200);
    let (event, _, data) = next_log_event(&mut follower, Duration::from_secs(10))
        .await
        .expect("the backlog");
    assert_eq!((event.as_str(), &data["task"]), ("log", &json!("t-keyed")));
    let (status, body) = admin(
        &host.url,
        Method::DELETE,
        "/admin/agents/acme-hostile",
        &acme,
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    assert!(
        next_log_event(&mut follower, Duration::from_secs(10))
            .await
            .is_none(),
        "the stream ends with the partner's log"
    );
    let (status, body) = logs_raw(&host.url, "acme-hostile", "", OPERATOR_TOKEN).await;
    assert_eq!(status, 404, "{body}");
}

/// A follower gets each new line as it is logged (`event: log`, its seq as the id); opened again
/// with `Last-Event-ID` it gets exactly the lines after that one; followers of one partner are
/// capped with a clear 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_gets_live_lines_and_resumes_after_its_last_event_id() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    let follow = format!("{}/admin/agents/hostile/logs?follow=1&level=info", host.url);
    let mut stream = SseStream::get_as(&follow, Some(OPERATOR_TOKEN)).await;
    assert_eq!(stream.status, 200);
    assert!(stream.content_type.starts_with("text/event-stream"));

    run(&rpc, None, "live-1", "first").await;
    let (event, id, data) = next_log_event(&mut stream, Duration::from_secs(10))
        .await
        .expect("a live line");
    assert_eq!(event, "log");
    assert_eq!(data["task"], "live-1");
    assert_eq!(data["fields"], json!({"command": "first"}));
    let id = id.expect("an id");
    assert_eq!(data["seq"], id);

    run(&rpc, None, "live-2", "second").await;
    run(&rpc, None, "live-3", "third").await;
    let resumed = reqwest::Client::new()
        .get(&follow)
        .bearer_auth(OPERATOR_TOKEN)
        .header("Last-Event-ID", id.to_string())
        .send()
        .await
        .expect("resumed");
    let mut resumed = SseStream::read_response(resumed).await;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (_, _, data) = next_log_event(&mut resumed, Duration::from_secs(10))
            .await
            .expect("a line after the last one seen");
        tasks.push(data["task"].as_str().expect("task").to_string());
    }
    assert_eq!(tasks, ["live-2", "live-3"]);
    run(&rpc, None, "live-4", "fourth").await;
    let (_, _, data) = next_log_event(&mut resumed, Duration::from_secs(10))
        .await
        .expect("then live again");
    assert_eq!(data["task"], "live-4", "nothing twice, nothing missed");

    // Followers of one partner are capped (two follow already).
    let mut open = vec![stream, resumed];
    for _ in 2..aiphost::partner_logs::MAX_FOLLOWERS_PER_PARTNER {
        let stream = SseStream::get_as(&follow, Some(OPERATOR_TOKEN)).await;
        assert_eq!(stream.status, 200);
        open.push(stream);
    }
    let (status, body) = logs_raw(&host.url, "hostile", "follow=1", OPERATOR_TOKEN).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("too-many-followers"), "{body}");
    drop(open);
}

/// The lines of the host's stderr (its `tracing`) that hold `needle`.
fn logged(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

/// A partner that logs 5,000 lines at once is held to its rate (a burst of 100, then 20 a
/// second): the rest are dropped before they reach anything (the ring, stderr), and markers
/// "N lines dropped" account for every one of them; the ring keeps only the newest 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_partner_is_held_to_its_ring_and_its_rate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let host = ProcessHost::start(
        &dir.path().join("data"),
        &[
            "--partner-log-lines",
            "50",
            "--partner-log-rate",
            "20",
            "--partner-log-burst",
            "100",
            "--log",
            "info,partner=debug",
        ],
    );
    let started = Instant::now();
    run(&host.rpc("hostile"), None, "chatty", "chatty:5000").await;
    let took = started.elapsed().as_secs_f64();

    // The marker of the lines dropped at the end comes as the invocation ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    let kept = loop {
        let kept = lines(&host.url, "hostile", "since=0&limit=2000", OPERATOR_TOKEN).await;
        let marked = kept.last().is_some_and(|l| l["level"] == "warn");
        if marked || Instant::now() > deadline {
            break kept;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(kept.len() <= 50, "the ring holds 50: {}", kept.len());
    let last = kept.last().expect("lines");
    assert_eq!(last["level"], "warn", "{last}");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(" lines dropped")),
        "the invocation's end marks the gap: {last}"
    );
    assert_eq!(last["task"], Value::Null);

    // Wait for the log file to hold the last marker, then count: every one of the 5,001 lines
    // (the work line and 5,000 chatty ones) is either on stderr or counted in a marker.
    let deadline = Instant::now() + Duration::from_secs(10);
    let log = loop {
        let log = host.log();
        if logged(
            &log,
            &format!(
                "{} lines dropped",
                last["fields"]["dropped"].as_str().unwrap_or("?")
            ),
        ) > 0
            || Instant::now() > deadline
        {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let shown = logged(&log, "chatty line ") + logged(&log, "hostile partner at work");
    let dropped: u64 = log
        .lines()
        .filter_map(|l| {
            let at = l.find(" lines dropped")?;
            l[..at].rsplit(' ').next()?.parse::<u64>().ok()
        })
        .sum();
    eprintln!(
        "chatty:5000 in {took:.2}s: {shown} lines passed, {dropped} dropped, {} kept in the ring",
        kept.len()
    );
    assert_eq!(
        shown as u64 + dropped,
        5001,
        "shown {shown}, dropped {dropped}"
    );
    // The burst and what the rate refilled while it logged, no more.
    let allowed = 100.0 + 20.0 * took + 1.0;
    assert!(
        (100..=allowed as usize).contains(&shown),
        "{shown} lines passed in {took:.2}s"
    );
    assert_eq!(
        kept.last().and_then(|l| l["seq"].as_u64()),
        Some((shown as u64) + logged(&log, " lines dropped") as u64),
        "every kept record was numbered: the lines shown and the markers"
    );
    // The same counts on /metrics, per partner.
    let at = |name: &str| format!("{name}{{agent=\"hostile\",tenant=\"\"}}");
    assert_eq!(
        metric(&host.url, &at("aiphost_partner_log_dropped_total")).await,
        dropped
    );
    assert_eq!(
        metric(&host.url, &at("aiphost_partner_log_lines_total")).await,
        shown as u64
    );
    host.stop();
}

/// `aiphost logs` prints a partner's lines one a line (fields as k=v), as JSON lines with
/// `--json`, follows new ones with `--follow`; `serve` refuses a partner-log flag of 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_lines_and_follows() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("hostile");
    run(&rpc, None, "cli-1", "chatty:2").await;
    let cli = |extra: &[&str]| {
        let mut args = vec![
            "logs",
            "hostile",
            "--url",
            host.url.as_str(),
            "--token",
            OPERATOR_TOKEN,
        ];
        args.extend_from_slice(extra);
        Command::new(aiphost_bin())
            .args(&args)
            .output()
            .expect("running aiphost logs")
    };
    let out = tokio::task::block_in_place(|| cli(&["--task", "cli-1"]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines().next().is_some_and(|l| l.contains("INFO")
            && l.contains("[cli-1] hostile partner at work command=chatty:2")),
        "{text}"
    );
    assert!(
        text.contains("[cli-1] chatty line 2 of 2 step=2 total=2 command=chatty"),
        "fields as k=v, in the partner's order: {text}"
    );
    let out =
        tokio::task::block_in_place(|| cli(&["--task", "cli-1", "--json", "--level", "debug"]));
    let json_lines = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        json_lines.contains(r#""fields":{"step":"1","total":"2","command":"chatty"}"#),
        "{json_lines}"
    );
    let levels: Vec<Value> = json_lines
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("one JSON record a line")["level"].clone()
        })
        .collect();
    assert_eq!(
        levels,
        ["info", "debug", "debug"],
        "debug and above: {json_lines}"
    );
    let out = tokio::task::block_in_place(|| cli(&["--level", "shout"]));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not trace, debug, info, warn or error")
    );

    // --follow: the newest lines, then a new one as it is logged.
    let mut child = Command::new(aiphost_bin())
        .args([
            "logs",
            "hostile",
            "--follow",
            "--level",
            "info",
            "--url",
            &host.url,
            "--token",
            OPERATOR_TOKEN,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("aiphost logs --follow");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let next = async |rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
        tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("a line within 20 s")
            .expect("the follower runs")
    };
    assert!(
        next(&mut rx)
            .await
            .contains("[cli-1] hostile partner at work")
    );
    run(&rpc, None, "cli-2", "live").await;
    let live = next(&mut rx).await;
    assert!(
        live.contains("[cli-2] hostile partner at work command=live"),
        "{live}"
    );
    let _ = child.kill();
    let _ = child.wait();

    // Serve's flags are checked before anything starts.
    for (flag, value) in [
        ("--partner-log-lines", "0"),
        ("--partner-log-rate", "many"),
        ("--partner-log-bytes", "1KiB"),
    ] {
        let out = Command::new(aiphost_bin())
            .args(["serve", flag, value, "--data", "/nonexistent/never-made"])
            .output()
            .expect("running aiphost serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(flag),
            "{flag} {value}: {stderr}"
        );
    }
}
