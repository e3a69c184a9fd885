//! Misbehaviour with the talking contract (`aiphost:partner@0.2.0`): reports the host must refuse
//! (a huge or invalid form schema, tool arguments that are not a JSON object, text and tool
//! activity after the task came to rest or ended) and a flood of text deltas past the task's
//! activity cap.
//!
//! Each command reports what the host answered as the `data` item of a product `report`, so a test
//! can assert the refusals. Where the SDK's typed calls cannot carry malformed data (a form's schema
//! and tool arguments are `serde_json::Value`s there), the raw generated bindings send it.

use std::time::Instant;

use aiphost_sdk::bindings::aiphost::partner::task as raw;
use aiphost_sdk::bindings::aiphost::partner::types as wit;
use aiphost_sdk::serde_json::{Map, Value, json};
use aiphost_sdk::{DataItem, Outcome, Product, ReportError, State, Task, log};

/// The agent-kv key under which `after-end` leaves the refusals of task `task`.
fn after_end_key(task: &str) -> String {
    format!("after-end/{task}")
}

/// The agent-kv key under which the completion hook leaves its refusal for task `task`.
fn completed_key(task: &str) -> String {
    format!("completed/{task}")
}

/// The SDK's error for a refusal the raw bindings returned (the two enums mirror the WIT's).
fn from_raw(answer: Result<(), wit::ReportError>) -> Result<(), ReportError> {
    answer.map_err(|e| match e {
        wit::ReportError::InvalidTransition(m) => ReportError::InvalidTransition(m),
        wit::ReportError::TaskEnded => ReportError::TaskEnded,
        wit::ReportError::ProductsTooLarge(n) => ReportError::ProductsTooLarge(n),
        wit::ReportError::InvalidData(m) => ReportError::InvalidData(m),
        wit::ReportError::LimitReached(m) => ReportError::LimitReached(m),
    })
}

/// The WIT name of a refusal's kind.
fn kind(err: &ReportError) -> &'static str {
    match err {
        ReportError::InvalidTransition(_) => "invalid-transition",
        ReportError::TaskEnded => "task-ended",
        ReportError::ProductsTooLarge(_) => "products-too-large",
        ReportError::InvalidData(_) => "invalid-data",
        ReportError::LimitReached(_) => "limit-reached",
    }
}

/// What the host answered, as JSON: `{"kind": "accepted"}` or the refusal's kind and message.
fn answered(answer: &Result<(), ReportError>) -> Value {
    match answer {
        Ok(()) => json!({"kind": "accepted"}),
        Err(e) => {
            let message = match e {
                ReportError::InvalidTransition(m)
                | ReportError::InvalidData(m)
                | ReportError::LimitReached(m) => Value::from(m.as_str()),
                ReportError::ProductsTooLarge(n) => Value::from(*n),
                ReportError::TaskEnded => Value::Null,
            };
            json!({"kind": kind(e), "message": message})
        }
    }
}

/// The work is done: the product `report` holds `what` (one `data` item).
fn report(command: &str, what: Value) -> Outcome {
    Outcome::Done(vec![
        Product::new("report")
            .named(command)
            .with_item(DataItem::data(what)),
    ])
}

/// Ask with a form whose schema is `schema`, through the raw bindings (the SDK's `Form` takes a
/// parsed value, so it cannot send text that is not JSON).
fn ask_raw(request_id: &str, schema: String) -> Result<(), ReportError> {
    let request = wit::InputRequest {
        request_id: request_id.to_owned(),
        title: "Hostile form".to_owned(),
        description: None,
        schema,
    };
    from_raw(raw::ask(&request, &[]))
}

