//! The A2A operations (spec 3.1), whatever binding carried them: each reads its parameters from
//! one JSON object (the JSON-RPC `params`, or an HTTP+JSON body, path and query together), goes
//! through the same engine as AIP, and answers with A2A objects or a stream of them.

use super::common::{admit_read, field, object};
use super::entry::Caller;
use super::events::{Close, Events, events};
use super::state::A2aState;
use super::{errors, push};
use crate::model::{CommandKind, CommandPolicy, HistoryFilter, Inbound, LeaderCommand, Timestamp};
use crate::protocol::a2a::{self, A2aError, A2aErrorKind, TaskView, render_task};
use crate::task::{PagePosition, StreamStart, TaskQuery};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// What A2A asks of the engine: a task is done when its partner has a result (A2A has no
/// awaiting-completion), and ended tasks are immutable.
const POLICY: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// A page of `ListTasks` when the client asks for no size.
const DEFAULT_PAGE_SIZE: usize = 50;

fn required_id<'a>(params: &'a Map<String, Value>, name: &str) -> Result<&'a str, A2aError> {
    match params.get(name) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id),
        _ => Err(A2aError::invalid_params(
            name,
            "is required: the task's id, a string",
        )),
    }
}

fn optional_bool(
    params: &Map<String, Value>,
    camel: &str,
    snake: &str,
) -> Result<Option<bool>, A2aError> {
    match field(params, camel, snake) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(A2aError::invalid_params(camel, "must be true or false")),
    }
}

fn history_length(params: &Map<String, Value>) -> Result<Option<usize>, A2aError> {
    field(params, "historyLength", "history_length")
        .map(|v| a2a::count(v, "historyLength"))
        .transpose()
}

/// The command of a `SendMessage`, with the flags that shape its answer and the push config
/// that came with it.
struct Sent {
    inbound: Inbound,
    view: TaskView,
    push: Option<a2a::PushConfig>,
}

fn read_send(caller: &Caller, params: &Value) -> Result<Sent, A2aError> {
    let sent = a2a::parse_send(params)?;
    Ok(Sent {
        push: sent.push_config,
        inbound: Inbound {
            form: None,
            history: Ok(HistoryFilter::default()),
            command: sent.command,
            owner: caller.owner.clone(),
            policy: CommandPolicy {
                answer_at_once: sent.return_immediately,
                ..POLICY
            },
        },
        view: TaskView {
            history_length: sent.history_length,
            artifacts: true,
        },
    })
}

/// `SendMessage`: start or continue a task; answer when it ends or needs input (or at once
/// with `returnImmediately`).
pub(super) async fn send(
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let Sent {
        mut inbound,
        view,
        push,
    } = read_send(caller, params)?;
    let subscribe = push::inline(caller, &mut inbound, push);
    let reply = app
        .engine
        .command(&caller.agent, inbound, subscribe)
        .await
        .map_err(errors::engine)?;
    let task = &reply.task;
    if task.plain_reply {
        let context = task.session_id.as_deref();
        let items = &task.status.data_items;
        return Ok(json!({"message": a2a::render_reply(&task.id, context, items)}));
    }
    Ok(json!({"task": render_task(task, view)}))
}

/// `SendStreamingMessage`: the same, answered with the task and then its events until it ends
/// or needs input.
pub(super) async fn send_streaming(
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Events, A2aError> {
    let Sent {
        mut inbound,
        view,
        push,
    } = read_send(caller, params)?;
    // A stream begins with the task: a start's first event is its creation; a continue's
    // events begin after it, so the task as it was comes first.
    let before = match (&inbound.command.command, &inbound.command.task_id) {
        (CommandKind::Continue, Some(id)) => Some(
            app.engine
                .read(&caller.agent, caller.owner.as_deref(), id)
                .await
                .map_err(errors::engine)?,
        ),
        _ => None,
    };
    let subscribe = push::inline(caller, &mut inbound, push);
    let start = app
        .engine
        .stream(&caller.agent, inbound, subscribe)
        .await
        .map_err(errors::engine)?;
    let StreamStart::Events(feed) = start else {
        return Err(A2aError::new(
            A2aErrorKind::Internal,
            json!({"reason": "a message was answered without its task's events"}),
        ));
    };
    let first = before.map(|reply| json!({"task": render_task(&reply.task, view)}));
    Ok(events(first, feed, Close::WhenInterrupted))
}

/// `GetTask`: the task as stored, with at most `historyLength` history messages.
pub(super) async fn get(
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let params = object(params)?;
    let id = required_id(params, "id")?;
    let view = TaskView {
        history_length: history_length(params)?,
        artifacts: true,
    };
    admit_read(caller)?;
    let reply = app
        .engine
        .read(&caller.agent, caller.owner.as_deref(), id)
        .await
        .map_err(errors::engine)?;
    Ok(render_task(&reply.task, view))
}

/// `CancelTask`: cancel a task that has not ended (TaskNotCancelable for one that has).
pub(super) async fn cancel(
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let params = object(params)?;
    let id = required_id(params, "id")?;
    let inbound = Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand::cancel_of(id),
        owner: caller.owner.clone(),
        policy: POLICY,
    };
    let reply = app
        .engine
        .command(&caller.agent, inbound, None)
        .await
        .map_err(errors::engine)?;
    Ok(render_task(&reply.task, TaskView::default()))
}

