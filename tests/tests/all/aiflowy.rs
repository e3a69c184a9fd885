//! The AIFlowy chat door (`POST /agents/{agent}/aiflowy/chat`, `…/aiflowy/form`, `GET
//! …/aiflowy/chat/events`) over real HTTP, with the concierge, in both wires (the seed's, and
//! AIFlowy's own with `?wire=aiflowy`): every envelope valid against the seed's table
//! (`tests/fixtures/aiflowy/envelope.schema.json`), numbered from 0, under the SSE names
//! `message`/`error`/`done`; streamed thinking and answers, tool calls, a form and its submit
//! (wrong values, an unknown form, an answered one refused), a coded failure, a plain reply, a
//! busy conversation, a form's timeout told on the events route, a restart between the form
//! and its submit, and the task behind a turn readable by its Leader over AIP and A2A only.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Both concierges: one behaviour, two SDKs.
const CONCIERGES: [&str; 2] = ["concierge", "concierge-py"];
/// The seed's wire and AIFlowy's.
const WIRES: [Wire; 2] = [Wire::Seed, Wire::Aiflowy];
const WAIT: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Seed,
    Aiflowy,
}

impl Wire {
    /// The query that asks for it.
    fn query(self) -> &'static str {
        match self {
            Wire::Seed => "",
            Wire::Aiflowy => "?wire=aiflowy",
        }
    }

    /// A new conversation id as this wire's clients make them: AIFlowy's are numbers (its
    /// `BigInteger`), the seed's strings.
    fn conversation(self) -> Value {
        match self {
            Wire::Seed => json!(format!("c-{}", uuid())),
            Wire::Aiflowy => {
                let n = u64::from_str_radix(&uuid().replace('-', "")[..15], 16).unwrap_or(1);
                json!(n)
            }
        }
    }

    /// The key of a form's id in this wire's payloads.
    fn form_key(self) -> &'static str {
        match self {
            Wire::Seed => "form_id",
            Wire::Aiflowy => "formId",
        }
    }
}

/// A conversation id as the door keeps it (a number as its decimal text).
fn text_of_id(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One partner's AIFlowy door, in one wire, as one Leader (`token`: its API key, if any).
#[derive(Clone, Copy)]
struct Door<'a> {
    base: &'a str,
    agent: &'a str,
    wire: Wire,
    token: Option<&'a str>,
}

impl<'a> Door<'a> {
    fn new(base: &'a str, agent: &'a str, wire: Wire) -> Self {
        Door {
            base,
            agent,
            wire,
            token: None,
        }
    }

    /// The same door as the Leader of `token`.
    fn as_leader(self, token: Option<&'a str>) -> Self {
        Door { token, ..self }
    }

    fn chat_url(&self) -> String {
        let (base, agent) = (self.base, self.agent);
        format!("{base}/agents/{agent}/aiflowy/chat{}", self.wire.query())
    }

    fn form_url(&self) -> String {
        let (base, agent) = (self.base, self.agent);
        format!("{base}/agents/{agent}/aiflowy/form{}", self.wire.query())
    }

    fn events_url(&self, conversation: &str) -> String {
        let (base, agent) = (self.base, self.agent);
        let wire = match self.wire {
            Wire::Seed => "",
            Wire::Aiflowy => "&wire=aiflowy",
        };
        format!("{base}/agents/{agent}/aiflowy/chat/events?conversation_id={conversation}{wire}")
    }

    /// One chat turn saying `prompt` in `conversation`, checked.
    async fn chat(&self, conversation: &Value, prompt: &str) -> Vec<(String, Value)> {
        let key = match self.wire {
            Wire::Seed => "conversation_id",
            Wire::Aiflowy => "conversationId",
        };
        let body = json!({"prompt": prompt, key: conversation, "botId": 1, "messages": []});
        let id = text_of_id(conversation);
        stream_all(&self.chat_url(), self.token, &body, self.wire, &id).await
    }

    /// POST a form submit: a stream, or (refused) the JSON.
    async fn submit(&self, conversation: &Value, form_id: &str, values: Value) -> SseStream {
        let body = match self.wire {
            Wire::Seed => {
                json!({"conversation_id": conversation, "form_id": form_id, "values": values})
            }
            Wire::Aiflowy => {
                json!({"conversationId": conversation, "formId": form_id, "values": values})
            }
        };
        SseStream::open_as(&self.form_url(), self.token, &body).await
    }