/// `schema-huge`: a form whose schema is 10 MiB of JSON (a valid schema of an object, only far
/// over the 64 KiB the contract allows).
pub fn schema_huge() -> Outcome {
    const FILL: usize = 10 << 20;
    let (head, tail) = (r#"{"type":"object","description":""#, r#""}"#);
    // Built in one allocation: the instance has 32 MiB, and a copy would double the schema.
    let mut schema = String::with_capacity(head.len() + FILL + tail.len());
    schema.push_str(head);
    schema.extend(std::iter::repeat_n('x', FILL));
    schema.push_str(tail);
    let bytes = schema.len();
    let answer = ask_raw("huge", schema);
    report(
        "schema-huge",
        json!({"bytes": bytes, "ask": answered(&answer)}),
    )
}

/// `schema-bad`: forms whose schemas are not JSON Schemas of an object, each refused on its own.
pub fn schema_bad() -> Outcome {
    let mut deep = json!({"type": "string"});
    for _ in 0..20 {
        deep = json!({"type": "object", "properties": {"k": deep}});
    }
    let cases = [
        (
            "invalidKeyword",
            json!({"type": "object", "properties": {"a": {"type": 12}}}).to_string(),
        ),
        (
            "arrayType",
            json!({"type": "array", "items": {"type": "string"}}).to_string(),
        ),
        ("untyped", json!({"properties": {"a": {}}}).to_string()),
        ("topLevelArray", json!([{"type": "object"}]).to_string()),
        ("notJson", r#"{"type": "object", "properties": "#.to_owned()),
        ("tooDeep", deep.to_string()),
    ];
    let mut answers = Map::new();
    for (case, schema) in cases {
        answers.insert(case.to_owned(), answered(&ask_raw(case, schema)));
    }
    report("schema-bad", Value::Object(answers))
}

/// `args-not-json`: tool calls whose arguments are not a JSON object, and a tool result that says
/// it is JSON but is not, through the raw bindings; one well-formed call shows the task accepted
/// tool activity all along.
pub fn args_not_json() -> Outcome {
    let call = |id: &str, arguments: &str| {
        from_raw(raw::report_tool_call(&wit::ToolCall {
            call_id: id.to_owned(),
            name: "lookup".to_owned(),
            arguments: arguments.to_owned(),
        }))
    };
    let not_json = call("bad-1", "lookup(query = 'Oslo')");
    let array = call("bad-2", r#"["Oslo", 3]"#);
    let string = call("bad-3", r#""Oslo""#);
    let result_not_json = from_raw(raw::report_tool_result(&wit::ToolResult {
        call_id: "bad-1".to_owned(),
        output: wit::ToolOutput::Json("{found: Oslo}".to_owned()),
        is_error: false,
    }));
    let valid = call("good-1", r#"{"query": "Oslo"}"#);
    report(
        "args-not-json",
        json!({
            "notJson": answered(&not_json),
            "array": answered(&array),
            "string": answered(&string),
            "resultNotJson": answered(&result_not_json),
            "valid": answered(&valid),
        }),
    )
}

/// `deltas:N` (stop at the first refusal) and `hammer:N` (keep calling after refusals): N text
/// deltas of one byte each into the answer, as fast as the host takes them. Delta `i` is the
/// letter `a + i % 26`, so the answer's text says which deltas were kept.
pub fn deltas(task: &mut Task, command: &str, count: &str, keep_going: bool) -> Outcome {
    let Ok(count) = count.trim().parse::<u64>() else {
        return Outcome::Fail(format!("{command}: {count:?} is not a number"));
    };
    let letters: Vec<String> = ('a'..='z').map(String::from).collect();
    let started = Instant::now();
    let (mut accepted, mut refused, mut accepted_after_refusal) = (0u64, 0u64, 0u64);
    let mut refusals = Map::new();
    let mut first_refusal = Value::Null;
    for i in 0..count {
        let letter = &letters[(i % 26) as usize];
        match task.say(letter) {
            Ok(()) => {
                accepted += 1;
                if refused > 0 {
                    accepted_after_refusal += 1;
                }
            }
            Err(e) => {
                refused += 1;
                if first_refusal.is_null() {
                    first_refusal = json!({"at": i, "answer": answered(&Err(e.clone()))});
                }
                let seen = refusals.entry(kind(&e)).or_insert(json!(0));
                *seen = json!(seen.as_u64().unwrap_or(0) + 1);
                if !keep_going || e.ends_task() {
                    break;
                }
            }
        }
    }
    let ms = started.elapsed().as_millis() as u64;
    log::with_fields(
        log::Level::Info,
        "hostile partner streamed deltas",
        &[
            ("accepted", &accepted.to_string()),
            ("refused", &refused.to_string()),
            ("ms", &ms.to_string()),
        ],
    );
    report(
        command,
        json!({
            "asked": count,
            "accepted": accepted,
            "refused": refused,
            "acceptedAfterRefusal": accepted_after_refusal,
            "refusals": refusals,
            "firstRefusal": first_refusal,
            "ms": ms,
        }),
    )
}

/// `after-end`: rests the task in awaiting-completion, then streams a delta, reports a tool call
/// and usage regardless. The host's answers go to the agent kv (the task rests: no product can
/// carry them), where `kv-read:after-end/TASK` finds them; the completion hook then tries once more
/// ([`completed`]).
pub fn after_end(task: &mut Task) -> Outcome {
    if let Err(e) = task.set_status(
        State::AwaitingCompletion,
        vec![DataItem::text("resting; reports follow anyway")],
    ) {
        return Outcome::Abort(format!("after-end could not rest the task: {e}"));
    }
    let delta = task.say("late text");
    let call = task.tool_call("late-1", "lookup", &json!({"query": "late"}));
    let usage = task.usage(aiphost_sdk::Usage {
        model: Some("hostile".into()),
        ..Default::default()
    });
    let answers = json!({
        "delta": answered(&delta),
        "toolCall": answered(&call),
        "usage": answered(&usage),
    });
    if let Err(e) = task
        .agent_kv()
        .set_json(&after_end_key(task.id()), &answers)
    {
        return Outcome::Abort(format!("after-end could not keep its answers: {e}"));
    }
    // Nothing is left to report (the task rests): return an error, which the host only logs for a
    // task at rest.
    Outcome::Abort("after-end: the task rests; nothing more to report".into())
}

/// The completion hook of a task that `after-end` rested: a delta on the ended task, through the
/// raw bindings (the hook's `Task` is read-only). The answer goes to the agent kv under
/// `completed/TASK`.
pub fn completed(task: &Task) {
    let kv = task.agent_kv();
    if !matches!(kv.get(&after_end_key(task.id())), Ok(Some(_))) {
        return;
    }
    let delta = from_raw(raw::stream_text(&wit::TextDelta {
        product_id: "answer".to_owned(),
        channel: wit::TextChannel::Answer,
        text: "after the end".to_owned(),
        last: false,
    }));
    let answer = answered(&delta);
    log::with_fields(
        log::Level::Info,
        "hostile partner streamed after its task ended",
        &[("answer", &answer.to_string())],
    );
    if let Err(e) = kv.set_json(&completed_key(task.id()), &json!({"delta": answer})) {
        log::warn(&format!("could not keep the completion hook's answer: {e}"));
    }
}

/// `kv-read:KEY`: the agent-kv entry `KEY` (JSON, or null when there is none) as the report.
pub fn kv_read(task: &Task, key: &str) -> Outcome {
    match task.agent_kv().get_json::<Value>(key) {
        Ok(value) => report("kv-read", json!({"key": key, "value": value})),
        Err(e) => Outcome::Fail(format!("kv-read:{key}: {e}")),
    }
}
