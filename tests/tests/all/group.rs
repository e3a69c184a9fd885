//! Group mode against the real RabbitMQ on 127.0.0.1:5672 (`scripts/rabbitmq.sh` makes sure it
//! runs): joining, business and management messages in both dialects, mentions and mute, leaving,
//! hybrid use, resuming after a crash, reconnecting after the broker drops the link, and
//! isolation of a slow partner.

use aiphost::protocol::aip::group::JOIN_FAILED;
use aiphost_tests::group::{BROKER, LEADER, Leader, Probe, ProbeMode, is_result, is_status};
use aiphost_tests::{HostOptions, ProcessHost, TestHost, error_code, post, result, text, v2};
use serde_json::{Value, json};
use std::time::Duration;

const ECHO: &str = "1.2.156.3088.1.1.AIPHST.ECHO.1.0000";
const TRIP: &str = "1.2.156.3088.1.1.AIPHST.TRIPPLAN.1.0000";
const HOSTILE: &str = "1.2.156.3088.1.1.AIPHST.HOSTILE.1.0000";
const WAIT: Duration = Duration::from_secs(20);
/// How long to listen to show that something does not happen.
const QUIET: Duration = Duration::from_millis(1500);

fn invite(params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "group", "id": "inv-1", "params": params})
}

async fn memberships(host_url: &str) -> Vec<Value> {
    let (status, body) = aiphost_tests::admin(
        host_url,
        reqwest::Method::GET,
        "/admin/groups",
        aiphost_tests::OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["memberships"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_replies_announces_and_fails_cleanly() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut leader = Leader::v2().await;
    let group_url = format!("{}/agents/echo/group", host.url);

    let answer = post(&group_url, &invite(leader.invitation(&[ECHO]))).await;
    let reply = result(&answer);
    assert_eq!(reply["queueName"], leader.queue_of(ECHO));
    assert_eq!(reply["groupId"], leader.group_id);
    assert_eq!(reply["vhost"], "/");
    assert_eq!(reply["status"], "joining");
    for field in ["connectionName", "nodeName", "processId"] {
        assert!(reply[field].is_string(), "{field} in {reply}");
    }
    // The announcement was confirmed by the broker before the reply.
    let hello = leader
        .expect("connected:true", WAIT, |m| is_status(m, ECHO, true, false))
        .await;
    assert_eq!(hello["type"], "group-mgmt-result");
    assert_eq!(hello["groupId"], leader.group_id);
    assert!(leader.queue_exists(&leader.queue_of(ECHO)).await);
    let listed = memberships(&host.url).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["agent"], "echo");
    assert_eq!(listed[0]["state"], "connected");
    assert_eq!(listed[0]["dialect"], "v02.01");

    // Invited again (any AIP path): the membership stands, nothing is duplicated.
    let again = post(
        &format!("{}/agents/echo/rpc", host.url),
        &invite(leader.invitation(&[ECHO])),
    )
    .await;
    assert_eq!(result(&again)["queueName"], leader.queue_of(ECHO));
    assert_eq!(memberships(&host.url).await.len(), 1);

    // Failures: -32603 CONNECTION_FAILED with details, and nothing left behind.
    let mut nobody = leader.invitation(&[TRIP]);
    nobody["server"]["port"] = json!(aiphost_tests::free_port());
    let mut bad_login = leader.invitation(&[TRIP]);
    bad_login["server"]["accessToken"] = json!("guest:wrong-password");
    let mut no_exchange = leader.invitation(&[TRIP]);
    no_exchange["amqp"]["exchange"] = json!("no-such-exchange-for-aiphost");
    let mut no_token = leader.invitation(&[TRIP]);
    no_token["server"]
        .as_object_mut()
        .unwrap()
        .remove("accessToken");
    for (case, params) in [
        ("unreachable", nobody),
        ("refused login", bad_login),
        ("missing exchange", no_exchange),
        ("no token (EXTERNAL)", no_token),
    ] {
        let answer = post(
            &format!("{}/agents/trip-planner/group", host.url),
            &invite(params),
        )
        .await;
        assert_eq!(error_code(&answer), -32603, "{case}: {answer}");
        let data = &answer["error"]["data"];
        assert_eq!(data["errorType"], "CONNECTION_FAILED", "{case}: {answer}");
        assert!(data["details"]["reason"].is_string(), "{case}: {answer}");
        assert_eq!(data["details"]["host"], "127.0.0.1", "{case}");
    }
    assert!(!leader.queue_exists(&leader.queue_of(TRIP)).await);
    // A malformed invitation names the field.
    let mut bad = leader.invitation(&[TRIP]);
    bad["group"].as_object_mut().unwrap().remove("groupId");
    let answer = post(&group_url, &invite(bad)).await;
    assert_eq!(error_code(&answer), -32602);
    assert_eq!(answer["error"]["data"]["field"], "params.group.groupId");
    assert_eq!(memberships(&host.url).await.len(), 1);
    leader.close(&[ECHO, TRIP]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_group_tasks_mentions_mute_and_leave() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut leader = Leader::v2().await;
    let answer = post(
        &format!("{}/agents/echo/group", host.url),
        &invite(leader.invitation(&[ECHO])),
    )
    .await;
    result(&answer);
    leader
        .expect("connected:true", WAIT, |m| is_status(m, ECHO, true, false))
        .await;

    // start → accepted, then awaiting-completion with the echo, each durable first.
    leader
        .publish(&leader.command("start", "gt-1", Some(json!([ECHO])), text("hi group")))
        .await;
    let accepted = leader
        .expect("accepted", WAIT, |m| is_result(m, ECHO, "gt-1", "accepted"))
        .await;
    assert_eq!(accepted["senderRole"], "partner");
    assert_eq!(accepted["groupId"], leader.group_id);
    assert_eq!(accepted["sessionId"], "sess-1");
    let done = leader
        .expect("awaiting-completion", WAIT, |m| {
            is_result(m, ECHO, "gt-1", "awaiting-completion")
        })
        .await;
    assert_eq!(done["products"][0]["dataItems"][0]["text"], "hi group");
    // Hybrid: the same task over direct rpc, in the same session.
    let direct = post(&host.rpc("echo"), &v2("get", "gt-1", json!([]), json!({}))).await;
    assert_eq!(result(&direct)["status"]["state"], "awaiting-completion");
    assert_eq!(result(&direct)["groupId"], leader.group_id);
    let mut own = v2("start", "direct-1", text("direct"), json!({}));
    own["params"]["command"]["sessionId"] = json!("sess-1");
    assert_eq!(
        result(&post(&host.rpc("echo"), &own).await)["status"]["state"],
        "awaiting-completion"
    );

    // The same command twice (a resend or redelivery) is applied once.
    let again = leader.command("continue", "gt-1", Some(json!([ECHO])), text("more"));
    leader.publish(&again).await;
    leader.publish(&again).await;
    // get over the group answers with the task.
    leader
        .publish(&leader.command("get", "gt-1", Some(json!([ECHO])), json!([])))
        .await;
    let after = leader
        .all_within(Duration::from_secs(3), |m| {
            is_result(m, ECHO, "gt-1", "awaiting-completion")
        })
        .await;
    assert!(
        after
            .iter()
            .any(|m| m["products"][0]["dataItems"][0]["text"] == "more"),
        "{after:?}"
    );
    let history = post(&host.rpc("echo"), &v2("get", "gt-1", json!([]), json!({}))).await;
    let continues = result(&history)["commandHistory"]
        .as_array()
        .map(|h| h.iter().filter(|c| c["command"] == "continue").count());
    assert_eq!(continues, Some(1), "{history}");
    // complete, over the group.
    leader
        .publish(&leader.command("complete", "gt-1", Some(json!([ECHO])), json!([])))
        .await;
    leader
        .expect("completed", WAIT, |m| {
            is_result(m, ECHO, "gt-1", "completed")
        })
        .await;

    // Mentions: addressed to others → ignored (no task at all); to nobody → handled by default.
    leader
        .publish(&leader.command("start", "gt-other", Some(json!([TRIP])), text("x")))
        .await;
    leader
        .publish(&leader.command("start", "gt-all", Some(json!("all")), text("x")))
        .await;
    leader
        .expect("the `all` task", WAIT, |m| {
            is_result(m, ECHO, "gt-all", "awaiting-completion")
        })
        .await;
    let ignored = post(
        &host.rpc("echo"),
        &v2("get", "gt-other", json!([]), json!({})),
    )
    .await;
    assert_eq!(error_code(&ignored), -32001, "{ignored}");

    // get-status, mute, then an unaddressed start is not handled; named, it is.
    leader
        .publish(&leader.mgmt("get-status", json!([ECHO])))
        .await;
    let status = leader
        .expect("get-status answer", WAIT, |m| {
            is_status(m, ECHO, true, false) && m["sessionId"] == "sess-1"
        })
        .await;
    assert_eq!(status["groupId"], leader.group_id);
    leader.publish(&leader.mgmt("mute", json!([ECHO]))).await;
    leader
        .expect("muted", WAIT, |m| is_status(m, ECHO, true, true))
        .await;
    leader
        .publish(&leader.command("start", "gt-muted", None, text("x")))
        .await;
    leader
        .publish(&leader.command("start", "gt-named", Some(json!([ECHO])), text("x")))
        .await;
    leader
        .expect("named while muted", WAIT, |m| {
            is_result(m, ECHO, "gt-named", "awaiting-completion")
        })
        .await;
    let spoke = leader
        .all_within(QUIET, |m| {
            m["taskId"] == "gt-muted" && m["senderId"] == ECHO
        })
        .await;
    assert!(
        spoke.is_empty(),
        "a muted member spoke unaddressed: {spoke:?}"
    );
    assert_eq!(memberships(&host.url).await[0]["muted"], true);
    leader.publish(&leader.mgmt("unmute", json!([ECHO]))).await;
    leader
        .expect("unmuted", WAIT, |m| {
            is_status(m, ECHO, true, false) && m["id"] != status["id"]
        })
        .await;
    leader
        .publish(&leader.command("start", "gt-unaddressed", None, text("x")))
        .await;
    leader
        .expect("unaddressed after unmute", WAIT, |m| {
            is_result(m, ECHO, "gt-unaddressed", "awaiting-completion")
        })
        .await;

    // leave-group: the last word, then the queue is gone and so is the membership.
    leader
        .publish(&leader.mgmt("leave-group", json!([ECHO])))
        .await;
    leader
        .expect("connected:false", WAIT, |m| {
            is_status(m, ECHO, false, false)
        })
        .await;
    assert!(
        leader
            .queue_gone(&leader.queue_of(ECHO), Duration::from_secs(5))
            .await,
        "the queue outlived leave-group"
    );
    assert!(memberships(&host.url).await.is_empty());
    // Its history stays.
    let kept = post(&host.rpc("echo"), &v2("get", "gt-1", json!([]), json!({}))).await;
    assert_eq!(result(&kept)["status"]["state"], "completed");
    leader.close(&[ECHO]).await;
}

/// The engine checks content types whatever door a command comes through: a group `start`
/// with an item no skill of the partner accepts is refused with -32005, as over rpc, and starts
/// no task (group mode has no channel for errors: the refusal shows in the log and `/metrics`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commands_are_refused_content_types_no_skill_accepts() {
    let host = TestHost::start(HostOptions::default()).await;
    let refused = "aiphost_group_commands_refused_total{code=\"-32005\"}";
    let mut leader = Leader::v2().await;
    let answer = post(
        &format!("{}/agents/echo/group", host.url),
        &invite(leader.invitation(&[ECHO])),
    )
    .await;
    result(&answer);
    leader
        .expect("connected:true", WAIT, |m| is_status(m, ECHO, true, false))
        .await;
    let pdf = json!([{"type": "file", "mimeType": "application/pdf", "uri": "https://example.com/a.pdf"}]);
    leader
        .publish(&leader.command("start", "gt-pdf", Some(json!([ECHO])), pdf))
        .await;
    // A good command after it: the consumer goes on.
    leader
        .publish(&leader.command("start", "gt-text", Some(json!([ECHO])), text("hi")))
        .await;
    leader
        .expect("the text task", WAIT, |m| {
            is_result(m, ECHO, "gt-text", "awaiting-completion")
        })
        .await;
    let until = std::time::Instant::now() + WAIT;
    while aiphost_tests::metric_if_any(&host.url, refused).await != Some(1) {
        assert!(
            std::time::Instant::now() < until,
            "no -32005 refusal counted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let results = leader
        .all_within(QUIET, |m| m["taskId"] == "gt-pdf" && m["senderId"] == ECHO)
        .await;
    assert!(results.is_empty(), "{results:?}");
    let get = post(
        &host.rpc("echo"),
        &v2("get", "gt-pdf", json!([]), json!({})),
    )
    .await;
    assert_eq!(error_code(&get), -32001, "{get}");
    leader.close(&[ECHO]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_group_and_disband() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut leader = Leader::v1().await;
    for agent in ["echo", "trip-planner"] {
        let answer = post(
            &format!("{}/agents/{agent}/group", host.url),
            &invite(leader.invitation(&[ECHO, TRIP])),
        )
        .await;
        result(&answer);
    }
    let hello = leader
        .expect("v1 connected:true", WAIT, |m| {
            is_status(m, ECHO, true, false)
        })
        .await;
    assert_eq!(hello["type"], "group-mgmt-message", "{hello}");
    let listed = memberships(&host.url).await;
    assert_eq!(listed.len(), 2);
    assert!(
        listed.iter().all(|m| m["dialect"] == "v01.00"),
        "{listed:?}"
    );

    // A v1 `message` start without mentions reaches both; each answers as a v1 `task`.
    let start = json!({
        "type": "message", "id": "msg-1", "sentAt": "2025-09-01T11:59:45+08:00",
        "senderRole": "leader", "senderId": LEADER, "command": "start",
        "dataItems": [{"type": "text", "text": "请帮我做一个3天北京文化主体游的行程安排。"}],
        "taskId": "task-5678", "groupId": leader.group_id, "sessionId": "session-91011"
    });
    leader.publish(&start).await;
    let echoed = leader
        .expect("echo's v1 task", WAIT, |m| {
            is_result(m, ECHO, "task-5678", "awaiting-completion")
        })
        .await;
    assert_eq!(echoed["type"], "task");
    assert_eq!(echoed["id"], "task-5678");
    assert_eq!(echoed["sessionId"], "session-91011");
    let asked = leader
        .expect("trip planner asks", WAIT, |m| {
            is_result(m, TRIP, "task-5678", "awaiting-input")
        })
        .await;
    assert_eq!(asked["type"], "task");

    // v1 disband (`group-mgmt-message`, mentions all): both leave.
    leader
        .publish(&json!({
            "type": "group-mgmt-message", "id": "mgmt-1", "sentAt": "2025-09-01T12:30:00+08:00",
            "senderRole": "leader", "senderId": LEADER, "groupMgmtCommand": "disband",
            "mentions": "all", "groupId": leader.group_id
        }))
        .await;
    for aic in [ECHO, TRIP] {
        let bye = leader
            .expect("v1 connected:false", WAIT, |m| {
                is_status(m, aic, false, false)
            })
            .await;
        assert_eq!(bye["type"], "group-mgmt-message");
        assert!(
            leader
                .queue_gone(&leader.queue_of(aic), Duration::from_secs(5))
                .await,
            "{aic}'s queue outlived disband"
        );
    }
    assert!(memberships(&host.url).await.is_empty());
    leader.close(&[ECHO, TRIP]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_host_resumes_and_loses_no_command() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = data.path().join("host");
    let host = ProcessHost::start(&dir, &["--group-brokers", BROKER]);
    let mut leader = Leader::v2().await;
    result(
        &post(
            &format!("{}/agents/echo/group", host.url),
            &invite(leader.invitation(&[ECHO])),
        )
        .await,
    );
    leader
        .expect("connected:true", WAIT, |m| is_status(m, ECHO, true, false))
        .await;
    host.kill();

    // Sent while the host is down: waits in the durable queue.
    leader
        .publish(&leader.command("start", "while-down", Some(json!([ECHO])), text("queued")))
        .await;
    let host = ProcessHost::start(&dir, &["--group-brokers", BROKER]);
    let done = leader
        .expect(
            "the queued command, after restart",
            Duration::from_secs(30),
            |m| is_result(m, ECHO, "while-down", "awaiting-completion"),
        )
        .await;
    assert_eq!(done["products"][0]["dataItems"][0]["text"], "queued");
    // Exactly once.
    let results = leader
        .all_within(QUIET, |m| {
            is_result(m, ECHO, "while-down", "awaiting-completion")
        })
        .await;
    assert_eq!(results.len(), 1, "{results:?}");
    // The CLI shows the resumed membership.
    let out = std::process::Command::new(aiphost_tests::aiphost_bin())
        .args(["groups", "--url", &host.url])
        .env("AIPHOST_TOKEN", aiphost_tests::OPERATOR_TOKEN)
        .output()
        .expect("aiphost groups");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&leader.group_id) && shown.contains("echo"),
        "{shown}"
    );
    assert!(shown.contains("connected"), "{shown}");
    leader.close(&[ECHO]).await;
}

/// Close the broker side of every connection named `name` (as a broker restart or network cut
/// would), with `rabbitmqctl`.
fn broker_drops(name: &str) -> usize {
    let out = std::process::Command::new("rabbitmqctl")
        .args([
            "-q",
            "list_connections",
            "--no-table-headers",
            "pid",
            "client_properties",
        ])
        .output()
        .expect("rabbitmqctl (installed with rabbitmq-server)");
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    let mut closed = 0;
    for line in listing.lines() {
        // The connection name is one of the client properties: `{"connection_name",longstr,"…"}`.
        let Some((pid, properties)) = line.split_once('\t') else {
            continue;
        };
        if properties.contains(&format!("\"{name}\"")) {
            let status = std::process::Command::new("rabbitmqctl")
                .args(["-q", "close_connection", pid.trim(), "test: link cut"])
                .status()
                .expect("rabbitmqctl close_connection");
            assert!(status.success());
            closed += 1;
        }
    }
    closed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_broker_link_reconnects() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut leader = Leader::v2().await;
    let reply = post(
        &format!("{}/agents/echo/group", host.url),
        &invite(leader.invitation(&[ECHO])),
    )
    .await;
    let name = result(&reply)["connectionName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    leader
        .expect("connected:true", WAIT, |m| is_status(m, ECHO, true, false))
        .await;
    assert_eq!(
        broker_drops(&name),
        1,
        "the host's connection {name} was not found"
    );
    // Sent while the link is down or coming back.
    leader
        .publish(&leader.command("start", "after-cut", Some(json!([ECHO])), text("again")))
        .await;
    leader
        .expect("a result after the reconnect", WAIT, |m| {
            is_result(m, ECHO, "after-cut", "awaiting-completion")
        })
        .await;
    let once = leader
        .all_within(QUIET, |m| {
            is_result(m, ECHO, "after-cut", "awaiting-completion")
        })
        .await;
    assert_eq!(once.len(), 1, "{once:?}");
    assert!(aiphost_tests::metric(&host.url, "aiphost_group_reconnects_total").await >= 1);
    assert_eq!(memberships(&host.url).await[0]["state"], "connected");
    leader.close(&[ECHO]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_partner_does_not_stall_other_groups_or_tasks() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut slow_group = Leader::v2().await;
    let mut fast_group = Leader::v2().await;
    result(
        &post(
            &format!("{}/agents/hostile/group", host.url),
            &invite(slow_group.invitation(&[HOSTILE])),
        )
        .await,
    );
    result(
        &post(
            &format!("{}/agents/echo/group", host.url),
            &invite(fast_group.invitation(&[ECHO])),
        )
        .await,
    );
    slow_group
        .publish(&slow_group.command("start", "slow-1", Some(json!([HOSTILE])), text("slow:2500")))
        .await;
    fast_group
        .publish(&fast_group.command("start", "fast-1", Some(json!([ECHO])), text("quick")))
        .await;
    // The other group's echo answers while the slow partner is still working.
    fast_group
        .expect("the fast group's result", WAIT, |m| {
            is_result(m, ECHO, "fast-1", "awaiting-completion")
        })
        .await;
    let slow_done = slow_group
        .all_within(Duration::from_millis(100), |m| {
            m["taskId"] == "slow-1"
                && m["senderId"] == HOSTILE
                && m["status"]["state"] != "accepted"
                && m["status"]["state"] != "working"
        })
        .await;
    assert!(
        slow_done.is_empty(),
        "the slow task ended too soon: {slow_done:?}"
    );
    slow_group.close(&[HOSTILE]).await;
    fast_group.close(&[ECHO]).await;
}

/// The answer to a refused invitation, for comparing answers: the error without the port the
/// invitation named.
fn refusal(answer: &Value, case: &str) -> Value {
    assert!(answer.get("error").is_some(), "{case}: {answer}");
    assert_eq!(error_code(answer), -32603, "{case}: {answer}");
    let mut error = answer["error"].clone();
    assert_eq!(
        error["data"]["errorType"], "CONNECTION_FAILED",
        "{case}: {answer}"
    );
    assert_eq!(error["data"]["details"]["vhost"], "/", "{case}: {answer}");
    error["data"]["details"]
        .as_object_mut()
        .expect("details")
        .remove("port");
    error
}

/// An invitation may not make the host connect to loopback (by any spelling of it) or to any
/// other private address: it is refused before anything connects, with the same answer however
/// it was spelled, and leaves nothing behind. The test hosts allow exactly 127.0.0.1:5672 (the
/// broker): another name for it is not on the list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_may_not_reach_private_addresses() {
    let host = TestHost::start(HostOptions::default()).await;
    let probe = Probe::start(ProbeMode::Close).await;
    let leader = Leader::v2().await;
    let group_url = format!("{}/agents/echo/group", host.url);
    let mut answers = Vec::new();
    for name in [
        "127.0.0.1",
        "2130706433",
        "localhost",
        "127.1",
        "0x7f000001",
        "[::1]",
        "::ffff:127.0.0.1",
    ] {
        let mut params = leader.invitation(&[ECHO]);
        params["server"]["host"] = json!(name);
        params["server"]["port"] = json!(probe.port);
        let answer = post(&group_url, &invite(params)).await;
        let error = refusal(&answer, name);
        assert_eq!(error["data"]["details"]["host"], name, "{answer}");
        assert_eq!(answer["error"]["data"]["details"]["port"], probe.port);
        answers.push((name, error));
    }
    assert_eq!(probe.accepted(), 0, "the host connected to the probe");
    let mut same_broker = leader.invitation(&[ECHO]);
    same_broker["server"]["host"] = json!("localhost");
    let answer = post(&group_url, &invite(same_broker)).await;
    answers.push(("localhost:5672", refusal(&answer, "localhost:5672")));
    for (name, error) in &answers {
        assert_eq!(
            error["data"]["details"]["reason"], JOIN_FAILED,
            "{name}: {error}"
        );
    }
    assert!(memberships(&host.url).await.is_empty());
    assert!(!leader.queue_exists(&leader.queue_of(ECHO)).await);
    leader.close(&[ECHO]).await;
}

/// Where the operator allows private brokers, a join that fails gets one answer whatever the
/// network did — nothing listening, a service that accepts and closes, one that never answers,
/// one that is not AMQP, a broker that refuses the login or has no such exchange — so
/// invitations cannot scan ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_failures_do_not_tell_what_the_network_did() {
    let host = TestHost::start(HostOptions {
        group_connect_timeout: Duration::from_secs(1),
        group_allow_private: true,
        ..HostOptions::default()
    })
    .await;
    let leader = Leader::v2().await;
    let (closing, silent, http) = (
        Probe::start(ProbeMode::Close).await,
        Probe::start(ProbeMode::Silent).await,
        Probe::start(ProbeMode::Http).await,
    );
    let at = |port: u16| {
        let mut params = leader.invitation(&[ECHO]);
        params["server"]["port"] = json!(port);
        params
    };
    let mut bad_login = leader.invitation(&[ECHO]);
    bad_login["server"]["accessToken"] = json!("guest:wrong-password");
    let mut no_exchange = leader.invitation(&[ECHO]);
    no_exchange["amqp"]["exchange"] = json!("no-such-exchange-for-aiphost");
    let mut answers = Vec::new();
    for (case, params) in [
        ("nothing listening", at(aiphost_tests::free_port())),
        ("accepts and closes", at(closing.port)),
        ("never answers", at(silent.port)),
        ("not AMQP", at(http.port)),
        ("refused login", bad_login),
        ("no such exchange", no_exchange),
    ] {
        let answer = post(&format!("{}/agents/echo/group", host.url), &invite(params)).await;
        answers.push((case, refusal(&answer, case)));
    }
    // The host did connect (the policy allowed it): the answers are alike because they say
    // nothing of what happened.
    for probe in [&closing, &silent, &http] {
        assert!(probe.accepted() >= 1, "the host never connected to a probe");
    }
    for (case, error) in &answers {
        assert_eq!(error["data"]["details"]["reason"], JOIN_FAILED, "{case}");
        assert_eq!(error, &answers[0].1, "{case} vs {}", answers[0].0);
    }
    assert!(memberships(&host.url).await.is_empty());
    assert!(!leader.queue_exists(&leader.queue_of(ECHO)).await);
    leader.close(&[ECHO]).await;
}

/// A membership is checked against the operator's broker rules each time its link opens: after
/// a restart that took the broker off the list it stays away (and says why to the operator);
/// once the broker is listed again it comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_membership_is_checked_again() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let mut leader = Leader::v2().await;
    result(
        &post(
            &format!("{}/agents/echo/group", host.url),
            &invite(leader.invitation(&[ECHO])),
        )
        .await,
    );
    let hello = leader
        .expect("connected:true", WAIT, |m| is_status(m, ECHO, true, false))
        .await;

    host.restart(HostOptions {
        group_brokers: Vec::new(),
        ..HostOptions::default()
    })
    .await;
    let started = std::time::Instant::now();
    let refused = loop {
        let listed = memberships(&host.url).await;
        assert_eq!(listed.len(), 1, "{listed:?}");
        if listed[0]["lastError"].is_string() {
            break listed[0].clone();
        }
        assert!(
            started.elapsed() < WAIT,
            "never tried to resume: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(refused["state"], "reconnecting", "{refused}");
    let error = refused["lastError"].as_str().unwrap_or_default();
    assert!(
        error.contains("loopback") && error.contains("policy"),
        "{error}"
    );
    let hellos = leader
        .all_within(Duration::from_millis(300), |m| {
            is_status(m, ECHO, true, false)
        })
        .await;
    assert_eq!(
        hellos.len(),
        1,
        "it connected although not allowed: {hellos:?}"
    );

    host.restart(HostOptions::default()).await;
    leader
        .expect(
            "connected:true after the broker was listed again",
            WAIT,
            |m| is_status(m, ECHO, true, false) && m["id"] != hello["id"],
        )
        .await;
    // The state follows the announcement.
    let started = std::time::Instant::now();
    while memberships(&host.url).await[0]["state"] != "connected" {
        assert!(started.elapsed() < WAIT, "not shown as connected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    leader.close(&[ECHO]).await;
}

/// A broker that accepts and never answers costs the host nothing once the join has timed out:
/// the host closes every connection it opened (lapin alone would wait on it for good, with a
/// thread per invitation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_broker_is_let_go_after_the_timeout() {
    let host = TestHost::start(HostOptions {
        group_connect_timeout: Duration::from_millis(500),
        group_allow_private: true,
        ..HostOptions::default()
    })
    .await;
    let leader = Leader::v2().await;
    let silent = Probe::start(ProbeMode::Silent).await;
    for _ in 0..3 {
        let mut params = leader.invitation(&[ECHO]);
        params["server"]["port"] = json!(silent.port);
        let answer = post(&format!("{}/agents/echo/group", host.url), &invite(params)).await;
        refusal(&answer, "silent");
    }
    assert_eq!(silent.accepted(), 3);
    let started = std::time::Instant::now();
    while silent.closed() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the host still holds {} of 3 connections to a broker it gave up on",
            3 - silent.closed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(memberships(&host.url).await.is_empty());
    leader.close(&[ECHO]).await;
}
