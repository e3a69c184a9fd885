//! A task's events as MCP progress notifications (`notifications/progress`), for a `tools/call`
//! whose client sent a progress token: what the partner says while it works, before the call's
//! result.
//!
//! - answer deltas (and product text no delta marked) → `message` the text, `_meta["aiphost.kind"]`
//!   `"answer"`; reasoning deltas → the same with `"reasoning"` (reasoning is never in the result,
//!   only here);
//! - a tool call → `tool lookup {"query":"x"}`, its result → `tool lookup → {"found":"x"}`, with
//!   the activity's fields in `_meta["aiphost.activity"]` and the kind (`tool-call`,
//!   `tool-result`);
//! - usage and statuses make no notification (the result says how the task rested).
//!
//! The deltas of one feed batch are merged: consecutive deltas of one kind are one notification
//! (the spec asks servers to rate-limit progress; a batch is what the log gave at once). Every
//! notification names the task (`_meta["aiphost.taskId"]`), and `progress` counts the
//! notifications sent, so it increases on every one as the spec requires. Rendering stops at the
//! first event at which the task rests: the call is answered then.

use aiphost_model::activity::{Activity, Channel, ToolOutput, kind_of};
use aiphost_model::{DataItem, EventKind, TaskEvent, TaskState};
use rmcp::model::{MetaObject, NotificationMetaObject, ProgressNotificationParam, ProgressToken};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The progress of one call's task.
#[derive(Debug)]
pub struct Progress {
    token: ProgressToken,
    task_id: String,
    /// The task is completed by the host on its partner's result: awaiting-completion is no rest.
    completes_on_result: bool,
    /// Notifications sent so far (the last `progress`).
    sent: u64,
    /// Tool names by call id, for the results' lines.
    tools: HashMap<String, String>,
    /// The task answered its start with a plain reply: its chunks are the reply, in the result.
    replying: bool,
}

/// One notification in the making: a run of deltas of one kind, or one activity line.
struct Line {
    kind: &'static str,
    message: String,
    fields: Option<Map<String, Value>>,
}

impl Progress {
    /// The progress of task `task_id`, reported under the client's `token`.
    pub fn new(token: ProgressToken, task_id: &str, completes_on_result: bool) -> Self {
        Progress {
            token,
            task_id: task_id.to_string(),
            completes_on_result,
            sent: 0,
            tools: HashMap::new(),
            replying: false,
        }
    }

    /// The notifications of one batch of events, and whether the task rests at one of them
    /// (the events after it are not rendered).
    pub fn batch(&mut self, events: &[TaskEvent]) -> (Vec<ProgressNotificationParam>, bool) {
        let mut lines: Vec<Line> = Vec::new();
        let mut rested = false;
        for event in events {
            match &event.kind {
                EventKind::Created {
                    status,
                    plain_reply,
                } => {
                    self.replying |= *plain_reply;
                    rested = status.state == TaskState::Rejected;
                }
                EventKind::Status { status } => rested = self.rests(status.state),
                EventKind::Chunk { chunk } if !self.replying => {
                    for item in &chunk.product.data_items {
                        if let Some((kind, text)) = delta(item) {
                            push_text(&mut lines, kind, text);
                        }
                    }
                }
                EventKind::Activity { activity } if !self.replying => {
                    if let Some(line) = self.activity(activity) {
                        lines.push(line);
                    }
                }
                _ => {}
            }
            if rested {
                break;
            }
        }
        let notes = lines.into_iter().map(|l| self.notification(l)).collect();
        (notes, rested)
    }

    /// Whether the task rests in `state` (the call is answered there).
    fn rests(&self, state: TaskState) -> bool {
        match state {
            TaskState::Accepted | TaskState::Working => false,
            TaskState::AwaitingCompletion => !(self.completes_on_result || self.replying),
            _ => true,
        }
    }

    /// The line of a tool call or result; usage has none.
    fn activity(&mut self, activity: &Activity) -> Option<Line> {
        let (kind, message) = match activity {
            Activity::ToolCall(call) => {
                self.tools.insert(call.call_id.clone(), call.name.clone());
                let arguments = Value::Object(call.arguments.clone());
                ("tool-call", format!("tool {} {arguments}", call.name))
            }
            Activity::ToolResult(result) => {
                let name = self
                    .tools
                    .get(&result.call_id)
                    .cloned()
                    .unwrap_or_else(|| result.call_id.clone());
                let output = match &result.output {
                    ToolOutput::Json(v) => v.to_string(),
                    ToolOutput::Text(t) => t.clone(),
                };
                let failed = if result.is_error { " (failed)" } else { "" };
                ("tool-result", format!("tool {name} → {output}{failed}"))
            }
            Activity::Usage(_) => return None,
        };
        Some(Line {
            kind,
            message,
            fields: Some(activity.fields()),
        })
    }

