//! The notification style (spec 6.3) with a real webhook receiver on 127.0.0.1, in both dialects.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

async fn set(host: &TestHost, agent: &str, task: &str, url: &str) -> Value {
    let answer = post(
        &host.rpc(agent),
        &notification_request(
            "notification/set",
            json!({"url": url, "token": "secret-token", "taskId": task}),
        ),
    )
    .await;
    result(&answer).clone()
}

fn states(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(hit_state).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_are_created_updated_read_and_deleted() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let first = set(&host, "echo", "cfg-task", "http://127.0.0.1:9/one").await;
    let id = first["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("notification-"));
    assert_eq!(first["url"], "http://127.0.0.1:9/one");
    assert_eq!(first["token"], "secret-token");
    assert_eq!(first["taskId"], "cfg-task");
    let second = set(&host, "echo", "cfg-task", "http://127.0.0.1:9/two").await;
    assert_ne!(second["id"], first["id"]);

    // Update in place.
    let update = notification_request(
        "notification/set",
        json!({"id": id, "url": "http://127.0.0.1:9/moved", "token": "t2", "taskId": "cfg-task"}),
    );
    let updated = result(&post(&rpc, &update).await).clone();
    assert_eq!(updated["id"], id.as_str());
    assert_eq!(updated["url"], "http://127.0.0.1:9/moved");
    let unknown = notification_request(
        "notification/set",
        json!({"id": "notification-nope", "url": "http://127.0.0.1:9/", "token": "t", "taskId": "cfg-task"}),
    );
    assert_eq!(
        post(&rpc, &unknown).await["error"]["data"]["field"],
        "params.id"
    );

    // Get one, get all; configs survive a restart.
    host.restart(HostOptions::default()).await;
    let rpc = host.rpc("echo");
    let one = post(
        &rpc,
        &notification_request(
            "notification/get",
            json!({"taskId": "cfg-task", "notificationConfigId": id}),
        ),
    )
    .await;
    assert_eq!(result(&one).as_array().unwrap().len(), 1);
    assert_eq!(result(&one)[0]["url"], "http://127.0.0.1:9/moved");
    let all = post(
        &rpc,
        &notification_request("notification/get", json!({"taskId": "cfg-task"})),
    )
    .await;
    assert_eq!(result(&all).as_array().unwrap().len(), 2);
    let missing = post(
        &rpc,
        &notification_request(
            "notification/get",
            json!({"taskId": "cfg-task", "notificationConfigId": "x"}),
        ),
    )
    .await;
    assert_eq!(error_code(&missing), -32602);
    let nobody = post(
        &rpc,
        &notification_request("notification/get", json!({"taskId": "no-such-task"})),
    )
    .await;
    assert_eq!(error_code(&nobody), -32001);

    // Delete one, then all.
    let del = post(
        &rpc,
        &notification_request(
            "notification/delete",
            json!({"taskId": "cfg-task", "notificationConfigId": id}),
        ),
    )
    .await;
    assert_eq!(result(&del), &json!({"success": true}));
    let again = post(
        &rpc,
        &notification_request(
            "notification/delete",
            json!({"taskId": "cfg-task", "notificationConfigId": id}),
        ),
    )
    .await;
    assert_eq!(error_code(&again), -32602);
    let del_all = post(
        &rpc,
        &notification_request("notification/delete", json!({"taskId": "cfg-task"})),
    )
    .await;
    assert_eq!(result(&del_all), &json!({"success": true}));
    let none = post(
        &rpc,
        &notification_request("notification/get", json!({"taskId": "cfg-task"})),
    )
    .await;
    assert_eq!(error_code(&none), -32001, "no configs and no task");

    let bad = post(
        &rpc,
        &notification_request(
            "notification/set",
            json!({"url": "http://127.0.0.1:9/", "taskId": "t"}),
        ),
    )
    .await;
    assert_eq!(bad["error"]["data"]["field"], "params.token");
}

/// Every state change is POSTed in order with the token, as the task in the task's dialect;
/// `notifyOnStates` filters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_in_both_dialects_in_order_with_filters() {
    let host = TestHost::start(HostOptions::default()).await;
    let receiver = Receiver::up().await;
    for (dialect, body_type) in [("v1", "task"), ("v2", "task-result")] {
        let task = format!("notify-{dialect}-{}", uuid());
        let config = set(&host, "echo", &task, &receiver.url(dialect)).await;
        let before = receiver.hits().len();
        let start = notification_start(
            dialect,
            &task,
            text("hello"),
            json!({"notificationConfigId": config["id"]}),
        );
        assert_eq!(
            state(
                &post(
                    &format!("{}/agents/echo/notification/start", host.url),
                    &start
                )
                .await
            ),
            "awaiting-completion"
        );
        post(
            &host.rpc("echo"),
            &v2("complete", &task, json!([]), json!({})),
        )
        .await;
        let hits: Vec<Hit> = receiver.wait_for(before + 4, LIMIT).await[before..].to_vec();
        assert_eq!(
            states(&hits),
            ["accepted", "working", "awaiting-completion", "completed"],
            "{dialect}"
        );
        for hit in &hits {
            assert_eq!(hit.path, format!("/{dialect}"));
            assert_eq!(hit.token.as_deref(), Some("secret-token"));
            assert_eq!(hit.content_type.as_deref(), Some("application/json"));
            assert_eq!(
                hit.body["type"], body_type,
                "the body is in the task's dialect"
            );
        }
        assert_eq!(hits[2].body["products"][0]["dataItems"][0]["text"], "hello");
    }

    let task = format!("filtered-{}", uuid());
    let config = set(&host, "trip-planner", &task, &receiver.url("filtered")).await;
    let before = receiver.hits().len();
    let start = notification_start(
        "v1",
        &task,
        text("a trip"),
        json!({"notificationConfigId": config["id"], "notifyOnStates": ["AwaitingInput", "canceled"]}),
    );
    assert_eq!(
        state(&post(&host.rpc("trip-planner"), &start).await),
        "awaiting-input"
    );
    post(
        &host.rpc("trip-planner"),
        &v1("cancel", &task, json!([]), json!({})),
    )
    .await;
    let hits = receiver.wait_for(before + 2, LIMIT).await[before..].to_vec();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        states(&receiver.hits()[before..]),
        ["awaiting-input", "canceled"],
        "only the chosen states"
    );
    assert_eq!(hits.len(), 2);

    // notification/start needs a config of that very task, and a start.
    let wrong = notification_start(
        "v2",
        "other-task",
        text("x"),
        json!({"notificationConfigId": config["id"]}),
    );
    assert_eq!(
        post(&host.rpc("echo"), &wrong).await["error"]["data"]["field"],
        "commandParams.notificationConfigId"
    );
    let mut not_start = notification_start(
        "v2",
        &task,
        text("x"),
        json!({"notificationConfigId": config["id"]}),
    );
    not_start["params"]["command"]["command"] = json!("continue");
    assert_eq!(
        post(&host.rpc("echo"), &not_start).await["error"]["data"]["field"],
        "params.command.command"
    );
}

