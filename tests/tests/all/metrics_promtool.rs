//! `/metrics` as Prometheus reads it (issue 34 point 2): after requests through several doors
//! (AIP, A2A, Agent API, MCP) with random task ids and sessions, the text passes
//! `promtool check metrics` with nothing to say, no id of a task or session is a label value,
//! every hosted partner's gauges are there at zero, and the series stay within partners ×
//! doors × outcomes. The live-task gauge matches the tasks left after a restart; a partner's
//! stats (`GET /admin/agents/{agent}/stats`) say its invocations and p50/p99, to its tenant
//! and the operator only.

use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

async fn metrics_text(host: &TestHost) -> String {
    reqwest::get(format!("{}/metrics", host.url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text")
}

/// `promtool check metrics` on `text`: its exit status and what it printed.
fn promtool(text: &str) -> (bool, String) {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!(
            "promtool cannot be run ({e}): install it with `bash scripts/promtool.sh` \
             (Debian's prometheus package); this test does not skip without it"
        ),
    };
    child
        .stdin
        .take()
        .expect("promtool's stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool ran");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_promtool() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut secrets = Vec::new();
    // AIP: a task started and completed, under a random id.
    let task = format!("task-{}", uuid());
    secrets.push(task.clone());
    let answer = post(
        &host.rpc("echo"),
        &v2("start", &task, text("hi"), json!({})),
    )
    .await;
    assert_eq!(
        answer["result"]["status"]["state"], "awaiting-completion",
        "{answer}"
    );
    post(
        &host.rpc("echo"),
        &v2("complete", &task, json!([]), json!({})),
    )
    .await;
    // A2A: the host names the task; a message id of ours.
    let message_id = format!("msg-{}", uuid());
    secrets.push(message_id.clone());
    let sent = a2a::call(
        &host,
        "echo",
        "SendMessage",
        json!({"message": a2a::message(&message_id, "hello")}),
    )
    .await;
    assert!(sent["error"].is_null(), "{sent}");
    if let Some(id) = sent["result"]["task"]["id"].as_str() {
        secrets.push(id.to_string());
    }
    // Agent API: a turn of a random session, answered at once.
    let session = format!("session-{}", uuid());
    secrets.push(session.clone());
    let turn = reqwest::Client::new()
        .post(format!("{}/agents/echo/process", host.url))
        .json(&json!({"input": [{"role": "user", "type": "message",
            "content": [{"type": "text", "text": "hi"}]}], "session_id": session, "stream": false}))
        .send()
        .await
        .expect("Agent API turn");
    assert_eq!(turn.status(), 200);
    // MCP: a request without the MCP headers, counted whatever its answer.
    reqwest::Client::new()
        .post(format!("{}/agents/echo/mcp", host.url))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("MCP request");
    // An id nobody hosts is no label.
    let nobody = format!("nobody-{}", &uuid()[..8]);
    secrets.push(nobody.clone());
    let _ = reqwest::get(format!("{}/agents/{nobody}/a2a", host.url)).await;
    metric_reaches(&host.url, "aiphost_invocations_total", 3, WAIT).await;

    let text = metrics_text(&host).await;
    for secret in &secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{secret} is in /metrics:\n{text}"
        );
    }
    for door in ["aip", "a2a", "agent-api", "mcp"] {
        let series = format!(r#"aiphost_requests_total{{agent="echo",tenant="",door="{door}""#);
        assert!(
            metric_in(&text, &format!("{series}}}")).unwrap_or(0) >= 1,
            "{door} requests not counted:\n{text}"
        );
    }
    assert!(
        metric_in(
            &text,
            r#"aiphost_invocation_duration_seconds_count{agent="echo"}"#
        ) >= Some(3),
        "{text}"
    );
    assert!(metric_in(&text, r#"aiphost_store_commit_duration_seconds_count"#) >= Some(1));
    assert!(metric_in(&text, r#"aiphost_store_sync_duration_seconds_count"#) >= Some(1));
    // Every hosted partner's gauges, at zero when nothing runs.
    let agents = reqwest::get(format!("{}/agents", host.url))
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let ids: Vec<&str> = agents["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    for id in &ids {
        for gauge in [
            "aiphost_partner_invocations_running",
            "aiphost_partner_invocations_waiting",
        ] {
            let series = format!(r#"{gauge}{{agent="{id}",tenant=""}} 0"#);
            assert!(
                text.lines().any(|l| l == series),
                "{series} missing:\n{text}"
            );
        }
        let working = format!(r#"aiphost_tasks{{agent="{id}",tenant="",state="working"}} 0"#);
        assert!(text.lines().any(|l| l == working), "{working} missing");
    }
    // Bounded: per partner, a fixed number of series (each door's outcomes and histogram).
    let with_agent = text.lines().filter(|l| l.contains("agent=\"")).count();
    assert!(
        with_agent <= (ids.len() + 1) * 200,
        "{with_agent} series name a partner"
    );
    let (ok, said) = promtool(&text);
    assert!(
        ok && said.trim().is_empty(),
        "promtool check metrics: {said}\n{text}"
    );
}

/// The tasks of `ids` (echo's) that await completion, as the host answers a `get` of each.
async fn awaiting(host: &TestHost, ids: &[&str]) -> u64 {
    let mut n = 0;
    for id in ids {
        let answer = post(&host.rpc("echo"), &v2("get", id, json!([]), json!({}))).await;
        if answer["result"]["status"]["state"] == "awaiting-completion" {
            n += 1;
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_task_gauge_counts_what_a_restart_finds() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let gauge = r#"aiphost_tasks{agent="echo",tenant="",state="awaiting-completion"}"#;
    let ids = ["live-0", "live-1", "live-2"];
    for id in ids {
        post(&host.rpc("echo"), &v2("start", id, text("x"), json!({}))).await;
    }
    post(
        &host.rpc("echo"),
        &v2("complete", "live-0", json!([]), json!({})),
    )
    .await;
    assert_eq!(metric(&host.url, gauge).await, 2);
    assert_eq!(awaiting(&host, &ids).await, 2);
    host.restart(HostOptions::default()).await;
    assert_eq!(metric(&host.url, gauge).await, 2, "seeded at start-up");
    assert_eq!(awaiting(&host, &ids).await, 2);
    post(
        &host.rpc("echo"),
        &v2("cancel", "live-1", json!([]), json!({})),
    )
    .await;
    assert_eq!(metric(&host.url, gauge).await, 1, "kept by transitions");
    assert_eq!(awaiting(&host, &ids).await, 1);
    // Ended tasks are no live state: no series says them.
    let text = metrics_text(&host).await;
    assert!(!text.contains("state=\"completed\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partners_stats_are_its_tenants_and_the_operators() {
    let host = TestHost::start(HostOptions::default()).await;
    let stats = |who: &'static str, agent: &'static str| {
        let url = host.url.clone();
        async move {
            admin(
                &url,
                Method::GET,
                &format!("/admin/agents/{agent}/stats"),
                who,
                None,
            )
            .await
        }
    };
    let (status, body) = stats(OPERATOR_TOKEN, "echo").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["invocations"], 0, "{body}");
    assert_eq!(body["p50_seconds"], Value::Null, "{body}");
    for i in 0..4 {
        post(
            &host.rpc("echo"),
            &v2("start", &format!("s-{i}"), text("x"), json!({})),
        )
        .await;
    }
    // An invocation is counted when it ends, which may be just after its task's reply.
    let deadline = std::time::Instant::now() + WAIT;
    let body = loop {
        let (status, body) = stats(OPERATOR_TOKEN, "echo").await;
        assert_eq!(status, 200, "{body}");
        if body["invocations"].as_u64() >= Some(4) || std::time::Instant::now() > deadline {
            break body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(body["agent"], "echo");
    assert_eq!(body["tenant"], Value::Null);
    assert_eq!(body["readiness"], "ready");
    assert!(body["invocations"].as_u64() >= Some(4), "{body}");
    assert_eq!(body["failures"], 0, "{body}");
    let (p50, p99) = (
        body["p50_seconds"].as_f64().expect("p50"),
        body["p99_seconds"].as_f64().expect("p99"),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= 30.0, "{body}");

    let a = create_tenant(&host.url, "ta", json!({})).await;
    let b = create_tenant(&host.url, "tb", json!({})).await;
    let manifest = example_manifest("echo", "a-echo", "");
    let (status, body) = publish(&host.url, &a, &manifest, &example_component("echo")).await;
    assert_eq!(status, 201, "{body}");
    let a: &'static str = Box::leak(a.into_boxed_str());
    let b: &'static str = Box::leak(b.into_boxed_str());
    let (status, body) = stats(a, "a-echo").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tenant"], "ta");
    assert!(
        ["ready", "compiling"].contains(&body["readiness"].as_str().unwrap_or_default()),
        "{body}"
    );
    assert_eq!(stats(OPERATOR_TOKEN, "a-echo").await.0, 200);
    // Another tenant's partner, an operator's, one not hosted: all 404 to a tenant.
    for agent in ["a-echo", "echo", "not-hosted"] {
        let (status, body) = stats(b, agent).await;
        assert_eq!(status, 404, "{agent}: {body}");
    }
    let (status, _) = stats("not-a-token", "echo").await;
    assert_eq!(status, 401);
    // Its series are there at zero as soon as it is hosted.
    let text = metrics_text(&host).await;
    let series = r#"aiphost_partner_invocations_running{agent="a-echo",tenant="ta"} 0"#;
    assert!(
        text.lines().any(|l| l == series),
        "{series} missing:\n{text}"
    );
}
