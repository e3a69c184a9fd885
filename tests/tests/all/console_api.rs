//! The admin API the console reads (issue 34 points 1 and 6), over real HTTP with real partners:
//! `GET /admin/me`; `GET /admin/tasks` paged, filtered, across Leaders and partners, with stuck
//! tasks (working past the invocation limit, awaiting input near its timeout); one task's
//! detail; its timeline over SSE (replayed, live, resumed with `Last-Event-ID`, rendered by the
//! A2A and AIFlowy doors); an admin cancel and its 409; a key's label; a tenant seeing only its
//! own partners and tasks (another's answer 404); bad input refused with 400 and nothing kept.

use aiphost_tests::tenants::{
    create_tenant, example_component, example_manifest, publish, publish_keyed,
};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const OTHER_LEADER: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
const WAIT: Duration = Duration::from_secs(30);

async fn get(host: &TestHost, path: &str, token: &str) -> (u16, Value) {
    admin(&host.url, Method::GET, path, token, None).await
}

/// A v1 command as `leader` (its key, if any), answered when the task rests.
async fn command(
    host: &TestHost,
    agent: &str,
    key: Option<&str>,
    leader: &str,
    (kind, task, words): (&str, &str, &str),
    params: Value,
) -> Value {
    let mut body = v1(kind, task, text(words), params);
    body["params"]["message"]["senderId"] = json!(leader);
    let answer = post_as(&host.rpc(agent), key, &body).await;
    result(&answer).clone()
}

/// Every page of `path` (a `/admin/tasks` query), `limit` at a time.
async fn all_pages(host: &TestHost, path: &str, token: &str) -> Vec<Value> {
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = match &cursor {
            Some(c) => format!("{path}{sep}cursor={c}"),
            None => path.to_string(),
        };
        let (status, page) = get(host, &url, token).await;
        assert_eq!(status, 200, "{url}: {page}");
        tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return tasks,
        }
    }
    panic!("more than 100 pages");
}