/// Only HTTP 200 counts: other answers are retried, and the order holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_200_counts_and_retries_keep_order() {
    let host = TestHost::start(HostOptions::default()).await;
    let receiver = Receiver::up().await;
    receiver.answer_with(Answer::Status(202));
    let config = set(&host, "echo", "retry", &receiver.url("r")).await;
    post(
        &host.rpc("echo"),
        &notification_start(
            "v2",
            "retry",
            text("x"),
            json!({"notificationConfigId": config["id"]}),
        ),
    )
    .await;
    let early = receiver.wait_for(3, LIMIT).await;
    assert!(
        early.iter().all(|h| hit_state(h) == "accepted"),
        "the first keeps being retried: {:?}",
        states(&early)
    );
    receiver.answer_with(Answer::Ok);
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let mut seen = states(&receiver.hits());
        seen.dedup();
        if seen == ["accepted", "working", "awaiting-completion"] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    metric_reaches(
        &host.url,
        "aiphost_notification_failed_attempts_total",
        3,
        LIMIT,
    )
    .await;
    assert_eq!(
        metric_reaches(&host.url, "aiphost_notifications_delivered_total", 3, LIMIT).await,
        3
    );
}

/// A receiver that is down gets every notification, in order, once it is back; a dead receiver
/// slows neither the tasks nor other receivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_down_then_back_and_no_head_of_line_blocking() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut late = Receiver::down();
    let live = Receiver::up().await;
    let mut tasks = Vec::new();
    for i in 0..3 {
        let task = format!("late-{i}");
        let config = set(&host, "echo", &task, &late.url("late")).await;
        let started = std::time::Instant::now();
        let answer = post(
            &host.rpc("echo"),
            &notification_start(
                "v1",
                &task,
                text("x"),
                json!({"notificationConfigId": config["id"]}),
            ),
        )
        .await;
        assert_eq!(state(&answer), "awaiting-completion");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a dead receiver slowed the task: {:?}",
            started.elapsed()
        );
        post(
            &host.rpc("echo"),
            &v1("complete", &task, json!([]), json!({})),
        )
        .await;
        tasks.push(task);
    }
    // Another receiver is served meanwhile.
    let config = set(&host, "echo", "live", &live.url("live")).await;
    post(
        &host.rpc("echo"),
        &notification_start(
            "v2",
            "live",
            text("x"),
            json!({"notificationConfigId": config["id"]}),
        ),
    )
    .await;
    let hits = live.wait_for(3, Duration::from_secs(3)).await;
    assert_eq!(
        states(&hits),
        ["accepted", "working", "awaiting-completion"]
    );

    tokio::time::sleep(Duration::from_secs(2)).await;
    late.start().await;
    let hits = late.wait_for(12, LIMIT).await;
    for task in &tasks {
        let seen: Vec<String> = hits
            .iter()
            .filter(|h| h.body["id"] == task.as_str())
            .map(hit_state)
            .collect();
        let mut unique = seen.clone();
        unique.dedup();
        assert_eq!(
            unique,
            ["accepted", "working", "awaiting-completion", "completed"],
            "{task}: {seen:?}"
        );
    }
}

