//! The renderer against the reference: the Agent API events [`Turn`] makes of the echo partner's
//! task, compared field by field with what `AgentApp` (agentscope-runtime 1.1.6.post2,
//! `bench/python/agentscope_echo_app.py`) streamed for the same echo
//! (`tests/fixtures/agent-api/agentapp-echo.sse`), ids and times masked. Every difference is
//! listed, with why, so that one that creeps in (or one that is mended) fails here.

use super::render::Turn;
use aiphost_model::event::EventKind;
use aiphost_model::{DataItem, Product, ProductChunk, TaskEvent, TaskState, TaskStatus, Timestamp};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// AgentApp's echo of "hello 1" in session `s-1`.
const CAPTURE: &str = include_str!("../../../../tests/fixtures/agent-api/agentapp-echo.sse");

/// Where our echo differs from AgentApp's, and why (`path: ours, AgentApp's`).
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // Every response and message names its task (AgentApp's messages carry an empty metadata).
    (
        "[0].metadata: {\"aiphost.taskId\":\"<task>\"}, absent",
        "the task, for AIP and A2A",
    ),
    (
        "[1].metadata: {\"aiphost.taskId\":\"<task>\"}, absent",
        "the task, for AIP and A2A",
    ),
    (
        "[2].metadata.aiphost.taskId: \"<task>\", absent",
        "the task, for AIP and A2A",
    ),
    (
        "[4].metadata.aiphost.taskId: \"<task>\", absent",
        "the task, for AIP and A2A",
    ),
    (
        "[5].metadata: {\"aiphost.taskId\":\"<task>\"}, absent",
        "the task, for AIP and A2A",
    ),
    (
        "[5].output[0].metadata.aiphost.taskId: \"<task>\", absent",
        "the task, for AIP and A2A",
    ),
    // The echo partner returns its product whole, so its text is sent as a completed content;
    // AgentApp's adapter sends a text `Msg` as one delta, the message's completion closing it.
    ("[3].delta: false, true", "a whole item is not a delta"),
    (
        "[3].status: \"completed\", \"in_progress\"",
        "a whole item is not a delta",
    ),
    // A message's contents say they are completed (AgentApp's stored copies leave both null).
    (
        "[4].content[0].delta: false, absent",
        "contents of a completed message",
    ),
    (
        "[4].content[0].status: \"completed\", absent",
        "contents of a completed message",
    ),
    (
        "[5].output[0].content[0].delta: false, absent",
        "contents of a completed message",
    ),
    (
        "[5].output[0].content[0].status: \"completed\", absent",
        "contents of a completed message",
    ),
    // AgentApp's output holds the very message events, their numbers included; ours are the
    // messages, numbered only as events.
    (
        "[5].output[0].sequence_number: absent, 4",
        "output messages are not events",
    ),
];

/// The events of one SSE body (`data: ` lines; comments and blank lines skipped).
fn events_of(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("a JSON event"))
        .collect()
}

/// `value` without its null fields (AgentApp sends them; a missing field reads the same).
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// `value` with each id masked by its kind and first appearance (`<response>`, `<msg1>`,
/// `<task>`) and each time as `<time>`.
fn masked(value: Value, ids: &mut HashMap<String, String>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("created_at" | "completed_at", Value::Number(_)) => "<time>".into(),
                        ("id" | "msg_id" | "aiphost.taskId", Value::String(id)) => {
                            let kind = if id.starts_with("response_") {
                                "response".to_string()
                            } else if id.starts_with("msg_") {
                                let n = ids.keys().filter(|i| i.starts_with("msg_")).count();
                                format!("msg{}", n + 1)
                            } else {
                                "task".to_string()
                            };
                            let mask = ids.entry(id).or_insert_with(|| format!("<{kind}>"));
                            Value::String(mask.clone())
                        }
                        (_, v) => masked(v, ids),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| masked(v, ids)).collect()),
        other => other,
    }
}

/// Every difference of `ours` from `theirs` at `path`, as `path: ours, theirs`.
fn differences(path: &str, ours: Option<&Value>, theirs: Option<&Value>, out: &mut Vec<String>) {
    let show = |v: Option<&Value>| v.map_or("absent".to_string(), Value::to_string);
    match (ours, theirs) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                differences(&format!("{path}.{k}"), a.get(k), b.get(k), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), Some(x), Some(y), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: {}, {}", show(a), show(b))),
    }
}

/// The echo partner's task for "hello 1" as the engine records it (the events an AIP
/// `re-stream` of such a task shows): accepted, working, its product `echo` in one last chunk,
/// awaiting-completion, completed.
fn echo_task() -> Vec<EventKind> {
    let status = |state| EventKind::Status {
        status: TaskStatus::now(state, vec![]),
    };
    vec![
        EventKind::Created {
            status: TaskStatus::now(TaskState::Accepted, vec![]),
            plain_reply: false,
        },
        status(TaskState::Working),
        EventKind::Chunk {
            chunk: ProductChunk {
                product: Product {
                    id: "echo".into(),
                    name: Some("echo".into()),
                    description: None,
                    data_items: vec![DataItem::text("hello 1")],
                },
                append: false,
                last_chunk: true,
            },
        },
        status(TaskState::AwaitingCompletion),
        status(TaskState::Completed),
    ]
}

#[test]
fn the_echo_is_agentapps_but_for_the_differences_listed() {
    let theirs: Vec<Value> = events_of(CAPTURE).into_iter().map(without_nulls).collect();
    let mut turn = Turn::new("response_1", "s-1", "task-1", 1_795_876_933);
    let mut ours = turn.begin();
    for (seq, kind) in echo_task().into_iter().enumerate() {
        let (events, _) = turn.event(&TaskEvent {
            seq: seq as u64 + 1,
            at: Timestamp::now(),
            kind,
        });
        ours.extend(events);
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "ours: {ours:#?}\nAgentApp's: {theirs:#?}"
    );
    let (mut our_ids, mut their_ids) = (HashMap::new(), HashMap::new());
    let mut found = Vec::new();
    for (i, (a, b)) in ours.into_iter().zip(theirs).enumerate() {
        let (a, b) = (masked(a, &mut our_ids), masked(b, &mut their_ids));
        differences(&format!("[{i}]"), Some(&a), Some(&b), &mut found);
    }
    let mut known: Vec<&str> = KNOWN_DIFFERENCES.iter().map(|(d, _)| *d).collect();
    known.sort_unstable();
    found.sort_unstable();
    assert_eq!(found, known, "differences from AgentApp's echo");
}
