//! A2A v0.3 at the JSON-RPC door: the slashed method names (`message/send`, `tasks/get`, ...)
//! and v0.3's shapes in and out, on the same engine and tasks as v1.0 and AIP. Every request here
//! is what a v0.3 client sends: no `A2A-Version` header (v0.3 predates it) unless a test is about
//! that header.

use aiphost_tests::a2a::{self, card, endpoint};
use aiphost_tests::interop::{failed_scenarios, run_script, sdk_python};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params})
}

/// POST a v0.3 JSON-RPC request to `agent`'s A2A endpoint.
async fn call(host: &TestHost, agent: &str, method: &str, params: Value) -> Value {
    post(&endpoint(host, agent), &request(method, params)).await
}

/// A v0.3 user message with one text part.
fn message(id: &str, text_: &str) -> Value {
    json!({"kind": "message", "role": "user", "messageId": id, "parts": [{"kind": "text", "text": text_}]})
}

/// The v0.3 result of `answer`, which must have one.
fn ok(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "an error: {answer}");
    assert_eq!(answer["id"], "r-1");
    &answer["result"]
}

/// The v0.3 error of `answer`, which must be one: its code, message and `data` (an object, as
/// v0.3 has no `ErrorInfo` list).
fn refused(answer: &Value) -> (i64, &str, &Value) {
    let error = &answer["error"];
    let code = error_code(answer);
    assert!(
        error["data"].is_object() || error.get("data").is_none(),
        "v0.3 data is an object: {answer}"
    );
    (
        code,
        error["message"].as_str().unwrap_or_default(),
        &error["data"],
    )
}

/// The card tells a v0.3 client where its JSON-RPC endpoint is, in v0.3's own fields and as a
/// v1.0 interface of version 0.3, while v1.0's interfaces come first as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_points_v03_clients_at_the_jsonrpc_endpoint() {
    let host = TestHost::start(HostOptions::default()).await;
    let card = card(&host, "echo").await;
    let jsonrpc = endpoint(&host, "echo");
    assert_eq!(card["url"], jsonrpc);
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["protocolVersion"], "0.3");
    assert_eq!(
        card["additionalInterfaces"],
        json!([{"url": jsonrpc, "transport": "JSONRPC"}])
    );
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    assert_eq!(interfaces[0]["protocolVersion"], "1.0");
    assert_eq!(interfaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(interfaces[1]["protocolBinding"], "HTTP+JSON");
    assert_eq!(
        interfaces[2],
        json!({"url": jsonrpc, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"})
    );
    // What v0.3 requires of a card is there.
    for field in [
        "name",
        "description",
        "version",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ] {
        assert!(card.get(field).is_some(), "{field}: {card}");
    }
}

/// `message/send` starts a task and answers with the Task itself in v0.3's shapes; every part
/// kind goes in and comes back out the same (echo returns its input); the task is the one AIP
/// and v1.0 see; `tasks/get` honours `historyLength`; an ended task refuses messages and
/// cancels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_get_and_ended_tasks_in_v03_shapes() {
    let host = TestHost::start(HostOptions::default()).await;
    let parts = json!([
        {"kind": "text", "text": "hello", "metadata": {"lang": "en"}},
        {"kind": "data", "data": {"key": "value"}},
        {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}},
        {"kind": "file", "file": {"bytes": "dGNr", "mimeType": "text/plain", "name": "a.txt"}},
        {"kind": "file", "file": {"uri": "https://example.com/o.txt", "mimeType": "text/plain"}},
    ]);
    let answer = call(
        &host,
        "echo",
        "message/send",
        json!({"message": {"kind": "message", "role": "user", "messageId": "m-1", "parts": parts},
               "configuration": {"blocking": true, "acceptedOutputModes": ["text/plain", "application/json"]}}),
    )
    .await;
    let task = ok(&answer);
    assert_eq!(task["kind"], "task", "the Task itself: {answer}");
    assert!(task.get("task").is_none());
    assert_eq!(task["status"]["state"], "completed");
    assert!(task["contextId"].as_str().unwrap().starts_with("ctx-"));
    assert_eq!(task["artifacts"][0]["artifactId"], "echo");
    assert_eq!(task["artifacts"][0]["parts"], parts, "{task}");
    let history = task["history"].as_array().unwrap();
    assert_eq!(history[0]["kind"], "message");
    assert_eq!(history[0]["role"], "user");
    assert_eq!(history[0]["messageId"], "m-1");
    assert_eq!(history[0]["parts"], parts);
    let id = task["id"].as_str().unwrap().to_string();

    // One task, whatever the door.
    let aip = post(&host.rpc("echo"), &v2("get", &id, json!([]), json!({}))).await;
    assert_eq!(state(&aip), "completed", "{aip}");
    let v1 = a2a::call(&host, "echo", "GetTask", json!({"id": id})).await;
    assert_eq!(v1["result"]["status"]["state"], "TASK_STATE_COMPLETED");

    let got = call(
        &host,
        "echo",
        "tasks/get",
        json!({"id": id, "historyLength": 1}),
    )
    .await;
    let got = ok(&got);
    assert_eq!(got["kind"], "task");
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    let none = call(
        &host,
        "echo",
        "tasks/get",
        json!({"id": id, "historyLength": 0}),
    )
    .await;
    assert!(ok(&none).get("history").is_none());

    // Ended: a message is refused and nothing is recorded; a cancel is refused.
    let again = call(
        &host,
        "echo",
        "message/send",
        json!({"message": {"role": "user", "messageId": "m-2", "taskId": id, "parts": [{"kind": "text", "text": "again"}]}}),
    )
    .await;
    let (code, text_, _) = refused(&again);
    assert_eq!((code, text_), (-32004, "This operation is not supported"));
    let read = call(&host, "echo", "tasks/get", json!({"id": id})).await;
    assert!(
        ok(&read)["history"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["messageId"] != "m-2")
    );
    let cancel = call(&host, "echo", "tasks/cancel", json!({"id": id})).await;
    let (code, text_, data) = refused(&cancel);
    assert_eq!((code, text_), (-32002, "Task cannot be canceled"));
    assert_eq!(data["taskId"], id.as_str(), "{cancel}");
}

