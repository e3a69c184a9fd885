//! The MCP door's tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663), spoken as raw
//! JSON-RPC over HTTP the way a 2026-07-28 client sends it: each request carries its own
//! `_meta` (protocol version, client info, client capabilities — with the extension, or not)
//! and the SEP-2243 headers `rmcp` checks (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`:
//! the tool, or the task id for `tasks/*`), `Accept: application/json, text/event-stream`.
//! (`mcp` 2.3.0, the Python SDK, has no client for the extension.)
//!
//! A call declaring the extension is answered with a task handle whose `taskId` is the AIP
//! task; the concierge's `form` is followed through `tasks/get` (input_required, the form as an
//! elicitation), a wrong answer (-32602 with the failing paths) and a right one (completed,
//! "Oslo for 3 days"); `slow` is cancelled; `fail` completes with `isError`; a plain reply is
//! answered inline; tasks/* need the extension (-32021); an unknown id is -32602; another
//! Leader's task is not found, and its update and cancel are acknowledged without effect; a
//! task is followed across a host restart. The door's counters on `/metrics` move with the
//! requests.

use aiphost_tests::tenants::{create_tenant, publish_keyed};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const LEADER_A: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const LEADER_B: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
const TASKS: &str = "io.modelcontextprotocol/tasks";
const REVISION: &str = "2026-07-28";

/// A 2026-07-28 client of one partner's MCP server.
struct Mcp {
    url: String,
    key: Option<String>,
    /// Whether its requests declare the tasks extension.
    tasks: bool,
    http: reqwest::Client,
}

impl Mcp {
    fn new(host_url: &str, agent: &str, key: Option<&str>) -> Mcp {
        Mcp {
            url: format!("{host_url}/agents/{agent}/mcp"),
            key: key.map(str::to_string),
            tasks: true,
            http: reqwest::Client::new(),
        }
    }

    /// The same client, not declaring the extension.
    fn without_tasks(&self) -> Mcp {
        Mcp {
            url: self.url.clone(),
            key: self.key.clone(),
            tasks: false,
            http: self.http.clone(),
        }
    }

