//! Partners that talk to people (`aiphost:partner@0.2.0`), through the real host: every flow of
//! the `concierge` example (Rust and Python) over AIP and A2A — streamed reasoning and answers,
//! tool activity, a form whose answer the host checks, a coded failure, a plain reply — the
//! activity replayed after a restart, and a wrong form answer refused with nothing stored.

use aiphost_tests::a2a::{call, endpoint, message, request};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Both concierges: one behaviour, two SDKs.
const CONCIERGES: [&str; 2] = ["concierge", "concierge-py"];

/// The text of the product `id` of an AIP task result (its items' texts, joined).
fn product_text(task: &Value, id: &str) -> String {
    task["products"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["id"] == id)
        .flat_map(|p| p["dataItems"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i["text"].as_str().map(str::to_string))
        .collect()
}

/// The data item marked `kind` among `items`.
fn marked<'a>(items: &'a Value, kind: &str) -> Option<&'a Value> {
    items
        .as_array()?
        .iter()
        .find(|i| i["metadata"]["aiphost.kind"] == kind)
}

/// Every flow of the concierge over AIP, for the Rust and the Python one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concierge_flows_over_aip() {
    let host = TestHost::start(HostOptions::default()).await;
    for agent in CONCIERGES {
        let rpc = host.rpc(agent);
        let start = |id: &str, words: &str| v2("start", id, text(words), json!({}));

        // think: reasoning, then the answer, each merged into one text in `get`.
        let id = format!("think-{}", uuid());
        let answer = post(&rpc, &start(&id, "think about dinner")).await;
        assert_eq!(state(&answer), "awaiting-completion", "{agent}: {answer}");
        let task = result(&answer);
        assert_eq!(product_text(task, "answer"), "thought about about dinner");
        assert_eq!(
            product_text(task, "reasoning"),
            "Let me think about about dinner."
        );
        let answer_product = task["products"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == "answer")
            .unwrap();
        assert_eq!(
            answer_product["dataItems"].as_array().unwrap().len(),
            1,
            "{agent}: deltas merge into one item: {answer_product}"
        );
        assert_eq!(
            answer_product["dataItems"][0]["metadata"]["aiphost.kind"],
            "answer"
        );

        // tool: the call and its result are events of the stream, not products.
        let id = format!("tool-{}", uuid());
        let mut stream = SseStream::open(
            &rpc,
            &stream_request("v2", "start", &id, text("tool weather in Oslo"), json!({})),
        )
        .await;
        let events = stream
            .until_state("awaiting-completion", Duration::from_secs(20))
            .await;
        let activity: Vec<&Value> = events
            .iter()
            .filter_map(|e| {
                let items = &e["result"]["eventData"]["status"]["dataItems"];
                marked(items, "tool-call").or_else(|| marked(items, "tool-result"))
            })
            .collect();
        assert_eq!(activity.len(), 2, "{agent}: {events:?}");
        assert_eq!(
            activity[0]["data"],
            json!({"callId": "lookup-1", "name": "lookup", "arguments": {"query": "weather in Oslo"}})
        );
        assert_eq!(
            activity[1]["data"],
            json!({"callId": "lookup-1", "output": {"found": "weather in Oslo"}, "isError": false})
        );
        let got = post(&rpc, &v2("get", &id, json!([]), json!({}))).await;
        assert_eq!(state(&got), "awaiting-completion", "{got}");
        assert_eq!(
            product_text(result(&got), "answer"),
            "found weather in Oslo"
        );
        assert!(
            result(&got)["status"]["dataItems"]
                .as_array()
                .is_none_or(|items| items
                    .iter()
                    .all(|i| i["metadata"]["aiphost.kind"].is_null())),
            "activity is not the task's status: {got}"
        );

        // form: awaiting-input with the schema; a wrong answer is refused (nothing stored, the
        // partner not invoked); the right one is answered.
        let id = format!("form-{}", uuid());
        let asked = post(&rpc, &start(&id, "form a trip")).await;
        assert_eq!(state(&asked), "awaiting-input", "{agent}: {asked}");
        let items = &result(&asked)["status"]["dataItems"];
        let request = marked(items, "input-request").expect("the form");
        assert_eq!(request["data"]["requestId"], "trip");
        assert_eq!(request["data"]["title"], "Trip");
        assert_eq!(
            request["data"]["schema"]["required"],
            json!(["city", "days"])
        );
        let seq_before = result(&asked)["status"]["stateChangedAt"].clone();
        let wrong = post(
            &rpc,
            &v2(
                "continue",
                &id,
                json!([{"type": "data", "data": {"city": 7, "days": 0}}]),
                json!({}),
            ),
        )
        .await;
        assert_eq!(error_code(&wrong), -32602, "{agent}: {wrong}");
        let paths: Vec<&str> = wrong["error"]["data"]["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("field errors: {wrong}"))
            .iter()
            .filter_map(|e| e["path"].as_str())
            .collect();
        assert!(
            paths.contains(&"/city") && paths.contains(&"/days"),
            "{wrong}"
        );
        let still = post(
            &rpc,
            &v2(
                "get",
                &id,
                json!([]),
                json!({"includeCommandHistory": true}),
            ),
        )
        .await;
        assert_eq!(state(&still), "awaiting-input", "{still}");
        assert_eq!(result(&still)["status"]["stateChangedAt"], seq_before);
        assert!(
            !still.to_string().contains("\"days\":0"),
            "the wrong answer was not stored: {still}"
        );
        let answered = post(
            &rpc,
            &v2(
                "continue",
                &id,
                json!([{"type": "data", "data": {"city": "Oslo", "days": 3}}]),
                json!({}),
            ),
        )
        .await;
        assert_eq!(
            state(&answered),
            "awaiting-completion",
            "{agent}: {answered}"
        );
        assert_eq!(product_text(result(&answered), "answer"), "Oslo for 3 days");

        // fail: a code, carried on the failed status.
        let id = format!("fail-{}", uuid());
        let failed = post(&rpc, &start(&id, "fail no rooms left")).await;
        assert_eq!(state(&failed), "failed", "{agent}: {failed}");
        let items = &result(&failed)["status"]["dataItems"];
        assert_eq!(items[0]["text"], "no rooms left");
        let failure = marked(items, "failure").expect("the failure");
        assert_eq!(
            failure["data"],
            json!({"code": "CONCIERGE_FAILED", "message": "no rooms left", "retryable": false})
        );

        // reply: AIP has no stateless answer: a task completed at once, its product `reply`.
        let id = format!("reply-{}", uuid());
        let replied = post(&rpc, &start(&id, "reply hello there")).await;
        assert_eq!(state(&replied), "completed", "{agent}: {replied}");
        assert_eq!(product_text(result(&replied), "reply"), "hello there");

        // anything else: echoed word by word.
        let id = format!("echo-{}", uuid());
        let echoed = post(&rpc, &start(&id, "good morning to you")).await;
        assert_eq!(
            product_text(result(&echoed), "answer"),
            "good morning to you"
        );
    }
}