/// A task that needs input answers `input-required` with the partner's question; a follow-up
/// naming only the task continues it in its context; a waiting task can be canceled, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_continue_and_cancel() {
    let host = TestHost::start(HostOptions::default()).await;
    let asked = call(
        &host,
        "tck",
        "message/send",
        json!({"message": message("tck-input-required-1", "start")}),
    )
    .await;
    let asked = ok(&asked);
    assert_eq!(asked["status"]["state"], "input-required", "{asked}");
    let question = &asked["status"]["message"];
    assert_eq!(question["kind"], "message");
    assert_eq!(question["role"], "agent");
    assert_eq!(question["parts"][0]["kind"], "text");
    let (id, context) = (
        asked["id"].as_str().unwrap(),
        asked["contextId"].as_str().unwrap(),
    );
    let done = call(
        &host,
        "tck",
        "message/send",
        json!({"message": {"kind": "message", "role": "user", "messageId": "tck-complete-task-2", "taskId": id,
                           "parts": [{"kind": "text", "text": "go on"}]}}),
    )
    .await;
    let done = ok(&done);
    assert_eq!(done["status"]["state"], "completed", "{done}");
    assert_eq!(done["contextId"], context);
    assert_eq!(
        done["status"]["message"]["parts"],
        json!([{"kind": "text", "text": "Hello from TCK"}])
    );
    let users: Vec<&Value> = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| &m["messageId"])
        .collect();
    assert_eq!(
        users,
        [
            &json!("tck-input-required-1"),
            &json!("tck-complete-task-2")
        ]
    );

    let waiting = call(
        &host,
        "tck",
        "message/send",
        json!({"message": message("tck-input-required-2", "x")}),
    )
    .await;
    let waiting_id = ok(&waiting)["id"].as_str().unwrap().to_string();
    let canceled = call(&host, "tck", "tasks/cancel", json!({"id": waiting_id})).await;
    let canceled = ok(&canceled);
    assert_eq!(canceled["kind"], "task");
    assert_eq!(canceled["status"]["state"], "canceled");
    let twice = call(&host, "tck", "tasks/cancel", json!({"id": waiting_id})).await;
    assert_eq!(refused(&twice).0, -32002);
}