/// Past the horizon a notification is given up, recorded, and visible (metric, admin endpoint,
/// CLI); a deleted config drops what was pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_up_notifications_are_visible() {
    let host = TestHost::start(HostOptions {
        webhook_horizon: Duration::from_millis(600),
        ..HostOptions::default()
    })
    .await;
    let dead = Receiver::down();
    let config = set(&host, "stats", "doomed", &dead.url("x")).await;
    let start = notification_start(
        "v2",
        "doomed",
        json!([{"type": "data", "data": {"x": 1}}]),
        json!({"notificationConfigId": config["id"]}),
    );
    assert_eq!(state(&post(&host.rpc("stats"), &start).await), "rejected");
    let deadline = std::time::Instant::now() + LIMIT;
    while metric(&host.url, "aiphost_notifications_given_up_total").await < 1 {
        assert!(std::time::Instant::now() < deadline, "never gave up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = given_up(&host.url).await;
    let entry = &listed["givenUp"][0];
    assert_eq!(entry["taskId"], "doomed");
    assert_eq!(entry["state"], "rejected");
    assert!(entry["attempts"].as_u64().unwrap() >= 2);
    assert!(entry["lastError"].as_str().unwrap().len() > 5);
    assert!(
        !listed.to_string().contains("secret-token"),
        "tokens are not shown"
    );
    let out = std::process::Command::new(aiphost_bin())
        .args(["notifications", "given-up", "--url", &host.url])
        .env("AIPHOST_TOKEN", OPERATOR_TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("doomed"));

    // Deleting the config drops what is pending.
    let config = set(&host, "echo", "dropped", &dead.url("y")).await;
    post(
        &host.rpc("echo"),
        &notification_start(
            "v2",
            "dropped",
            text("x"),
            json!({"notificationConfigId": config["id"]}),
        ),
    )
    .await;
    post(
        &host.rpc("echo"),
        &notification_request("notification/delete", json!({"taskId": "dropped"})),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        metric(&host.url, "aiphost_notifications_given_up_total").await,
        1,
        "dropped, not given up"
    );
}

/// By default webhooks may not target private, loopback, link-local or metadata addresses —
/// checked after name resolution — and redirects are not followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_targets_are_refused_and_redirects_not_followed() {
    let strict = TestHost::start(HostOptions {
        webhook_allow_private: false,
        ..HostOptions::default()
    })
    .await;
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://localhost:8080/hook",
        "http://[::1]/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[fec0::1]/hook",
        "http://[2001:db8::1]/hook",
        "http://198.18.0.1/hook",
        "http://192.0.2.1/hook",
        "ftp://example.com/hook",
        "not a url",
    ] {
        let answer = post(
            &strict.rpc("echo"),
            &notification_request(
                "notification/set",
                json!({"url": url, "token": "t", "taskId": "t"}),
            ),
        )
        .await;
        assert_eq!(
            answer["error"]["data"]["field"], "params.url",
            "{url}: {answer}"
        );
    }
    let reason = post(
        &strict.rpc("echo"),
        &notification_request(
            "notification/set",
            json!({"url": "http://localhost/x", "token": "t", "taskId": "t"}),
        ),
    )
    .await["error"]["data"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("loopback"), "{reason}");

    let host = TestHost::start(HostOptions::default()).await;
    let target = Receiver::up().await;
    let redirecting = Receiver::up().await;
    redirecting.answer_with(Answer::Redirect(target.url("stolen")));
    let config = set(&host, "echo", "redir", &redirecting.url("r")).await;
    post(
        &host.rpc("echo"),
        &notification_start(
            "v2",
            "redir",
            text("x"),
            json!({"notificationConfigId": config["id"]}),
        ),
    )
    .await;
    redirecting.wait_for(3, LIMIT).await;
    // The third attempt's failure is counted after the receiver answered it.
    metric_reaches(
        &host.url,
        "aiphost_notification_failed_attempts_total",
        3,
        LIMIT,
    )
    .await;
    assert!(target.hits().is_empty(), "a redirect was followed");
}

