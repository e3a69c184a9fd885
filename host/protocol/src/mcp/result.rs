//! A task, as it rests, rendered as the `tools/call` result that started it. Every result's
//! `_meta` names the task (`aiphost.taskId`), so a client can read it over AIP or A2A.
//! - `completed`: one `text` block per product (its answer text, reasoning left out), a
//!   `resource_link` per file by URI, `image`/`audio` for inline media, an embedded `resource`
//!   (base64 `blob`, `aiphost:tasks/{task}/files/{n}`) for any other inline file; the data items as
//!   `structuredContent` (one: that object; several: `{"items": […]}`), their JSON as text too
//!   (the spec's SHOULD). A plain reply is its status items.
//! - `failed`: `isError`, `CODE: message` of the partner's failure (`PARTNER_FAILED` and the
//!   status text without one); `rejected`, `canceled`: `REJECTED` / `CANCELED` likewise.
//! - `awaiting-input` (to a client that cannot be asked: it declared no elicitation): not an
//!   error: `<partner> asks: <title>`, the description, and how to answer — the door's own tool
//!   [`CONTINUE_TASK`] with the task id and the values; `structuredContent {"status":
//!   "input-required", "taskId", "form"}`, so nothing hangs.
//! - still running when the wait ended: `isError`, `STILL_WORKING`; the task goes on.

use super::tool_error::tool_error;
use aiphost_model::activity::{Failure, InputRequest, kind_of, text_of};
use aiphost_model::{DataItem, Task, TaskState};
use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::{Value, json};

/// The door's own tool that answers a form of a task (`{taskId, values, action}`).
pub const CONTINUE_TASK: &str = "aiphost.continue_task";

/// `task` as its call's result, its partner unnamed.
pub fn render(task: &Task) -> CallToolResult {
    render_named(task, "The partner", CONTINUE_TASK)
}

/// `task` of the partner called `partner` (its name, as a question says who asks) as its
/// call's result; a question names `continue_tool` as the tool that answers it.
pub fn render_named(task: &Task, partner: &str, continue_tool: &str) -> CallToolResult {
    let mut result = match task.status.state {
        TaskState::Completed => completed(task),
        TaskState::Failed => failed(task),
        TaskState::Rejected => ended_as("REJECTED", task),
        TaskState::Canceled => ended_as("CANCELED", task),
        TaskState::AwaitingInput => awaiting_input(task, partner, continue_tool),
        TaskState::Accepted | TaskState::Working | TaskState::AwaitingCompletion => tool_error(
            "STILL_WORKING",
            json!({
                "taskId": task.id,
                "state": task.status.state,
                "reason": format!(
                    "task {} goes on after this call's wait; read it with AIP get or A2A GetTask",
                    task.id
                ),
            }),
        ),
    };
    result = with_task(result, &task.id);
    if let Some(meta) = result.meta.as_mut() {
        meta.0
            .insert("aiphost.state".into(), json!(task.status.state));
    }
    result
}

/// `result` naming task `task_id` in its `_meta` (`aiphost.taskId`), as every call's result
/// does, so a client can read the task over AIP or A2A.
pub fn with_task(mut result: CallToolResult, task_id: &str) -> CallToolResult {
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0.insert("aiphost.taskId".into(), json!(task_id));
    result.meta = Some(meta);
    result
}

/// A completed task: its products (or a plain reply's status items).
fn completed(task: &Task) -> CallToolResult {
    let mut content = Vec::new();
    let mut data = Vec::new();
    let groups: Vec<&[DataItem]> = if task.plain_reply {
        vec![&task.status.data_items]
    } else {
        task.products
            .iter()
            .map(|p| p.data_items.as_slice())
            .collect()
    };
    let mut files = 0;
    for items in groups {
        let text = answer_text(items);
        if !text.is_empty() {
            content.push(ContentBlock::text(text));
        }
        for item in items {
            match item {
                DataItem::Data { data: d, .. } if kind_of(item).is_none() => {
                    data.push(Value::Object(d.clone()));
                }
                DataItem::File {
                    name,
                    mime_type,
                    uri,
                    bytes,
                    ..
                } if kind_of(item).is_none() => {
                    // Inline files without a URI of their own are named in the task.
                    let at = format!("aiphost:tasks/{}/files/{files}", task.id);
                    files += 1;
                    let file = File {
                        name: name.as_deref(),
                        mime_type: mime_type.as_deref(),
                        uri: uri.as_deref(),
                        bytes: bytes.as_deref(),
                    };
                    if let Some(block) = file.block(at) {
                        content.push(block);
                    }
                }
                _ => {}
            }
        }
    }
    let structured = match data.len() {
        0 => None,
        1 => data.pop(),
        _ => Some(json!({ "items": data })),
    };
    if let Some(s) = &structured {
        content.push(ContentBlock::text(s.to_string()));
    }
    let mut result = CallToolResult::success(content);
    result.structured_content = structured;
    result
}

