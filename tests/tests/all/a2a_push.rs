//! A2A push notifications (spec 3.1.7–3.1.10, 4.3): configs made per task or sent with a
//! message, in both bindings, delivered to a real receiver on 127.0.0.1 through the durable
//! outbox, with A2A's payload and headers, under the same address policy as AIP's webhooks.

use aiphost_tests::a2a::{call, endpoint, message, message_to, request, rest_base};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

/// The task a notification carries (a `StreamResponse` with a task).
fn task_of(hit: &Hit) -> &Value {
    &hit.body["task"]
}

fn state_of(hit: &Hit) -> &str {
    task_of(hit)["status"]["state"].as_str().unwrap_or_default()
}

/// Wait until the receiver got a notification at `path` saying `state`; the hits at `path`
/// until then.
async fn until_state(receiver: &Receiver, path: &str, state: &str) -> Vec<Hit> {
    let started = std::time::Instant::now();
    loop {
        let hits: Vec<Hit> = receiver
            .hits()
            .into_iter()
            .filter(|h| h.path == path)
            .collect();
        if hits.iter().any(|h| state_of(h) == state) {
            return hits;
        }
        assert!(started.elapsed() < LIMIT, "no {state} at {path}: {hits:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A config sent with a message is delivered every change of the task it starts, as A2A
/// payloads with A2A's headers (and none of AIP's), until the task ends; the task and the
/// config are the same over AIP and A2A afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_sent_with_a_message_hears_the_task_to_its_end() {
    let host = TestHost::start(HostOptions::default()).await;
    let receiver = Receiver::up().await;
    let config = json!({
        "id": "hook-1",
        "url": receiver.url("inline"),
        "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "cred-1"},
    });
    let answer = call(
        &host,
        "echo",
        "SendMessage",
        json!({"message": message("m-1", "hello"), "configuration": {"taskPushNotificationConfig": config}}),
    )
    .await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let id = task["id"].as_str().unwrap();
    let hits = until_state(&receiver, "/inline", "TASK_STATE_COMPLETED").await;
    for hit in &hits {
        assert_eq!(
            hit.authorization.as_deref(),
            Some("Bearer cred-1"),
            "{hit:?}"
        );
        assert_eq!(hit.a2a_token.as_deref(), Some("tok-1"));
        assert_eq!(
            hit.token, None,
            "no AIP token header on an A2A notification"
        );
        assert_eq!(hit.content_type.as_deref(), Some("application/json"));
        assert_eq!(task_of(hit)["id"], id);
        assert!(task_of(hit).get("history").is_none(), "{hit:?}");
    }
    let states: Vec<&str> = hits.iter().map(state_of).collect();
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{states:?}");
    // Every state once, in order: the awaiting-completion step is not one A2A knows.
    let mut seen = states.clone();
    seen.dedup();
    assert_eq!(seen, states, "{states:?}");
    assert_eq!(
        task_of(hits.last().unwrap())["artifacts"][0]["parts"][0]["text"],
        "hello"
    );

    let got = call(
        &host,
        "echo",
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "hook-1"}),
    )
    .await;
    assert_eq!(
        got["result"],
        json!({"id": "hook-1", "taskId": id, "url": receiver.url("inline"), "token": "tok-1",
               "authentication": {"scheme": "Bearer", "credentials": "cred-1"}}),
        "{got}"
    );

    // A streamed message with a config: the task waits for input (the stream closes), then a
    // plain follow-up completes it, and the config hears both.
    let mut stream = SseStream::open(
        &endpoint(&host, "tck"),
        &request(
            "SendStreamingMessage",
            json!({
                "message": message("tck-input-required-1", "start"),
                "configuration": {"taskPushNotificationConfig": {"url": receiver.url("streamed")}},
            }),
        ),
    )
    .await;
    let events = stream.until_closed(LIMIT).await;
    let waiting = events
        .iter()
        .find_map(|e| e["result"]["task"]["id"].as_str())
        .unwrap_or_else(|| panic!("a task first: {events:?}"))
        .to_string();
    until_state(&receiver, "/streamed", "TASK_STATE_INPUT_REQUIRED").await;
    let done = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message_to(&waiting, "tck-complete-task-1", "go on")}),
    )
    .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let hits = until_state(&receiver, "/streamed", "TASK_STATE_COMPLETED").await;
    // No token and no authentication given: neither header.
    assert!(
        hits.iter()
            .all(|h| h.a2a_token.is_none() && h.authorization.is_none())
    );
    let listed = call(
        &host,
        "tck",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": waiting}),
    )
    .await;
    let configs = listed["result"]["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{listed}");
    assert!(configs[0]["id"].as_str().unwrap().starts_with("push-"));
}

