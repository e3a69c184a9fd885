//! Every JSON example in both AIP specs (`../shared/specs/aip-v01.00.zh.md`, `aip-v02.01.zh.md`) is
//! a fixture: requests must read, Leader commands must parse in the right dialect, task objects
//! must fit our model, and the rpc examples replayed against a live host must answer in kind.

use aiphost::model::{EventKind, Product, ProductChunk, TaskEvent, TaskStatus, Timestamp};
use aiphost::protocol::aip::dialect::{self, Dialect};
use aiphost::protocol::aip::event::{EventContext, render_event};
use aiphost::protocol::jsonrpc;
use aiphost_tests::*;
use serde_json::{Value, json};

/// The ```json blocks of a spec, parsed. SSE transcripts (`data: {...}` spread over lines) are not
/// JSON documents; they are checked by the streaming tests.
fn examples(spec: &str) -> Vec<Value> {
    let path = repo_root().join("../shared/specs").join(spec);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut out = Vec::new();
    for block in text.split("```json\n").skip(1) {
        let body = block.split("```").next().unwrap_or_default();
        if body.trim_start().starts_with("data:") {
            continue;
        }
        out.push(
            serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("{spec}: example is not JSON ({e}):\n{body}")),
        );
    }
    assert!(out.len() > 30, "{spec}: only {} examples found", out.len());
    out
}

fn check_task_object(spec: &str, task: &Value) {
    let _: TaskStatus = serde_json::from_value(task["status"].clone())
        .unwrap_or_else(|e| panic!("{spec}: status does not fit ({e}): {task}"));
    if let Some(products) = task.get("products") {
        let _: Vec<Product> = serde_json::from_value(products.clone())
            .unwrap_or_else(|e| panic!("{spec}: products do not fit ({e}): {task}"));
    }
    if let Some(history) = task.get("statusHistory") {
        let _: Vec<TaskStatus> = serde_json::from_value(history.clone())
            .unwrap_or_else(|e| panic!("{spec}: statusHistory does not fit ({e}): {task}"));
    }
    for field in ["messageHistory", "commandHistory"] {
        for message in task
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            dialect::parse_command(json!({"message": message})).unwrap_or_else(|e| {
                panic!("{spec}: a {field} entry does not parse ({e}): {message}")
            });
        }
    }
}