/// The answer text of a product's items: its unmarked and `answer` texts, in order.
fn answer_text(items: &[DataItem]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            DataItem::Text { text, .. } if matches!(kind_of(item), None | Some("answer")) => {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect()
}

/// A product's file item, as its fields are.
struct File<'a> {
    name: Option<&'a str>,
    mime_type: Option<&'a str>,
    uri: Option<&'a str>,
    bytes: Option<&'a str>,
}

impl File<'_> {
    /// The file as a content block: by URI a `resource_link`; inline images and audio as
    /// theirs; any other inline file an embedded resource (`resource`, base64 `blob`) named
    /// `at` (the task's own URI for it, there being no other).
    fn block(&self, at: String) -> Option<ContentBlock> {
        if let Some(uri) = self.uri {
            let mut link = Resource::new(uri, self.name.unwrap_or(uri).to_string());
            link.mime_type = self.mime_type.map(str::to_string);
            return Some(ContentBlock::ResourceLink(link));
        }
        let bytes = self.bytes?.to_string();
        match self.mime_type {
            Some(mime) if mime.starts_with("image/") => Some(ContentBlock::image(bytes, mime)),
            Some(mime) if mime.starts_with("audio/") => Some(ContentBlock::audio(bytes, mime)),
            mime => Some(ContentBlock::resource(
                ResourceContents::BlobResourceContents {
                    uri: at,
                    mime_type: Some(mime.unwrap_or("application/octet-stream").to_string()),
                    blob: bytes,
                    meta: None,
                },
            )),
        }
    }
}

/// A failed task: the partner's failure, or `PARTNER_FAILED` with the status text.
fn failed(task: &Task) -> CallToolResult {
    match Failure::of(&task.status.data_items) {
        Some(f) => tool_error(
            &f.code,
            json!({"reason": f.message, "retryable": f.retryable, "detail": f.detail}),
        ),
        None => ended_as("PARTNER_FAILED", task),
    }
}

/// A task ended as `code`, its status text the message.
fn ended_as(code: &str, task: &Task) -> CallToolResult {
    let text = status_text(task);
    let reason = if text.is_empty() {
        format!("the task ended {}", task.status.state.as_str())
    } else {
        text
    };
    tool_error(code, json!({"reason": reason}))
}

/// A task asking for input, to a client that cannot be asked: the question and how to answer.
fn awaiting_input(task: &Task, partner: &str, continue_tool: &str) -> CallToolResult {
    let form = InputRequest::of(&task.status.data_items);
    let question = match &form {
        Some(f) => match &f.description {
            Some(d) => format!("{}\n\n{d}", f.title),
            None => f.title.clone(),
        },
        None => status_text(task),
    };
    let text = format!(
        "{partner} asks: {question}\nAnswer with the tool {continue_tool} {{taskId, values}} \
         (taskId {}).",
        task.id
    );
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "status": "input-required",
        "taskId": task.id,
        "form": form,
        "continueTool": continue_tool,
    }));
    result
}

