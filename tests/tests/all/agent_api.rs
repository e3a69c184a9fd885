//! The Agent API door (`POST /agents/{agent}/process` and `…/process/stop`) over real HTTP, with
//! the concierge: streamed reasoning and answers, tool calls, a form and its answer in the same
//! session (a wrong answer refused with its paths), a coded failure, a plain reply, the folded
//! JSON answer, a stop while a turn streams, a busy session, malformed requests — and the task
//! behind a turn readable over AIP.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Both concierges: one behaviour, two SDKs.
const CONCIERGES: [&str; 2] = ["concierge", "concierge-py"];
const WAIT: Duration = Duration::from_secs(20);

fn process_url(host: &TestHost, agent: &str) -> String {
    format!("{}/agents/{agent}/process", host.url)
}

/// A request of one user message saying `words`, in `session` if any.
fn say(words: &str, session: Option<&str>) -> Value {
    let mut body = json!({"input": [{"role": "user", "type": "message",
        "content": [{"type": "text", "text": words}]}]});
    if let Some(s) = session {
        body["session_id"] = json!(s);
    }
    body
}

/// Every event of one streamed turn, checked: SSE, numbered 0..n without gaps, opened by
/// `created` then `in_progress`, one final response last.
async fn turn(host: &TestHost, agent: &str, body: &Value) -> Vec<Value> {
    let mut stream = SseStream::open(&process_url(host, agent), body).await;
    assert_eq!(stream.status, 200, "{:?}", stream.json);
    assert!(stream.content_type.starts_with("text/event-stream"));
    let events = stream.until_closed(WAIT).await;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], json!(i), "gapless: {events:#?}");
    }
    assert_eq!(events[0]["status"], "created", "{events:#?}");
    assert_eq!(events[1]["status"], "in_progress");
    let last = events.last().unwrap();
    assert_eq!(last["object"], "response");
    events
}