/// `SubscribeToTask`: the task, then its events until it ends. An ended task has nothing to
/// follow: UnsupportedOperation, before any stream starts.
pub(super) async fn subscribe(
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Events, A2aError> {
    let params = object(params)?;
    let id = required_id(params, "id")?;
    admit_read(caller)?;
    let (reply, feed) = app
        .engine
        .subscribe(&caller.agent, caller.owner.as_deref(), id)
        .await
        .map_err(errors::engine)?;
    let state = reply.task.status.state;
    if state.is_terminal() {
        return Err(A2aError::new(
            A2aErrorKind::UnsupportedOperation,
            json!({
                "taskId": id,
                "state": a2a::state_name(state),
                "reason": "the task has ended; get it instead of subscribing",
            }),
        ));
    }
    let first = json!({"task": render_task(&reply.task, TaskView::default())});
    Ok(events(Some(first), feed, Close::WhenEnded))
}

/// `ListTasks`: the caller's tasks of this partner, most recently changed first, a page at a
/// time.
pub(super) async fn list(
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let params = object(params)?;
    let text = |camel: &str, snake: &str| -> Result<Option<&str>, A2aError> {
        match field(params, camel, snake) {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(A2aError::invalid_params(camel, "must be a string")),
        }
    };
    let states = match text("status", "status")? {
        None | Some("TASK_STATE_UNSPECIFIED") => None,
        Some(name) => Some(
            a2a::task::states_of(name)
                .ok_or_else(|| {
                    A2aError::invalid_params("status", format!("{name:?} is not a task state"))
                })?
                .to_vec(),
        ),
    };
    let changed_after_ms = match text("statusTimestampAfter", "status_timestamp_after")? {
        None => None,
        Some(t) => Some(
            Timestamp::parse(t)
                .ok_or_else(|| {
                    A2aError::invalid_params(
                        "statusTimestampAfter",
                        "must be an ISO 8601 timestamp",
                    )
                })?
                .unix_millis(),
        ),
    };
    let page_size = match field(params, "pageSize", "page_size") {
        None => DEFAULT_PAGE_SIZE,
        Some(v) => match a2a::count(v, "pageSize")? {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(crate::task::MAX_PAGE_SIZE),
        },
    };
    let after = text("pageToken", "page_token")?
        .map(read_page_token)
        .transpose()?;
    let view = TaskView {
        // A listing is a page of many tasks: no history unless asked.
        history_length: Some(history_length(params)?.unwrap_or(0)),
        artifacts: optional_bool(params, "includeArtifacts", "include_artifacts")?.unwrap_or(false),
    };
    admit_read(caller)?;
    refuse_shared_listing(caller)?;
    let query = TaskQuery {
        session_id: text("contextId", "context_id")?.map(str::to_string),
        states,
        changed_after_ms,
        page_size,
        after,
    };
    let page = app
        .engine
        .list(&caller.agent, caller.owner.as_deref(), &query)
        .await
        .map_err(errors::engine)?;
    let tasks: Vec<Value> = page.tasks.iter().map(|t| render_task(t, view)).collect();
    Ok(json!({
        "tasks": tasks,
        "nextPageToken": page.next.as_ref().map(page_token).unwrap_or_default(),
        "pageSize": page_size,
        "totalSize": page.total,
    }))
}

/// UnsupportedOperation where the caller's Leader does not authenticate and the operator has
/// not turned listing on: all such Leaders share one namespace, so a listing would hand any
/// client every client's tasks (their messages and artifacts).
fn refuse_shared_listing(caller: &Caller) -> Result<(), A2aError> {
    if caller.owner.is_some() || caller.agent.lists_shared_tasks() {
        return Ok(());
    }
    let how = match &caller.agent.tenant {
        Some(_) => "the operator can turn it on in the tenant's quotas (listTasksOnOpenPartners)"
            .to_string(),
        None => format!(
            "the operator can turn it on with `aiphost serve --list-tasks-on {}`",
            caller.agent.id()
        ),
    };
    Err(A2aError::new(
        A2aErrorKind::UnsupportedOperation,
        json!({
            "reason": format!("ListTasks is off on this partner: its clients do not authenticate and share one task namespace, so a listing would show every client's tasks; {how}"),
            "agent": caller.agent.id(),
        }),
    ))
}

/// The opaque cursor of a page: where the page ended.
fn page_token(position: &PagePosition) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{}:{}", position.changed_ms, position.task_id))
}

fn read_page_token(token: &str) -> Result<PagePosition, A2aError> {
    let bad = || A2aError::invalid_params("pageToken", "is not a token this host gave out");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (ms, id) = text.split_once(':').ok_or_else(bad)?;
    Ok(PagePosition {
        changed_ms: ms.parse().map_err(|_| bad())?,
        task_id: id.to_string(),
    })
}

/// `GetExtendedAgentCard`: no partner has an extended card.
pub(super) fn no_extended_card() -> A2aError {
    A2aError::new(
        A2aErrorKind::ExtendedAgentCardNotConfigured,
        json!({"reason": "this partner's card is the same for every client"}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_go_there_and_back_and_strangers_are_refused() {
        let p = PagePosition {
            changed_ms: 1_700_000_000_123,
            task_id: "task:with:colons".into(),
        };
        assert_eq!(read_page_token(&page_token(&p)).unwrap(), p);
        assert!(read_page_token("not a token").is_err());
    }
}