    /// The JSON-RPC answer to `method` with `params` (`name`: the `Mcp-Name` header).
    async fn request(&self, method: &str, name: &str, mut params: Value) -> Value {
        let capabilities = if self.tasks {
            json!({"extensions": {TASKS: {}}})
        } else {
            json!({})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientInfo": {"name": "aiphost-tests", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let body = json!({"jsonrpc": "2.0", "id": uuid(), "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", REVISION)
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(body.to_string());
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.expect("an HTTP answer");
        let status = response.status();
        let text = response.text().await.expect("a body");
        // A JSON body, or (should a notification have gone out) an SSE stream whose last
        // message is the answer.
        let answer = serde_json::from_str::<Value>(&text).ok().or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .rfind(|m| m.get("id").is_some())
        });
        answer.unwrap_or_else(|| panic!("{method}: HTTP {status}, not JSON-RPC: {text}"))
    }

    /// `tools/call` of the concierge with `text`: its result.
    async fn call(&self, text: &str) -> Value {
        let answer = self
            .request(
                "tools/call",
                "concierge",
                json!({"name": "concierge", "arguments": {"text": text}}),
            )
            .await;
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("tools/call {text:?}: {answer}"))
    }

    /// `tools/call` answered with a task handle: the task id.
    async fn start(&self, text: &str) -> String {
        let handle = self.call(text).await;
        assert_eq!(handle["resultType"], "task", "{text}: {handle}");
        assert_eq!(handle["pollIntervalMs"], 1000, "{handle}");
        assert!(handle["createdAt"].is_string(), "{handle}");
        assert!(handle.get("result").is_none(), "{handle}");
        handle["taskId"].as_str().expect("a taskId").to_string()
    }

    async fn get(&self, task: &str) -> Value {
        self.request("tasks/get", task, json!({"taskId": task}))
            .await
    }

    async fn update(&self, task: &str, responses: Value) -> Value {
        self.request(
            "tasks/update",
            task,
            json!({"taskId": task, "inputResponses": responses}),
        )
        .await
    }

    async fn cancel(&self, task: &str) -> Value {
        self.request("tasks/cancel", task, json!({"taskId": task}))
            .await
    }

    /// Poll `tasks/get` until the task's status is `status`: that answer's result.
    async fn until(&self, task: &str, status: &str) -> Value {
        let started = Instant::now();
        loop {
            let got = self.get(task).await;
            let result = got
                .get("result")
                .cloned()
                .unwrap_or_else(|| panic!("tasks/get {task}: {got}"));
            if result["status"] == status {
                assert_eq!(result["resultType"], "complete", "{result}");
                assert_eq!(result["taskId"], task, "{result}");
                return result;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "task {task} never became {status}: {result}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// An acknowledgement: an empty result.
fn assert_ack(answer: &Value, what: &str) {
    assert_eq!(
        answer["result"],
        json!({"resultType": "complete"}),
        "{what}: {answer}"
    );
}

/// The JSON-RPC error code of `answer`.
fn rpc_error(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or(0)
}

/// The one key of an `input_required` task's `inputRequests`, and its elicitation.
fn question(task: &Value) -> (String, Value) {
    let requests = task["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{task}");
    let (key, request) = requests.iter().next().expect("one");
    (key.clone(), request.clone())
}

/// An AIP `get` of `task` of the open concierge.
async fn aip_get(host_url: &str, task: &str) -> Value {
    post(
        &format!("{host_url}/agents/concierge/rpc"),
        &v2("get", task, json!([]), json!({})),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_handle_is_followed_through_its_form() {
    let host = TestHost::start(HostOptions::default()).await;
    let mcp = Mcp::new(&host.url, "concierge", None);

    let task = mcp.start("form a holiday").await;
    // The handle names the AIP task: AIP reads it, started by the MCP door.
    let got = aip_get(&host.url, &task).await;
    assert_eq!(state(&got), "awaiting-input", "{got}");
    assert!(
        result(&got)["commandHistory"]
            .to_string()
            .contains(r#""mcp":{"#),
        "{got}"
    );

    // The form, as an elicitation keyed by its asking.
    let asked = mcp.until(&task, "input_required").await;
    let (key, request) = question(&asked);
    assert!(key.starts_with("trip."), "{asked}");
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    let schema = &request["params"]["requestedSchema"];
    assert!(
        schema["properties"]["city"].is_object() && schema["properties"]["days"].is_object(),
        "{asked}"
    );
    assert_eq!(asked["ttlMs"], Value::Null, "{asked}");

    // A key that is not outstanding is ignored; the task still asks.
    let ignored = mcp
        .update(&task, json!({"trip.1": {"action": "decline"}}))
        .await;
    assert_ack(&ignored, "another key");
    assert_eq!(question(&mcp.until(&task, "input_required").await).0, key);

    // A wrong answer: -32602 with the failing path; the same question stays open.
    let wrong = mcp
        .update(
            &task,
            json!({&key: {"action": "accept", "content": {"city": "Oslo", "days": 0}}}),
        )
        .await;
    assert_eq!(rpc_error(&wrong), -32602, "{wrong}");
    let errors = wrong["error"]["data"]["errors"].as_array().expect("errors");
    assert!(errors.iter().any(|e| e["path"] == "/days"), "{wrong}");
    let still = mcp.until(&task, "input_required").await;
    assert_eq!(question(&still).0, key, "{still}");

    // The right answer continues the task to its result.
    let right = mcp
        .update(
            &task,
            json!({&key: {"action": "accept", "content": {"city": "Oslo", "days": 3}}}),
        )
        .await;
    assert_ack(&right, "the answer");
    let done = mcp.until(&task, "completed").await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Oslo for 3 days",
        "{done}"
    );
    assert_eq!(done["result"]["_meta"]["aiphost.taskId"], task.as_str());
    assert_eq!(state(&aip_get(&host.url, &task).await), "completed");
    // Answering again changes nothing: nothing is outstanding.
    let late = mcp
        .update(&task, json!({&key: {"action": "decline"}}))
        .await;
    assert_ack(&late, "a late answer");
    assert_eq!(mcp.get(&task).await["result"]["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_cancelled_declined_and_end_with_the_calls_result() {
    let host = TestHost::start(HostOptions::default()).await;
    let mcp = Mcp::new(&host.url, "concierge", None);

    // `slow` streams for ~5 s: cancelled midway.
    let slow = mcp.start("slow count").await;
    assert_eq!(mcp.get(&slow).await["result"]["status"], "working");
    assert_ack(&mcp.cancel(&slow).await, "tasks/cancel");
    mcp.until(&slow, "cancelled").await;
    assert_eq!(state(&aip_get(&host.url, &slow).await), "canceled");
    // Cancelling an ended task is acknowledged too.
    assert_ack(&mcp.cancel(&slow).await, "a second cancel");

    // A declined form cancels its task.
    let form = mcp.start("form").await;
    let (key, _) = question(&mcp.until(&form, "input_required").await);
    let declined = mcp
        .update(&form, json!({&key: {"action": "decline"}}))
        .await;
    assert_ack(&declined, "decline");
    mcp.until(&form, "cancelled").await;

    // A partner's failure is a tool result with isError, its task `completed` (the SEP:
    // `failed` is for JSON-RPC errors only).
    let answer = mcp.call("fail out of coffee").await;
    let failed = match answer["resultType"].as_str() {
        Some("task") => {
            let id = answer["taskId"].as_str().expect("a taskId");
            mcp.until(id, "completed").await["result"].clone()
        }
        _ => answer,
    };
    assert_eq!(failed["isError"], true, "{failed}");
    assert!(
        failed["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("CONCIERGE_FAILED: out of coffee")),
        "{failed}"
    );
    let id = failed["_meta"]["aiphost.taskId"].as_str().expect("task id");
    let read = mcp.get(id).await;
    assert_eq!(read["result"]["status"], "completed", "{read}");
    assert_eq!(read["result"]["result"]["isError"], true, "{read}");

    // A task that has ended in its first write (a plain reply) is answered with its result.
    let reply = mcp.call("reply hello").await;
    assert_ne!(reply["resultType"], "task", "{reply}");
    assert_eq!(reply["isError"], false, "{reply}");
    assert_eq!(reply["content"][0]["text"], "hello", "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_need_the_extension_and_belong_to_their_leader() {
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let keys = publish_keyed(
        &host.url,
        &acme,
        "concierge",
        "keyed",
        &[LEADER_A, LEADER_B],
    )
    .await;
    let a = Mcp::new(&host.url, "keyed", Some(&keys[0]));
    let b = Mcp::new(&host.url, "keyed", Some(&keys[1]));

    let task = a.start("slow count").await;

    // Without the extension declared: a call is answered inline, and tasks/* are refused
    // with -32021 (missing required client capability).
    let plain = a.without_tasks();
    let echo = plain.call("hello there").await;
    assert_ne!(echo["resultType"], "task", "{echo}");
    assert_eq!(echo["content"][0]["text"], "hello there", "{echo}");
    for answer in [
        plain.get(&task).await,
        plain.cancel(&task).await,
        plain.update(&task, json!({})).await,
    ] {
        assert_eq!(rpc_error(&answer), -32021, "{answer}");
    }

    // An id nobody has: -32602 (a malformed one too).
    for unknown in [format!("task-{}", uuid()), "no such task".to_string()] {
        let answer = a.get(&unknown).await;
        assert_eq!(rpc_error(&answer), -32602, "{answer}");
    }

    // B does not find A's task, and B's cancel and update are acknowledged (the SEP: for any
    // id) without touching it.
    assert_eq!(rpc_error(&b.get(&task).await), -32602);
    assert_ack(&b.cancel(&task).await, "B's cancel");
    assert_ack(
        &b.update(&task, json!({"x": {"action": "decline"}})).await,
        "B's update",
    );
    assert_eq!(a.get(&task).await["result"]["status"], "working");

    // A's cancel is A's.
    assert_ack(&a.cancel(&task).await, "A's cancel");
    a.until(&task, "cancelled").await;

    // A partner's failure, inline: a tool error. A request with no key: refused at the entry.
    let failed = plain.call("fail out of coffee").await;
    assert_eq!(failed["isError"], true, "{failed}");
    let anonymous = Mcp::new(&host.url, "keyed", None);
    let refused = anonymous.request("tools/list", "", json!({})).await;
    assert!(refused.get("error").is_some(), "{refused}");

    // The door's counters moved with these requests (this host served no others).
    let requests = |method: &str, outcome: &str| {
        format!("aiphost_mcp_requests_total{{method=\"{method}\",outcome=\"{outcome}\"}}")
    };
    for (name, expected) in [
        (requests("tools/call", "task"), 1),
        (requests("tools/call", "ok"), 1),
        (requests("tools/call", "tool_error"), 1),
        (requests("tools/call", "error"), 0),
        (requests("tasks/get", "error"), 3),
        (requests("tasks/cancel", "ok"), 2),
        (requests("tasks/update", "ok"), 1),
        ("aiphost_mcp_refusals_total{status=\"401\"}".to_string(), 1),
        ("aiphost_mcp_sessions".to_string(), 0),
    ] {
        assert_eq!(metric(&host.url, &name).await, expected, "{name}");
    }
    // tasks/get of A's task while it ran and until it was cancelled: at least two.
    assert!(metric(&host.url, &requests("tasks/get", "ok")).await >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_followed_across_a_restart() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let task = Mcp::new(&host.url, "concierge", None)
        .start("form after a restart")
        .await;
    let mcp = Mcp::new(&host.url, "concierge", None);
    let (key, _) = question(&mcp.until(&task, "input_required").await);

    host.restart(HostOptions::default()).await;
    let mcp = Mcp::new(&host.url, "concierge", None);
    // The same question under the same key: both come from the durable status.
    let asked = mcp.until(&task, "input_required").await;
    assert_eq!(question(&asked).0, key, "{asked}");
    let answer = mcp
        .update(
            &task,
            json!({&key: {"action": "accept", "content": {"city": "Bergen", "days": 2}}}),
        )
        .await;
    assert_ack(&answer, "the answer after the restart");
    let done = mcp.until(&task, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Bergen for 2 days",
        "{done}"
    );
}

/// At the host's `/mcp` a task is named `{agent}/{task}` (AIP task ids are unique per partner
/// only): the handle says whose it is, `tasks/get` and `tasks/update` take it, a bare AIP id
/// or another agent's prefix is unknown there, and AIP reads the task by its own id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_at_the_hosts_mcp_name_their_partner() {
    let host = TestHost::start(HostOptions::default()).await;
    let mut mcp = Mcp::new(&host.url, "concierge", None);
    mcp.url = format!("{}/mcp", host.url);

    let tool = "concierge__concierge";
    let handle = mcp
        .request(
            "tools/call",
            tool,
            json!({"name": tool, "arguments": {"text": "form a holiday"}}),
        )
        .await;
    assert_eq!(handle["result"]["resultType"], "task", "{handle}");
    let id = handle["result"]["taskId"].as_str().expect("a taskId");
    let (agent, task) = id.split_once('/').expect("{agent}/{task}");
    assert_eq!(agent, "concierge", "{handle}");
    assert_eq!(state(&aip_get(&host.url, task).await), "awaiting-input");

    let asked = mcp.until(id, "input_required").await;
    let (key, _) = question(&asked);
    for unknown in [
        task.to_string(),
        format!("echo/{task}"),
        format!("nobody/{task}"),
    ] {
        let answer = mcp.get(&unknown).await;
        assert_eq!(rpc_error(&answer), -32602, "{unknown}: {answer}");
    }
    let right = mcp
        .update(
            id,
            json!({&key: {"action": "accept", "content": {"city": "Oslo", "days": 3}}}),
        )
        .await;
    assert_ack(&right, "the answer");
    let done = mcp.until(id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Oslo for 3 days",
        "{done}"
    );
    assert_eq!(state(&aip_get(&host.url, task).await), "completed");

    // Cancelled by its qualified id.
    let slow = mcp
        .request(
            "tools/call",
            tool,
            json!({"name": tool, "arguments": {"text": "slow"}}),
        )
        .await;
    let slow = slow["result"]["taskId"]
        .as_str()
        .expect("a taskId")
        .to_string();
    assert_ack(&mcp.cancel(&slow).await, "the cancel");
    mcp.until(&slow, "cancelled").await;
}