/// The completed messages of a turn, by type.
fn messages<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["object"] == "message" && e["status"] == "completed" && e["type"] == kind)
        .collect()
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concierge_turns_over_the_agent_api() {
    let host = TestHost::start(HostOptions::default()).await;
    for agent in CONCIERGES {
        // think: a reasoning message, then the answer; the final response holds both.
        let events = turn(&host, agent, &say("think about tea", None)).await;
        let reasoning = messages(&events, "reasoning");
        let answers = messages(&events, "message");
        assert_eq!(reasoning.len(), 1, "{events:#?}");
        assert_eq!(text_of(reasoning[0]), "Let me think about about tea.");
        assert_eq!(text_of(answers[0]), "thought about about tea");
        let last = events.last().unwrap();
        assert_eq!(last["status"], "completed");
        assert_eq!(last["output"].as_array().unwrap().len(), 2, "{last}");
        let session = last["session_id"].as_str().unwrap().to_string();
        assert!(!session.is_empty());
        assert!(
            events
                .iter()
                .filter(|e| e["object"] == "response")
                .all(|e| e["session_id"] == session)
        );

        // The task behind the turn, over AIP.
        let task_id = last["metadata"]["aiphost.taskId"].as_str().unwrap();
        let got = post(&host.rpc(agent), &v2("get", task_id, json!([]), json!({}))).await;
        assert_eq!(state(&got), "completed", "{got}");

        // tool: plugin_call, then its output.
        let events = turn(&host, agent, &say("tool kettles", None)).await;
        let call = messages(&events, "plugin_call");
        let output = messages(&events, "plugin_call_output");
        assert_eq!(call.len(), 1, "{events:#?}");
        assert_eq!(call[0]["content"][0]["data"]["name"], "lookup");
        assert_eq!(output[0]["role"], "tool");
        let at = |m: &Value| events.iter().position(|e| e == m).unwrap();
        assert!(at(call[0]) < at(output[0]));
        assert_eq!(events.last().unwrap()["status"], "completed");

        // form: a question; a wrong answer refused with its paths; the right one in the same session.
        let session = format!("s-{}", uuid());
        let events = turn(&host, agent, &say("form a trip", Some(&session))).await;
        let question = messages(&events, "message");
        assert_eq!(question.len(), 1, "{events:#?}");
        assert_eq!(question[0]["metadata"]["aiphost.kind"], "input-request");
        assert_eq!(events.last().unwrap()["status"], "completed");
        let answer = |data: Value| {
            json!({"session_id": session, "input": [{"role": "user",
            "content": [{"type": "data", "data": data}]}]})
        };
        let (status, wrong) = post_status(
            &process_url(&host, agent),
            &answer(json!({"city": "Oslo", "days": "three"})),
        )
        .await;
        assert_eq!(status, 400, "{wrong}");
        assert_eq!(wrong["error"]["code"], "INVALID_REQUEST");
        assert_eq!(
            wrong["error"]["field"], "input[0].content[0].data",
            "{wrong}"
        );
        assert!(
            wrong["error"]["errors"].to_string().contains("/days"),
            "{wrong}"
        );
        let events = turn(&host, agent, &answer(json!({"city": "Oslo", "days": 3}))).await;
        let answers = messages(&events, "message");
        assert_eq!(text_of(answers[0]), "Oslo for 3 days", "{events:#?}");
        assert_eq!(events.last().unwrap()["status"], "completed");

        // fail: the response fails with the partner's code.
        let events = turn(&host, agent, &say("fail out of tea", None)).await;
        let last = events.last().unwrap();
        assert_eq!(last["status"], "failed", "{events:#?}");
        assert_eq!(last["error"]["code"], "CONCIERGE_FAILED");

        // reply: one message.
        let events = turn(&host, agent, &say("reply just this", None)).await;
        let answers = messages(&events, "message");
        assert_eq!(answers.len(), 1, "{events:#?}");
        assert_eq!(text_of(answers[0]), "just this");
        assert_eq!(events.last().unwrap()["status"], "completed");

        // stream: false: the last response, as JSON, with its output.
        let mut body = say("think about coffee", None);
        body["stream"] = json!(false);
        let (status, folded) = post_status(&process_url(&host, agent), &body).await;
        assert_eq!(status, 200, "{folded}");
        assert_eq!(folded["object"], "response");
        assert_eq!(folded["status"], "completed");
        assert_eq!(folded["output"].as_array().unwrap().len(), 2, "{folded}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_turn_is_busy_and_stops_on_request() {
    let host = TestHost::start(HostOptions::default()).await;
    let session = format!("s-{}", uuid());
    let mut stream = SseStream::open(
        &process_url(&host, "concierge"),
        &say("slow count", Some(&session)),
    )
    .await;
    // Wait for the answer to start streaming: the task is working.
    loop {
        let (event, _) = stream.next_event(WAIT).await.expect("an event");
        if event["object"] == "content" {
            break;
        }
    }

    // A second turn meanwhile: one rejected response, SESSION_BUSY.
    let mut second = SseStream::open(
        &process_url(&host, "concierge"),
        &say("think again", Some(&session)),
    )
    .await;
    assert_eq!(second.status, 200);
    let busy = second.until_closed(WAIT).await;
    assert_eq!(busy.len(), 1, "{busy:#?}");
    assert_eq!(busy[0]["status"], "rejected");
    assert_eq!(busy[0]["error"]["code"], "SESSION_BUSY");
    assert_eq!(busy[0]["sequence_number"], 0);

    // Stop: 200, and the open stream ends canceled.
    let stop = format!("{}/stop", process_url(&host, "concierge"));
    let (status, stopped) = post_status(&stop, &json!({"session_id": session})).await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["status"], "canceled");
    assert_eq!(stopped["session_id"], session.as_str());
    let rest = stream.until_closed(WAIT).await;
    let last = rest.last().expect("the final response");
    assert_eq!(last["object"], "response", "{rest:#?}");
    assert_eq!(last["status"], "canceled");

    // Nothing runs any more.
    let (status, none) = post_status(&stop, &json!({"session_id": session})).await;
    assert_eq!(status, 404, "{none}");
    assert_eq!(none["error"]["code"], "NO_RUNNING_TASK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_400_naming_the_field() {
    let host = TestHost::start(HostOptions::default()).await;
    let url = process_url(&host, "concierge");
    let cases = [
        (json!({"stream": true}), "input"),
        (
            {
                let mut b = say("hi", None);
                b["n"] = json!(9);
                b
            },
            "n",
        ),
        (
            json!({"input": [{"role": "robot", "content": [{"type": "text", "text": "x"}]}]}),
            "input[0].role",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = post_status(&url, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "INVALID_REQUEST");
        assert_eq!(answer["error"]["field"], field, "{answer}");
    }
    // Not JSON by its content type: 415.
    let response = reqwest::Client::new()
        .post(&url)
        .header("content-type", "text/plain")
        .body(say("hi", None).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
}

/// POST `body` to `url` with `Authorization: Bearer {token}` (if any): the status and the JSON.
async fn post_keyed(url: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(url).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("HTTP request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_are_authenticated_and_sessions_are_their_leaders_own() {
    use aiphost_tests::tenants::{create_tenant, publish_keyed};
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    const OTHER_LEADER: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let keys = publish_keyed(
        &host.url,
        &acme,
        "concierge",
        "keyed",
        &[LEADER, OTHER_LEADER],
    )
    .await;
    let (mine, theirs) = (&keys[0], &keys[1]);
    let url = process_url(&host, "keyed");
    let stop = format!("{url}/stop");
    let session = format!("s-{}", uuid());

    // No key: 401, before anything runs.
    let (status, refused) = post_keyed(&url, None, &say("hi", Some(&session))).await;
    assert_eq!(status, 401, "{refused}");
    assert_eq!(refused["error"]["code"], "UNAUTHENTICATED");

    // A form awaits my answer in my session.
    let mut asked = SseStream::open_as(&url, Some(mine), &say("form a trip", Some(&session))).await;
    assert_eq!(asked.status, 200, "{:?}", asked.json);
    let events = asked.until_closed(WAIT).await;
    assert_eq!(events.last().unwrap()["status"], "completed", "{events:#?}");

    // Another Leader's session of the same id is not mine: nothing of theirs runs there.
    let (status, none) = post_keyed(&stop, Some(theirs), &json!({"session_id": session})).await;
    assert_eq!(status, 404, "{none}");

    // I stop my waiting task.
    let (status, stopped) = post_keyed(&stop, Some(mine), &json!({"session_id": session})).await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["status"], "canceled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_at_once_in_one_session_start_one_task() {
    let host = TestHost::start(HostOptions::default()).await;
    let url = process_url(&host, "concierge");
    let session = format!("s-{}", uuid());
    let body = say("slow count", Some(&session));
    let (mut a, mut b) = tokio::join!(SseStream::open(&url, &body), SseStream::open(&url, &body));
    let (first_a, _) = a.next_event(WAIT).await.expect("an event");
    let (first_b, _) = b.next_event(WAIT).await.expect("an event");
    let busy: Vec<&Value> = [&first_a, &first_b]
        .into_iter()
        .filter(|e| e["error"]["code"] == "SESSION_BUSY")
        .collect();
    assert_eq!(busy.len(), 1, "one runs, one is busy: {first_a} {first_b}");
    // Stop the one that runs once its answer streams (before, its task may not be recorded).
    let running = if first_a["error"].is_null() {
        &mut a
    } else {
        &mut b
    };
    while let Some((event, _)) = running.next_event(WAIT).await {
        if event["object"] == "content" {
            break;
        }
    }
    let (status, stopped) =
        post_status(&format!("{url}/stop"), &json!({"session_id": session})).await;
    assert_eq!(status, 200, "{stopped}");
}