/// `blocking: false` answers as soon as the task exists (v1.0's `returnImmediately`); the task
/// goes on to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_false_answers_at_once() {
    let host = TestHost::start(HostOptions::default()).await;
    let answer = call(
        &host,
        "chunked",
        "message/send",
        json!({"message": message("m-1", "size=2000 chunkSize=500 delayMs=300"),
               "configuration": {"blocking": false}}),
    )
    .await;
    let task = ok(&answer);
    let early = task["status"]["state"].as_str().unwrap();
    assert!(["submitted", "working"].contains(&early), "{answer}");
    let id = task["id"].as_str().unwrap();
    let mut state = Value::Null;
    for _ in 0..100 {
        let got = call(&host, "chunked", "tasks/get", json!({"id": id})).await;
        state = ok(&got)["status"]["state"].clone();
        if state == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "completed");
}

/// `message/stream` answers with v0.3 events — the Task, `status-update`s with `final`,
/// `artifact-update`s with `append` and `lastChunk` — and closes after the final one, which is
/// also an `input-required`; `tasks/resubscribe` follows a waiting task through its
/// continuation to its end; a resubscription to an ended task is refused before any stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_and_resubscription_in_v03_events() {
    let host = TestHost::start(HostOptions::default()).await;
    let url = endpoint(&host, "tck");
    let mut chunked = SseStream::open(
        &url,
        &request(
            "message/stream",
            json!({"message": message("tck-stream-artifact-chunked-1", "x")}),
        ),
    )
    .await;
    assert_eq!(chunked.status, 200);
    let events = chunked.until_closed(Duration::from_secs(20)).await;
    let results: Vec<&Value> = events.iter().map(ok).collect();
    let kinds: Vec<&Value> = results.iter().map(|e| &e["kind"]).collect();
    assert_eq!(
        kinds,
        [
            "task",
            "status-update",
            "artifact-update",
            "artifact-update",
            "status-update"
        ],
        "{events:?}"
    );
    assert_eq!(results[0]["status"]["state"], "submitted");
    assert_eq!(results[1]["status"]["state"], "working");
    assert_eq!(results[1]["final"], false);
    let id = results[0]["id"].as_str().unwrap();
    assert_eq!(results[2]["taskId"], id);
    assert_eq!(
        results[2]["artifact"]["parts"],
        json!([{"kind": "text", "text": "chunk-1 "}])
    );
    assert_eq!(results[3]["lastChunk"], true);
    assert_eq!(results[4]["status"]["state"], "completed");
    assert_eq!(results[4]["final"], true);

    let mut asking = SseStream::open(
        &url,
        &request(
            "message/stream",
            json!({"message": message("tck-input-required-1", "x")}),
        ),
    )
    .await;
    let events = asking.until_closed(Duration::from_secs(20)).await;
    let last = ok(events.last().unwrap());
    assert_eq!(last["kind"], "status-update");
    assert_eq!(last["status"]["state"], "input-required");
    assert_eq!(last["final"], true, "a message's stream ends here");
    let id = ok(&events[0])["id"].as_str().unwrap().to_string();

    let mut following =
        SseStream::open(&url, &request("tasks/resubscribe", json!({"id": id}))).await;
    let (first, _) = following
        .next_event(Duration::from_secs(10))
        .await
        .expect("the task first");
    assert_eq!(ok(&first)["kind"], "task");
    assert_eq!(ok(&first)["status"]["state"], "input-required");
    let done = call(
        &host,
        "tck",
        "message/send",
        json!({"message": {"role": "user", "messageId": "tck-complete-task-1", "taskId": id, "parts": [{"kind": "text", "text": "x"}]}}),
    )
    .await;
    assert_eq!(ok(&done)["status"]["state"], "completed");
    let rest_of_it = following.until_closed(Duration::from_secs(20)).await;
    let updates: Vec<(&Value, &Value)> = rest_of_it
        .iter()
        .map(|e| (&ok(e)["status"]["state"], &ok(e)["final"]))
        .collect();
    assert_eq!(
        updates,
        [
            (&json!("working"), &json!(false)),
            (&json!("completed"), &json!(true))
        ],
        "{rest_of_it:?}"
    );

    let ended = SseStream::open(&url, &request("tasks/resubscribe", json!({"id": id}))).await;
    let answer = ended.json.clone().expect("a JSON error, not a stream");
    let (code, text_, data) = refused(&answer);
    assert_eq!((code, text_), (-32004, "This operation is not supported"));
    assert_eq!(data["state"], "TASK_STATE_COMPLETED", "{answer}");
}