/// Configs made for a live task are heard from then on, each by itself; a deleted one is not;
/// configs are read, listed a page at a time and deleted (twice, no error) in both bindings;
/// an unknown task or config is TaskNotFound, and nothing is stored for a refused request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_are_made_read_listed_and_deleted_in_both_bindings() {
    let host = TestHost::start(HostOptions::default()).await;
    let receiver = Receiver::up().await;
    let asked = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let task = asked["result"]["task"]["id"].as_str().unwrap().to_string();
    let create = |id: &str, path: &str| {
        let params = json!({"taskId": task, "id": id, "url": receiver.url(path)});
        call(&host, "tck", "CreateTaskPushNotificationConfig", params)
    };
    let made = create("a", "a").await;
    assert_eq!(
        made["result"],
        json!({"id": "a", "taskId": task, "url": receiver.url("a")}),
        "{made}"
    );
    create("b", "b").await;
    create("gone", "gone").await;
    let deleted = call(
        &host,
        "tck",
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task, "id": "gone"}),
    )
    .await;
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    let again = call(
        &host,
        "tck",
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task, "id": "gone"}),
    )
    .await;
    assert_eq!(
        again["result"],
        json!({}),
        "deleting twice is no error: {again}"
    );
    let missing = call(
        &host,
        "tck",
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": "gone"}),
    )
    .await;
    assert_eq!(error_code(&missing), -32001, "{missing}");
    assert_eq!(
        missing["error"]["data"][0]["metadata"]["configId"], "gone",
        "{missing}"
    );

    // A page at a time, by id.
    let page = call(
        &host,
        "tck",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task, "pageSize": 1}),
    )
    .await;
    assert_eq!(page["result"]["configs"][0]["id"], "a", "{page}");
    let token = page["result"]["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let rest = call(
        &host,
        "tck",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task, "pageSize": 1, "pageToken": token}),
    )
    .await;
    assert_eq!(rest["result"]["configs"][0]["id"], "b", "{rest}");
    assert_eq!(rest["result"]["nextPageToken"], "");

    // Unknown task: refused, and nothing is made for it.
    let nowhere = call(
        &host,
        "tck",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "no-such-task", "url": receiver.url("x")}),
    )
    .await;
    assert_eq!(error_code(&nowhere), -32001, "{nowhere}");
    for method in [
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let answer = call(
            &host,
            "tck",
            method,
            json!({"taskId": "no-such-task", "id": "x"}),
        )
        .await;
        assert_eq!(error_code(&answer), -32001, "{method}: {answer}");
    }
    let no_url = call(
        &host,
        "tck",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "id": "c"}),
    )
    .await;
    assert_eq!(error_code(&no_url), -32602, "{no_url}");

    // The task ends: `a` and `b` hear it, `gone` does not.
    let done = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message_to(&task, "tck-complete-task-1", "go on")}),
    )
    .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    for path in ["/a", "/b"] {
        let hits = until_state(&receiver, path, "TASK_STATE_COMPLETED").await;
        assert_eq!(task_of(&hits[0])["id"], task.as_str());
    }
    assert!(receiver.hits().iter().all(|h| h.path != "/gone"));

    // HTTP+JSON, on the ended task: a config may still be made (and is never used).
    let base = format!(
        "{}/tasks/{task}/pushNotificationConfigs",
        rest_base(&host, "tck")
    );
    let client = reqwest::Client::new();
    let made = client
        .post(&base)
        .json(&json!({"id": "r", "url": receiver.url("r")}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    let made: Value = made.json().await.unwrap();
    assert_eq!(made["taskId"], task.as_str());
    let listed: Value = client
        .get(&base)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = listed["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "r"], "{listed}");
    let one = client.get(format!("{base}/r")).send().await.unwrap();
    assert_eq!(one.status(), 200);
    for _ in 0..2 {
        let deleted = client.delete(format!("{base}/r")).send().await.unwrap();
        assert_eq!(deleted.status(), 200);
    }
    let gone = client.get(format!("{base}/r")).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    let other_task = client
        .post(&base)
        .json(&json!({"taskId": "another", "url": receiver.url("r")}))
        .send()
        .await
        .unwrap();
    assert_eq!(other_task.status(), 400);
    let put = client.put(format!("{base}/a")).send().await.unwrap();
    assert_eq!(put.status(), 404, "no such operation");
    assert!(receiver.hits().iter().all(|h| h.path != "/r"));
}

/// Where a config may point is the host's address policy, as for AIP's webhooks: private
/// addresses are refused when they are not allowed (and a refused message starts nothing); a
/// name that does not resolve now is accepted, as every delivery checks it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_urls_pass_the_address_policy() {
    let host = TestHost::start(HostOptions {
        webhook_allow_private: false,
        list_tasks_on: vec!["echo".into()],
        ..HostOptions::default()
    })
    .await;
    let refused = call(
        &host,
        "echo",
        "SendMessage",
        json!({"message": message("m-1", "hello"), "configuration": {
            "taskPushNotificationConfig": {"url": "http://127.0.0.1:9/hook"}}}),
    )
    .await;
    assert_eq!(error_code(&refused), -32602, "{refused}");
    let data = refused["error"]["data"].to_string();
    assert!(data.contains("loopback"), "{data}");
    let listed = call(&host, "echo", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");

    let asked = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let task = asked["result"]["task"]["id"].as_str().unwrap().to_string();
    for url in [
        "http://10.1.2.3/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest",
    ] {
        let answer = call(
            &host,
            "tck",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": url}),
        )
        .await;
        assert_eq!(error_code(&answer), -32602, "{url}: {answer}");
    }
    let unresolved = call(
        &host,
        "tck",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "id": "later", "url": "https://receiver.invalid/hook"}),
    )
    .await;
    assert_eq!(unresolved["result"]["id"], "later", "{unresolved}");
    let listed = call(
        &host,
        "tck",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    assert_eq!(listed["result"]["configs"].as_array().unwrap().len(), 1);
}

/// A dead receiver delays only its own config's notifications past the horizon: each config of
/// a task is given up on by itself (one record each, with its own state), and the config after
/// it still hears every change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_config_of_a_task_is_given_up_on_by_itself() {
    let host = TestHost::start(HostOptions {
        webhook_horizon: Duration::from_millis(400),
        ..HostOptions::default()
    })
    .await;
    let dead = Receiver::down();
    let alive = Receiver::up().await;
    let asked = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let task = asked["result"]["task"]["id"].as_str().unwrap().to_string();
    for (id, url) in [
        ("dead-1", dead.url("1")),
        ("dead-2", dead.url("2")),
        ("alive", alive.url("a")),
    ] {
        let made = call(
            &host,
            "tck",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "id": id, "url": url}),
        )
        .await;
        assert_eq!(made["result"]["id"], id, "{made}");
    }
    let canceled = call(&host, "tck", "CancelTask", json!({"id": task})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    until_state(&alive, "/a", "TASK_STATE_CANCELED").await;
    let listed = given_up(&host.url).await;
    let given_up = listed["givenUp"].as_array().unwrap();
    assert_eq!(given_up.len(), 2, "one record per dead config: {listed}");
    for record in given_up {
        assert_eq!(record["taskId"], task.as_str());
        assert_eq!(record["state"], "TASK_STATE_CANCELED", "{record}");
    }
    let urls: Vec<&str> = given_up
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert!(
        urls.contains(&dead.url("1").as_str()) && urls.contains(&dead.url("2").as_str()),
        "{urls:?}"
    );
}