/// A task's activity is durable: after a restart a re-stream replays the same events in the same
/// order, and `get` shows the same merged products.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_and_deltas_replay_after_a_restart() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let id = format!("replay-{}", uuid());
    let mut stream = SseStream::open(
        &host.rpc("concierge"),
        &stream_request("v2", "start", &id, text("tool lamps"), json!({})),
    )
    .await;
    let live = stream
        .until_state("awaiting-completion", Duration::from_secs(20))
        .await;
    // An AIP stream stays open while its task rests; a clean shutdown waits for it.
    drop(stream);
    let before = post(
        &host.rpc("concierge"),
        &v2("get", &id, json!([]), json!({})),
    )
    .await;
    host.restart(HostOptions::default()).await;
    let mut again = SseStream::open(
        &host.rpc("concierge"),
        &stream_request(
            "v2",
            "re-stream",
            &id,
            json!([]),
            json!({"lastEventSeq": 0}),
        ),
    )
    .await;
    let mut replayed = Vec::new();
    while let Some((event, _)) = again.next_event(Duration::from_secs(5)).await {
        replayed.push(event);
        if replayed.len() == live.len() {
            break;
        }
    }
    let data = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .map(|e| e["result"]["eventData"].clone())
            .collect()
    };
    assert_eq!(data(&replayed), data(&live));
    let seqs: Vec<u64> = replayed.iter().map(seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(
        live.iter().any(|e| marked(
            &e["result"]["eventData"]["status"]["dataItems"],
            "tool-call"
        )
        .is_some()),
        "{live:?}"
    );
    let after = post(
        &host.rpc("concierge"),
        &v2("get", &id, json!([]), json!({})),
    )
    .await;
    assert_eq!(result(&after)["products"], result(&before)["products"]);
    assert_eq!(product_text(result(&after), "answer"), "found lamps");
}