/// The status's text items, one a line (the model's joining). All of them, marked or not:
/// `activity::said` would leave out a text a partner marked with a kind.
fn status_text(task: &Task) -> String {
    let items: Vec<&DataItem> = task.status.data_items.iter().collect();
    text_of(&items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::TaskStatus;
    use serde_json::Map;

    fn asking() -> Task {
        let form = InputRequest {
            request_id: "trip".into(),
            title: "Trip".into(),
            description: Some("Where to, and for how many days?".into()),
            schema: Map::new(),
        };
        Task {
            id: "task-1".into(),
            session_id: None,
            leader_id: None,
            group_id: None,
            status: TaskStatus::now(TaskState::AwaitingInput, form.items()),
            products: Vec::new(),
            commands: Vec::new(),
            status_history: Vec::new(),
            completes_on_result: true,
            plain_reply: false,
        }
    }

    fn file(name: &str, mime: &str, uri: Option<&str>, bytes: Option<&str>) -> DataItem {
        DataItem::File {
            name: Some(name.into()),
            mime_type: Some(mime.into()),
            uri: uri.map(str::to_string),
            bytes: bytes.map(str::to_string),
            metadata: None,
        }
    }

    #[test]
    fn a_product_is_text_links_media_embedded_files_and_structured_data() {
        let mut data = Map::new();
        data.insert("total".into(), json!(3));
        let product = aiphost_model::Product {
            id: "p".into(),
            name: None,
            description: None,
            data_items: vec![
                DataItem::text("the answer"),
                file(
                    "a.pdf",
                    "application/pdf",
                    Some("https://files.example/a.pdf"),
                    None,
                ),
                file("dot.png", "image/png", None, Some("iVBORw0KGgo=")),
                file("b.pdf", "application/pdf", None, Some("JVBERi0=")),
                DataItem::Data {
                    data,
                    metadata: None,
                },
            ],
        };
        let mut task = asking();
        task.status = TaskStatus::now(TaskState::Completed, Vec::new());
        task.products = vec![product];
        let result = serde_json::to_value(render(&task)).unwrap_or_default();
        let content = &result["content"];
        assert_eq!(content[0], json!({"type": "text", "text": "the answer"}));
        assert_eq!(content[1]["type"], "resource_link");
        assert_eq!(content[1]["uri"], "https://files.example/a.pdf");
        assert_eq!(content[1]["mimeType"], "application/pdf");
        assert_eq!(content[2]["type"], "image");
        assert_eq!(content[2]["data"], "iVBORw0KGgo=");
        assert_eq!(content[3]["type"], "resource");
        assert_eq!(
            content[3]["resource"],
            json!({"uri": "aiphost:tasks/task-1/files/2", "mimeType": "application/pdf", "blob": "JVBERi0="})
        );
        assert_eq!(content[4], json!({"type": "text", "text": "{\"total\":3}"}));
        assert_eq!(result["structuredContent"], json!({"total": 3}));
        assert_eq!(result["isError"], false);
        assert_eq!(result["_meta"]["aiphost.taskId"], "task-1");
    }

    #[test]
    fn a_question_says_who_asks_and_how_to_answer() {
        let result = render_named(&asking(), "Concierge", CONTINUE_TASK);
        assert_eq!(result.is_error, Some(false));
        let text = result.content[0].as_text().map(|t| t.text.clone());
        assert_eq!(
            text.as_deref(),
            Some(
                "Concierge asks: Trip\n\nWhere to, and for how many days?\nAnswer with the tool \
                 aiphost.continue_task {taskId, values} (taskId task-1)."
            )
        );
        let s = result.structured_content.unwrap_or_default();
        assert_eq!(s["status"], "input-required");
        assert_eq!(s["taskId"], "task-1");
        assert_eq!(s["form"]["requestId"], "trip");
        let meta = result.meta.unwrap_or_default();
        assert_eq!(meta.0["aiphost.taskId"], "task-1");
    }

    #[test]
    fn an_ended_task_says_its_status_texts() {
        let marked = serde_json::from_value(json!({"aiphost.kind": "answer"})).ok();
        let mut task = asking();
        task.status = TaskStatus::now(
            TaskState::Rejected,
            vec![
                DataItem::text("not today"),
                DataItem::Data {
                    data: Map::new(),
                    metadata: None,
                },
                DataItem::Text {
                    text: "try tomorrow".into(),
                    metadata: marked,
                },
            ],
        );
        let text = |r: CallToolResult| r.content[0].as_text().map(|t| t.text.clone());
        assert_eq!(
            text(render(&task)).as_deref(),
            Some("REJECTED: not today\ntry tomorrow")
        );
        task.status = TaskStatus::now(TaskState::Canceled, Vec::new());
        assert_eq!(
            text(render(&task)).as_deref(),
            Some("CANCELED: the task ended canceled")
        );
    }
}