/// Every refusal in v0.3's form — the same code, v0.3's message, `data` saying exactly what was
/// wrong — and nothing stored for a refused request. The version header: none or 0.3 for v0.3
/// methods, and 1.0 is refused with them as 0.3 is with v1.0's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_in_v03_form() {
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["echo".into()],
        ..HostOptions::default()
    })
    .await;
    let with = |method: &'static str, params: Value| (method, params);
    for ((method, params), code, field) in [
        (with("message/send", json!({})), -32602, Some("message")),
        (
            with(
                "message/send",
                json!({"message": {"role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]}}),
            ),
            -32602,
            Some("message.role"),
        ),
        (
            with(
                "message/send",
                json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "image", "text": "x"}]}}),
            ),
            -32602,
            Some("message.parts[0].kind"),
        ),
        (
            with(
                "message/send",
                json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {"bytes": "@@"}}]}}),
            ),
            -32602,
            Some("message.parts[0].file.bytes"),
        ),
        (
            with(
                "message/send",
                json!({"message": message("m", "x"), "configuration": {"blocking": "yes"}}),
            ),
            -32602,
            Some("configuration.blocking"),
        ),
        (with("tasks/get", json!({})), -32602, Some("id")),
        (with("tasks/get", json!({"id": "nobody"})), -32001, None),
        (with("tasks/cancel", json!({"id": "nobody"})), -32001, None),
        (with("tasks/list", json!({})), -32601, None),
        (
            with("tasks/pushNotificationConfig/delete", json!({"id": "t"})),
            -32602,
            Some("params.pushNotificationConfigId"),
        ),
        (
            with(
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": {"token": "x"}}),
            ),
            -32602,
            Some("params.pushNotificationConfig.url"),
        ),
        (
            with("agent/getAuthenticatedExtendedCard", json!({})),
            -32007,
            None,
        ),
    ] {
        let answer = call(&host, "echo", method, params).await;
        let (got, text_, data) = refused(&answer);
        assert_eq!(got, code, "{method}: {answer}");
        assert_eq!(answer["id"], "r-1");
        if let Some(field) = field {
            assert_eq!(data["field"], field, "{method}: {answer}");
        }
        let expected = match code {
            -32602 => "Invalid parameters",
            -32001 => "Task not found",
            -32601 => "Method not found",
            _ => "Authenticated Extended Card is not configured",
        };
        assert_eq!(text_, expected, "{answer}");
    }
    let missing = call(&host, "echo", "tasks/get", json!({"id": "nobody"})).await;
    assert_eq!(refused(&missing).2["taskId"], "nobody");
    let unknown = call(&host, "echo", "tasks/list", json!({})).await;
    assert_eq!(refused(&unknown).2["supported"][0], "message/send");

    // A media type no skill of the partner takes.
    let png = call(
        &host,
        "echo",
        "message/send",
        json!({"message": {"role": "user", "messageId": "m", "parts": [
            {"kind": "file", "file": {"bytes": "AAAA", "mimeType": "image/png"}}]}}),
    )
    .await;
    let (code, text_, data) = refused(&png);
    assert_eq!((code, text_), (-32005, "Incompatible content types"));
    assert_eq!(data["mimeType"], "image/png");

    let list = a2a::call(&host, "echo", "ListTasks", json!({})).await;
    assert_eq!(
        list["result"]["totalSize"], 0,
        "refused requests stored nothing: {list}"
    );

    // The version header.
    let versioned = |version: &'static str, body: Value| {
        let url = endpoint(&host, "echo");
        async move {
            reqwest::Client::new()
                .post(url)
                .header("A2A-Version", version)
                .json(&body)
                .send()
                .await
                .expect("request")
                .json::<Value>()
                .await
                .expect("JSON")
        }
    };
    let send = request("message/send", json!({"message": message("m-v", "x")}));
    let as_03 = versioned("0.3", send.clone()).await;
    assert_eq!(ok(&as_03)["status"]["state"], "completed");
    let as_1 = versioned("1.0", send).await;
    let (code, _, data) = refused(&as_1);
    assert_eq!(code, -32009, "{as_1}");
    assert_eq!(
        (&data["requested"], &data["supported"]),
        (&json!("1.0"), &json!("0.3"))
    );
    let v1_as_03 = versioned("0.3", a2a::request("GetTask", json!({"id": "x"}))).await;
    assert_eq!(v1_as_03["error"]["code"], -32009, "{v1_as_03}");
}

