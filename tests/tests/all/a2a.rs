//! The A2A door: every hosted partner is an A2A agent over JSON-RPC and HTTP+JSON, on the same
//! engine and tasks as AIP. (The official conformance kit runs against it in CI too:
//! `scripts/a2a-tck.sh`.)

use aiphost_tests::a2a::{
    call, card, endpoint, message, message_to, reason, request, rest, rest_base,
};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_cards_come_from_manifests_and_cache() {
    let host = TestHost::start(HostOptions::default()).await;
    let url = format!("{}/agents/echo/.well-known/agent-card.json", host.url);
    let response = reqwest::get(&url).await.unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let etag = header("etag");
    assert!(etag.starts_with('"') && etag.len() > 2, "{etag}");
    assert!(header("cache-control").contains("max-age="));
    assert!(header("last-modified").ends_with(" GMT"));
    let card: Value = response.json().await.unwrap();
    assert_eq!(card["name"], "Echo");
    assert_eq!(card["version"], "0.1.0");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    assert_eq!(card["skills"][0]["id"], "echo");
    assert_eq!(
        card["defaultInputModes"],
        json!(["application/json", "text/plain"])
    );
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    assert_eq!(
        interfaces[0],
        json!({"url": format!("{}/agents/echo/a2a", host.url), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
    );
    assert_eq!(
        interfaces[1]["url"],
        format!("{}/agents/echo/a2a/rest", host.url)
    );
    assert_eq!(interfaces[1]["protocolBinding"], "HTTP+JSON");
    let again = reqwest::Client::new()
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    let missing = reqwest::get(format!(
        "{}/agents/nobody/.well-known/agent-card.json",
        host.url
    ))
    .await
    .unwrap();
    assert_eq!(missing.status(), 404);
    // The host's list points at every card.
    let list: Value = reqwest::get(format!("{}/agents", host.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        list["agents"][0]["a2aCard"],
        format!("{}/agents/chunked/.well-known/agent-card.json", host.url)
    );
}

/// A message starts a task that completes with the partner's result; the task is the same one
/// AIP sees; a follow-up continues a task that needs input, inheriting its context; an ended
/// task refuses messages and a second cancel, leaving nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_start_continue_and_end_tasks_on_the_engine() {
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["tck".into()],
        ..HostOptions::default()
    })
    .await;
    let answer = call(
        &host,
        "echo",
        "SendMessage",
        json!({"message": message("m-1", "hello")}),
    )
    .await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(task["artifacts"][0]["artifactId"], "echo");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello");
    assert!(task["contextId"].as_str().unwrap().starts_with("ctx-"));
    assert!(
        task["status"]["timestamp"].as_str().unwrap().ends_with('Z'),
        "{task}"
    );
    let task_id = task["id"].as_str().unwrap().to_string();
    // The same task over AIP: completed, its session the A2A context.
    let aip = post(
        &host.rpc("echo"),
        &v2("get", &task_id, json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&aip), "completed", "{aip}");
    // Immutable once ended: refused, and nothing recorded.
    let refused = call(
        &host,
        "echo",
        "SendMessage",
        json!({"message": message_to(&task_id, "m-2", "again")}),
    )
    .await;
    assert_eq!(error_code(&refused), -32004, "{refused}");
    assert_eq!(reason(&refused), "UNSUPPORTED_OPERATION");
    let read = call(&host, "echo", "GetTask", json!({"id": task_id})).await;
    let history = read["result"]["history"].as_array().unwrap();
    assert!(
        history.iter().all(|m| m["messageId"] != "m-2"),
        "{history:?}"
    );
    let not_cancelable = call(&host, "echo", "CancelTask", json!({"id": task_id})).await;
    assert_eq!(error_code(&not_cancelable), -32002);

    // Input required, then a follow-up with only the task id.
    let asked = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let asked = &asked["result"]["task"];
    assert_eq!(asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(asked["status"]["message"]["role"], "ROLE_AGENT");
    let (id, context) = (
        asked["id"].as_str().unwrap(),
        asked["contextId"].as_str().unwrap(),
    );
    let wrong_context = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "messageId": "x", "taskId": id, "contextId": "another", "parts": [{"text": "x"}]}}),
    )
    .await;
    assert_eq!(error_code(&wrong_context), -32602, "{wrong_context}");
    let done = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message_to(id, "tck-complete-task-2", "go on")}),
    )
    .await;
    let done = &done["result"]["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["contextId"], context);
    assert_eq!(
        done["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );
    let users: Vec<&Value> = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .map(|m| &m["messageId"])
        .collect();
    assert_eq!(
        users,
        [
            &json!("tck-input-required-1"),
            &json!("tck-complete-task-2")
        ]
    );
    let one = call(
        &host,
        "tck",
        "GetTask",
        json!({"id": id, "historyLength": 1}),
    )
    .await;
    assert_eq!(one["result"]["history"].as_array().unwrap().len(), 1);

    // Cancel a task waiting for input.
    let waiting = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message("tck-input-required-2", "x")}),
    )
    .await;
    let waiting_id = waiting["result"]["task"]["id"].as_str().unwrap();
    let canceled = call(&host, "tck", "CancelTask", json!({"id": waiting_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED");

    // Listing: by context, newest first.
    let listed = call(
        &host,
        "tck",
        "ListTasks",
        json!({"contextId": context, "pageSize": 10, "includeArtifacts": true}),
    )
    .await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["id"], id);
    assert_eq!(listed["result"]["nextPageToken"], "");
    let all = call(&host, "tck", "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(all["result"]["totalSize"], 2);
    let token = all["result"]["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let second = call(
        &host,
        "tck",
        "ListTasks",
        json!({"pageSize": 1, "pageToken": token}),
    )
    .await;
    assert_ne!(
        second["result"]["tasks"][0]["id"],
        all["result"]["tasks"][0]["id"]
    );
    assert_eq!(second["result"]["nextPageToken"], "");
}

/// A task started over AIP and resting for its Leader's review reads over A2A as input
/// required, with the AIP state in its metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aip_tasks_read_over_a2a() {
    let host = TestHost::start(HostOptions::default()).await;
    post(
        &host.rpc("echo"),
        &v2("start", "t-aip", text("x"), json!({})),
    )
    .await;
    let read = call(&host, "echo", "GetTask", json!({"id": "t-aip"})).await;
    assert_eq!(
        read["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert_eq!(
        read["result"]["metadata"]["aipState"],
        "awaiting-completion"
    );
}

/// Every malformed or refused request gets its A2A error, in both bindings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_in_both_bindings() {
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["echo".into()],
        ..HostOptions::default()
    })
    .await;
    let endpoint = endpoint(&host, "echo");
    let plain = reqwest::Client::new()
        .post(&endpoint)
        .header("content-type", "text/plain")
        .body("{'not': 'json'}")
        .send()
        .await
        .unwrap();
    let plain: Value = plain.json().await.unwrap();
    assert_eq!(error_code(&plain), -32005);
    let future = reqwest::Client::new()
        .post(&endpoint)
        .header("A2A-Version", "99.0")
        .json(&request("GetTask", json!({"id": "x"})))
        .send()
        .await
        .unwrap();
    let future: Value = future.json().await.unwrap();
    assert_eq!(error_code(&future), -32009);
    assert_eq!(reason(&future), "VERSION_NOT_SUPPORTED");
    for (method, params, code) in [
        ("GetTask", json!({"id": "nobody"}), -32001),
        ("NoSuchMethod", json!({}), -32601),
        ("SendMessage", json!({}), -32602),
        (
            "SendMessage",
            json!({"message": message("m", "x"), "configuration": {"taskPushNotificationConfig": {"url": "ftp://127.0.0.1:1/"}}}),
            -32602,
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"task_id": "t", "url": "http://x/"}),
            -32001,
        ),
        ("GetExtendedAgentCard", json!({}), -32007),
    ] {
        let answer = call(&host, "echo", method, params).await;
        assert_eq!(error_code(&answer), code, "{method}: {answer}");
        assert_eq!(
            answer["error"]["data"][0]["@type"],
            "type.googleapis.com/google.rpc.ErrorInfo"
        );
    }
    // A content type no skill takes.
    let png = call(
        &host,
        "echo",
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"raw": "AAAA", "mediaType": "image/png"}]}}),
    )
    .await;
    assert_eq!(error_code(&png), -32005);
    assert_eq!(png["error"]["data"][0]["metadata"]["mimeType"], "image/png");
    let list = call(&host, "echo", "ListTasks", json!({})).await;
    assert_eq!(
        list["result"]["totalSize"], 0,
        "refused requests stored nothing"
    );

    let base = rest_base(&host, "echo");
    let (status, body) = rest(reqwest::Method::GET, &format!("{base}/tasks/nobody"), None).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    let wrong = reqwest::Client::new()
        .post(format!("{base}/message:send"))
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 415);
    let (status, _) = rest(
        reqwest::Method::POST,
        &format!("{base}/tasks/t-1/pushNotificationConfigs"),
        Some(json!({"url": "http://x/"})),
    )
    .await;
    assert_eq!(status, 404, "no task t-1");
}