/// The same flows over A2A: answers as artifacts, tool activity as working status updates with a
/// DataPart, the form as input-required with its schema, a wrong answer refused, a coded failure,
/// and a plain reply as a `Message` (no task), streamed or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concierge_flows_over_a2a() {
    let host = TestHost::start(HostOptions::default()).await;
    for agent in CONCIERGES {
        let sent = call(
            &host,
            agent,
            "SendMessage",
            json!({"message": message(&format!("m-{}", uuid()), "think about tea")}),
        )
        .await;
        let task = &sent["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "{agent}: {sent}"
        );
        let artifact = |id: &str| -> String {
            task["artifacts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| a["artifactId"] == id)
                .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect()
        };
        assert_eq!(artifact("answer"), "thought about about tea");
        assert_eq!(artifact("reasoning"), "Let me think about about tea.");

        // Tool activity on the stream.
        let mut stream = SseStream::open(
            &endpoint(&host, agent),
            &request(
                "SendStreamingMessage",
                json!({"message": message(&format!("m-{}", uuid()), "tool kettles")}),
            ),
        )
        .await;
        let events = stream.until_closed(Duration::from_secs(20)).await;
        let tool_updates: Vec<&Value> = events
            .iter()
            .map(|e| &e["result"]["statusUpdate"])
            .filter(|u| u["status"]["message"]["metadata"]["aiphost.kind"].is_string())
            .collect();
        assert_eq!(tool_updates.len(), 2, "{agent}: {events:?}");
        assert_eq!(tool_updates[0]["status"]["state"], "TASK_STATE_WORKING");
        assert_eq!(
            tool_updates[0]["status"]["message"]["parts"][0]["data"]["name"],
            "lookup"
        );
        assert_eq!(
            tool_updates[1]["status"]["message"]["metadata"]["aiphost.kind"],
            "tool-result"
        );
        let appended: Vec<&Value> = events
            .iter()
            .filter(|e| e["result"]["artifactUpdate"]["artifact"]["artifactId"] == "answer")
            .collect();
        assert!(
            appended.len() > 1,
            "the answer streams in pieces: {events:?}"
        );

        // The form: input-required with its schema; a wrong answer refused; the right one.
        let asked = call(
            &host,
            agent,
            "SendMessage",
            json!({"message": message(&format!("m-{}", uuid()), "form please")}),
        )
        .await;
        let task = &asked["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{asked}"
        );
        let parts = &task["status"]["message"]["parts"];
        let schema_part = parts
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["data"]["requestId"] == "trip")
            .unwrap_or_else(|| panic!("a DataPart with the form: {asked}"));
        assert_eq!(schema_part["data"]["schema"]["type"], "object");
        let task_id = task["id"].as_str().unwrap().to_string();
        let data_message = |days: Value| {
            json!({"message": {"role": "ROLE_USER", "messageId": format!("m-{}", uuid()),
                "taskId": task_id, "parts": [{"data": {"city": "Rome", "days": days}}]}})
        };
        let wrong = call(&host, agent, "SendMessage", data_message(json!("three"))).await;
        assert_eq!(error_code(&wrong), -32602, "{agent}: {wrong}");
        assert!(wrong.to_string().contains("/days"), "{wrong}");
        let right = call(&host, agent, "SendMessage", data_message(json!(3))).await;
        let task = &right["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{right}");

        // A coded failure.
        let failed = call(
            &host,
            agent,
            "SendMessage",
            json!({"message": message(&format!("m-{}", uuid()), "fail out of tea")}),
        )
        .await;
        let status = &failed["result"]["task"]["status"];
        assert_eq!(status["state"], "TASK_STATE_FAILED", "{failed}");
        assert!(
            status["message"]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["data"]["code"] == "CONCIERGE_FAILED"),
            "{failed}"
        );

        // A plain reply: a Message, not a Task, sent or streamed.
        let replied = call(
            &host,
            agent,
            "SendMessage",
            json!({"message": message(&format!("m-{}", uuid()), "reply just this")}),
        )
        .await;
        let reply = &replied["result"]["message"];
        assert_eq!(reply["role"], "ROLE_AGENT", "{agent}: {replied}");
        assert_eq!(reply["parts"][0]["text"], "just this");
        assert!(replied["result"]["task"].is_null(), "{replied}");
        let mut stream = SseStream::open(
            &endpoint(&host, agent),
            &request(
                "SendStreamingMessage",
                json!({"message": message(&format!("m-{}", uuid()), "reply streamed")}),
            ),
        )
        .await;
        let events = stream.until_closed(Duration::from_secs(20)).await;
        assert_eq!(events.len(), 1, "one message and the end: {events:?}");
        assert_eq!(
            events[0]["result"]["message"]["parts"][0]["text"],
            "streamed"
        );
    }
}