    /// A submit refused: 400 with `code`; its body.
    async fn refused(
        &self,
        conversation: &Value,
        form_id: &str,
        values: Value,
        code: &str,
    ) -> Value {
        let answer = self.submit(conversation, form_id, values).await;
        let body = answer.json.clone().unwrap_or(Value::Null);
        assert_eq!(answer.status, 400, "{body}");
        assert!(answer.content_type.starts_with("application/json"));
        assert_eq!(body["error"]["code"], code, "{body}");
        body
    }

    /// GET the events route of `conversation`.
    async fn events(&self, conversation: &str) -> SseStream {
        SseStream::get_as(&self.events_url(conversation), self.token).await
    }
}

/// The envelope schema of the seed's §4.2, compiled once.
fn schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/aiflowy/envelope.schema.json"
        );
        let text = std::fs::read_to_string(path).expect("the envelope schema");
        let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
        jsonschema::validator_for(&schema).expect("the schema compiles")
    })
}

/// `domain/type` of an envelope, in lower case whatever the wire.
fn kind(event: &(String, Value)) -> String {
    let e = &event.1;
    format!(
        "{}/{}",
        e["domain"].as_str().unwrap_or("-"),
        e["type"].as_str().unwrap_or("-")
    )
    .to_lowercase()
}

/// The conversation of an envelope, whatever the wire.
fn conversation_of(e: &Value) -> &Value {
    if e.get("conversationId").is_some() {
        &e["conversationId"]
    } else {
        &e["conversation_id"]
    }
}

/// The task of an envelope (its message id), whatever the wire.
fn task_of(e: &Value) -> String {
    let id = e.get("messageId").or_else(|| e.get("message_id"));
    id.and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Every event of one stream, checked: names `message`/`error`/`done`, each envelope valid
/// against the schema and spelled as `wire` spells it, `index` 0, 1, 2 … without gaps, one
/// conversation throughout, and nothing after a `done` or an `error`.
fn check(events: &[(String, Value)], wire: Wire, conversation: &str) {
    assert!(!events.is_empty(), "a stream without events");
    for (i, (name, e)) in events.iter().enumerate() {
        assert!(
            ["message", "error", "done"].contains(&name.as_str()),
            "event name {name:?}"
        );
        let errors: Vec<String> = schema().iter_errors(e).map(|x| x.to_string()).collect();
        assert!(errors.is_empty(), "{e} is no envelope: {errors:?}");
        assert_eq!(e["index"], json!(i), "indexes from 0: {events:#?}");
        assert_eq!(conversation_of(e), &json!(conversation), "{e}");
        let domain = e["domain"].as_str().unwrap_or_default();
        match wire {
            Wire::Seed => {
                assert_eq!(domain, domain.to_lowercase(), "{e}");
                assert!(e.get("conversation_id").is_some(), "{e}");
            }
            Wire::Aiflowy => {
                assert_eq!(domain, domain.to_uppercase(), "{e}");
                assert!(e.get("conversationId").is_some(), "{e}");
            }
        }
        let last = i + 1 == events.len();
        if name != "message" {
            assert!(last, "{name} before the end: {events:#?}");
        }
        match name.as_str() {
            "done" => assert_eq!(kind(&events[i]), "system/done"),
            "error" => assert!(kind(&events[i]).ends_with("/error"), "{e}"),
            _ => {}
        }
    }
}

/// Open a stream (POST `body` to `url` as `token`'s Leader): 200, `text/event-stream`.
async fn open(url: &str, token: Option<&str>, body: &Value) -> SseStream {
    let stream = SseStream::open_as(url, token, body).await;
    assert_eq!(stream.status, 200, "{url}: {:?}", stream.json);
    assert!(
        stream.content_type.starts_with("text/event-stream"),
        "{}",
        stream.content_type
    );
    assert_eq!(stream.cache_control, "no-cache");
    stream
}

/// A whole streamed answer, checked.
async fn stream_all(
    url: &str,
    token: Option<&str>,
    body: &Value,
    wire: Wire,
    conversation: &str,
) -> Vec<(String, Value)> {
    let events = open(url, token, body).await.named_until_closed(WAIT).await;
    check(&events, wire, conversation);
    events
}

/// The texts of the `llm/<of>` events, joined (deltas, or whole messages).
fn said(events: &[(String, Value)], of: &str) -> String {
    events
        .iter()
        .filter(|e| kind(e) == format!("llm/{of}"))
        .filter_map(|e| {
            let p = &e.1["payload"];
            p["delta"].as_str().or(p["content"].as_str())
        })
        .collect()
}

/// The payload of the only event of `kind`.
fn only<'a>(events: &'a [(String, Value)], wanted: &str) -> &'a Value {
    let found: Vec<&(String, Value)> = events.iter().filter(|e| kind(e) == wanted).collect();
    assert_eq!(found.len(), 1, "one {wanted}: {events:#?}");
    &found[0].1["payload"]
}