/// The HTTP+JSON binding: send, get, cancel, and a subscription to an ended task refused
/// before any stream starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_binding_round_trip() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = rest_base(&host, "tck");
    let (status, sent) = rest(
        reqwest::Method::POST,
        &format!("{base}/message:send"),
        Some(json!({"message": message("tck-artifact-data-1", "x")})),
    )
    .await;
    assert_eq!(status, 200);
    let task = &sent["task"];
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"],
        json!({"key": "value", "count": 42})
    );
    let id = task["id"].as_str().unwrap();
    let (status, got) = rest(
        reqwest::Method::GET,
        &format!("{base}/tasks/{id}?historyLength=0"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(got.get("history").is_none());
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    let (status, ended) = rest(
        reqwest::Method::POST,
        &format!("{base}/tasks/{id}:subscribe"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        ended["error"]["details"][0]["reason"],
        "UNSUPPORTED_OPERATION"
    );
    let (_, waiting) = rest(
        reqwest::Method::POST,
        &format!("{base}/message:send"),
        Some(json!({"message": message("tck-input-required-1", "x")})),
    )
    .await;
    let waiting_id = waiting["task"]["id"].as_str().unwrap();
    let (status, canceled) = rest(
        reqwest::Method::POST,
        &format!("{base}/tasks/{waiting_id}:cancel"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let (status, _) = rest(
        reqwest::Method::POST,
        &format!("{base}/tasks/{waiting_id}:cancel"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 409);
}

/// Streams: a message's stream begins with the task and closes when the task ends or needs
/// input; a subscription to a task waiting for input follows it to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_follow_tasks_until_they_end_or_wait() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut chunked = SseStream::open(
        &format!("{}/message:stream", rest_base(&host, "tck")),
        &json!({"message": message("tck-stream-artifact-chunked-1", "x")}),
    )
    .await;
    assert_eq!(chunked.status, 200);
    let events = chunked.until_closed(Duration::from_secs(20)).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| {
            e.as_object()
                .and_then(|o| o.keys().next())
                .map(String::as_str)
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ],
        "{events:?}"
    );
    // The partner says append on both chunks; A2A appends only to an artifact already sent.
    assert!(
        events[2]["artifactUpdate"].get("append").is_none(),
        "the first chunk of an artifact: {events:?}"
    );
    assert_eq!(events[3]["artifactUpdate"]["append"], true);
    assert_eq!(events[3]["artifactUpdate"]["lastChunk"], true);
    assert_eq!(
        events[4]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let endpoint = endpoint(&host, "tck");
    let send = request(
        "SendStreamingMessage",
        json!({"message": message("tck-input-required-1", "x")}),
    );
    let mut asking = SseStream::open(&endpoint, &send).await;
    let events = asking.until_closed(Duration::from_secs(20)).await;
    let last = events.last().unwrap();
    assert_eq!(last["id"], send["id"]);
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let id = events[0]["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let mut following =
        SseStream::open(&endpoint, &request("SubscribeToTask", json!({"id": id}))).await;
    let (first, _) = following
        .next_event(Duration::from_secs(10))
        .await
        .expect("the task first");
    assert_eq!(
        first["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let done = call(
        &host,
        "tck",
        "SendMessage",
        json!({"message": message_to(&id, "tck-complete-task-1", "x")}),
    )
    .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let rest_of_it = following.until_closed(Duration::from_secs(20)).await;
    let states: Vec<&Value> = rest_of_it
        .iter()
        .map(|e| &e["result"]["statusUpdate"]["status"]["state"])
        .collect();
    assert_eq!(
        states,
        [&json!("TASK_STATE_WORKING"), &json!("TASK_STATE_COMPLETED")],
        "{rest_of_it:?}"
    );
}

/// Tenancy holds at the A2A door as over AIP: a partner whose Leaders need API keys refuses a
/// call without one (401 / -32040) and declares the scheme in its card; each Leader sees only
/// its own tasks, in every operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_and_leader_namespaces_apply_to_a2a() {
    let host = TestHost::start(HostOptions::default()).await;
    let keys = keyed_partner(&host, "echo", "vault").await;
    let card = card(&host, "vault").await;
    assert_eq!(
        card["securitySchemes"]["apiKey"]["httpAuthSecurityScheme"]["scheme"],
        "bearer"
    );
    assert_eq!(
        card["securityRequirements"][0]["schemes"]["apiKey"],
        json!({"list": []})
    );
    let endpoint = endpoint(&host, "vault");
    let call_as = |key: Option<&str>, method: &str, params: Value| {
        let mut request = reqwest::Client::new()
            .post(&endpoint)
            .json(&request(method, params));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        async move {
            request
                .send()
                .await
                .expect("request")
                .json::<Value>()
                .await
                .expect("JSON")
        }
    };
    let anonymous = call_as(None, "SendMessage", json!({"message": message("m", "x")})).await;
    assert_eq!(error_code(&anonymous), -32040, "{anonymous}");
    assert_eq!(reason(&anonymous), "UNAUTHENTICATED");
    let rest = reqwest::Client::new()
        .get(format!("{}/tasks", rest_base(&host, "vault")))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 401);
    assert_eq!(rest.headers()["www-authenticate"], "Bearer");

    let mine = call_as(
        Some(&keys[0]),
        "SendMessage",
        json!({"message": message("m-1", "mine")}),
    )
    .await;
    assert_eq!(
        mine["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let id = mine["result"]["task"]["id"].as_str().unwrap();
    let theirs = call_as(Some(&keys[1]), "GetTask", json!({"id": id})).await;
    assert_eq!(error_code(&theirs), -32001, "{theirs}");
    let cancel = call_as(Some(&keys[1]), "CancelTask", json!({"id": id})).await;
    assert_eq!(error_code(&cancel), -32001);
    let listed = call_as(Some(&keys[1]), "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    let own = call_as(Some(&keys[0]), "ListTasks", json!({})).await;
    assert_eq!(own["result"]["tasks"][0]["id"], id);
}

/// `returnImmediately` answers as soon as the task exists; the task goes on, and a blocking
/// message to another task still waits for its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn return_immediately_answers_before_the_task_ends() {
    let host = TestHost::start(HostOptions::default()).await;
    let answer = call(
        &host,
        "chunked",
        "SendMessage",
        json!({"message": message("m-1", "size=2000 chunkSize=500 delayMs=300"),
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task = &answer["result"]["task"];
    let state = task["status"]["state"].as_str().unwrap();
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&state),
        "{answer}"
    );
    let id = task["id"].as_str().unwrap();
    let mut ended = Value::Null;
    for _ in 0..100 {
        ended = call(&host, "chunked", "GetTask", json!({"id": id})).await;
        if ended["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ended["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    let blocking = call(
        &host,
        "chunked",
        "SendMessage",
        json!({"message": message("m-2", "size=1000 chunkSize=500 delayMs=100")}),
    )
    .await;
    assert_eq!(
        blocking["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{blocking}"
    );
}

const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const OTHER_LEADER: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";

/// A tenant's partner `id` (bundle `bundle`) whose Leaders need API keys, and a key for each
/// of [`LEADER`] and [`OTHER_LEADER`].
async fn keyed_partner(host: &TestHost, bundle: &str, id: &str) -> [String; 2] {
    use aiphost_tests::tenants::{create_tenant, publish_keyed};
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let keys = publish_keyed(&host.url, &acme, bundle, id, &[LEADER, OTHER_LEADER]).await;
    keys.try_into().expect("two keys")
}

/// An AIP (v2) command from `sender`.
fn aip_as(command: &str, task: &str, items: Value, sender: &str) -> Value {
    let mut body = v2(command, task, items, json!({}));
    body["params"]["command"]["senderId"] = json!(sender);
    body
}

/// An AIP re-stream from the task's first event, from `sender`.
fn restream_as(task: &str, sender: &str) -> Value {
    let mut body = stream_request("v2", "re-stream", task, json!([]), json!({}));
    body["params"]["message"]["senderId"] = json!(sender);
    body
}

/// One task, two doors: a task a Leader starts over A2A is the one it reads with AIP `get` and
/// follows with AIP `re-stream` (replayed, then live while A2A finishes it), and a task it
/// starts over AIP is the one it follows with A2A `SubscribeToTask` while AIP completes it.
/// Another Leader's key finds neither task in either door.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_tasks_cross_doors_and_stay_its_own() {
    let host = TestHost::start(HostOptions::default()).await;
    let [mine, theirs] = keyed_partner(&host, "tck", "vault").await;
    let a2a = endpoint(&host, "vault");
    let rpc = host.rpc("vault");
    let stream = format!("{}/agents/vault/stream", host.url);

    // Started over A2A; it waits for input.
    let sent = post_as(
        &a2a,
        Some(&mine),
        &request(
            "SendMessage",
            json!({"message": message("tck-input-required-x", "start")}),
        ),
    )
    .await;
    let task = &sent["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let id = task["id"].as_str().unwrap().to_string();
    let context = task["contextId"].as_str().unwrap().to_string();

    // AIP get by the same Leader: the same task, its context the AIP session.
    let got = post_as(&rpc, Some(&mine), &aip_as("get", &id, json!([]), LEADER)).await;
    assert_eq!(state(&got), "awaiting-input", "{got}");
    assert_eq!(result(&got)["sessionId"], context.as_str(), "{got}");
    // Another Leader: no such task, to get or to re-stream.
    let got = post_as(
        &rpc,
        Some(&theirs),
        &aip_as("get", &id, json!([]), OTHER_LEADER),
    )
    .await;
    assert_eq!(error_code(&got), -32001, "{got}");
    let refused = SseStream::open_as(&stream, Some(&theirs), &restream_as(&id, OTHER_LEADER)).await;
    let refused = refused.json.clone().expect("an error, not a stream");
    assert_eq!(error_code(&refused), -32001, "{refused}");

    // AIP re-stream by the owner: the events so far, then live.
    let mut following = SseStream::open_as(&stream, Some(&mine), &restream_as(&id, LEADER)).await;
    assert_eq!(following.status, 200);
    let mut replayed = Vec::new();
    while replayed
        .last()
        .is_none_or(|e| event_state(e).as_deref() != Some("awaiting-input"))
    {
        let (event, _) = following
            .next_event(Duration::from_secs(20))
            .await
            .expect("the replay up to the question");
        replayed.push(event);
    }
    assert!(
        replayed
            .iter()
            .all(|e| e["result"]["eventData"]["taskId"] == id.as_str()),
        "{replayed:?}"
    );
    // A2A finishes it; the AIP re-stream sees it live and closes.
    let done = post_as(
        &a2a,
        Some(&mine),
        &request(
            "SendMessage",
            json!({"message": message_to(&id, "tck-complete-task-x", "go on")}),
        ),
    )
    .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let live = following.until_closed(Duration::from_secs(20)).await;
    let states: Vec<String> = live.iter().filter_map(event_state).collect();
    assert_eq!(
        states,
        ["working", "awaiting-completion", "completed"],
        "{live:?}"
    );
    let all: Vec<u64> = replayed.iter().chain(&live).map(seq).collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");

    // Started over AIP (resting for its Leader's review), followed over A2A.
    let started = post_as(
        &rpc,
        Some(&mine),
        &aip_as("start", "from-aip", text("hi"), LEADER),
    )
    .await;
    assert_eq!(state(&started), "awaiting-completion", "{started}");
    let theirs_too = post_as(
        &a2a,
        Some(&theirs),
        &request("SubscribeToTask", json!({"id": "from-aip"})),
    )
    .await;
    assert_eq!(error_code(&theirs_too), -32001, "{theirs_too}");
    let theirs_get = post_as(
        &a2a,
        Some(&theirs),
        &request("GetTask", json!({"id": "from-aip"})),
    )
    .await;
    assert_eq!(error_code(&theirs_get), -32001, "{theirs_get}");
    let mut subscription = SseStream::open_as(
        &a2a,
        Some(&mine),
        &request("SubscribeToTask", json!({"id": "from-aip"})),
    )
    .await;
    let (first, _) = subscription
        .next_event(Duration::from_secs(20))
        .await
        .expect("the task first");
    let first = &first["result"]["task"];
    assert_eq!(first["id"], "from-aip");
    assert_eq!(
        first["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    assert_eq!(first["metadata"]["aipState"], "awaiting-completion");
    let completed = post_as(
        &rpc,
        Some(&mine),
        &aip_as("complete", "from-aip", json!([]), LEADER),
    )
    .await;
    assert_eq!(state(&completed), "completed", "{completed}");
    let rest_of_it = subscription.until_closed(Duration::from_secs(20)).await;
    let states: Vec<&Value> = rest_of_it
        .iter()
        .map(|e| &e["result"]["statusUpdate"]["status"]["state"])
        .collect();
    assert_eq!(states, [&json!("TASK_STATE_COMPLETED")], "{rest_of_it:?}");
}

/// The tenant's request rate holds at the A2A door as at AIP's: a message over it is refused
/// with a quota error in both bindings (JSON-RPC -32042, HTTP 429 `RESOURCE_EXHAUSTED`), saying
/// which quota and when to try again, and leaves no task behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_message_is_refused_as_a_quota_and_stores_nothing() {
    use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
    let host = TestHost::start(HostOptions::default()).await;
    let busy = create_tenant(
        &host.url,
        "busy",
        json!({"requestsPerSecond": 1, "requestBurst": 1, "listTasksOnOpenPartners": true}),
    )
    .await;
    let manifest = example_manifest("echo", "metered", "");
    let (status, body) = publish(&host.url, &busy, &manifest, &example_component("echo")).await;
    assert_eq!(status, 201, "{body}");

    // One request a second: sent back to back, one is soon refused.
    let mut accepted = Vec::new();
    let mut refused = None;
    for i in 0..50 {
        let id = format!("m-{i}");
        let answer = call(
            &host,
            "metered",
            "SendMessage",
            json!({"message": message(&id, "hi")}),
        )
        .await;
        if answer.get("error").is_some() {
            refused = Some((id, answer));
            break;
        }
        assert_eq!(
            answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{answer}"
        );
        accepted.push(id);
    }
    let (refused_id, answer) = refused.expect("a refusal within 50 requests at 1 a second");
    assert_eq!(error_code(&answer), -32042, "{answer}");
    assert_eq!(reason(&answer), "RESOURCE_EXHAUSTED");
    let metadata = &answer["error"]["data"][0]["metadata"];
    assert_eq!(metadata["quota"], "requestsPerSecond", "{answer}");
    assert_eq!(metadata["tenant"], "busy");
    assert!(
        metadata["retryAfterMs"]
            .as_str()
            .is_some_and(|ms| ms.parse::<u64>().is_ok()),
        "{answer}"
    );

    // The HTTP+JSON binding, the same.
    let base = rest_base(&host, "metered");
    let mut rest_refusal = None;
    for i in 0..50 {
        let id = format!("r-{i}");
        let response = reqwest::Client::new()
            .post(format!("{base}/message:send"))
            .json(&json!({"message": message(&id, "hi")}))
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body: Value = response.json().await.expect("JSON");
        if status != 200 {
            rest_refusal = Some((id, status, body, retry_after));
            break;
        }
        accepted.push(id);
    }
    let (rest_id, status, body, retry_after) = rest_refusal.expect("a refusal within 50 requests");
    assert_eq!(status, 429, "{body}");
    // When to try again, in whole seconds (at least 1).
    assert!(
        retry_after
            .as_deref()
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|s| s >= 1),
        "Retry-After: {retry_after:?}"
    );
    assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED", "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "RESOURCE_EXHAUSTED");
    assert_eq!(
        body["error"]["details"][0]["metadata"]["quota"],
        "requestsPerSecond"
    );

    // Once the rate allows a listing: exactly the accepted messages made tasks.
    let mut listed = Value::Null;
    for _ in 0..100 {
        listed = call(
            &host,
            "metered",
            "ListTasks",
            json!({"historyLength": 1, "pageSize": 100}),
        )
        .await;
        if listed.get("result").is_some() {
            break;
        }
        assert_eq!(error_code(&listed), -32042, "{listed}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut users: Vec<String> = listed["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("a listing: {listed}"))
        .iter()
        .map(|t| {
            t["history"][0]["messageId"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    users.sort();
    accepted.sort();
    assert_eq!(users, accepted, "{listed}");
    assert!(!users.contains(&refused_id) && !users.contains(&rest_id));
}

/// Issue 30 item 8: `ListTasks` shows every task of the caller in every state, a task whose
/// first invocation still runs (its creation not yet written: it lives in its slot) included,
/// on an open partner (listing turned on) and on one whose Leaders use API keys; its total
/// counts it, and once it rests it is listed as it rests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_show_a_task_mid_invocation() {
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["hostile".into()],
        ..HostOptions::default()
    })
    .await;
    let keys = keyed_partner(&host, "hostile", "keyed-hostile").await;
    for (agent, key) in [("hostile", None), ("keyed-hostile", Some(keys[0].clone()))] {
        let url = format!("{}/agents/{agent}/a2a", host.url);
        let list = || {
            let (url, key) = (url.clone(), key.clone());
            async move {
                let listed = post_as(&url, key.as_deref(), &request("ListTasks", json!({}))).await;
                let tasks = listed["result"]["tasks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                assert_eq!(
                    listed["result"]["totalSize"].as_u64(),
                    Some(tasks.len() as u64),
                    "{listed}"
                );
                tasks
            }
        };
        let before = list().await.len();
        let sending = {
            let (url, key) = (url.clone(), key.clone());
            let message = message(&uuid(), "slow:2000");
            tokio::spawn(async move {
                post_as(
                    &url,
                    key.as_deref(),
                    &request("SendMessage", json!({"message": message})),
                )
                .await
            })
        };
        // The partner works for two seconds; the listing looks while it does.
        let mut working = Vec::new();
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let tasks = list().await;
            working = tasks
                .iter()
                .filter(|t| t["status"]["state"] == "TASK_STATE_WORKING")
                .cloned()
                .collect();
            if !working.is_empty() {
                assert_eq!(tasks.len(), before + 1, "{agent}: {tasks:?}");
                break;
            }
        }
        assert_eq!(working.len(), 1, "{agent}: the task at work is listed");
        let sent = sending.await.expect("the send");
        let id = &sent["result"]["task"]["id"];
        assert_eq!(&working[0]["id"], id, "{sent}");
        let after = list().await;
        let rested = after.iter().find(|t| &t["id"] == id).expect("listed after");
        assert_eq!(
            rested["status"]["state"], "TASK_STATE_COMPLETED",
            "{rested}"
        );
    }
}
