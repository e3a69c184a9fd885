//! A task's logged events as A2A `StreamResponse`s (spec 3.2.3): the task's creation as a
//! `task`, each later status as a `statusUpdate`, each product chunk as an `artifactUpdate`.

use super::task::{render_artifact, render_status};
use crate::event::{EventKind, TaskEvent};
use crate::model::TaskState;
use serde_json::{Map, Value, json};

/// The fixed facts of a task that its events are rendered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamContext<'a> {
    /// The task's id.
    pub task_id: &'a str,
    /// Its context (the AIP session).
    pub context_id: Option<&'a str>,
    /// The host completes it as soon as the partner has a result: its awaiting-completion
    /// status is not an A2A state and is not sent (the completed status follows it at once).
    pub completes_on_result: bool,
}

/// The `StreamResponse` of `event`, or `None` for an event A2A has no counterpart of.
pub fn render_event(event: &TaskEvent, ctx: &StreamContext<'_>) -> Option<Value> {
    let mut ids = Map::new();
    ids.insert("taskId".into(), json!(ctx.task_id));
    // `contextId` is required in update events: an AIP task without a session has "".
    ids.insert(
        "contextId".into(),
        json!(ctx.context_id.unwrap_or_default()),
    );
    Some(match &event.kind {
        EventKind::Created { status } => {
            let mut task = Map::new();
            task.insert("id".into(), json!(ctx.task_id));
            if let Some(c) = ctx.context_id {
                task.insert("contextId".into(), json!(c));
            }
            task.insert(
                "status".into(),
                render_status(ctx.task_id, ctx.context_id, status),
            );
            json!({"task": task})
        }
        EventKind::Status { status } => {
            if ctx.completes_on_result && status.state == TaskState::AwaitingCompletion {
                return None;
            }
            ids.insert(
                "status".into(),
                render_status(ctx.task_id, ctx.context_id, status),
            );
            json!({"statusUpdate": ids})
        }
        EventKind::Chunk { chunk } => {
            ids.insert("artifact".into(), render_artifact(&chunk.product));
            if chunk.append {
                ids.insert("append".into(), json!(true));
            }
            if chunk.last_chunk {
                ids.insert("lastChunk".into(), json!(true));
            }
            json!({"artifactUpdate": ids})
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DataItem, Product, ProductChunk, TaskStatus};
    use crate::time::Timestamp;

    fn event(kind: EventKind) -> TaskEvent {
        TaskEvent {
            seq: 1,
            at: Timestamp::now(),
            kind,
        }
    }

    #[test]
    fn creation_status_and_chunks_become_stream_responses() {
        let ctx = StreamContext {
            task_id: "t",
            context_id: Some("c"),
            completes_on_result: true,
        };
        let created = render_event(
            &event(EventKind::Created {
                status: TaskStatus::now(TaskState::Accepted, vec![]),
            }),
            &ctx,
        )
        .unwrap();
        assert_eq!(created["task"]["id"], "t");
        assert_eq!(created["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
        let chunk = render_event(
            &event(EventKind::Chunk {
                chunk: ProductChunk {
                    product: Product {
                        id: "p".into(),
                        name: None,
                        description: None,
                        data_items: vec![DataItem::text("a")],
                    },
                    append: true,
                    last_chunk: false,
                },
            }),
            &ctx,
        )
        .unwrap();
        assert_eq!(chunk["artifactUpdate"]["artifact"]["artifactId"], "p");
        assert_eq!(chunk["artifactUpdate"]["append"], true);
        assert!(chunk["artifactUpdate"].get("lastChunk").is_none());
        let resting = event(EventKind::Status {
            status: TaskStatus::now(TaskState::AwaitingCompletion, vec![]),
        });
        assert_eq!(render_event(&resting, &ctx), None);
        let aip = StreamContext {
            completes_on_result: false,
            ..ctx
        };
        let update = render_event(&resting, &aip).unwrap();
        assert_eq!(
            update["statusUpdate"]["status"]["state"],
            "TASK_STATE_INPUT_REQUIRED"
        );
        assert_eq!(update["statusUpdate"]["contextId"], "c");
    }
}