/// The states of the `system/status` events, in order.
fn states(events: &[(String, Value)]) -> Vec<String> {
    events
        .iter()
        .filter(|e| kind(e) == "system/status")
        .map(|e| e.1["payload"]["state"].as_str().unwrap_or("-").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concierge_flows_in_both_wires() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = host.url.as_str();
    for agent in CONCIERGES {
        for wire in WIRES {
            let door = Door::new(base, agent, wire);
            let at = format!("{agent} {wire:?}");
            // echo: the prompt back as answer deltas; running first, done last with its latency.
            let c = wire.conversation();
            let events = door.chat(&c, "hello there world").await;
            assert_eq!(said(&events, "message"), "hello there world", "{at}");
            assert_eq!(states(&events), ["running"], "{at}");
            let (name, done) = events.last().unwrap();
            assert_eq!(name, "done", "{at}");
            assert!(done["meta"]["latency_ms"].is_u64(), "{done}");
            let task = task_of(&events[0].1);
            assert!(!task.is_empty());
            assert!(events.iter().all(|e| task_of(&e.1) == task));
            if wire == Wire::Aiflowy {
                // What AIFlowy's UI reads: the conversation and role beside each delta.
                let delta = events.iter().find(|e| kind(e) == "llm/message").unwrap();
                assert_eq!(delta.1["type"], "MESSAGE");
                assert_eq!(delta.1["payload"]["role"], "assistant");
                assert_eq!(delta.1["payload"]["conversation_id"], json!(text_of_id(&c)));
            }
            // The task behind the turn, over AIP, in the conversation as its session.
            let got = post(&host.rpc(agent), &v2("get", &task, json!([]), json!({}))).await;
            assert_eq!(state(&got), "completed", "{got}");
            assert_eq!(got["result"]["sessionId"], json!(text_of_id(&c)), "{got}");

            // think: thinking before the answer.
            let c = wire.conversation();
            let events = door.chat(&c, "think about tea").await;
            assert_eq!(
                said(&events, "thinking"),
                "Let me think about about tea.",
                "{at}"
            );
            assert_eq!(said(&events, "message"), "thought about about tea", "{at}");
            let first_answer = events.iter().position(|e| kind(e) == "llm/message");
            let last_thought = events.iter().rposition(|e| kind(e) == "llm/thinking");
            assert!(last_thought < first_answer, "{events:#?}");

            // tool: the call, its result, then the answer.
            let events = door.chat(&wire.conversation(), "tool kettles").await;
            assert_eq!(
                only(&events, "tool/tool_call"),
                &json!({"tool_call_id": "lookup-1", "name": "lookup",
                        "arguments": {"query": "kettles"}}),
                "{at}"
            );
            assert_eq!(
                only(&events, "tool/tool_result"),
                &json!({"tool_call_id": "lookup-1", "status": "success",
                        "result": {"found": "kettles"}})
            );
            assert_eq!(said(&events, "message"), "found kettles");

            // fail: an error event with the partner's code, and no done.
            let events = door.chat(&wire.conversation(), "fail out of tea").await;
            let (name, error) = events.last().unwrap();
            assert_eq!(name, "error", "{events:#?}");
            let payload = &error["payload"];
            match wire {
                Wire::Seed => {
                    assert_eq!(kind(events.last().unwrap()), "system/error");
                    assert_eq!(payload["code"], "CONCIERGE_FAILED", "{payload}");
                }
                Wire::Aiflowy => {
                    assert_eq!(error["domain"], "SYSTEM");
                    assert_eq!(payload["code"], "SYSTEM_ERROR", "{payload}");
                    assert_eq!(payload["detail"]["code"], "CONCIERGE_FAILED");
                }
            }
            assert_eq!(payload["message"], "out of tea");
            assert_eq!(payload["retryable"], false);
            assert!(events.iter().all(|(n, _)| n != "done"));

            // reply: one whole message.
            let events = door.chat(&wire.conversation(), "reply just this").await;
            let whole: Vec<&(String, Value)> =
                events.iter().filter(|e| kind(e) == "llm/message").collect();
            assert_eq!(whole.len(), 1, "{events:#?}");
            let key = if wire == Wire::Seed {
                "content"
            } else {
                "delta"
            };
            assert_eq!(whole[0].1["payload"][key], "just this", "{at}");
            assert_eq!(events.last().unwrap().0, "done");

            form_flow(door).await;
        }
    }
}

/// form: the question suspends the turn; wrong values, an unknown form refused; the right
/// values resume the same task in a new stream; the form is closed after.
async fn form_flow(door: Door<'_>) {
    let wire = door.wire;
    let c = wire.conversation();
    let conversation = text_of_id(&c);
    let events = door.chat(&c, "form a trip").await;
    let shape: Vec<String> = events.iter().map(kind).collect();
    assert_eq!(
        shape,
        [
            "system/status",
            "interaction/form_request",
            "system/status",
            "system/done"
        ],
        "{events:#?}"
    );
    let form = only(&events, "interaction/form_request");
    assert_eq!(form[wire.form_key()], "trip", "{form}");
    assert_eq!(form["title"], "Trip");
    assert_eq!(form["description"], "Where to, and for how many days?");
    assert_eq!(form["schema"]["required"], json!(["city", "days"]));
    assert_eq!(
        form["ui"],
        json!({"submit_text": "Submit", "cancel_text": "Cancel"})
    );
    assert_eq!(
        events[2].1["payload"],
        json!({"state": "suspended", "reason": "interaction"})
    );
    let task = task_of(&events[0].1);

    let wrong = door
        .refused(
            &c,
            "trip",
            json!({"city": "Oslo", "days": "three"}),
            "FORM_INVALID",
        )
        .await;
    assert_eq!(wrong["error"]["field"], "values");
    let paths: Vec<&str> = wrong["error"]["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(paths, ["/days"], "{wrong}");
    door.refused(&c, "nope", json!({}), "FORM_UNKNOWN").await;

    let mut resumed = door
        .submit(&c, "trip", json!({"city": "Oslo", "days": 3}))
        .await;
    assert_eq!(resumed.status, 200, "{:?}", resumed.json);
    let events = resumed.named_until_closed(WAIT).await;
    check(&events, wire, &conversation);
    assert_eq!(states(&events)[0], "resumed", "{events:#?}");
    assert_eq!(kind(&events[0]), "system/status");
    assert_eq!(said(&events, "message"), "Oslo for 3 days");
    assert_eq!(events.last().unwrap().0, "done");
    assert!(
        events.iter().all(|e| task_of(&e.1) == task),
        "the same task"
    );

    door.refused(
        &c,
        "trip",
        json!({"city": "Oslo", "days": 3}),
        "FORM_CLOSED",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_conversation_is_busy_and_a_cancel_ends_its_stream() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = host.url.as_str();
    for wire in WIRES {
        let door = Door::new(base, "concierge", wire);
        let c = wire.conversation();
        let conversation = text_of_id(&c);
        let url = door.chat_url();
        let mut stream = open(
            &url,
            None,
            &json!({"prompt": "slow count", "conversation_id": c}),
        )
        .await;
        // Wait for the answer to stream: the task is working.
        let mut events = Vec::new();
        while let Some(event) = stream.next_named(WAIT).await {
            let answering = kind(&event) == "llm/message";
            events.push(event);
            if answering {
                break;
            }
        }
        // A second turn meanwhile: one error event, CONVERSATION_BUSY.
        let busy = stream_all(
            &url,
            None,
            &json!({"prompt": "think again", "conversation_id": c}),
            wire,
            &conversation,
        )
        .await;
        assert_eq!(busy.len(), 1, "{busy:#?}");
        assert_eq!(busy[0].0, "error");
        let payload = &busy[0].1["payload"];
        match wire {
            Wire::Seed => assert_eq!(payload["code"], "CONVERSATION_BUSY", "{payload}"),
            Wire::Aiflowy => {
                assert_eq!(payload["code"], "SYSTEM_ERROR", "{payload}");
                assert_eq!(payload["detail"]["code"], "CONVERSATION_BUSY");
            }
        }
        // The events route joins the running task: running first, then what it streams.
        let mut follow = door.events(&conversation).await;
        assert_eq!(follow.status, 200, "{:?}", follow.json);
        let joined = follow.next_named(WAIT).await.expect("running");
        assert_eq!(kind(&joined), "system/status");
        assert_eq!(joined.1["payload"]["state"], "running");
        // The running task canceled over AIP: its streams say canceled, then done.
        let task = task_of(&events[0].1);
        assert_eq!(
            task_of(&busy[0].1),
            task,
            "the busy error names the running task"
        );
        let canceled = post(
            &host.rpc("concierge"),
            &v2("cancel", &task, json!([]), json!({})),
        )
        .await;
        assert_eq!(state(&canceled), "canceled", "{canceled}");
        events.extend(stream.named_until_closed(WAIT).await);
        let mut followed = vec![joined];
        followed.extend(follow.named_until_closed(WAIT).await);
        for events in [events, followed] {
            check(&events, wire, &conversation);
            assert_eq!(states(&events).last().map(String::as_str), Some("canceled"));
            assert_eq!(events.last().unwrap().0, "done");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_route_shows_a_waiting_form_and_what_becomes_of_it() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = host.url.as_str();
    for wire in WIRES {
        let door = Door::new(base, "concierge", wire);
        // No task under way: nothing to follow.
        let c = wire.conversation();
        let conversation = text_of_id(&c);
        let idle = door.events(&conversation).await;
        assert_eq!(idle.status, 404);
        assert_eq!(
            idle.json.as_ref().map(|j| j["error"]["code"].clone()),
            Some(json!("CONVERSATION_IDLE"))
        );

        // A form waits; the events route shows it again, then a submit made elsewhere.
        door.chat(&c, "form a trip").await;
        let mut follow = door.events(&conversation).await;
        assert_eq!(follow.status, 200, "{:?}", follow.json);
        let mut events = Vec::new();
        for _ in 0..2 {
            events.push(follow.next_named(WAIT).await.expect("the form again"));
        }
        assert_eq!(kind(&events[0]), "interaction/form_request");
        assert_eq!(states(&events), ["suspended"]);
        let mut resumed = door
            .submit(&c, "trip", json!({"city": "Oslo", "days": 3}))
            .await;
        assert_eq!(resumed.status, 200);
        resumed.named_until_closed(WAIT).await;
        events.extend(follow.named_until_closed(WAIT).await);
        check(&events, wire, &conversation);
        assert_eq!(states(&events), ["suspended", "resumed"], "{events:#?}");
        assert_eq!(said(&events, "message"), "Oslo for 3 days");
        assert_eq!(events.last().unwrap().0, "done");

        // A form canceled over AIP: form_cancel with reason canceled, then done.
        let c = wire.conversation();
        let conversation = text_of_id(&c);
        let asked = door.chat(&c, "form a trip").await;
        let task = task_of(&asked[0].1);
        let mut follow = door.events(&conversation).await;
        let mut events = vec![
            follow.next_named(WAIT).await.expect("form"),
            follow.next_named(WAIT).await.expect("suspended"),
        ];
        let canceled = post(
            &host.rpc("concierge"),
            &v2("cancel", &task, json!([]), json!({})),
        )
        .await;
        assert_eq!(state(&canceled), "canceled", "{canceled}");
        events.extend(follow.named_until_closed(WAIT).await);
        check(&events, wire, &conversation);
        let cancel = only(&events, "interaction/form_cancel");
        assert_eq!(cancel[wire.form_key()], "trip");
        assert_eq!(cancel["reason"], "canceled");
        assert_eq!(events.last().unwrap().0, "done");
        // The form is closed, and nothing is under way any more.
        door.refused(
            &c,
            "trip",
            json!({"city": "Oslo", "days": 3}),
            "FORM_CLOSED",
        )
        .await;
        let idle = door.events(&conversation).await;
        assert_eq!(idle.status, 404);
    }
}

/// The door's form timeout (`serve --aiflowy-form-timeout`): the waiting task is canceled when
/// it runs out, and the events route says `form_cancel` with reason `timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forms_timeout_is_told_on_the_events_route() {
    const TIMEOUT: Duration = Duration::from_secs(3);
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(&dir.path().join("data"), &["--aiflowy-form-timeout", "3s"]);
    let base = host.url.as_str();
    for wire in WIRES {
        let door = Door::new(base, "concierge", wire);
        let c = wire.conversation();
        let conversation = text_of_id(&c);
        let asked_at = Instant::now();
        door.chat(&c, "form a trip").await;
        let mut follow = door.events(&conversation).await;
        assert_eq!(follow.status, 200, "{:?}", follow.json);
        let events = follow.named_until_closed(TIMEOUT + WAIT).await;
        check(&events, wire, &conversation);
        assert!(asked_at.elapsed() >= TIMEOUT, "canceled before its timeout");
        let shape: Vec<String> = events.iter().map(kind).collect();
        assert_eq!(
            shape,
            [
                "interaction/form_request",
                "system/status",
                "interaction/form_cancel",
                "system/done"
            ],
            "{events:#?}"
        );
        let cancel = only(&events, "interaction/form_cancel");
        assert_eq!(cancel[wire.form_key()], "trip");
        assert_eq!(cancel["reason"], "timeout");
        door.refused(
            &c,
            "trip",
            json!({"city": "Oslo", "days": 3}),
            "FORM_CLOSED",
        )
        .await;
    }
    host.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_after_a_restart_continues_the_same_task() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let wire = Wire::Seed;
    let c = wire.conversation();
    let asked = Door::new(&host.url, "concierge", wire)
        .chat(&c, "form a trip")
        .await;
    let task = task_of(&asked[0].1);
    host.restart(HostOptions::default()).await;
    let mut resumed = Door::new(&host.url, "concierge", wire)
        .submit(&c, "trip", json!({"city": "Bergen", "days": 2}))
        .await;
    assert_eq!(resumed.status, 200, "{:?}", resumed.json);
    let events = resumed.named_until_closed(WAIT).await;
    check(&events, wire, &text_of_id(&c));
    assert_eq!(states(&events)[0], "resumed");
    assert_eq!(said(&events, "message"), "Bergen for 2 days");
    assert!(events.iter().all(|e| task_of(&e.1) == task), "{events:#?}");
    let got = post(
        &host.rpc("concierge"),
        &v2("get", &task, json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&got), "completed", "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_are_their_leaders_own() {
    use aiphost_tests::a2a::{endpoint, request};
    use aiphost_tests::tenants::{create_tenant, publish_keyed};
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    const OTHER_LEADER: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
    let host = TestHost::start(HostOptions::default()).await;
    let base = host.url.as_str();
    let acme = create_tenant(base, "acme", json!({})).await;
    let keys = publish_keyed(base, &acme, "concierge", "keyed", &[LEADER, OTHER_LEADER]).await;
    let (my_key, their_key) = (Some(keys[0].as_str()), Some(keys[1].as_str()));
    let wire = Wire::Seed;
    let keyed = Door::new(base, "keyed", wire);
    let (mine, theirs) = (keyed.as_leader(my_key), keyed.as_leader(their_key));
    let c = wire.conversation();
    let conversation = text_of_id(&c);

    // No key: 401 with a JSON body, before anything runs.
    let refused = SseStream::open_as(
        &keyed.chat_url(),
        None,
        &json!({"prompt": "hi", "conversation_id": c}),
    )
    .await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.json.as_ref().map(|j| j["error"]["code"].clone()),
        Some(json!("UNAUTHENTICATED"))
    );

    // My form waits in my conversation.
    let asked = mine.chat(&c, "form a trip").await;
    let task = task_of(&asked[0].1);

    // The other Leader's conversation of the same id is not mine: no form there, nothing to
    // follow, and a turn there starts a task of its own.
    theirs
        .refused(
            &c,
            "trip",
            json!({"city": "Oslo", "days": 3}),
            "FORM_UNKNOWN",
        )
        .await;
    let idle = theirs.events(&conversation).await;
    assert_eq!(idle.status, 404);
    let theirs_turn = theirs.chat(&c, "hello").await;
    assert_ne!(task_of(&theirs_turn[0].1), task);

    // My task over AIP and A2A with my key; unknown with theirs.
    let got = post_as(
        &host.rpc("keyed"),
        my_key,
        &v2("get", &task, json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&got), "awaiting-input", "{got}");
    let not_theirs = post_as(
        &host.rpc("keyed"),
        their_key,
        &v2("get", &task, json!([]), json!({})),
    )
    .await;
    assert!(not_theirs.get("error").is_some(), "{not_theirs}");
    let a2a = endpoint(&host, "keyed");
    let read = post_as(&a2a, my_key, &request("GetTask", json!({"id": task}))).await;
    assert_eq!(read["result"]["id"], json!(task), "{read}");
    assert_eq!(read["result"]["contextId"], json!(conversation), "{read}");
    let unknown = post_as(&a2a, their_key, &request("GetTask", json!({"id": task}))).await;
    assert!(unknown.get("error").is_some(), "{unknown}");

    // My submit goes through.
    let mut resumed = mine
        .submit(&c, "trip", json!({"city": "Oslo", "days": 3}))
        .await;
    assert_eq!(resumed.status, 200, "{:?}", resumed.json);
    let events = resumed.named_until_closed(WAIT).await;
    assert_eq!(said(&events, "message"), "Oslo for 3 days");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_400_naming_the_field() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = host.url.as_str();
    let chat = Door::new(base, "concierge", Wire::Seed).chat_url();
    let form = Door::new(base, "concierge", Wire::Seed).form_url();
    let cases = [
        (chat.clone(), json!({"conversation_id": "c"}), "prompt"),
        (
            chat.clone(),
            json!({"prompt": "hi", "conversationId": 1.5}),
            "conversationId",
        ),
        (
            chat.clone(),
            json!({"prompt": "hi", "attachments": [3]}),
            "attachments[0]",
        ),
        (format!("{chat}?wire=loud"), json!({"prompt": "hi"}), "wire"),
        (
            form.clone(),
            json!({"conversation_id": "c", "form_id": "trip"}),
            "values",
        ),
        (
            form.clone(),
            json!({"form_id": "trip", "values": {}}),
            "conversation_id",
        ),
    ];
    for (url, body, field) in cases {
        let (status, answer) = post_status(&url, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "INVALID_REQUEST");
        assert_eq!(answer["error"]["field"], field, "{answer}");
    }
    let missing = SseStream::get_as(
        &format!("{base}/agents/concierge/aiflowy/chat/events"),
        None,
    )
    .await;
    assert_eq!(missing.status, 400);
    assert_eq!(
        missing.json.as_ref().map(|j| j["error"]["field"].clone()),
        Some(json!("conversation_id"))
    );
    // An attachment no skill of the partner takes (the concierge takes text and JSON): 415
    // naming it.
    let (status, answer) = post_status(
        &chat,
        &json!({"prompt": "hi", "attachments": ["https://files.example/a.png"]}),
    )
    .await;
    assert_eq!(status, 415, "{answer}");
    assert_eq!(answer["error"]["code"], "UNSUPPORTED_CONTENT");
    assert_eq!(answer["error"]["field"], "attachments[0]", "{answer}");
    // Not JSON by its content type: 415; a partner not hosted: 404.
    let response = reqwest::Client::new()
        .post(&chat)
        .header("content-type", "text/plain")
        .body(json!({"prompt": "hi"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let (status, _) = post_status(
        &Door::new(base, "nobody-here", Wire::Seed).chat_url(),
        &json!({"prompt": "hi"}),
    )
    .await;
    assert_eq!(status, 404);
}

/// A body over `--max-body-bytes` is 413 before anything runs; a partner's request rate counts
/// chat turns (in the engine) and the events route (at the door), and over it answers 429 with
/// when to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limits_and_request_rates() {
    let host = TestHost::start(HostOptions {
        max_body_bytes: 8 * 1024,
        request_rate: Some((1, 1)),
        ..HostOptions::default()
    })
    .await;
    let door = Door::new(&host.url, "concierge", Wire::Seed);
    let c = Wire::Seed.conversation();
    let conversation = text_of_id(&c);
    let big = json!({"prompt": "x".repeat(16 * 1024), "conversation_id": c});
    let (status, answer) = post_status(&door.chat_url(), &big).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["error"]["code"], "INVALID_REQUEST");

    // One request a second, a burst of one: the form's turn takes it, and requests to the events
    // route, back to back, are soon over it (however slow this machine is, not one a second).
    door.chat(&c, "form a trip").await;
    let mut refused = None;
    for _ in 0..5 {
        let response = reqwest::get(door.events_url(&conversation)).await.unwrap();
        if response.status() == 429 {
            refused = Some(response);
            break;
        }
        assert_eq!(response.status(), 200);
    }
    let response = refused.expect("the events route counts against the rate");
    let retry_after = response.headers().get("retry-after").cloned();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(body["error"]["code"], "RESOURCE_EXHAUSTED", "{body}");
    assert_eq!(body["error"]["quota"], "requestsPerSecond", "{body}");
    assert!(retry_after.is_some(), "Retry-After: {body}");
}

/// The stop route (`POST …/aiflowy/chat/stop`, the stop button): it cancels the conversation's
/// task under way — a running one's stream says canceled and done, a waiting form is withdrawn
/// with reason canceled — answers with the ids in the wire's spelling, and is 404
/// `CONVERSATION_IDLE` once nothing is under way, or in another Leader's conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_route_cancels_the_conversations_task() {
    use aiphost_tests::tenants::{create_tenant, publish_keyed};
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    const OTHER_LEADER: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
    let host = TestHost::start(HostOptions::default()).await;
    let base = host.url.as_str();
    for wire in WIRES {
        let door = Door::new(base, "concierge", wire);
        let stop_url = format!("{base}/agents/concierge/aiflowy/chat/stop{}", wire.query());
        let (conversation_key, message_key) = match wire {
            Wire::Seed => ("conversation_id", "message_id"),
            Wire::Aiflowy => ("conversationId", "messageId"),
        };
        let c = wire.conversation();
        let conversation = text_of_id(&c);
        let mut stream = open(
            &door.chat_url(),
            None,
            &json!({"prompt": "slow count", conversation_key: c}),
        )
        .await;
        let mut events = Vec::new();
        while let Some(event) = stream.next_named(WAIT).await {
            let answering = kind(&event) == "llm/message";
            events.push(event);
            if answering {
                break;
            }
        }
        let task = task_of(&events[0].1);
        let stopped = SseStream::open_as(&stop_url, None, &json!({conversation_key: c})).await;
        assert_eq!(stopped.status, 200, "{:?}", stopped.json);
        assert_eq!(
            stopped.json,
            Some(json!({conversation_key: conversation, message_key: task, "status": "canceled"}))
        );
        events.extend(stream.named_until_closed(WAIT).await);
        check(&events, wire, &conversation);
        assert_eq!(states(&events).last().map(String::as_str), Some("canceled"));
        assert_eq!(events.last().unwrap().0, "done");
        let again = SseStream::open_as(&stop_url, None, &json!({conversation_key: c})).await;
        assert_eq!(again.status, 404, "{:?}", again.json);
        assert_eq!(
            again.json.as_ref().map(|j| j["error"]["code"].clone()),
            Some(json!("CONVERSATION_IDLE"))
        );

        // A waiting form: stopped, its follower told the form is withdrawn.
        let c = wire.conversation();
        let conversation = text_of_id(&c);
        door.chat(&c, "form a trip").await;
        let mut follow = door.events(&conversation).await;
        let mut events = vec![
            follow.next_named(WAIT).await.expect("form"),
            follow.next_named(WAIT).await.expect("suspended"),
        ];
        let stopped = SseStream::open_as(&stop_url, None, &json!({conversation_key: c})).await;
        assert_eq!(stopped.status, 200, "{:?}", stopped.json);
        events.extend(follow.named_until_closed(WAIT).await);
        assert_eq!(
            only(&events, "interaction/form_cancel")["reason"],
            "canceled"
        );
        door.refused(
            &c,
            "trip",
            json!({"city": "Oslo", "days": 3}),
            "FORM_CLOSED",
        )
        .await;
    }

    // A body that names no conversation: 400 naming the field, nothing canceled.
    let stop_url = format!("{base}/agents/concierge/aiflowy/chat/stop");
    for body in [json!({}), json!({"conversation_id": true}), json!([1])] {
        let refused = SseStream::open_as(&stop_url, None, &body).await;
        assert_eq!(refused.status, 400, "{body}: {:?}", refused.json);
        let field = refused.json.as_ref().map(|j| j["error"]["field"].clone());
        assert!(
            matches!(
                field.as_ref().and_then(Value::as_str),
                Some("conversation_id" | "")
            ),
            "{body}: {field:?}"
        );
    }

    // Another Leader's conversation of the same id is not theirs to stop.
    let acme = create_tenant(base, "acme", json!({})).await;
    let keys = publish_keyed(base, &acme, "concierge", "keyed", &[LEADER, OTHER_LEADER]).await;
    let keyed = Door::new(base, "keyed", Wire::Seed);
    let c = Wire::Seed.conversation();
    keyed
        .as_leader(Some(&keys[0]))
        .chat(&c, "form a trip")
        .await;
    let stop_url = format!("{base}/agents/keyed/aiflowy/chat/stop");
    let theirs =
        SseStream::open_as(&stop_url, Some(&keys[1]), &json!({"conversation_id": c})).await;
    assert_eq!(theirs.status, 404, "{:?}", theirs.json);
    let mine = SseStream::open_as(&stop_url, Some(&keys[0]), &json!({"conversation_id": c})).await;
    assert_eq!(mine.status, 200, "{:?}", mine.json);
}