fn check_spec(spec: &str, expected: Dialect) -> usize {
    let mut checked = 0;
    for example in examples(spec) {
        let Value::Object(obj) = &example else {
            continue;
        };
        if obj.contains_key("method") {
            // A request: the envelope reads, and a Leader command parses in the spec's dialect.
            let request = jsonrpc::parse_request(example.to_string().as_bytes())
                .unwrap_or_else(|e| panic!("{spec}: request refused: {e:?}\n{example}"));
            if request.method == "rpc" || request.method == "stream" {
                let inbound = dialect::parse_command(request.params.clone())
                    .unwrap_or_else(|e| panic!("{spec}: command refused: {e}\n{example}"));
                assert_eq!(
                    Dialect::of(inbound.form.as_ref()),
                    expected,
                    "{spec}: {example}"
                );
            }
            checked += 1;
        } else if obj.contains_key("jsonrpc") {
            // A response: errors use AIP's codes; task results fit the model.
            if let Some(error) = obj.get("error") {
                let code = error["code"].as_i64().unwrap();
                assert!((-32700..=-32000).contains(&code), "{spec}: {error}");
            }
            let is_task = |r: &&Value| matches!(r["type"].as_str(), Some("task" | "task-result"));
            if let Some(result) = obj.get("result").filter(is_task) {
                check_task_object(spec, result);
            }
            checked += 1;
        } else {
            match obj.get("type").and_then(Value::as_str) {
                Some("message" | "task-command") => {
                    let inbound = dialect::parse_command(json!({"message": example}))
                        .unwrap_or_else(|e| {
                            panic!("{spec}: group command refused: {e}\n{example}")
                        });
                    assert_eq!(Dialect::of(inbound.form.as_ref()), expected);
                }
                Some("task" | "task-result") => check_task_object(spec, &example),
                _ => {}
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn v1_examples_fit() {
    assert!(check_spec("aip-v01.00.zh.md", Dialect::V1) >= 39);
}

#[test]
fn v2_examples_fit() {
    assert!(check_spec("aip-v02.01.zh.md", Dialect::V2) >= 44);
}

/// The rpc requests of section 6.1.3, sent as they are written (only the task id made unique).
fn rpc_examples(spec: &str) -> Vec<Value> {
    examples(spec)
        .into_iter()
        .filter(|e| e["method"] == "rpc")
        .collect()
}

fn with_task(mut request: Value, task: &str) -> Value {
    for field in ["message", "command"] {
        if let Some(m) = request["params"].get_mut(field) {
            m["taskId"] = json!(task);
        }
    }
    request
}

async fn replay(host: &TestHost, agent: &str, spec: &str, dialect: Dialect) {
    let requests = rpc_examples(spec);
    let commands: Vec<String> = requests
        .iter()
        .map(|r| {
            dialect::parse_command(r["params"].clone())
                .unwrap()
                .command
                .command
                .to_string()
        })
        .collect();
    assert_eq!(
        commands,
        ["start", "continue", "get", "complete", "cancel"],
        "{spec}"
    );
    let rpc = host.rpc(agent);
    let expected_type = match dialect {
        Dialect::V1 => "task",
        Dialect::V2 => "task-result",
    };
    // Start, continue, get, complete on one task; start then cancel on another.
    let one = format!("task-1234-{}", uuid());
    let two = format!("task-1234-{}", uuid());
    let flow = [
        (&requests[0], &one, "awaiting-completion"),
        (&requests[1], &one, "awaiting-completion"),
        (&requests[2], &one, "awaiting-completion"),
        (&requests[3], &one, "completed"),
        (&requests[0], &two, "awaiting-completion"),
        (&requests[4], &two, "canceled"),
    ];
    for (request, task, wanted) in flow {
        let answer = post(&rpc, &with_task(request.clone(), task)).await;
        assert_eq!(answer["id"], request["id"], "{spec}: the id is echoed");
        let result = result(&answer);
        assert_eq!(result["type"], expected_type, "{spec}: {result}");
        assert_eq!(
            result["status"]["state"], wanted,
            "{spec}: {request}\n{result}"
        );
        assert_eq!(result["sessionId"], "session-91011");
        let id_field = if dialect == Dialect::V1 {
            "id"
        } else {
            "taskId"
        };
        assert_eq!(result[id_field], task.as_str());
        check_task_object(spec, result);
    }
    // The get example asks for full histories (null filters).
    let answer = post(&rpc, &with_task(requests[2].clone(), &one)).await;
    let history = &result(&answer)[dialect.history_field()];
    assert!(
        history.as_array().is_some_and(|h| h.len() >= 4),
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_examples_replayed_against_a_live_host() {
    let host = TestHost::start(HostOptions::default()).await;
    replay(&host, "echo", "aip-v01.00.zh.md", Dialect::V1).await;
    replay(&host, "hostile", "aip-v02.01.zh.md", Dialect::V2).await;
}

/// The SSE transcripts of section 6.2.6: each event, rebuilt from its data as a logged event and
/// rendered by the host in the spec's dialect, comes out as the spec shows it (v2 message ids and
/// times aside, which the host derives from the task and the event).
fn check_sse_examples(spec: &str, dialect: Dialect) -> usize {
    let path = repo_root().join("../shared/specs").join(spec);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut checked = 0;
    for block in text.split("```json\n").skip(1) {
        let body = block.split("```").next().unwrap_or_default();
        if !body.trim_start().starts_with("data:") {
            continue;
        }
        for event_text in body.split("data: ").filter(|t| !t.trim().is_empty()) {
            let event: Value = serde_json::from_str(event_text).unwrap_or_else(|e| {
                panic!("{spec}: an SSE example event is not JSON ({e}): {event_text}")
            });
            let data = &event["result"]["eventData"];
            let status =
                || -> TaskStatus { serde_json::from_value(data["status"].clone()).unwrap() };
            let kind = match data["type"].as_str().unwrap() {
                "task" | "task-result" => EventKind::Created {
                    status: status(),
                    plain_reply: false,
                },
                "status-update" | "task-status-update" => EventKind::Status { status: status() },
                "product-chunk" => EventKind::Chunk {
                    chunk: ProductChunk {
                        product: serde_json::from_value(data["product"].clone()).unwrap(),
                        append: data["append"].as_bool().unwrap(),
                        last_chunk: data["lastChunk"].as_bool().unwrap(),
                    },
                },
                other => panic!("{spec}: unexpected event type {other}"),
            };
            let at = data["sentAt"]
                .as_str()
                .or(data["status"]["stateChangedAt"].as_str())
                .and_then(Timestamp::parse)
                .unwrap_or_else(Timestamp::now);
            let logged = TaskEvent {
                seq: event["result"]["eventSeq"].as_u64().unwrap(),
                at,
                kind,
            };
            let task_id = data["taskId"].as_str().or(data["id"].as_str()).unwrap();
            let ctx = EventContext {
                task_id,
                session_id: data["sessionId"].as_str(),
                group_id: None,
                partner_aic: data["senderId"].as_str().unwrap_or("agent-partner-aic"),
            };
            let mut ours = render_event(&logged, &ctx, dialect);
            let mut theirs = event["result"].clone();
            if dialect == Dialect::V2 {
                for v in [&mut ours, &mut theirs] {
                    v["eventData"].as_object_mut().unwrap().remove("id");
                }
                if theirs["eventData"]["type"] == "product-chunk" {
                    // The spec's chunk times are their own; the host stamps when it logged them.
                    for v in [&mut ours, &mut theirs] {
                        v["eventData"].as_object_mut().unwrap().remove("sentAt");
                    }
                }
            }
            assert_eq!(ours, theirs, "{spec}: event {}", logged.seq);
            checked += 1;
        }
    }
    checked
}

#[test]
fn sse_examples_render_as_the_specs_show() {
    assert_eq!(check_sse_examples("aip-v01.00.zh.md", Dialect::V1), 6);
    assert_eq!(check_sse_examples("aip-v02.01.zh.md", Dialect::V2), 6);
}
