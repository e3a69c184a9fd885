//! A task's logged events as A2A `StreamResponse`s (spec 3.2.3): the task's creation as a
//! `task`, each later status as a `statusUpdate`, each product chunk as an `artifactUpdate`;
//! and [`SentArtifacts`], which keeps a stream's `append` flags true to what that stream sent.

use super::task::{render_artifact, render_status};
use aiphost_model::TaskState;
use aiphost_model::activity::KIND;
use aiphost_model::{EventKind, TaskEvent};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

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
///
/// A chunk's `append` is the partner's (it extends the product as the task stores it); whether
/// a client may append depends on what its stream sent before, so a stream passes everything
/// it sends through its [`SentArtifacts`].
pub fn render_event(event: &TaskEvent, ctx: &StreamContext<'_>) -> Option<Value> {
    let mut ids = Map::new();
    ids.insert("taskId".into(), json!(ctx.task_id));
    // `contextId` is required in update events: an AIP task without a session has "".
    ids.insert(
        "contextId".into(),
        json!(ctx.context_id.unwrap_or_default()),
    );
    Some(match &event.kind {
        EventKind::Created { status, .. } => {
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
        EventKind::Activity { activity } => {
            // A `working` status update whose message is the activity (a DataPart, marked with
            // its `aiphost.kind`); its message id is the event's, so two in one millisecond
            // differ.
            let mut status =
                render_status(ctx.task_id, ctx.context_id, &activity.as_status(event.at));
            if let Some(message) = status.get_mut("message").and_then(Value::as_object_mut) {
                message.insert(
                    "messageId".into(),
                    json!(format!("{}-activity-{}", ctx.task_id, event.seq)),
                );
                message.insert("metadata".into(), json!({KIND: activity.kind()}));
            }
            ids.insert("status".into(), status);
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

/// The artifacts one stream has sent its client, so that its `artifactUpdate`s say `append`
/// only where A2A allows it (spec 4.2.2: append "to a previously sent artifact with the same
/// ID"; the official SDK's client refuses an append to an artifact it has not got).
///
/// An AIP chunk's `append` extends the product *as stored*: the first chunk a partner emits may
/// well say append (there is nothing to extend yet), and a stream that joins a task midway
/// (`SubscribeToTask`, a continue's stream) has not sent the chunks before it joined. Both are
/// settled by what the stream itself has sent, the task it begins with included: a stream that
/// begins with a task whose artifacts hold a product's earlier chunks goes on appending to it
/// (the client has those chunks, and the host's product is exactly them plus what follows),
/// while an artifact it has sent nothing of arrives whole as far as the task has it, without
/// `append`. The partner's chunk without `append` replaces the product; so does the update.
#[derive(Clone, Debug, Default)]
pub struct SentArtifacts {
    ids: HashSet<String>,
}

impl SentArtifacts {
    /// Settle `response`, a `StreamResponse` about to be sent on this stream: an
    /// `artifactUpdate` of an artifact not sent before loses its `append`; the artifacts it
    /// (or a `task`) carries count as sent from now on.
    pub fn settle(&mut self, response: &mut Value) {
        if let Some(artifacts) = response
            .get("task")
            .and_then(|t| t.get("artifacts"))
            .and_then(Value::as_array)
        {
            for artifact in artifacts {
                if let Some(id) = artifact.get("artifactId").and_then(Value::as_str) {
                    self.ids.insert(id.to_string());
                }
            }
        }
        let Some(update) = response
            .get_mut("artifactUpdate")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        let Some(id) = update
            .get("artifact")
            .and_then(|a| a.get("artifactId"))
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        if !self.ids.contains(&id) {
            update.remove("append");
        }
        self.ids.insert(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::Timestamp;
    use aiphost_model::{DataItem, Product, ProductChunk, TaskStatus};

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
                plain_reply: false,
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

    fn chunk(id: &str, text: &str, append: bool) -> TaskEvent {
        event(EventKind::Chunk {
            chunk: ProductChunk {
                product: Product {
                    id: id.into(),
                    name: None,
                    description: None,
                    data_items: vec![DataItem::text(text)],
                },
                append,
                last_chunk: false,
            },
        })
    }

    /// What `events` become on one stream that began with `first`.
    fn stream(first: Value, events: &[TaskEvent]) -> Vec<Value> {
        let ctx = StreamContext {
            task_id: "t",
            context_id: Some("c"),
            completes_on_result: true,
        };
        let mut sent = SentArtifacts::default();
        std::iter::once(first)
            .chain(events.iter().filter_map(|e| render_event(e, &ctx)))
            .map(|mut response| {
                sent.settle(&mut response);
                response
            })
            .collect()
    }

    fn appends(responses: &[Value]) -> Vec<Option<bool>> {
        responses
            .iter()
            .filter_map(|r| r.get("artifactUpdate"))
            .map(|u| u.get("append").and_then(Value::as_bool))
            .collect()
    }

    #[test]
    fn an_artifacts_first_update_on_a_stream_never_appends() {
        // A partner that says append on its first chunk (nothing to extend yet), then again.
        let sent = stream(
            json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            &[
                chunk("a", "one ", true),
                chunk("a", "two", true),
                chunk("b", "whole", false),
                chunk("b", "again", false),
            ],
        );
        assert_eq!(appends(&sent), [None, Some(true), None, None]);
    }

    #[test]
    fn a_stream_that_joins_midway_appends_to_what_its_task_carried() {
        // SubscribeToTask: the task as it is (artifact `a` so far) comes first; a later chunk
        // of `a` extends what the client has, one of `b` (not in the task) is all it gets of b.
        let first = json!({"task": {"id": "t", "artifacts": [
            {"artifactId": "a", "parts": [{"text": "one "}]},
        ]}});
        let sent = stream(first, &[chunk("a", "two", true), chunk("b", "three", true)]);
        assert_eq!(appends(&sent), [Some(true), None]);
    }
}
