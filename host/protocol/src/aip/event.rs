//! Task events as the streaming style sends them (spec 6.2): the model's logged [`TaskEvent`]s
//! rendered in the dialect of whoever streams them. Rendering is deterministic (ids and times
//! come from the logged event), so every stream of a task sees identical events.

use super::dialect::Dialect;
use aiphost_model::{EventKind, Task, TaskEvent};
use serde_json::{Map, Value, json};

/// The fixed facts of a task that events are rendered with.
#[derive(Clone, Debug, PartialEq)]
pub struct EventContext<'a> {
    /// The task's id as its Leader knows it.
    pub task_id: &'a str,
    /// The task's session, if any.
    pub session_id: Option<&'a str>,
    /// The task's group, if any.
    pub group_id: Option<&'a str>,
    /// The AIC of the partner that runs the task (a v2 event's `senderId`).
    pub partner_aic: &'a str,
}

impl<'a> EventContext<'a> {
    /// The context of `task`, run by the partner `partner_aic`.
    pub fn of(task: &'a Task, partner_aic: &'a str) -> Self {
        EventContext {
            task_id: &task.id,
            session_id: task.session_id.as_deref(),
            group_id: task.group_id.as_deref(),
            partner_aic,
        }
    }
}

/// The stream result `{eventSeq, eventData}` of `event` in `dialect`.
pub fn render_event(event: &TaskEvent, ctx: &EventContext<'_>, dialect: Dialect) -> Value {
    let mut data = Map::new();
    let v2 = dialect == Dialect::V2;
    let (v1_type, v2_type, prefix) = match &event.kind {
        EventKind::Created { .. } => ("task", "task-result", "result"),
        EventKind::Status { .. } => ("status-update", "task-status-update", "status"),
        EventKind::Chunk { .. } => ("product-chunk", "product-chunk", "chunk"),
        // AIP has no activity event: a status update that says `working` again, whose item is
        // the activity (marked with its `aiphost.kind`); the task's status does not change.
        EventKind::Activity { .. } => ("status-update", "task-status-update", "activity"),
    };
    data.insert("type".into(), json!(if v2 { v2_type } else { v1_type }));
    if v2 {
        // v2 events are Messages: deterministic ids keep every stream of the task identical.
        data.insert(
            "id".into(),
            json!(format!("{prefix}-{}-{}", ctx.task_id, event.seq)),
        );
        data.insert("sentAt".into(), json!(event.at));
        data.insert("senderRole".into(), json!("partner"));
        data.insert("senderId".into(), json!(ctx.partner_aic));
        data.insert("taskId".into(), json!(ctx.task_id));
    } else if matches!(event.kind, EventKind::Created { .. }) {
        data.insert("id".into(), json!(ctx.task_id));
    } else {
        data.insert("taskId".into(), json!(ctx.task_id));
    }
    match &event.kind {
        EventKind::Created { status, .. } => {
            data.insert("status".into(), json!(status));
            data.insert("products".into(), json!([]));
        }
        EventKind::Status { status } => {
            data.insert("status".into(), json!(status));
        }
        EventKind::Activity { activity } => {
            data.insert("status".into(), json!(activity.as_status(event.at)));
        }
        EventKind::Chunk { chunk } => {
            data.insert("product".into(), json!(chunk.product));
            data.insert("append".into(), json!(chunk.append));
            data.insert("lastChunk".into(), json!(chunk.last_chunk));
        }
    }
    if let Some(group) = ctx.group_id {
        data.insert("groupId".into(), json!(group));
    }
    if let Some(session) = ctx.session_id {
        data.insert("sessionId".into(), json!(session));
    }
    json!({"eventSeq": event.seq, "eventData": data})
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{DataItem, Product, ProductChunk, TaskState, TaskStatus, Timestamp};

    fn ctx() -> EventContext<'static> {
        EventContext {
            task_id: "task-5678",
            session_id: Some("session-91011"),
            group_id: None,
            partner_aic: "1.2.3",
        }
    }

    fn at() -> Timestamp {
        Timestamp::parse("2025-09-01T12:00:00+08:00").unwrap()
    }

    fn status(state: TaskState) -> TaskStatus {
        TaskStatus {
            state,
            state_changed_at: at(),
            data_items: vec![],
        }
    }

    #[test]
    fn v1_events_look_like_the_spec_example() {
        let created = TaskEvent {
            seq: 1,
            at: at(),
            kind: EventKind::Created {
                status: status(TaskState::Working),
                plain_reply: false,
            },
        };
        assert_eq!(
            render_event(&created, &ctx(), Dialect::V1),
            json!({"eventSeq": 1, "eventData": {"type": "task", "id": "task-5678",
                "status": {"state": "working", "stateChangedAt": "2025-09-01T12:00:00+08:00"},
                "products": [], "sessionId": "session-91011"}})
        );
        let chunk = TaskEvent {
            seq: 2,
            at: at(),
            kind: EventKind::Chunk {
                chunk: ProductChunk {
                    product: Product {
                        id: "product-1".into(),
                        name: None,
                        description: None,
                        data_items: vec![DataItem::text("part 1")],
                    },
                    append: false,
                    last_chunk: false,
                },
            },
        };
        let v = render_event(&chunk, &ctx(), Dialect::V1);
        assert_eq!(v["eventData"]["type"], "product-chunk");
        assert_eq!(v["eventData"]["taskId"], "task-5678");
        assert_eq!(v["eventData"]["append"], false);
        assert_eq!(v["eventData"]["lastChunk"], false);
        let update = TaskEvent {
            seq: 4,
            at: at(),
            kind: EventKind::Status {
                status: status(TaskState::AwaitingCompletion),
            },
        };
        let v = render_event(&update, &ctx(), Dialect::V1);
        assert_eq!(v["eventData"]["type"], "status-update");
        assert!(!update.is_terminal());
    }

    #[test]
    fn v2_events_are_messages_and_deterministic() {
        let update = TaskEvent {
            seq: 7,
            at: at(),
            kind: EventKind::Status {
                status: status(TaskState::Failed),
            },
        };
        let a = render_event(&update, &ctx(), Dialect::V2);
        let b = render_event(&update, &ctx(), Dialect::V2);
        assert_eq!(a, b, "every stream sees the same event");
        let d = &a["eventData"];
        assert_eq!(d["type"], "task-status-update");
        assert_eq!(d["senderRole"], "partner");
        assert_eq!(d["senderId"], "1.2.3");
        assert_eq!(d["taskId"], "task-5678");
        assert_eq!(d["id"], "status-task-5678-7");
        assert!(update.is_terminal());
    }
}
