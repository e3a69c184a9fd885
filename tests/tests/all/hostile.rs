//! What hostile testing found (issue 12), each through a real host: a Leader's namespace holds in
//! group mode and on streams, what a task keeps is bounded, a task whose invocation died with the
//! host does not stay `working`, and requests a browser could forge or that name a command almost
//! right are refused.

use aiphost::server::{Server, ServerConfig};
use aiphost_tests::group::{Leader, is_result, is_status};
use aiphost_tests::tenants::{
    aic_of, create_tenant, example_component as component, example_manifest as manifest, publish,
    publish_keyed,
};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const OTHER_LEADER: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";

/// Publish echo as `id` for a new tenant, taking Leaders by API key; a key for each of `leaders`.
async fn keyed_echo(host: &TestHost, id: &str, leaders: &[&str]) -> Vec<String> {
    let tenant = create_tenant(&host.url, &format!("{id}-owner"), json!({})).await;
    publish_keyed(&host.url, &tenant, "echo", id, leaders).await
}

/// `command` of `task` from `sender` in the v2 dialect.
fn from(sender: &str, command: &str, task: &str, items: Value) -> Value {
    let mut body = v2(command, task, items, json!({}));
    body["params"]["command"]["senderId"] = json!(sender);
    body
}

/// Point 1: a membership acts in the namespace of the Leader that invited it. Two Leaders each
/// invite the same API-key partner into their own group; the second cannot read or cancel the
/// first's task from its group, nor by forging the first's group messages under its own name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commands_act_in_the_inviting_leaders_namespace() {
    let host = TestHost::start(HostOptions::default()).await;
    let keys = keyed_echo(&host, "vault", &[LEADER, OTHER_LEADER]).await;
    let vault = aic_of("vault");
    let group_url = format!("{}/agents/vault/group", host.url);
    let invite = |leader: &Leader| json!({"jsonrpc": "2.0", "method": "group", "id": uuid(), "params": leader.invitation(&[&vault])});
    let mut first = Leader::v2_as(LEADER).await;
    let mut second = Leader::v2_as(OTHER_LEADER).await;

    // A Leader cannot invite on another Leader's behalf.
    let answer = post_as(&group_url, Some(&keys[1]), &invite(&first)).await;
    assert_eq!(error_code(&answer), -32009, "{answer}");
    assert_eq!(answer["error"]["data"]["field"], "params.group.leader.aic");

    for (leader, key) in [(&mut first, &keys[0]), (&mut second, &keys[1])] {
        let answer = post_as(&group_url, Some(key), &invite(leader)).await;
        assert_eq!(result(&answer)["status"], "joining", "{answer}");
        leader
            .expect("the member's arrival", Duration::from_secs(10), |m| {
                is_status(m, &vault, true, false)
            })
            .await;
    }

    first
        .publish(&first.command("start", "gtask-1", None, text("first's secret")))
        .await;
    first
        .expect("the first Leader's result", Duration::from_secs(10), |m| {
            is_result(m, &vault, "gtask-1", "awaiting-completion")
        })
        .await;

    // The second Leader, in its own group, names the first's task.
    second
        .publish(&second.command("get", "gtask-1", None, json!([])))
        .await;
    second
        .publish(&second.command("cancel", "gtask-1", None, json!([])))
        .await;
    // And in the first's group, under its own name.
    let mut forged = first.command("cancel", "gtask-1", None, json!([]));
    forged["senderId"] = json!(OTHER_LEADER);
    first.publish(&forged).await;

    let leaked = second
        .all_within(Duration::from_millis(1500), |m| m["senderId"] == vault)
        .await;
    assert!(
        leaked.iter().all(|m| m["type"] == "group-mgmt-result"),
        "the second Leader heard: {leaked:?}"
    );

    // The first Leader's task is untouched, in its group and over rpc with its key alike.
    let ended = first
        .all_within(Duration::from_millis(200), |m| {
            m["senderId"] == vault && m["taskId"] == "gtask-1" && m["status"]["state"] == "canceled"
        })
        .await;
    assert!(ended.is_empty(), "{ended:?}");
    let answer = post_as(
        &host.rpc("vault"),
        Some(&keys[0]),
        &from(LEADER, "get", "gtask-1", json!([])),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answer = post_as(
        &host.rpc("vault"),
        Some(&keys[1]),
        &from(OTHER_LEADER, "get", "gtask-1", json!([])),
    )
    .await;
    assert_eq!(error_code(&answer), -32001, "{answer}");

    for leader in [&first, &second] {
        leader
            .publish(&leader.mgmt("leave-group", json!([vault])))
            .await;
    }
    first.close(&[&vault]).await;
    second.close(&[&vault]).await;
}