/// Tenancy holds for v0.3 requests as for v1.0 ones: a partner whose Leaders need API keys
/// refuses a v0.3 call without one, in v0.3's form, and serves the Leader that has one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_apply_to_v03_requests() {
    use aiphost_tests::tenants::{create_tenant, publish_keyed};
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let leader = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    let keys = publish_keyed(&host.url, &acme, "echo", "vault", &[leader]).await;
    let send = request("message/send", json!({"message": message("m-1", "x")}));
    let anonymous = post(&endpoint(&host, "vault"), &send).await;
    let (code, _, data) = refused(&anonymous);
    assert_eq!(code, -32040, "{anonymous}");
    assert!(data.is_object(), "{anonymous}");
    let keyed: Value = reqwest::Client::new()
        .post(endpoint(&host, "vault"))
        .bearer_auth(&keys[0])
        .json(&send)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ok(&keyed)["status"]["state"], "completed", "{keyed}");
}

/// Push notification configs over v0.3's methods and shapes: a config set in v0.3's nested
/// shape reads back in it (by id, as the task's first when no id is named, in the list) until it
/// is deleted; a v0.3 `configuration.pushNotificationConfig` sent with a message is the one
/// the task's changes are delivered to, with its token and authentication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_in_v03_shapes() {
    let host = TestHost::start(HostOptions::default()).await;
    let receiver = Receiver::up().await;
    let card = card(&host, "tck").await;
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
    let waiting = call(
        &host,
        "tck",
        "message/send",
        json!({"message": message("tck-input-required-1", "x")}),
    )
    .await;
    let task = ok(&waiting)["id"].as_str().unwrap().to_string();
    let config = json!({"id": "p-1", "url": receiver.url("hook"), "token": "tok",
                        "authentication": {"schemes": ["Bearer"], "credentials": "s3"}});
    let set = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/set",
        json!({"taskId": task, "pushNotificationConfig": config}),
    )
    .await;
    let expected = json!({"taskId": task, "pushNotificationConfig": config});
    assert_eq!(ok(&set), &expected, "{set}");
    let by_id = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/get",
        json!({"id": task, "pushNotificationConfigId": "p-1"}),
    )
    .await;
    assert_eq!(ok(&by_id), &expected);
    let first = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/get",
        json!({"id": task}),
    )
    .await;
    assert_eq!(ok(&first), &expected);
    let list = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(ok(&list), &json!([expected]));
    let deleted = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/delete",
        json!({"id": task, "pushNotificationConfigId": "p-1"}),
    )
    .await;
    assert_eq!(ok(&deleted), &Value::Null);
    let gone = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/get",
        json!({"id": task}),
    )
    .await;
    let (code, _, data) = refused(&gone);
    assert_eq!(code, -32001, "{gone}");
    assert_eq!(data["taskId"], task.as_str());
    let empty = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(ok(&empty), &json!([]));
    let unknown = call(
        &host,
        "tck",
        "tasks/pushNotificationConfig/list",
        json!({"id": "no-such-task"}),
    )
    .await;
    assert_eq!(refused(&unknown).0, -32001, "{unknown}");

    // With a message: v0.3's flat config (no task id yet), `schemes` a list.
    let sent = call(
        &host,
        "echo",
        "message/send",
        json!({"message": message("m-push", "hello"),
               "configuration": {"pushNotificationConfig": {"url": receiver.url("sent"), "token": "t-2",
                   "authentication": {"schemes": ["Bearer"], "credentials": "c-2"}}}}),
    )
    .await;
    let sent_id = ok(&sent)["id"].as_str().unwrap().to_string();
    let hits = receiver.wait_for(1, Duration::from_secs(20)).await;
    let hit = hits
        .iter()
        .find(|h| h.path == "/sent")
        .unwrap_or_else(|| panic!("no delivery to the message's config: {hits:?}"));
    // A config made over v0.3 hears in v0.3's shape: the task itself.
    assert_eq!(hit.body["kind"], "task", "{hit:?}");
    assert_eq!(hit.body["id"], sent_id.as_str(), "{hit:?}");
    let states: Vec<&str> = hits
        .iter()
        .filter(|h| h.path == "/sent")
        .filter_map(|h| h.body["status"]["state"].as_str())
        .collect();
    assert!(
        states
            .iter()
            .all(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '-')),
        "{states:?}"
    );
    assert_eq!(hit.a2a_token.as_deref(), Some("t-2"), "{hit:?}");
    assert_eq!(hit.authorization.as_deref(), Some("Bearer c-2"), "{hit:?}");
}