/// The host is SIGKILLed with notifications still undelivered (the receiver is down); after a
/// restart it delivers every one, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undelivered_notifications_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let flags = [
        "--webhook-allow-private",
        "--webhook-retry-base-ms",
        "50",
        "--webhook-retry-max-ms",
        "300",
    ];
    let host = ProcessHost::start(&data, &flags);
    let mut receiver = Receiver::down();
    let mut tasks = Vec::new();
    for (i, dialect) in ["v1", "v2"].into_iter().enumerate() {
        let task = format!("killed-{i}");
        let answer = post(
            &host.rpc("echo"),
            &notification_request(
                "notification/set",
                json!({"url": receiver.url(dialect), "token": "tok", "taskId": task}),
            ),
        )
        .await;
        let config = result(&answer)["id"].clone();
        let start = notification_start(
            dialect,
            &task,
            text("x"),
            json!({"notificationConfigId": config}),
        );
        assert_eq!(
            state(&post(&host.rpc("echo"), &start).await),
            "awaiting-completion"
        );
        post(
            &host.rpc("echo"),
            &v2("complete", &task, json!([]), json!({})),
        )
        .await;
        tasks.push((task, dialect));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    host.kill();
    assert!(receiver.hits().is_empty());

    receiver.start().await;
    let host = ProcessHost::start(&data, &flags);
    let hits = receiver.wait_for(8, LIMIT).await;
    for (task, dialect) in &tasks {
        let id_field = if *dialect == "v1" { "id" } else { "taskId" };
        let mut seen: Vec<String> = hits
            .iter()
            .filter(|h| h.body[id_field] == task.as_str())
            .map(hit_state)
            .collect();
        seen.dedup();
        assert_eq!(
            seen,
            ["accepted", "working", "awaiting-completion", "completed"],
            "{task}"
        );
        assert!(
            hits.iter()
                .filter(|h| h.body[id_field] == task.as_str())
                .all(|h| h.token.as_deref() == Some("tok"))
        );
    }
    host.kill();
}

