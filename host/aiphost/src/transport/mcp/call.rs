//! `tools/call`: one task per call, in four steps — validate, start, follow, answer. The tool
//! names a skill of the partner (an unknown one is -32602); the arguments are checked against
//! the tool's input schema (wrong ones are an `isError` result naming the paths, and start
//! nothing); then the start goes through the engine as every chat door's does (the host
//! completes the task as soon as its partner has a result; ended tasks take no more commands);
//! the task is followed until it rests (`follow.rs`: through its event feed with progress
//! notifications when the client sent a progress token, else by the start's own reply) or
//! until its `responseTimeout`, the wait of an AIP `start` — or `--mcp-call-timeout`, then the
//! call answers `STILL_WORKING` with the task's id and the task goes on; and the call is
//! answered with the task as it rests, or with its form when it asks for input and the client
//! can be asked (`forms.rs`).
//!
//! A call that carries a `requestState` is another round of a call that asked a form (MRTR),
//! and `aiphost.continue_task` answers a form by hand: both are `forms.rs`, which continues the
//! task and answers the same way.
//!
//! A 2026-07-28 call is cancelled by closing its response stream (the spec's MUST; `rmcp`
//! cancels the request's token when the connection goes): the call's task is cancelled then,
//! so a client that gives up leaves nothing running. That is this door's exception to the
//! house rule that a client going away cancels nothing (decision 3 of the plan).

use super::errors;
use super::follow::{self, Stop};
use super::forms;
use super::state::McpState;
use super::tasks;
use super::tools::Tools;
use crate::model::{CommandKind, DataItem, Inbound};
use crate::protocol::mcp::arguments;
use crate::protocol::mcp::result::CONTINUE_TASK;
use crate::protocol::mcp::tool_error::tool_error;
use crate::transport::kit::caller::Caller;
use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};

/// Run the call as a task of `caller`'s partner and answer with its result.
pub(super) async fn call(
    app: &McpState,
    caller: &Caller,
    request: CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    // Another round of a call that asked a form, or a form answered by hand.
    if let Some(state) = &request.request_state {
        return forms::retry(app, caller, &request, state, ctx).await;
    }
    if request.name == CONTINUE_TASK {
        return forms::continue_task(app, caller, &request, ctx).await;
    }
    // Validate.
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
        Err(wrong) => {
            let facts = arguments::facts(&wrong);
            return Ok(tool_error("INVALID_ARGUMENTS", facts).into());
        }
    };
    // Start. The task's id is chosen here, so that a call cancelled before its start is
    // answered can still name the task to cancel.
    let version = ctx.meta.protocol_version().map(|v| v.to_string());
    let params = json!({"tool": tool.name, "skill": skill, "protocolVersion": version});
    let task_id = format!("task-{}", uuid::Uuid::new_v4());
    let start = start(caller, &task_id, items, params);
    // The tasks extension: a request that declares it gets a task handle (tasks.rs).
    if tasks::declared(ctx) {
        return tasks::call(app, caller, start, ctx).await;
    }
    // Follow.
    let task = match follow::run(app, caller, start, ctx).await {
        Ok(task) => task,
        Err(Stop::Refused(e)) => return errors::engine(e).map(Into::into),
        Err(Stop::Closed) => return Err(follow::closed()),
        Err(Stop::Waited) => return Ok(follow::still_working(app, &task_id).into()),
    };
    // Answer.
    forms::answer(app, caller, task, &request.name, ctx).await
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

/// The start of task `task_id` with `items`, the call under `commandParams.mcp`.
fn start(caller: &Caller, task_id: &str, items: Vec<DataItem>, params: Value) -> Inbound {
    let mut command_params = Map::new();
    command_params.insert("mcp".into(), params);
    follow::command(caller, CommandKind::Start, task_id, items, command_params)
}