/// A message refused by the engine (here: it names another `contextId` than its task's) stores
/// nothing of the config it carries: neither a new config nor a change to one of the same id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_message_stores_nothing_of_its_config() {
    let host = TestHost::start(HostOptions::default()).await;
    let asked = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let task = asked["result"]["task"]["id"].as_str().unwrap().to_string();
    let made = call(
        &host,
        "tck",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "id": "hook", "url": "http://127.0.0.1:9/before", "token": "t1"}),
    )
    .await;
    assert_eq!(made["result"]["id"], "hook", "{made}");
    for (id, url) in [
        ("hook", "http://127.0.0.1:9/after"),
        ("fresh", "http://127.0.0.1:9/new"),
    ] {
        let mut elsewhere = message_to(&task, &format!("m-{id}"), "go on");
        elsewhere["contextId"] = json!("another-context");
        let refused = call(
            &host,
            "tck",
            "SendMessage",
            json!({"message": elsewhere, "configuration": {
                "taskPushNotificationConfig": {"id": id, "url": url, "token": "t2"}}}),
        )
        .await;
        assert_eq!(error_code(&refused), -32602, "{refused}");
    }
    let listed = call(
        &host,
        "tck",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    assert_eq!(
        listed["result"]["configs"],
        json!([{"id": "hook", "taskId": task, "url": "http://127.0.0.1:9/before", "token": "t1"}]),
        "{listed}"
    );
}