    /// `line` as the next notification.
    fn notification(&mut self, line: Line) -> ProgressNotificationParam {
        self.sent += 1;
        let mut meta = Map::new();
        meta.insert("aiphost.kind".into(), json!(line.kind));
        meta.insert("aiphost.taskId".into(), json!(self.task_id));
        if let Some(fields) = line.fields {
            meta.insert("aiphost.activity".into(), Value::Object(fields));
        }
        let mut note = ProgressNotificationParam::new(self.token.clone(), self.sent as f64)
            .with_message(line.message);
        note.meta = Some(NotificationMetaObject(MetaObject(meta)));
        note
    }
}

/// A text item of a product chunk as a delta of its kind: marked answer or reasoning, or
/// unmarked text (an answer); empty ones (a product's close) are nothing.
fn delta(item: &DataItem) -> Option<(&'static str, &str)> {
    let DataItem::Text { text, .. } = item else {
        return None;
    };
    if text.is_empty() {
        return None;
    }
    let kind = match kind_of(item) {
        None => Channel::Answer,
        Some(kind) => Channel::of_kind(kind)?,
    };
    Some((kind.as_str(), text))
}

/// Append `text` of `kind` to the last line when it is a run of that kind, else start one.
fn push_text(lines: &mut Vec<Line>, kind: &'static str, text: &str) {
    match lines.last_mut() {
        Some(last) if last.kind == kind && last.fields.is_none() => last.message.push_str(text),
        _ => lines.push(Line {
            kind,
            message: text.to_string(),
            fields: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::activity::{TextDelta, ToolCall, ToolResult, Usage};
    use aiphost_model::{TaskStatus, Timestamp};
    use rmcp::model::NumberOrString;

    fn event(seq: u64, kind: EventKind) -> TaskEvent {
        TaskEvent {
            seq,
            at: Timestamp::now(),
            kind,
        }
    }

    fn text(seq: u64, channel: Channel, text: &str, last: bool) -> TaskEvent {
        let chunk = TextDelta {
            product_id: channel.as_str().into(),
            channel,
            text: text.into(),
            last,
        }
        .into_chunk();
        event(seq, EventKind::Chunk { chunk })
    }

    fn status(seq: u64, state: TaskState) -> TaskEvent {
        event(
            seq,
            EventKind::Status {
                status: TaskStatus::now(state, Vec::new()),
            },
        )
    }

    fn progress(completes: bool) -> Progress {
        Progress::new(
            ProgressToken(NumberOrString::Number(7)),
            "task-1",
            completes,
        )
    }

    fn lines(notes: &[ProgressNotificationParam]) -> Vec<(String, String, f64)> {
        notes
            .iter()
            .map(|n| {
                let meta = &n.meta.as_ref().expect("meta").0.0;
                assert_eq!(meta["aiphost.taskId"], "task-1");
                assert_eq!(n.progress_token, ProgressToken(NumberOrString::Number(7)));
                (
                    meta["aiphost.kind"].as_str().unwrap_or("").to_string(),
                    n.message.clone().unwrap_or_default(),
                    n.progress,
                )
            })
            .collect()
    }

    /// The events of concierge's `think tea`, as its task logs them.
    fn think_tea() -> Vec<TaskEvent> {
        let created = EventKind::Created {
            status: TaskStatus::now(TaskState::Accepted, Vec::new()),
            plain_reply: false,
        };
        vec![
            event(1, created),
            status(2, TaskState::Working),
            text(3, Channel::Reasoning, "Let ", false),
            text(4, Channel::Reasoning, "me ", false),
            text(5, Channel::Reasoning, "think about tea.", false),
            text(6, Channel::Answer, "thought ", false),
            text(7, Channel::Answer, "about ", false),
            text(8, Channel::Answer, "tea", false),
            text(9, Channel::Reasoning, "", true),
            text(10, Channel::Answer, "", true),
            status(11, TaskState::AwaitingCompletion),
            status(12, TaskState::Completed),
            status(13, TaskState::Completed),
        ]
    }

    #[test]
    fn the_deltas_of_a_batch_merge_by_kind_and_progress_increases() {
        let mut p = progress(true);
        let (notes, rested) = p.batch(&think_tea());
        assert!(rested);
        assert_eq!(
            lines(&notes),
            vec![
                ("reasoning".into(), "Let me think about tea.".into(), 1.0),
                ("answer".into(), "thought about tea".into(), 2.0),
            ]
        );
    }

    #[test]
    fn batches_continue_the_count_and_split_where_the_feed_did() {
        let events = think_tea();
        let mut p = progress(true);
        let (first, rested) = p.batch(&events[..4]);
        assert!(!rested);
        let (second, _) = p.batch(&events[4..7]);
        let (third, rested) = p.batch(&events[7..]);
        assert!(rested);
        let all: Vec<_> = [first, second, third].concat();
        assert_eq!(
            lines(&all),
            vec![
                ("reasoning".into(), "Let me ".into(), 1.0),
                ("reasoning".into(), "think about tea.".into(), 2.0),
                ("answer".into(), "thought about ".into(), 3.0),
                ("answer".into(), "tea".into(), 4.0),
            ]
        );
    }

    #[test]
    fn tool_activity_is_one_line_each_with_its_fields() {
        let call = Activity::ToolCall(ToolCall {
            call_id: "lookup-1".into(),
            name: "lookup".into(),
            arguments: match json!({"query": "x"}) {
                Value::Object(m) => m,
                _ => Map::new(),
            },
        });
        let result = Activity::ToolResult(ToolResult {
            call_id: "lookup-1".into(),
            output: ToolOutput::Json(json!({"found": "x"})),
            is_error: false,
        });
        let usage = Activity::Usage(Usage::default());
        let events = vec![
            event(1, EventKind::Activity { activity: call }),
            event(2, EventKind::Activity { activity: result }),
            event(3, EventKind::Activity { activity: usage }),
            text(4, Channel::Answer, "found x", false),
        ];
        let mut p = progress(true);
        let (notes, rested) = p.batch(&events);
        assert!(!rested);
        assert_eq!(
            lines(&notes),
            vec![
                (
                    "tool-call".into(),
                    r#"tool lookup {"query":"x"}"#.into(),
                    1.0
                ),
                (
                    "tool-result".into(),
                    r#"tool lookup → {"found":"x"}"#.into(),
                    2.0
                ),
                ("answer".into(), "found x".into(), 3.0),
            ]
        );
        let meta = &notes[1].meta.as_ref().expect("meta").0.0;
        assert_eq!(meta["aiphost.activity"]["output"], json!({"found": "x"}));
    }

    #[test]
    fn the_task_rests_where_the_call_is_answered() {
        // Awaiting input rests; nothing after it is rendered.
        let mut p = progress(true);
        let events = vec![
            status(1, TaskState::AwaitingInput),
            text(2, Channel::Answer, "later", false),
        ];
        let (notes, rested) = p.batch(&events);
        assert!(rested && notes.is_empty());
        // Awaiting completion rests only where the Leader completes the task.
        let (_, rested) = progress(false).batch(&[status(1, TaskState::AwaitingCompletion)]);
        assert!(rested);
        let (_, rested) = progress(true).batch(&[status(1, TaskState::AwaitingCompletion)]);
        assert!(!rested);
        for state in [TaskState::Failed, TaskState::Canceled, TaskState::Completed] {
            assert!(progress(true).batch(&[status(1, state)]).1, "{state:?}");
        }
        // A rejected start rests at once; a plain reply's chunks are the result's, not progress.
        let rejected = EventKind::Created {
            status: TaskStatus::now(TaskState::Rejected, Vec::new()),
            plain_reply: false,
        };
        assert!(progress(true).batch(&[event(1, rejected)]).1);
        let reply = EventKind::Created {
            status: TaskStatus::now(TaskState::Working, Vec::new()),
            plain_reply: true,
        };
        let (notes, rested) = progress(true).batch(&[
            event(1, reply),
            text(2, Channel::Answer, "hi", true),
            status(3, TaskState::AwaitingCompletion),
        ]);
        assert!(notes.is_empty() && !rested);
    }
}
