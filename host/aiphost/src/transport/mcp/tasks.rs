//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) over the engine: a
//! `tools/call` whose request declares the extension is answered with a task handle, and the
//! client follows the task with `tasks/get`, answers its questions with `tasks/update` and
//! stops it with `tasks/cancel`. Nothing is kept in memory: every method reads or commands the
//! durable task, so a host restart between two requests changes nothing.
//!
//! - The call starts the task as every call does, but asks the engine to answer as soon as the
//!   task exists (`answer_at_once`): the task is then durable, so a `tasks/get` of it resolves
//!   (the SEP's MUST). A task that has already ended then (a plain reply, a rejection) is
//!   answered with its result, not a handle (the server decides per request, as the SEP lets
//!   it). The handle's `taskId` is the AIP task id, readable over AIP and A2A too.
//! - `tasks/get` is a plain read in the caller's namespace (`engine.read`: nothing recorded);
//!   a task of another Leader, or none, is -32602 (never "forbidden": an id says nothing of
//!   whose it is). Tasks started at other doors are shown too.
//! - `tasks/update`: the answer under the outstanding question's key continues the task (the
//!   engine checks it against the form: a wrong one is -32602 with the failing paths in
//!   `data.errors`, and the task stays `input_required` under the same key); `decline` and
//!   `cancel` cancel the task; answers under other keys are ignored (the SEP's SHOULD).
//! - `tasks/cancel` cancels the task.
//!
//! `tasks/update` and `tasks/cancel` of a task that is not the caller's, is unknown or has
//! ended are acknowledged and do nothing: the SEP says both "MUST acknowledge the request with
//! an empty result, even if the task ID does not represent a valid task" (only `tasks/get`
//! answers -32602 for an unknown id), and acknowledging reveals nothing of other callers'
//! tasks.
//!
//! Only 2026-07-28 requests take part: the extension is not defined under 2025-11-25, whose
//! clients are served synchronously (`rmcp` refuses `tasks/*` from a request that did not
//! declare the extension with -32021).

use super::follow;
use super::state::McpState;
use crate::model::{CommandKind, CommandPolicy, DataItem, Inbound};
use crate::protocol::mcp::result;
use crate::protocol::mcp::tasks::{self, Question, Reply};
use crate::refusal::{self, Kind};
use crate::task::EngineError;
use crate::transport::kit::caller::Caller;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult, ProtocolVersion,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;

/// What a task-bearing call asks of the engine: as every MCP call (the host completes the task
/// when its partner has a result; ended tasks take no more commands), but answered as soon as
/// the task exists. The same for the continues and cancels of `tasks/update` and
/// `tasks/cancel`.
const POLICY: CommandPolicy = CommandPolicy {
    answer_at_once: true,
    ..follow::POLICY
};

/// Whether the request declared the tasks extension, at a revision that defines it.
pub(super) fn declared(ctx: &RequestContext<RoleServer>) -> bool {
    let revision = ctx
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    revision
        && ctx
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
}

/// Start `start` (a call's task) and answer with its handle once it is durable — or with its
/// result when it has already ended. A client that goes away before the handle is answered
/// never learns the task's id: the task is cancelled then, as a synchronous call's is.
pub(super) async fn call(
    app: &McpState,
    caller: &Caller,
    mut start: Inbound,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    start.policy = POLICY;
    let task_id = start.command.task_id.clone().unwrap_or_default();
    let started = app.engine.command(&caller.agent, start, None);
    let reply = tokio::select! {
        reply = started => reply,
        () = ctx.ct.cancelled() => {
            let _ = cancel_task(app, caller, &task_id, "the MCP client closed the call").await;
            return Err(follow::closed());
        }
    };
    let task = match reply {
        Ok(reply) => reply.task,
        Err(e) => return super::errors::engine(e).map(CallToolResponse::Complete),
    };
    if task.status.state.is_terminal() {
        return Ok(CallToolResponse::Complete(result::render(&task)));
    }
    let retention = app.engine.task_retention_ms(caller.agent.id());
    Ok(CallToolResponse::Task(tasks::handle(&task, retention)))
}

/// `tasks/get`: the task as it durably is.
pub(super) async fn get(
    app: &McpState,
    caller: &Caller,
    request: GetTaskParams,
) -> Result<GetTaskResult, ErrorData> {
    let task = app
        .engine
        .read(&caller.agent, caller.owner.as_deref(), &request.task_id)
        .await
        .map_err(|e| read_error(e, &request.task_id))?
        .task;
    let retention = app.engine.task_retention_ms(caller.agent.id());
    Ok(GetTaskResult::new(tasks::detailed(&task, retention)))
}