/// A message's config is stored with the change the message makes, in one durable write: a host
/// killed while a start waits for its partner's turn (after the door has handed the message to
/// the engine, before the task is created) keeps neither the task nor its config; a start that
/// got its task created keeps both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_message_keeps_a_config_only_with_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let args = [
        "--webhook-allow-private",
        "--max-invocations-per-partner",
        "1",
        "--list-tasks-on",
        "hostile",
    ];
    let host = ProcessHost::start(&data, &args);
    let a2a = format!("{}/agents/hostile/a2a", host.url);
    let send = |id: &'static str, text: &'static str| {
        let a2a = a2a.clone();
        tokio::spawn(async move {
            let body = request(
                "SendMessage",
                json!({"message": message(&format!("m-{id}"), text), "configuration": {
                    "taskPushNotificationConfig": {"id": id, "url": "http://127.0.0.1:9/hook"}}}),
            );
            // The host is killed before it answers.
            let _ = reqwest::Client::new().post(&a2a).json(&body).send().await;
        })
    };
    let running = "aiphost_partner_invocations_running{agent=\"hostile\"}";
    let waiting = "aiphost_partner_invocations_waiting{agent=\"hostile\"}";
    let first = send("first", "slow:2500");
    metric_reaches(&host.url, running, 1, LIMIT).await;
    let second = send("second", "hello");
    metric_reaches(&host.url, waiting, 1, LIMIT).await;
    host.kill();
    let _ = (first.await, second.await);

    {
        let store = aiphost::store::Store::open(&data.join("store")).unwrap();
        let namespace = aiphost::store::TaskKey::owned("hostile", None, "any");
        // Nothing expires (cut-off at the beginning of time): what is left waits for a task.
        let (left, _) = store.sweep_waiting_configs(&namespace, i64::MIN).unwrap();
        assert_eq!(left.waiting, 0, "a config whose task was never stored");
    }
    let host = ProcessHost::start(&data, &args);
    let a2a = format!("{}/agents/hostile/a2a", host.url);
    let listed = post(&a2a, &request("ListTasks", json!({}))).await;
    let tasks = listed["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "the first message's task alone: {listed}");
    let task = tasks[0]["id"].as_str().unwrap();
    let configs = post(
        &a2a,
        &request("ListTaskPushNotificationConfigs", json!({"taskId": task})),
    )
    .await;
    let configs = configs["result"]["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{configs:?}");
    assert_eq!(configs[0]["id"], "first");
}

/// One address rule below both doors: an AIP notification config and an A2A push config to a
/// private address are refused alike, with the same reason, and neither is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_doors_refuse_a_private_address_by_the_same_rule() {
    let host = TestHost::start(HostOptions {
        webhook_allow_private: false,
        ..HostOptions::default()
    })
    .await;
    let asked = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let task = asked["result"]["task"]["id"].as_str().unwrap().to_string();
    let url = "http://10.1.2.3/hook";
    let aip = post(
        &host.rpc("tck"),
        &notification_request(
            "notification/set",
            json!({"url": url, "token": "t", "taskId": task}),
        ),
    )
    .await;
    let a2a = call(
        &host,
        "tck",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": url}),
    )
    .await;
    for answer in [&aip, &a2a] {
        assert_eq!(error_code(answer), -32602, "{answer}");
    }
    let reason = aip["error"]["data"]["reason"].as_str().unwrap();
    assert!(reason.contains("10.1.2.3, a private address"), "{reason}");
    assert_eq!(
        a2a["error"]["data"].to_string().matches(reason).count(),
        1,
        "{a2a}"
    );
    let listed = call(
        &host,
        "tck",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    assert_eq!(listed["result"]["configs"], json!([]), "{listed}");
}