fn ids(tasks: &[Value]) -> Vec<(String, String)> {
    tasks
        .iter()
        .map(|t| {
            (
                t["leader"].as_str().unwrap_or("-").to_string(),
                t["id"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn me_says_who_the_token_is() {
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    assert_eq!(
        get(&host, "/admin/me", OPERATOR_TOKEN).await,
        (200, json!({"principal": "operator"}))
    );
    assert_eq!(
        get(&host, "/admin/me", &acme).await,
        (200, json!({"principal": "tenant", "tenant": "acme"}))
    );
    let (status, body) = get(&host, "/admin/me", "aho.not-a-token").await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (401, json!("unauthenticated"))
    );
    let response = reqwest::get(format!("{}/admin/me", host.url))
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

/// Tasks of two Leaders (one task id in both namespaces) and of two tenants: the operator pages
/// through all of them newest change first, each once, with the Leader's own task id; filters
/// narrow; a tenant sees its own alone and gets 404 for the other's partner and tasks; bad
/// queries are 400.
#[tokio::test(flavor = "multi_thread")]
async fn listing_pages_filters_and_keeps_tenants_apart() {
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let beta = create_tenant(&host.url, "beta", json!({})).await;
    let acme_keys = publish_keyed(
        &host.url,
        &acme,
        "concierge",
        "acme-conc",
        &[LEADER, OTHER_LEADER],
    )
    .await;
    let beta_keys = publish_keyed(&host.url, &beta, "echo", "beta-echo", &[LEADER]).await;
    let mut made = Vec::new();
    for (i, (key, leader)) in [
        (0, LEADER),
        (0, LEADER),
        (0, LEADER),
        (1, OTHER_LEADER),
        (1, OTHER_LEADER),
    ]
    .into_iter()
    .enumerate()
    {
        // The last of each Leader is `shared`: one id, two namespaces.
        let id = if i == 2 || i == 4 {
            "shared".to_string()
        } else {
            format!("t{i}")
        };
        let task = command(
            &host,
            "acme-conc",
            Some(&acme_keys[key]),
            leader,
            ("start", &id, "hello there"),
            json!({}),
        )
        .await;
        assert_eq!(task["status"]["state"], "awaiting-completion", "{task}");
        made.push((leader.to_string(), id));
    }
    let beta_task = command(
        &host,
        "beta-echo",
        Some(&beta_keys[0]),
        LEADER,
        ("start", "b1", "hi"),
        json!({}),
    )
    .await;
    assert_eq!(
        beta_task["status"]["state"], "awaiting-completion",
        "{beta_task}"
    );

    // The operator: every acme task once, two at a time, newest change first.
    let paged = all_pages(
        &host,
        "/admin/tasks?agent=acme-conc&limit=2",
        OPERATOR_TOKEN,
    )
    .await;
    let mut got = ids(&paged);
    got.sort();
    let mut want = made.clone();
    want.sort();
    assert_eq!(got, want);
    let updated: Vec<&str> = paged
        .iter()
        .map(|t| t["updated"].as_str().unwrap())
        .collect();
    assert!(updated.windows(2).all(|w| w[0] >= w[1]), "{updated:?}");
    for t in &paged {
        assert_eq!(t["agent"], "acme-conc");
        assert_eq!(t["state"], "awaiting-completion");
        assert_eq!(t["session"], "session-test");
        assert_eq!(t["stuck"], Value::Null);
        assert!(!t["id"].as_str().unwrap().contains('\u{1f}'), "{t}");
        assert!(
            t["created"].as_str().unwrap() <= t["updated"].as_str().unwrap(),
            "{t}"
        );
    }
    // Across partners: beta's and the bundled ones' are there too.
    let everything = all_pages(&host, "/admin/tasks?limit=3", OPERATOR_TOKEN).await;
    assert!(
        everything
            .iter()
            .any(|t| t["agent"] == "beta-echo" && t["id"] == "b1")
    );
    assert_eq!(everything.len(), made.len() + 1);

    // Filters (t0 completed by its Leader first).
    let t0 = command(
        &host,
        "acme-conc",
        Some(&acme_keys[0]),
        LEADER,
        ("complete", "t0", "thanks"),
        json!({}),
    )
    .await;
    assert_eq!(t0["status"]["state"], "completed", "{t0}");
    let other = all_pages(
        &host,
        &format!("/admin/tasks?leader={OTHER_LEADER}"),
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(ids(&other).len(), 2, "{other:?}");
    assert!(other.iter().all(|t| t["leader"] == OTHER_LEADER));
    let completed = all_pages(&host, "/admin/tasks?state=completed", OPERATOR_TOKEN).await;
    assert_eq!(ids(&completed), [(LEADER.to_string(), "t0".to_string())]);
    let none = all_pages(
        &host,
        "/admin/tasks?session=no-such-session",
        OPERATOR_TOKEN,
    )
    .await;
    assert!(none.is_empty());
    let in_session = all_pages(
        &host,
        "/admin/tasks?agent=acme-conc&session=session-test&state=awaiting-completion",
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(in_session.len(), 4);
    let newest = all_pages(&host, "/admin/tasks?limit=1", OPERATOR_TOKEN).await;
    assert_eq!(newest[0]["id"], "t0", "the newest change comes first");

    // The tenants: their own alone; the other's partner and task are 404.
    let acme_sees = all_pages(&host, "/admin/tasks", &acme).await;
    assert_eq!(acme_sees.len(), 5);
    assert!(
        acme_sees.iter().all(|t| t["agent"] == "acme-conc"),
        "{acme_sees:?}"
    );
    let beta_sees = all_pages(&host, "/admin/tasks", &beta).await;
    assert_eq!(ids(&beta_sees), [(LEADER.into(), "b1".into())]);
    let b1 = format!("/admin/agents/beta-echo/tasks/b1?leader={LEADER}");
    for (status, body) in [
        get(&host, "/admin/tasks?agent=beta-echo", &acme).await,
        get(&host, &b1, &acme).await,
        get(
            &host,
            &format!("/admin/agents/beta-echo/tasks/b1/events?leader={LEADER}"),
            &acme,
        )
        .await,
        admin(
            &host.url,
            Method::POST,
            &format!("/admin/agents/beta-echo/tasks/b1/cancel?leader={LEADER}"),
            &acme,
            None,
        )
        .await,
        // The bundled partners are the operator's.
        get(&host, "/admin/tasks?agent=concierge", &acme).await,
    ] {
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (404, json!("not-found")),
            "{body}"
        );
    }
    let (status, seen) = get(&host, &b1, &beta).await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["task"]["id"], "b1");
    // The shared id names two tasks: the Leader says which.
    let (status, mine) = get(
        &host,
        &format!("/admin/agents/acme-conc/tasks/shared?leader={OTHER_LEADER}"),
        &acme,
    )
    .await;
    assert_eq!(
        (status, mine["task"]["leader"].clone()),
        (200, json!(OTHER_LEADER)),
        "{mine}"
    );
    let (status, _) = get(&host, "/admin/agents/acme-conc/tasks/shared", &acme).await;
    assert_eq!(status, 404, "no such task in the shared namespace");

    // Bad queries: 400, saying what is wrong.
    for (query, says) in [
        ("state=sleeping", "unknown state"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("stuck=maybe", "stuck"),
        ("cursor=not-a-cursor", "cursor"),
        ("colour=blue", "unknown query parameter"),
    ] {
        let (status, body) = get(&host, &format!("/admin/tasks?{query}"), OPERATOR_TOKEN).await;
        assert_eq!(status, 400, "{query}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{query}: {message}");
    }
    let (status, _) = get(&host, "/admin/tasks", "aho.wrong").await;
    assert_eq!(status, 401);
}

/// Frames of an SSE body: `(event name, id, data)`.
fn frames(body: &str) -> Vec<(String, Option<u64>, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty() && !f.starts_with(':'))
        .map(|f| {
            let field = |name: &str| {
                f.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(str::to_string)
            };
            (
                field("event: ").unwrap_or_default(),
                field("id: ").and_then(|i| i.parse().ok()),
                serde_json::from_str(&field("data: ").unwrap_or_default()).unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// GET a timeline to its end (with `Last-Event-ID`, if any).
async fn timeline(url: String, last_event_id: Option<&'static str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(url).bearer_auth(OPERATOR_TOKEN);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.expect("timeline");
    let status = response.status().as_u16();
    let body = tokio::time::timeout(WAIT, response.text())
        .await
        .expect("the timeline ends")
        .expect("its body");
    (status, body)
}

/// A concierge turn with a tool: its detail, then its timeline followed live while the operator
/// cancels it (a second cancel is 409), door-neutral and as the A2A and AIFlowy doors render it;
/// then resumed after an id; bad wires and unknown tasks refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_s_detail_timeline_and_cancel() {
    let host = TestHost::start(HostOptions::default()).await;
    let id = format!("tl-{}", uuid());
    let task = command(
        &host,
        "concierge",
        None,
        LEADER,
        ("start", &id, "tool weather"),
        json!({}),
    )
    .await;
    assert_eq!(task["status"]["state"], "awaiting-completion", "{task}");
    let base = format!("{}/admin/agents/concierge/tasks/{id}", host.url);

    let (status, detail) = get(
        &host,
        &format!("/admin/agents/concierge/tasks/{id}"),
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(status, 200, "{detail}");
    let detail = &detail["task"];
    assert_eq!(detail["id"], json!(id));
    assert_eq!(detail["leader"], Value::Null);
    assert_eq!(detail["state"], "awaiting-completion");
    assert_eq!(detail["sender"], LEADER);
    assert!(detail["history_len"].as_u64().unwrap() >= 1, "{detail}");
    assert!(detail["last_event_seq"].as_u64().unwrap() >= 4, "{detail}");
    assert!(
        detail["products"].to_string().contains("answer"),
        "{detail}"
    );
    assert!(
        detail["deadline"].is_string(),
        "awaiting completion times out: {detail}"
    );

    // Followed live: the replay, then the cancel, then the end.
    let live = tokio::spawn(timeline(format!("{base}/events?wire=a2a"), None));
    let aiflowy = tokio::spawn(timeline(format!("{base}/events?wire=aiflowy"), None));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, canceled) = admin(
        &host.url,
        Method::POST,
        &format!("/admin/agents/concierge/tasks/{id}/cancel"),
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["state"], "canceled");
    assert_eq!(canceled["id"], json!(id));
    let (status, again) = admin(
        &host.url,
        Method::POST,
        &format!("/admin/agents/concierge/tasks/{id}/cancel"),
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(
        (status, again["error"]["code"].clone()),
        (409, json!("task-ended")),
        "{again}"
    );

    let (status, body) = live.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let got = frames(&body);
    let (last, rest) = got.split_last().expect("frames");
    assert_eq!(last.0, "end", "{body}");
    let kinds: Vec<&str> = rest
        .iter()
        .map(|(_, _, d)| d["kind"].as_str().unwrap_or("?"))
        .collect();
    for kind in ["status", "tool_call", "tool_result", "text"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    for (n, (name, id, data)) in rest.iter().enumerate() {
        assert_eq!(name, "task");
        assert_eq!(*id, Some(n as u64 + 1), "ids are the seqs, from 1");
        assert_eq!(data["seq"], json!(n + 1));
        assert!(
            data["time"].is_string() && data["event"].is_object(),
            "{data}"
        );
        assert!(data["wire"].is_array(), "{data}");
    }
    let first_wire = &rest[0].2["wire"][0];
    assert_eq!(
        first_wire["task"]["id"],
        json!(id),
        "A2A renders the creation as a task: {first_wire}"
    );
    let ended = &rest.last().unwrap().2;
    assert_eq!(ended["event"]["status"]["state"], "canceled", "{ended}");
    let (_, after) = get(
        &host,
        &format!("/admin/agents/concierge/tasks/{id}"),
        OPERATOR_TOKEN,
    )
    .await;
    let cancel = after["task"]["commands"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        cancel["id"].as_str().unwrap().starts_with("admin-cancel-"),
        "{cancel}"
    );
    assert!(
        cancel.to_string().contains("canceled by the operator"),
        "{cancel}"
    );
    assert!(
        ended["wire"][0].to_string().contains("TASK_STATE_CANCELED"),
        "{ended}"
    );

    let (status, body) = aiflowy.await.unwrap();
    assert_eq!(status, 200);
    let got = frames(&body);
    let names: Vec<String> = got
        .iter()
        .flat_map(|(_, _, d)| d["wire"].as_array().cloned().unwrap_or_default())
        .map(|w| w["event"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(names.iter().any(|n| n == "message"), "{names:?}");
    assert!(
        got.iter()
            .all(|(name, _, d)| name == "end" || d["wire"].is_array())
    );

    // Resumed after seq 3 of the ended task: from seq 4 to the end; after the last: the end.
    let (_, resumed) = timeline(format!("{base}/events"), Some("3")).await;
    let resumed = frames(&resumed);
    assert_eq!(resumed[0].1, Some(4), "{resumed:?}");
    assert!(resumed.iter().all(|(_, _, d)| d.get("wire").is_none()));
    let last_seq = resumed[resumed.len() - 2].1.unwrap().to_string();
    let last_seq: &'static str = Box::leak(last_seq.into_boxed_str());
    let (_, over) = timeline(format!("{base}/events"), Some(last_seq)).await;
    assert_eq!(
        frames(&over)
            .iter()
            .map(|f| f.0.as_str())
            .collect::<Vec<_>>(),
        ["end"]
    );

    // A turn that thinks, rendered by the other doors too: every AIP event is a frame; the Agent
    // API and MCP render the reasoning.
    let think = format!("th-{}", uuid());
    command(
        &host,
        "concierge",
        None,
        LEADER,
        ("start", &think, "think dinner"),
        json!({}),
    )
    .await;
    let path = format!("/admin/agents/concierge/tasks/{think}/cancel");
    let (status, _) = admin(&host.url, Method::POST, &path, OPERATOR_TOKEN, None).await;
    assert_eq!(status, 200);
    let think_events = format!("{}/admin/agents/concierge/tasks/{think}/events", host.url);
    for wire in ["aip", "agent_api", "mcp"] {
        let (status, body) = timeline(format!("{think_events}?wire={wire}"), None).await;
        assert_eq!(status, 200, "{wire}: {body}");
        let got = frames(&body);
        let kinds: Vec<&str> = got
            .iter()
            .filter_map(|(_, _, d)| d["kind"].as_str())
            .collect();
        assert!(kinds.contains(&"reasoning"), "{wire}: {kinds:?}");
        let reasoning: Vec<&Value> = got
            .iter()
            .filter(|(_, _, d)| d["kind"] == "reasoning")
            .flat_map(|(_, _, d)| d["wire"].as_array().into_iter().flatten())
            .collect();
        assert!(
            !reasoning.is_empty(),
            "{wire} renders the reasoning: {body}"
        );
        if wire == "aip" {
            assert!(
                got.iter()
                    .all(|(n, _, d)| n == "end" || d["wire"].as_array().map(Vec::len) == Some(1))
            );
        }
    }

    // Refused: an unknown wire (naming the known ones), a bad Last-Event-ID, an unknown task.
    let (status, bad) = get(
        &host,
        &format!("/admin/agents/concierge/tasks/{id}/events?wire=smoke"),
        OPERATOR_TOKEN,
    )
    .await;
    assert_eq!(status, 400, "{bad}");
    let message = bad["error"]["message"].as_str().unwrap_or_default();
    for wire in ["aip", "a2a", "agent_api", "aiflowy", "mcp"] {
        assert!(message.contains(wire), "{message}");
    }
    let (status, body) = timeline(format!("{base}/events"), Some("seven")).await;
    assert_eq!(status, 400, "{body}");
    for path in [
        format!("/admin/agents/concierge/tasks/nope-{}", uuid()),
        format!("/admin/agents/concierge/tasks/nope-{}/events", uuid()),
        format!("/admin/agents/no-such-partner/tasks/{id}"),
    ] {
        let (status, body) = get(&host, &path, OPERATOR_TOKEN).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
}

/// Stuck tasks: one awaiting input in the last tenth of its timeout, and one working longer
/// than its partner's invocation limit (a continue queued behind another task's invocation, the
/// tenant allowing one at a time); neither before its time, and never a task that is not.
#[tokio::test(flavor = "multi_thread")]
async fn stuck_tasks_are_found_in_their_time() {
    let host = TestHost::start(HostOptions::default()).await;
    // Awaiting input with a 3 s timeout: stuck from 2.7 s on, canceled at 3 s.
    let asked_at = Instant::now();
    let form = format!("form-{}", uuid());
    let task = command(
        &host,
        "concierge",
        None,
        LEADER,
        ("start", &form, "form a trip"),
        json!({"awaitingInputTimeout": 3000}),
    )
    .await;
    assert_eq!(task["status"]["state"], "awaiting-input", "{task}");
    let found = loop {
        let (status, page) = get(
            &host,
            "/admin/tasks?agent=concierge&stuck=true",
            OPERATOR_TOKEN,
        )
        .await;
        assert_eq!(status, 200, "{page}");
        if let Some(t) = page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == json!(form))
        {
            break t.clone();
        }
        assert!(
            asked_at.elapsed() < Duration::from_secs(3),
            "not found stuck before its timeout"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        asked_at.elapsed() >= Duration::from_millis(2650),
        "{:?}",
        asked_at.elapsed()
    );
    assert_eq!(found["stuck"], "input_timeout_near");
    assert_eq!(found["state"], "awaiting-input");
    // Its timeline shows the form it asked.
    let url = format!("{}/admin/agents/concierge/tasks/{form}/events", host.url);
    let client = reqwest::Client::new().get(url).bearer_auth(OPERATOR_TOKEN);
    let body = client.send().await.unwrap().text().await.unwrap();
    assert!(body.contains("\"kind\":\"form\""), "{body}");

    // Working too long: a partner whose invocations may take 7 s, one at a time.
    let acme = create_tenant(&host.url, "acme", json!({"maxConcurrentInvocations": 1})).await;
    let manifest = example_manifest("concierge", "slowpoke", "")
        .replace("invocation-ms = 10000", "invocation-ms = 7000");
    let (status, body) =
        publish(&host.url, &acme, &manifest, &example_component("concierge")).await;
    assert_eq!(status, 201, "{body}");
    let done = command(
        &host,
        "slowpoke",
        None,
        LEADER,
        ("start", "waits", "hello there"),
        json!({}),
    )
    .await;
    assert_eq!(done["status"]["state"], "awaiting-completion", "{done}");
    let url = host.rpc("slowpoke");
    let slow = |task: &'static str, kind: &'static str| {
        let url = url.clone();
        tokio::spawn(async move {
            let mut body = v1(
                kind,
                task,
                text("slow count"),
                json!({"responseTimeout": 30000}),
            );
            body["params"]["message"]["senderId"] = json!(LEADER);
            post(&url, &body).await
        })
    };
    let first = slow("runs", "start");
    tokio::time::sleep(Duration::from_millis(700)).await;
    // Working from now, its invocation waiting ~4 s for the first's, then running 5 s.
    let queued_at = Instant::now();
    let second = slow("waits", "continue");
    let found = loop {
        let (status, page) = get(&host, "/admin/tasks?stuck=true&state=working", &acme).await;
        assert_eq!(status, 200, "{page}");
        let tasks = page["tasks"].as_array().unwrap().clone();
        assert!(tasks.iter().all(|t| t["id"] != "runs"), "{tasks:?}");
        if let Some(t) = tasks.iter().find(|t| t["id"] == "waits") {
            break t.clone();
        }
        assert!(
            queued_at.elapsed() < Duration::from_secs(9),
            "never found stuck"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        queued_at.elapsed() >= Duration::from_millis(6900),
        "{:?}",
        queued_at.elapsed()
    );
    assert_eq!(found["stuck"], "working_too_long");
    for answer in [first.await.unwrap(), second.await.unwrap()] {
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    }
    let (_, page) = get(&host, "/admin/tasks?stuck=true", &acme).await;
    assert_eq!(page["tasks"], json!([]), "rested tasks are not stuck");
}

/// A key's label: kept and listed; a bad one refused with nothing issued.
#[tokio::test(flavor = "multi_thread")]
async fn keys_carry_a_label() {
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    publish_keyed(&host.url, &acme, "echo", "vault", &[]).await;
    let keys = "/admin/agents/vault/keys";
    let (status, issued) = admin(
        &host.url,
        Method::POST,
        keys,
        &acme,
        Some(json!({"leader": LEADER, "label": "console"})),
    )
    .await;
    assert_eq!(
        (status, issued["label"].clone()),
        (201, json!("console")),
        "{issued}"
    );
    for label in [
        json!(""),
        json!("x".repeat(65)),
        json!("line\nbreak"),
        json!(7),
    ] {
        let (status, body) = admin(
            &host.url,
            Method::POST,
            keys,
            &acme,
            Some(json!({"leader": LEADER, "label": label})),
        )
        .await;
        assert!(status == 422 || status == 400, "{label}: {status} {body}");
    }
    let (status, listed) = get(&host, keys, &acme).await;
    assert_eq!(status, 200);
    let listed = listed["keys"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["label"], "console");
    assert_eq!(listed[0]["id"], issued["id"]);
}
