//! `tools/call`: one task per call. The tool names a skill of the partner (an unknown one is
//! -32602); the arguments are checked against the tool's input schema (wrong ones are an
//! `isError` result naming the paths, and start nothing); then the start goes through the
//! engine as every chat door's does (the host completes the task as soon as its partner has a
//! result; ended tasks take no more commands), and the call is answered with the task as it
//! rests — or as it is when the task's `responseTimeout` runs out, the wait of an AIP `start`,
//! or `STILL_WORKING` with the task's id when `--mcp-call-timeout` runs out first (the task
//! goes on).
//!
//! A 2026-07-28 call is cancelled by closing its response stream (the spec's MUST; `rmcp`
//! cancels the request's token when the connection goes): the call's task is cancelled then,
//! so a client that gives up leaves nothing running. That is this door's exception to the
//! house rule that a client going away cancels nothing (decision 3 of the plan).

use super::errors;
use super::state::McpState;
use super::tools::Tools;
use crate::model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, LeaderCommand, Timestamp,
};
use crate::protocol::mcp::tool_error::tool_error;
use crate::protocol::mcp::{arguments, result};
use crate::transport::kit::caller::Caller;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// What the MCP door asks of the engine: a task is done when its partner has a result (a tool
/// call has no state in which its caller reviews one), and ended tasks take no more commands;
/// the start is answered when the task rests.
const POLICY: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// Run the call as a task of `caller`'s partner and answer with its result.
pub(super) async fn call(
    app: &McpState,
    caller: &Caller,
    request: CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let tools = Tools::of(&caller.agent);
    let Some((tool, index)) = tools.find(&request.name) else {
        return Err(errors::unknown_tool(&request.name));
    };
    let skill = caller
        .agent
        .manifest
        .skills
        .get(index)
        .map_or("", |s| s.id.as_str());
    let items = match items(caller, index, request.arguments.as_ref()) {
        Ok(items) => items,
        Err(wrong) => return Ok(tool_error("INVALID_ARGUMENTS", arguments::facts(&wrong))),
    };
    let version = ctx.meta.protocol_version().map(|v| v.to_string());
    let params = json!({"tool": tool.name, "skill": skill, "protocolVersion": version});
    // The task's id is chosen here, so that a call cancelled before its start is answered can
    // still name the task to cancel.
    let task_id = format!("task-{}", uuid::Uuid::new_v4());
    let start = start(caller, &task_id, items, params);
    let started = app.engine.command(&caller.agent, start, None);
    tokio::select! {
        reply = started => match reply {
            Ok(reply) => Ok(result::render(&reply.task)),
            Err(e) => errors::engine(e),
        },
        () = cancelled(&ctx.ct) => {
            cancel(app, caller, &task_id).await;
            Err(ErrorData::internal_error("the call was cancelled", None))
        }
        () = tokio::time::sleep(app.config.call_timeout) => Ok(still_working(app, &task_id)),
    }
}

/// The answer of a call whose task did not rest within `--mcp-call-timeout`: the task goes
/// on (it is not canceled), and the answer names it so the client can read it later.
fn still_working(app: &McpState, task_id: &str) -> CallToolResult {
    let waited = app.config.call_timeout.as_millis();
    let mut result = tool_error(
        "STILL_WORKING",
        json!({
            "taskId": task_id,
            "waitedMs": waited,
            "reason": format!(
                "task {task_id} goes on after this call's {waited} ms wait; read it with AIP get or A2A GetTask"
            ),
        }),
    );
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0.insert("aiphost.taskId".into(), json!(task_id));
    result.meta = Some(meta);
    result
}

/// The start's items of a call of skill `index` of `caller`'s partner: checked against the
/// skill's own input schema (compiled when the partner was loaded) when it has one, else
/// against the default one.
fn items(
    caller: &Caller,
    index: usize,
    given: Option<&JsonObject>,
) -> Result<Vec<DataItem>, Vec<arguments::ArgumentError>> {
    let inputs = &caller.agent.skill_inputs;
    if !inputs.has_schema(index) {
        return arguments::default_items(given);
    }
    arguments::schema_items(given, |value| {
        inputs
            .check(index, value)
            .unwrap_or_default()
            .into_iter()
            .map(|e| arguments::ArgumentError {
                path: e.path,
                message: e.message,
            })
            .collect()
    })
}

/// When the request's token is cancelled (the client closed the call's stream).
async fn cancelled(ct: &CancellationToken) {
    ct.cancelled().await;
}

/// Cancel the call's task (if it was started and has not ended: otherwise nothing to do).
async fn cancel(app: &McpState, caller: &Caller, task_id: &str) {
    let inbound = Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            data_items: vec![DataItem::text("the MCP client closed the call")],
            ..LeaderCommand::cancel_of(task_id)
        },
        owner: caller.owner.clone(),
        policy: POLICY,
    };
    if let Err(e) = app.engine.command(&caller.agent, inbound, None).await {
        tracing::debug!(error = %e, task = task_id, "the task of a closed MCP call was not cancelled");
    }
}

/// The start of task `task_id` with `items`, the call under `commandParams.mcp`.
fn start(caller: &Caller, task_id: &str, items: Vec<DataItem>, params: Value) -> Inbound {
    let mut command_params = Map::new();
    command_params.insert("mcp".into(), params);
    Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            id: format!("mcp-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command: CommandKind::Start,
            params: command_params,
            data_items: items,
            task_id: Some(task_id.to_string()),
            session_id: None,
            group_id: None,
            mentions: None,
        },
        owner: caller.owner.clone(),
        policy: POLICY,
    }
}