/// A receiver that accepts connections and never answers holds only its own few delivery slots:
/// another receiver is served at once although the shared pool is small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_receiver_cannot_starve_the_others() {
    let host = TestHost::start(HostOptions {
        webhook_timeout: Duration::from_secs(5),
        webhook_max_in_flight: 8,
        ..HostOptions::default()
    })
    .await;
    let hang = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hang_url = format!("http://{}/hang", hang.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        // Accept and hold every connection, answering nothing.
        let mut open = Vec::new();
        hang.set_nonblocking(true).unwrap();
        // Count for 4 s, before any request could time out (5 s): what is open is what runs at once.
        let until = std::time::Instant::now() + Duration::from_secs(4);
        while std::time::Instant::now() < until {
            if let Ok((socket, _)) = hang.accept() {
                open.push(socket);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        open.len()
    });
    for i in 0..10 {
        let task = format!("hang-{i}");
        let config = set(&host, "echo", &task, &hang_url).await;
        post(
            &host.rpc("echo"),
            &notification_start(
                "v2",
                &task,
                text("x"),
                json!({"notificationConfigId": config["id"]}),
            ),
        )
        .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let live = Receiver::up().await;
    let config = set(&host, "echo", "served", &live.url("ok")).await;
    let started = std::time::Instant::now();
    post(
        &host.rpc("echo"),
        &notification_start(
            "v2",
            "served",
            text("x"),
            json!({"notificationConfigId": config["id"]}),
        ),
    )
    .await;
    let hits = live.wait_for(3, Duration::from_secs(10)).await;
    assert_eq!(
        states(&hits),
        ["accepted", "working", "awaiting-completion"]
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the live receiver waited {:?} behind a hanging one (its requests time out after 5 s)",
        started.elapsed()
    );
    let held = held.join().unwrap();
    assert!(
        held <= 4,
        "the hanging receiver got {held} connections at once; at most 4 are allowed"
    );
}

/// A webhook URL may not carry a user name or password: the host would have to show it (in the
/// config, in the given-up listing) and would log it. Nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_urls_may_not_carry_credentials() {
    let host = TestHost::start(HostOptions::default()).await;
    let receiver = Receiver::up().await;
    for url in [
        format!("http://user:pw@127.0.0.1:{}/hook", receiver.port),
        format!("http://user@127.0.0.1:{}/hook", receiver.port),
        format!("http://:pw@127.0.0.1:{}/hook", receiver.port),
    ] {
        let answer = post(
            &host.rpc("echo"),
            &notification_request(
                "notification/set",
                json!({"url": url, "token": "t", "taskId": "with-credentials"}),
            ),
        )
        .await;
        assert_eq!(error_code(&answer), -32602, "{url}: {answer}");
        let data = &answer["error"]["data"];
        assert_eq!(data["field"], "params.url", "{url}: {answer}");
        let reason = data["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("user name or password"), "{reason}");
    }
    let stored = post(
        &host.rpc("echo"),
        &notification_request("notification/get", json!({"taskId": "with-credentials"})),
    )
    .await;
    assert_eq!(error_code(&stored), -32001, "nothing was stored: {stored}");
}

/// A config stored before URLs with credentials were refused: its password is never shown (not
/// by `notification/get`, not in the given-up listing) nor logged, though the host still
/// delivers to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_webhook_credentials_are_never_shown_or_logged() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let dead = Receiver::down();
    let url = format!("http://alice:hunter2-secret@127.0.0.1:{}/hook", dead.port);
    {
        let store = aiphost::store::Store::open(&data.join("store")).unwrap();
        let key = aiphost::store::TaskKey::owned("echo", None, "legacy");
        let config = aiphost::model::notification::NotificationConfig {
            id: "notification-legacy".into(),
            url: url.clone(),
            token: "tok".into(),
            task_id: "legacy".into(),
            ..Default::default()
        };
        let ticket = store.put_config(&key, &config, None).unwrap();
        store.durable(ticket).await.unwrap();
    }
    let host = ProcessHost::start(
        &data,
        &["--webhook-allow-private", "--webhook-horizon-secs", "0"],
    );
    let got = post(
        &host.rpc("echo"),
        &notification_request("notification/get", json!({"taskId": "legacy"})),
    )
    .await;
    let shown = result(&got)[0]["url"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!shown.contains("hunter2"), "{got}");
    assert!(
        shown.contains(&format!("127.0.0.1:{}/hook", dead.port)),
        "{got}"
    );
    post(
        &host.rpc("echo"),
        &notification_start(
            "v2",
            "legacy",
            text("x"),
            json!({"notificationConfigId": "notification-legacy"}),
        ),
    )
    .await;
    let started = std::time::Instant::now();
    let listed = loop {
        let listed = given_up(&host.url).await;
        if listed["givenUp"].as_array().is_some_and(|g| !g.is_empty()) {
            break listed;
        }
        assert!(started.elapsed() < LIMIT, "nothing given up: {listed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let entry = &listed["givenUp"][0];
    assert!(
        entry["url"]
            .as_str()
            .is_some_and(|u| u.contains(&format!("127.0.0.1:{}/hook", dead.port))),
        "{listed}"
    );
    assert!(!listed.to_string().contains("hunter2"), "{listed}");
    host.kill();
    let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
    assert!(log.contains("giving up on a notification"), "{log}");
    assert!(!log.contains("hunter2"), "the password was logged:\n{log}");
}