/// Every event of a stream, as its events' JSON.
fn assert_own_ids(events: &[Value], task: &str, leader: &str) {
    assert!(!events.is_empty());
    for event in events {
        let data = &event["result"]["eventData"];
        let text = event.to_string();
        assert!(
            !text.contains("\\u001f") && !text.contains(&format!("{leader}\u{1f}")),
            "a namespaced id leaked: {event}"
        );
        let task_id = data.get("taskId").or_else(|| data.get("id")).unwrap();
        assert_eq!(task_id, task, "{event}");
        if let Some(id) = data["id"].as_str().filter(|_| data.get("taskId").is_some()) {
            assert!(
                !id.contains(leader),
                "the event id names the Leader: {event}"
            );
        }
    }
}

/// Point 2: on the streaming style, an authenticated Leader's events carry the task id it sent,
/// in both dialects, live and replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_show_an_authenticated_leader_its_own_task_ids() {
    let host = TestHost::start(HostOptions::default()).await;
    let keys = keyed_echo(&host, "keyed", &[LEADER]).await;
    let url = format!("{}/agents/keyed/rpc", host.url);
    for dialect in ["v1", "v2"] {
        let task = format!("own-{dialect}");
        let mut body = stream_request(dialect, "start", &task, text("hi"), json!({}));
        body["params"]["message"]["senderId"] = json!(LEADER);
        let mut stream = SseStream::open_as(&url, Some(&keys[0]), &body).await;
        assert!(stream.json.is_none(), "{:?}", stream.json);
        let mut live = Vec::new();
        while let Some((event, _)) = stream.next_event(Duration::from_secs(10)).await {
            let done = event_state(&event).as_deref() == Some("awaiting-completion");
            live.push(event);
            if done {
                break;
            }
        }
        assert_own_ids(&live, &task, LEADER);
        let answer = post_as(
            &url,
            Some(&keys[0]),
            &from(LEADER, "complete", &task, json!([])),
        )
        .await;
        assert_eq!(state(&answer), "completed", "{answer}");
        let rest = stream.until_closed(Duration::from_secs(10)).await;
        assert_own_ids(&rest, &task, LEADER);

        for replay_dialect in ["v1", "v2"] {
            let mut body = stream_request(replay_dialect, "re-stream", &task, json!([]), json!({}));
            body["params"]["message"]["senderId"] = json!(LEADER);
            let mut replay = SseStream::open_as(&url, Some(&keys[0]), &body).await;
            let events = replay.until_closed(Duration::from_secs(10)).await;
            assert!(events.len() >= 4, "{events:?}");
            assert_own_ids(&events, &task, LEADER);
        }
    }
}