/// `tasks/update`: the answer to the task's outstanding question, if the request has one.
pub(super) async fn update(
    app: &McpState,
    caller: &Caller,
    request: UpdateTaskParams,
) -> Result<(), ErrorData> {
    let task_id = &request.task_id;
    let task = match app
        .engine
        .read(&caller.agent, caller.owner.as_deref(), task_id)
        .await
    {
        Ok(reply) => reply.task,
        // Acknowledged whatever the id (the SEP's MUST); a host fault is still one.
        Err(e) => return ack_unless_internal(e),
    };
    if task.status.state != crate::model::TaskState::AwaitingInput {
        return Ok(());
    }
    let question = Question::of(&task);
    let Some(response) = request.input_responses.get(&question.key) else {
        // Keys that are not outstanding (never issued, answered, superseded) are ignored.
        return Ok(());
    };
    let reply = question.reply(response).map_err(|unreadable| {
        ErrorData::invalid_params(
            format!("inputResponses[{:?}]: {}", question.key, unreadable.0),
            Some(json!({"taskId": task_id, "key": question.key, "reason": unreadable.0})),
        )
    })?;
    let form = question
        .form
        .as_ref()
        .map_or(tasks::TEXT_FIELD, |f| f.request_id.as_str());
    match reply {
        Reply::Continue(item) => continue_task(app, caller, task_id, item, &question.key).await,
        Reply::Decline => {
            cancel_task(app, caller, task_id, &format!("the user declined {form}")).await
        }
        Reply::Cancel => {
            cancel_task(app, caller, task_id, &format!("the user canceled {form}")).await
        }
    }
}

/// `tasks/cancel`: cancel the task if it is the caller's and has not ended.
pub(super) async fn cancel(
    app: &McpState,
    caller: &Caller,
    request: CancelTaskParams,
) -> Result<(), ErrorData> {
    cancel_task(app, caller, &request.task_id, "canceled by tasks/cancel").await
}

/// Continue `task_id` with `item` (the answer to the question `key`).
async fn continue_task(
    app: &McpState,
    caller: &Caller,
    task_id: &str,
    item: DataItem,
    key: &str,
) -> Result<(), ErrorData> {
    let mut inbound = follow::command(
        caller,
        CommandKind::Continue,
        task_id,
        vec![item],
        serde_json::Map::new(),
    );
    inbound.policy = POLICY;
    match app.engine.command(&caller.agent, inbound, None).await {
        Ok(_) => Ok(()),
        Err(e) => {
            let refusal = refusal::engine(e);
            match refusal.kind {
                // The answer does not fit the form: the task is as it was, the same key open.
                Kind::InvalidParams | Kind::ContentType => {
                    let mut data = refusal.facts;
                    data["taskId"] = json!(task_id);
                    data["key"] = json!(key);
                    let message = data["reason"]
                        .as_str()
                        .unwrap_or("the answer was refused")
                        .to_string();
                    Err(ErrorData::invalid_params(message, Some(data)))
                }
                // Raced with the task's end or removal: acknowledged, as for any id.
                Kind::TaskNotFound | Kind::Unsupported | Kind::NotCancelable => Ok(()),
                _ => Err(refused(refusal.facts)),
            }
        }
    }
}

/// Cancel `task_id` in the caller's namespace, saying `why`. Unknown, another's or ended:
/// nothing to do, acknowledged.
async fn cancel_task(
    app: &McpState,
    caller: &Caller,
    task_id: &str,
    why: &str,
) -> Result<(), ErrorData> {
    match follow::cancel_under(app, caller, task_id, why, POLICY).await {
        Ok(_) => Ok(()),
        Err(e) => ack_unless_internal(e),
    }
}

/// An update or cancel that could not be carried out: acknowledged (the SEP's MUST), unless
/// the host failed or cannot take it now.
fn ack_unless_internal(e: EngineError) -> Result<(), ErrorData> {
    let refusal = refusal::engine(e);
    match refusal.kind {
        Kind::Internal | Kind::Unavailable | Kind::Quota => Err(refused(refusal.facts)),
        _ => Ok(()),
    }
}

/// A read that found no task of the caller's: -32602; a host fault: -32603.
fn read_error(e: EngineError, task_id: &str) -> ErrorData {
    let refusal = refusal::engine(e);
    match refusal.kind {
        Kind::TaskNotFound | Kind::InvalidParams => ErrorData::invalid_params(
            "Failed to retrieve task: Task not found",
            Some(json!({"taskId": task_id})),
        ),
        _ => refused(refusal.facts),
    }
}

/// A refusal the client can do nothing about but retry later: -32603 with its facts.
fn refused(facts: serde_json::Value) -> ErrorData {
    let reason = facts["reason"]
        .as_str()
        .unwrap_or("internal error")
        .to_string();
    ErrorData::internal_error(reason, Some(facts))
}
