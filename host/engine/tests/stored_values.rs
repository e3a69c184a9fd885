//! What the store is handed, it can read back (issue 29 item 1): for the stored types that carry
//! a client's or a partner's free-form JSON — a task record, a logged event, a Leader's command —
//! any value, deep or wide, with any strings and numbers, either encodes and reads back equal, or
//! is refused as too deep before anything is stored. Never stored unreadable.

use aiphost_engine::task::TaskRecord;
use aiphost_model::{
    CommandKind, DataItem, EventKind, JsonObject, LeaderCommand, TaskEvent, TaskState, TaskStatus,
    Timestamp,
};
use aiphost_store::{Encoded, StoreError};
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A JSON scalar: every kind, strings with escapes, quotes, brackets and any Unicode.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        "[\\[\\]{}\"\\\\\u{0}-\u{1f}a-z\u{80}-\u{10ffff}]{0,12}".prop_map(Value::from),
    ]
}

/// One level of a nested value: an object (under `key`) or an array, with siblings beside the
/// level below.
#[derive(Clone, Debug)]
struct Level {
    object: bool,
    key: String,
    siblings: Vec<Value>,
}

fn level() -> impl Strategy<Value = Level> {
    (
        any::<bool>(),
        "[a-z\"\\\\\\[\\]{}]{0,6}",
        prop::collection::vec(scalar(), 0..3),
    )
        .prop_map(|(object, key, siblings)| Level {
            object,
            key,
            siblings,
        })
}

/// A value nested 0..=160 levels deep (the store takes 127), each level with a few siblings,
/// inside a wide array of up to 200 scalars.
fn value() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(level(), 0..=160),
        scalar(),
        prop::collection::vec(scalar(), 0..200),
    )
        .prop_map(|(levels, bottom, wide)| {
            let mut v = bottom;
            for level in levels.into_iter().rev() {
                v = if level.object {
                    let mut map = Map::new();
                    for (i, sibling) in level.siblings.into_iter().enumerate() {
                        map.insert(format!("s{i}"), sibling);
                    }
                    map.insert(level.key, v);
                    Value::Object(map)
                } else {
                    let mut list = level.siblings;
                    list.push(v);
                    Value::Array(list)
                };
            }
            let mut wide = wide;
            wide.push(v);
            Value::Array(wide)
        })
}

/// Encoded, it reads back equal; or it was refused as too deep.
fn reads_back<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    stored: &T,
) -> Result<(), TestCaseError> {
    match Encoded::of(stored) {
        Ok(encoded) => {
            let back: T = encoded
                .decode()
                .map_err(|e| TestCaseError::fail(format!("stored but unreadable: {e}")))?;
            prop_assert_eq!(&back, stored);
        }
        Err(StoreError::TooDeep { depth, limit }) => prop_assert!(depth > limit),
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "refused for another reason: {e}"
            )));
        }
    }
    Ok(())
}

/// A data item holding `value` (its `data` is an object) and the same in its metadata.
fn data(value: Value) -> DataItem {
    let mut object = JsonObject::new();
    object.insert("v".into(), value);
    DataItem::Data {
        data: object.clone(),
        metadata: Some(object),
    }
}

proptest! {
    // Failures are printed with their minimal input (no regression files are kept).
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_task_record_reads_back(value in value()) {
        let mut record = TaskRecord::failed_unreadable("t-1", Some("L"), 3, "why".into());
        record.task.status = TaskStatus::now(TaskState::AwaitingInput, vec![data(value)]);
        reads_back(&record)?;
    }

    #[test]
    fn an_event_reads_back(value in value()) {
        let event = TaskEvent {
            seq: 7,
            at: Timestamp::now(),
            kind: EventKind::Status {
                status: TaskStatus::now(TaskState::Working, vec![data(value)]),
            },
        };
        reads_back(&event)?;
    }

    #[test]
    fn a_leaders_command_reads_back(value in value(), param in value()) {
        let mut params = JsonObject::new();
        params.insert("x".into(), param);
        let command = LeaderCommand {
            id: "m-1".into(),
            sent_at: Timestamp::now(),
            sender_id: "L".into(),
            command: CommandKind::Start,
            params,
            data_items: vec![data(value)],
            task_id: Some("t-1".into()),
            session_id: None,
            group_id: None,
            mentions: None,
        };
        reads_back(&command)?;
    }
}