/// Point 3: commands that change nothing cost their own bytes, and only the newest are kept;
/// histories stay within their limits; nothing rewrites the whole task per command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_commands_and_histories_stay_bounded() {
    let history = aiphost::task::HistoryLimits {
        max_commands: 40,
        max_command_bytes: 256 * 1024,
        max_unchanging: 8,
        max_statuses: 12,
    };
    let host = TestHost::start(HostOptions {
        history: history.clone(),
        ..HostOptions::default()
    })
    .await;
    let rpc = host.rpc("echo");
    let answer = post(&rpc, &v2("start", "busy", text("first"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answer = post(&rpc, &v2("complete", "busy", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");

    let store = host.data.path().join("store");
    let before = dir_bytes(&store);
    let big = "x".repeat(10 * 1024);
    for i in 0..200 {
        let mut again = v2("start", "busy", text(&big), json!({}));
        again["params"]["command"]["id"] = json!(format!("again-{i}"));
        let answer = post(&rpc, &again).await;
        assert_eq!(state(&answer), "completed", "{answer}");
    }
    let grown = dir_bytes(&store).saturating_sub(before);
    // 200 × 10 KB of commands is 2 MB; rewriting the task each time wrote ~200 MB.
    assert!(
        grown < 24 << 20,
        "200 ignored starts grew the store by {grown} bytes"
    );
    let answer = post(&rpc, &v2("get", "busy", json!([]), json!({}))).await;
    let commands = result(&answer)["commandHistory"]
        .as_array()
        .unwrap()
        .clone();
    let ids: Vec<&str> = commands.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(commands.len(), 2 + history.max_unchanging, "{ids:?}");
    assert_eq!(commands[0]["command"], "start");
    assert_eq!(commands[0]["dataItems"][0]["text"], "first");
    assert_eq!(commands[1]["command"], "complete");
    assert_eq!(ids[ids.len() - 2], "again-199", "the newest are kept");
    assert!(
        answer.to_string().len() < 200 * 1024,
        "the get answer stays small"
    );

    // A task moved back and forth: commands within their count and bytes, statuses within theirs.
    let answer = post(&rpc, &v2("start", "chatty", text("first"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let chunk = "y".repeat(40 * 1024);
    for i in 0..30 {
        let mut more = v2("continue", "chatty", text(&chunk), json!({}));
        more["params"]["command"]["id"] = json!(format!("more-{i}"));
        let answer = post(&rpc, &more).await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    }
    let answer = post(&rpc, &v2("get", "chatty", json!([]), json!({}))).await;
    let task = result(&answer);
    let commands = task["commandHistory"].as_array().unwrap();
    let bytes: usize = commands.iter().map(|c| c.to_string().len()).sum();
    assert!(bytes <= history.max_command_bytes + 64 * 1024, "{bytes}");
    assert_eq!(
        commands[0]["dataItems"][0]["text"], "first",
        "the start stays"
    );
    assert_eq!(commands.last().unwrap()["command"], "get");
    let statuses = task["statusHistory"].as_array().unwrap();
    assert_eq!(statuses.len(), history.max_statuses);
    assert_eq!(statuses[0]["state"], "accepted", "the first status stays");
    assert_eq!(statuses.last().unwrap()["state"], "awaiting-completion");

    // What a restart reads back is what was kept.
    let mut host = host;
    host.restart(HostOptions {
        history,
        ..HostOptions::default()
    })
    .await;
    let again = post(
        &host.rpc("echo"),
        &v2("get", "chatty", json!([]), json!({})),
    )
    .await;
    let reloaded = result(&again)["commandHistory"].as_array().unwrap();
    assert_eq!(
        reloaded[..reloaded.len() - 1],
        commands[..],
        "the history read back after a restart"
    );
}

/// Point 3: a Leader has at most `max_live_tasks` tasks that have not ended with a partner; the
/// count survives a restart, and ended tasks make room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_tasks_are_capped_per_leader() {
    let options = HostOptions {
        max_live_tasks: 3,
        ..HostOptions::default()
    };
    let mut host = TestHost::start(options.clone()).await;
    let keys = keyed_echo(&host, "capped", &[LEADER, OTHER_LEADER]).await;
    // `command` of `task` sent by Leader `who` (0 or 1) with its key, to the host as it is now.
    let send = |url: String, who: usize, command: &'static str, task: &'static str| {
        let (key, leader) = (keys[who].clone(), [LEADER, OTHER_LEADER][who]);
        let items = if command == "start" {
            text("hi")
        } else {
            json!([])
        };
        async move { post_as(&url, Some(&key), &from(leader, command, task, items)).await }
    };
    let rpc = host.rpc("capped");
    for task in ["t0", "t1", "t2"] {
        let answer = send(rpc.clone(), 0, "start", task).await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    }
    let answer = send(rpc.clone(), 0, "start", "t3").await;
    assert_eq!(error_code(&answer), -32009, "{answer}");
    assert_eq!(answer["error"]["data"]["quota"], "maxLiveTasks");
    assert_eq!(answer["error"]["data"]["limit"], 3);
    let answer = send(rpc.clone(), 0, "get", "t3").await;
    let refused_left_nothing = error_code(&answer) == -32001;
    assert!(
        refused_left_nothing,
        "a refused start leaves nothing: {answer}"
    );
    // Another Leader has its own count.
    let answer = send(rpc.clone(), 1, "start", "t0").await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    host.restart(options).await;
    let rpc = host.rpc("capped");
    let answer = send(rpc.clone(), 0, "start", "t3").await;
    let still_full = error_code(&answer) == -32009;
    assert!(still_full, "the count survives a restart: {answer}");
    let answer = send(rpc.clone(), 0, "complete", "t0").await;
    assert_eq!(state(&answer), "completed", "{answer}");
    let answer = send(rpc, 0, "start", "t3").await;
    assert_eq!(
        state(&answer),
        "awaiting-completion",
        "an ended task made room: {answer}"
    );
}

/// Point 4: a task whose invocation was running when the host was killed fails when the host
/// starts again, durably, with its event and its notification; a continue cannot revive it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_interrupted_by_a_crash_fails_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let receiver = Receiver::up().await;
    let host = ProcessHost::start(&data, &["--webhook-allow-private"]);
    let rpc = host.rpc("hostile");
    let config = post(
        &rpc,
        &notification_request(
            "notification/set",
            json!({"url": receiver.url("hook"), "token": "t", "taskId": "cut-short"}),
        ),
    )
    .await;
    let start = notification_start(
        "v2",
        "cut-short",
        text("slow:2500"),
        json!({"notificationConfigId": result(&config)["id"], "responseTimeout": 200}),
    );
    let answer = post(&rpc, &start).await;
    assert_eq!(state(&answer), "working", "{answer}");
    receiver.wait_for(2, Duration::from_secs(5)).await;
    host.kill();

    let host = ProcessHost::start(&data, &["--webhook-allow-private"]);
    let rpc = host.rpc("hostile");
    let answer = post(&rpc, &v2("get", "cut-short", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "failed", "{answer}");
    let reason = result(&answer)["status"]["dataItems"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(reason.contains("restarted"), "{reason}");
    let answer = post(&rpc, &v2("continue", "cut-short", text("more"), json!({}))).await;
    assert_eq!(state(&answer), "failed", "{answer}");
    let hits = receiver.wait_for(3, Duration::from_secs(10)).await;
    assert_eq!(hit_state(hits.last().unwrap()), "failed", "{hits:?}");
    let replay = stream_request("v2", "re-stream", "cut-short", json!([]), json!({}));
    let mut replay = SseStream::open(&format!("{}/agents/hostile/rpc", host.url), &replay).await;
    let events = replay.until_closed(Duration::from_secs(10)).await;
    assert_eq!(
        events.last().and_then(event_state).as_deref(),
        Some("failed"),
        "{events:?}"
    );
}

/// Point 8: an AIP request must say it is JSON (a browser may POST `text/plain` anywhere without
/// asking), and a command's name must be exact; neither refused request leaves a task behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_content_types_and_almost_commands_are_refused() {
    let host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let body = v2("start", "forged", text("hi"), json!({})).to_string();
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut request = reqwest::Client::new().post(&rpc).body(body.clone());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        assert_eq!(error_code(&answer), -32600, "{content_type:?}: {answer}");
        assert_eq!(answer["error"]["data"]["expected"], "application/json");
    }
    let answer = post(&rpc, &v2("get", "forged", json!([]), json!({}))).await;
    assert_eq!(error_code(&answer), -32001, "{answer}");
    let answer: Value = reqwest::Client::new()
        .post(&rpc)
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    for name in ["start\u{a0}", " start", "Start", "re_stream", "restream"] {
        let answer = post(&rpc, &v2(name, "almost", text("hi"), json!({}))).await;
        assert_eq!(error_code(&answer), -32602, "{name:?}: {answer}");
        assert_eq!(answer["error"]["data"]["field"], "params.command.command");
    }
    let answer = post(&rpc, &v2("get", "almost", json!([]), json!({}))).await;
    assert_eq!(error_code(&answer), -32001, "{answer}");
}

/// Point 8: group queues and mentions name partners by AIC, so no two hosted partners share
/// one: a publish that would is refused, and so is a start-up with two bundles that do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_aic_names_one_hosted_partner() {
    let host = TestHost::start(HostOptions::default()).await;
    let tenant = create_tenant(&host.url, "copycat", json!({})).await;
    let echo = std::fs::read_to_string(plugins_dist().join("echo/partner.toml")).unwrap();
    let same_aic = echo.replacen("id = \"echo\"\n", "id = \"echo-twin\"\n", 1);
    let (status, body) = publish(&host.url, &tenant, &same_aic, &component("echo")).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("AIC"), "{body}");
    let (status, _) = admin(
        &host.url,
        Method::GET,
        "/admin/agents/echo-twin/versions",
        &tenant,
        None,
    )
    .await;
    assert_eq!(status, 404, "nothing of the refused publish is kept");

    let bundles = tempfile::tempdir().unwrap();
    for id in ["echo", "echo-twin"] {
        let dir = bundles.path().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let text = echo.replacen("id = \"echo\"\n", &format!("id = \"{id}\"\n"), 1);
        std::fs::write(dir.join("partner.toml"), text).unwrap();
        std::fs::copy(
            plugins_dist().join("echo/partner.wasm"),
            dir.join("partner.wasm"),
        )
        .unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        data.path().to_path_buf(),
        vec![bundles.path().to_path_buf()],
    );
    config.runtime.cache_dir = shared_cache();
    let refused = Server::start(config)
        .await
        .err()
        .expect("a refused start-up");
    assert!(refused.to_string().contains("AIC"), "{refused}");
}

/// Point 9: a partner's invocations take at most its share of the guest threads; the rest wait
/// their turn, and other partners' invocations run meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_partner_holds_at_most_its_share() {
    let host = TestHost::start(HostOptions {
        max_invocations_per_partner: 2,
        ..HostOptions::default()
    })
    .await;
    let tenant = create_tenant(&host.url, "spinners", json!({})).await;
    let text_of = manifest("hostile", "spinner", "").replacen(
        "invocation-ms = 3000",
        "invocation-ms = 1000",
        1,
    );
    assert!(text_of.contains("invocation-ms = 1000"), "{text_of}");
    let (status, body) = publish(&host.url, &tenant, &text_of, &component("hostile")).await;
    assert_eq!(status, 201, "{body}");
    let rpc = host.rpc("spinner");
    let loops: Vec<_> = (0..4)
        .map(|i| {
            let rpc = rpc.clone();
            tokio::spawn(async move {
                post(
                    &rpc,
                    &v2(
                        "start",
                        &format!("spin-{i}"),
                        text("loop"),
                        json!({"responseTimeout": 100}),
                    ),
                )
                .await
            })
        })
        .collect();
    let running = r#"aiphost_partner_invocations_running{agent="spinner"}"#;
    let waiting = r#"aiphost_partner_invocations_waiting{agent="spinner"}"#;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (r, w) = (
            metric_if_any(&host.url, running).await,
            metric_if_any(&host.url, waiting).await,
        );
        assert!(r.unwrap_or(0) <= 2, "{r:?} running");
        if (r, w) == (Some(2), Some(2)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "running {r:?}, waiting {w:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another partner's task runs while the spinner's share is taken.
    let answer = post(
        &host.rpc("echo"),
        &v2("start", "meanwhile", text("hi"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    for l in loops {
        l.await.unwrap();
    }
    for i in 0..4 {
        let answer = wait_for_state(
            &rpc,
            &format!("spin-{i}"),
            "failed",
            Duration::from_secs(10),
        )
        .await;
        assert!(answer.to_string().contains("time limit"), "{answer}");
    }
}

/// An inbox invitation (v02.01, `--inbox-broker`) carries no credential of its Leader, so a
/// partner whose Leaders authenticate by API key refuses it — it would otherwise join a group
/// any broker user names — and says so with a `group-invitation-error` on the Leader's inbox,
/// the way acps-sdk's Leader reads it. It joins nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_invitations_cannot_reach_partners_whose_leaders_authenticate() {
    use aiphost_tests::group::{AMQP_URL, BROKER};
    use futures::StreamExt;
    use lapin::options::{
        BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, ExchangeDeclareOptions,
        QueueBindOptions, QueueDeclareOptions,
    };
    use lapin::types::{AMQPValue, FieldTable};
    use lapin::{BasicProperties, Connection, ConnectionProperties, ExchangeKind};

    let host = TestHost::start(HostOptions {
        inbox_broker: Some(format!("amqp://guest:guest@{BROKER}/%2f")),
        // Only the partner below: the examples' inboxes are the interop test's.
        examples: false,
        ..HostOptions::default()
    })
    .await;
    keyed_echo(&host, "inboxed", &[LEADER]).await;
    let partner_inbox = format!("inbox_{}", aic_of("inboxed"));
    let leader = "1.2.156.3088.1.1.TEST.INBOXL.1.0000";
    let leader_inbox = format!("inbox_{leader}");
    let connection = Connection::connect(AMQP_URL, ConnectionProperties::default())
        .await
        .expect("the RabbitMQ broker on 127.0.0.1:5672");
    let channel = connection.create_channel().await.expect("channel");
    channel
        .exchange_declare(
            "inbox.topic".into(),
            ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("inbox.topic");
    // The Leader's inbox, declared as acps-sdk's Leader declares it.
    let mut arguments = FieldTable::default();
    arguments.insert("x-expires".into(), AMQPValue::LongLongInt(5_184_000_000));
    arguments.insert("x-message-ttl".into(), AMQPValue::LongLongInt(604_800_000));
    channel
        .queue_declare(
            leader_inbox.clone().into(),
            QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            },
            arguments,
        )
        .await
        .expect("the Leader's inbox");
    channel
        .queue_bind(
            leader_inbox.clone().into(),
            "inbox.topic".into(),
            leader_inbox.clone().into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("bind the Leader's inbox");
    let mut answers = channel
        .basic_consume(
            leader_inbox.clone().into(),
            "test-leader-inbox".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consume the Leader's inbox");
    // The host takes up a newly published partner's inbox within a second or so.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let consumers = aiphost_tests::group::consumers_of(&connection, &partner_inbox).await;
        if consumers.is_some_and(|n| n > 0) {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the host never consumed {partner_inbox}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let invitation = json!({
        "type": "group-invitation", "protocol": "rabbitmq:4.2",
        "expiresAt": "2099-01-01T00:00:00Z", "invitationToken": "tok-inbox-1",
        "group": {"groupId": "g-inbox", "leader": {"aic": leader},
                  "partners": [{"aic": aic_of("inboxed")}]},
        "amqp": {"exchange": format!("group_{leader}_g-inbox"), "exchangeType": "fanout", "routingKey": ""},
    });
    // An invitation padded past the inbox's 64 KiB is dropped unread: no answer, no parse.
    let mut oversized = invitation.clone();
    oversized["invitationToken"] = json!("tok-inbox-oversized");
    oversized["padding"] = json!("x".repeat(65 * 1024));
    for message in [&oversized, &invitation] {
        channel
            .basic_publish(
                "inbox.topic".into(),
                partner_inbox.clone().into(),
                BasicPublishOptions::default(),
                message.to_string().as_bytes(),
                BasicProperties::default().with_content_type("application/json".into()),
            )
            .await
            .expect("publish the invitation");
    }
    let answer = tokio::time::timeout(Duration::from_secs(10), answers.next())
        .await
        .expect("no answer on the Leader's inbox")
        .expect("the consumer ended")
        .expect("a delivery");
    let _ = answer.acker.ack(BasicAckOptions::default()).await;
    let answer: Value = serde_json::from_slice(&answer.data).expect("JSON");
    assert_eq!(answer["type"], "group-invitation-error", "{answer}");
    assert_eq!(answer["partnerAic"], aic_of("inboxed"), "{answer}");
    assert_eq!(answer["groupId"], "g-inbox", "{answer}");
    // The first answer is the normal invitation's: the oversized one got none.
    assert_eq!(answer["invitationToken"], "tok-inbox-1", "{answer}");
    assert_eq!(
        answer["error"]["data"]["errorType"], "INVITATION_REJECTED",
        "{answer}"
    );
    assert!(
        answer["error"]["data"]["details"]
            .as_str()
            .is_some_and(|d| d.contains("JSON-RPC")),
        "{answer}"
    );
    let (_, groups) = admin(
        &host.url,
        Method::GET,
        "/admin/groups",
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(groups["memberships"], json!([]), "{groups}");

    // Issue 29 item 6: an unpublished partner's inbox is no longer consumed (the operator
    // removes its tenant's partner here; the queue itself stays, durable).
    let (status, body) = admin(
        &host.url,
        Method::DELETE,
        "/admin/agents/inboxed",
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 204, "{body}");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let consumers = aiphost_tests::group::consumers_of(&connection, &partner_inbox).await;
        if consumers.expect("the partner's inbox stays") == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "{partner_inbox} is still consumed after its partner was unpublished"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    aiphost_tests::group::delete_queue(&leader_inbox).await;
    aiphost_tests::group::delete_queue(&partner_inbox).await;
    let _ = connection.close(200, "test over".into()).await;
}

/// Notification configs are bounded: a task has at most 16, and a namespace holds at most 1,024
/// configs of tasks that have not started. A refused `notification/set` stores nothing; a config
/// whose task starts no longer counts as waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_configs_are_bounded() {
    let host = TestHost::start(HostOptions {
        webhook_allow_private: true,
        ..HostOptions::default()
    })
    .await;
    let rpc = host.rpc("echo");
    let set = |task: String| {
        let rpc = rpc.clone();
        async move {
            let params = json!({"url": "http://127.0.0.1:9/hook", "token": "t", "taskId": task});
            post(&rpc, &notification_request("notification/set", params)).await
        }
    };
    for n in 0..16 {
        let answer = set("many".into()).await;
        assert!(answer["result"]["id"].is_string(), "config {n}: {answer}");
    }
    let answer = set("many".into()).await;
    assert_eq!(error_code(&answer), -32009, "{answer}");
    assert_eq!(
        answer["error"]["data"]["quota"],
        "notificationConfigsPerTask"
    );
    assert_eq!(answer["error"]["data"]["limit"], 16);
    let get = notification_request("notification/get", json!({"taskId": "many"}));
    let stored = post(&rpc, &get).await;
    assert_eq!(
        stored["result"].as_array().map(Vec::len),
        Some(16),
        "{stored}"
    );

    // 16 are waiting (task "many" has not started); 1,008 more fill the namespace.
    for n in 0..1008 {
        let answer = set(format!("waiting-{n}")).await;
        assert!(answer["result"]["id"].is_string(), "config {n}: {answer}");
    }
    let answer = set("one-too-many".into()).await;
    assert_eq!(error_code(&answer), -32009, "{answer}");
    assert_eq!(
        answer["error"]["data"]["quota"],
        "waitingNotificationConfigs"
    );
    assert_eq!(answer["error"]["data"]["limit"], 1024);
    let get = notification_request("notification/get", json!({"taskId": "one-too-many"}));
    let answer = post(&rpc, &get).await;
    assert_eq!(
        error_code(&answer),
        -32001,
        "a refused set stores nothing: {answer}"
    );

    // A task that starts makes room: its configs no longer wait.
    let answer = post(&rpc, &v2("start", "waiting-0", text("hi"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answer = set("one-too-many".into()).await;
    assert!(answer["result"]["id"].is_string(), "{answer}");
}

/// `{"k": [ {"k": [ … ] } ] }`: `levels` levels of objects and arrays around a string.
fn nested(levels: usize) -> Value {
    let mut v = json!("bottom");
    for i in 0..levels {
        v = if i % 2 == 0 {
            json!({ "k": v })
        } else {
            json!([v])
        };
    }
    v
}

/// Issue 29 item 1: a value nested too deep to read back inside its task's record is refused
/// where it comes in (A2A metadata, A2A typed fields, AIP data items and commandParams, a
/// partner's products), with the path, and nothing is stored; the deepest value taken reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_acknowledged_that_cannot_be_read_back() {
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["trip-planner".into()],
        ..HostOptions::default()
    })
    .await;
    let listed = |answer: &Value| answer["result"]["tasks"].as_array().map_or(0, Vec::len);
    let before = listed(&a2a::call(&host, "trip-planner", "ListTasks", json!({})).await);

    // The reproduction: A2A metadata 121 levels deep, accepted and unreadable before.
    for (field, levels) in [("metadata", 121), ("metadata", 65)] {
        let mut message = a2a::message(&uuid(), "a trip to Beijing");
        message[field] = json!({ "n": nested(levels - 1) });
        let answer = a2a::call(
            &host,
            "trip-planner",
            "SendMessage",
            json!({"message": message}),
        )
        .await;
        assert_eq!(error_code(&answer), -32602, "{levels}: {answer}");
        let said = answer.to_string();
        assert!(
            said.contains("message.metadata.n") && said.contains("64"),
            "{said}"
        );
    }
    for (field, bad) in [
        ("extensions", json!([{"uri": "x"}])),
        ("referenceTaskIds", json!("not-a-list")),
        ("referenceTaskIds", json!([1, 2])),
    ] {
        let mut message = a2a::message(&uuid(), "a trip to Beijing");
        message[field] = bad;
        let answer = a2a::call(
            &host,
            "trip-planner",
            "SendMessage",
            json!({"message": message}),
        )
        .await;
        assert_eq!(error_code(&answer), -32602, "{field}: {answer}");
        assert!(
            answer.to_string().contains(&format!("message.{field}")),
            "{answer}"
        );
    }
    let after = listed(&a2a::call(&host, "trip-planner", "ListTasks", json!({})).await);
    assert_eq!(before, after, "a refused message left a task behind");

    // AIP: a data item and commandParams, in either dialect.
    let deep_item = json!([{"type": "data", "data": {"n": nested(70)}}]);
    let answer = post(
        &host.rpc("echo"),
        &v2("start", "deep-1", deep_item, json!({})),
    )
    .await;
    assert_eq!(error_code(&answer), -32602, "{answer}");
    assert!(
        answer.to_string().contains("dataItems[0].data.n"),
        "{answer}"
    );
    let answer = post(
        &host.rpc("echo"),
        &v1("start", "deep-2", text("hi"), json!({"x": nested(64)})),
    )
    .await;
    assert_eq!(error_code(&answer), -32602, "{answer}");
    assert!(answer.to_string().contains("commandParams.x"), "{answer}");
    for task in ["deep-1", "deep-2"] {
        let answer = post(&host.rpc("echo"), &v2("get", task, json!([]), json!({}))).await;
        assert_eq!(error_code(&answer), -32001, "{task} was stored: {answer}");
    }

    // The deepest value taken is stored and reads back, over both doors.
    let mut message = a2a::message(&uuid(), "a trip to Beijing");
    message["metadata"] = json!({ "n": nested(61) });
    let answer = a2a::call(
        &host,
        "trip-planner",
        "SendMessage",
        json!({"message": message}),
    )
    .await;
    let id = answer["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    let got = a2a::call(&host, "trip-planner", "GetTask", json!({"id": id})).await;
    assert_eq!(got["result"]["id"], id.as_str(), "{got}");
    let deepest = json!([{"type": "data", "data": {"n": nested(63)}}]);
    let answer = post(
        &host.rpc("echo"),
        &v2("start", "deep-ok", deepest, json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answer = post(
        &host.rpc("echo"),
        &v2("get", "deep-ok", json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    // A partner's product nested too deep fails its task with the reason; nothing unreadable.
    let answer = post(
        &host.rpc("hostile"),
        &v2("start", "deep-p", text("deep:100"), json!({})),
    )
    .await;
    let answer = if state(&answer) == "failed" {
        answer
    } else {
        post(
            &host.rpc("hostile"),
            &v2("get", "deep-p", json!([]), json!({})),
        )
        .await
    };
    assert_eq!(state(&answer), "failed", "{answer}");
    assert!(answer.to_string().contains("deeper than 64"), "{answer}");
    let answer = post(
        &host.rpc("hostile"),
        &v2("start", "deep-q", text("deep:60"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
}

/// A stored task value as the store reads it (`store/src/packed.rs`): a compressed one (`0xFC`,
/// its packed length less the marker as a u32 BE, then that as an LZ4 block) decompressed into
/// the packed form, any other as it is.
fn unpacked(stored: &[u8]) -> Vec<u8> {
    match stored.split_first() {
        Some((0xFC, rest)) => {
            let len = u32::from_be_bytes(rest[..4].try_into().expect("a length")) as usize;
            let mut value = vec![0xFD];
            value.extend(lz4_flex::block::decompress(&rest[4..], len).expect("it decompresses"));
            value
        }
        _ => stored.to_vec(),
    }
}

/// The record in a stored task value, and how to put another in its place: a packed value
/// (`store/src/packed.rs`: `0xFD`, the listing and the record, each after its length as a u32
/// BE, then the inline events and chunks; unpacked first) keeps all but the record; a plain one
/// is the record.
fn packed_record(stored: &[u8]) -> (impl Fn(&[u8]) -> Vec<u8>, &[u8]) {
    let field = |at: usize| -> (usize, usize) {
        let len = u32::from_be_bytes(stored[at..at + 4].try_into().expect("a length")) as usize;
        (at + 4, at + 4 + len)
    };
    let (start, end) = match stored.first() {
        Some(0xFD) => field(field(1).1),
        _ => (0, stored.len()),
    };
    let (head, tail) = (stored[..start].to_vec(), stored[end..].to_vec());
    let around = move |record: &[u8]| {
        let mut value = head.clone();
        if !value.is_empty() {
            let len = value.len() - 4;
            value[len..].copy_from_slice(&(record.len() as u32).to_be_bytes());
        }
        value.extend_from_slice(record);
        value.extend_from_slice(&tail);
        value
    };
    (around, &stored[start..end])
}

/// Replace the stored record of `task` (of an open partner `agent`) in the stopped host's store
/// under `data` with one an older host could have written: the same record with a value nested
/// deeper than it can be read back.
fn plant_unreadable(data: &std::path::Path, agent: &str, task: &str) {
    let db = aiphost_tests::stopped_sled(&data.join("store"));
    let tasks = db.open_tree("tasks").expect("its tasks");
    let key = format!("t\0{agent}\0{task}");
    let stored = tasks.get(&key).expect("read").expect("the task is stored");
    let stored = unpacked(&stored);
    let (around, record) = packed_record(&stored);
    let mut record: Value = serde_json::from_slice(record).expect("a readable record");
    // In a field the record reads (an unknown one would be skipped, whatever its depth).
    record["task"]["status"]["dataItems"] = json!([{"type": "data", "data": nested(200)}]);
    let bytes = serde_json::to_vec(&record).expect("encode");
    assert!(
        serde_json::from_slice::<Value>(&bytes).is_err(),
        "unreadable"
    );
    tasks.insert(key, around(&bytes)).expect("write");
    db.flush().expect("flush");
}

/// Issue 29 item 1, the rest: a record that nevertheless cannot be read (written by an older
/// host) is set aside at its first touch — a read, or its awaiting timer — the task failed with
/// the reason and its Leader's live-task slot freed, with one log line each, never an error
/// loop, and so it stays after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_cannot_be_read_is_failed_once_and_frees_its_slot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let flags = ["--max-live-tasks", "2"];
    let host = ProcessHost::start(&data, &flags);
    let planner = host.rpc("trip-planner");
    let start = |task: &str, params: Value| v1("start", task, text("a trip, please"), params);
    let answer = post(&planner, &start("unread-1", json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    let answer = post(
        &planner,
        &start("unread-2", json!({"awaitingInputTimeout": 3000})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    // Both slots of the open partner's shared namespace are taken.
    let answer = post(&planner, &start("unread-3", json!({}))).await;
    assert_eq!(answer["error"]["data"]["quota"], "maxLiveTasks", "{answer}");
    host.stop();
    plant_unreadable(&data, "trip-planner", "unread-1");
    plant_unreadable(&data, "trip-planner", "unread-2");

    let host = ProcessHost::start(&data, &flags);
    let planner = host.rpc("trip-planner");
    // First touch of the first: a read answers it failed, with the reason.
    let answer = post(&planner, &v1("get", "unread-1", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "failed", "{answer}");
    assert!(answer.to_string().contains("could not read"), "{answer}");
    // Its slot is free: a new start is taken.
    let answer = post(&planner, &start("unread-3", json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    // The second is touched by its timer, which ran out while the host was down: failed, not
    // canceled, and not retried.
    let answer = wait_for_state(&planner, "unread-2", "failed", Duration::from_secs(20)).await;
    assert!(answer.to_string().contains("could not read"), "{answer}");
    // Both slots freed: one more start fits the cap of 2 (unread-3 holds the other).
    let answer = post(&planner, &start("unread-4", json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    // Over A2A too, a plain read.
    let answer = post(
        &format!("{}/agents/trip-planner/a2a", host.url),
        &a2a::request("GetTask", json!({"id": "unread-1"})),
    )
    .await;
    assert_eq!(
        answer["result"]["status"]["state"], "TASK_STATE_FAILED",
        "{answer}"
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    let log = host.log();
    assert_eq!(
        log.matches("a stored task could not be read").count(),
        2,
        "one line each:\n{log}"
    );
    assert!(!log.contains("could not expire"), "{log}");
    assert_eq!(metric(&host.url, "aiphost_tasks_set_aside_total").await, 2);
    host.stop();

    // After a restart they are failed tasks like any other.
    let host = ProcessHost::start(&data, &flags);
    let planner = host.rpc("trip-planner");
    for task in ["unread-1", "unread-2"] {
        let answer = post(&planner, &v1("get", task, json!([]), json!({}))).await;
        assert_eq!(state(&answer), "failed", "{answer}");
    }
    assert!(!host.log().contains("could not be read"), "{}", host.log());
}