/// The scenarios `tests/interop/a2a_v03_client.py` must report, and report ok: its own, and
/// those of `a2a_client.py` that v0.3's JSON-RPC binding carries. Any other it reports (one
/// added to `a2a_client.py` later) must pass too.
const SDK_V03_SCENARIOS: &[&str] = &[
    "v0.3-card",
    "jsonrpc-v0.3/send",
    "jsonrpc-v0.3/stream",
    "jsonrpc-v0.3/stream-chunks",
    "jsonrpc-v0.3/input-required",
    "jsonrpc-v0.3/input-required-stream",
    "jsonrpc-v0.3/resubscribe",
    "jsonrpc-v0.3/resubscribe-working",
    "jsonrpc-v0.3/cancel",
    "jsonrpc-v0.3/cancel-working",
    "jsonrpc-v0.3/ended-task",
    "jsonrpc-v0.3/get-task",
    "jsonrpc-v0.3/push-configs",
    "jsonrpc-v0.3/push",
];

/// The official `a2a-sdk` 1.3.0's v0.3 client (its `a2a.compat.v0_3` layer), finding the
/// endpoint from the card's v0.3 fields alone, drives the host through `a2a_client.py`'s
/// scenarios and push configs: every call a v0.3 method, every answer parsed by the SDK's v0.3
/// models.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_a2a_sdk_v03_client_drives_the_host() {
    let python = sdk_python().await;
    let host = TestHost::start(HostOptions::default()).await;
    let ran = run_script(
        &python,
        "a2a_v03_client.py",
        &host.url,
        &[],
        Duration::from_secs(300),
    )
    .await;
    ran.assert_none_failed(&failed_scenarios(&ran.results(), SDK_V03_SCENARIOS));
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "a2a_v03_client.py failed\n{}",
        ran.report
    );
}
