//! Following a call's task to its rest, for `call.rs` (a start) and `forms.rs` (a form's
//! answer): [`run`] carries out the command and waits until the task rests (or its
//! `responseTimeout` ends); a client that closes the call meanwhile cancels the task. Here too
//! are the door's commands ([`POLICY`], [`command`], [`cancel`]), which the tasks extension
//! (`tasks.rs`) sends too, under its own policy.
//!
//! Without a progress token the command's own reply is the wait (the engine answers when the
//! task rests). A call whose client sent a progress token (`_meta.progressToken`) goes through
//! the engine's stream instead, and the task's event feed is followed until the task rests,
//! each batch of events sent as `notifications/progress` (`aiphost-protocol`'s `mcp::progress` renders
//! them: answer and reasoning deltas merged per batch, tool call and result lines). The call is
//! then answered with the task as it rests, read once more (the feed holds events, the result
//! is the task's products and status).
//!
//! The feed is read a batch at a time and the next batch asked for only once the notifications
//! of the last are handed to `rmcp`, whose per-request channel is bounded: a client that reads
//! slowly costs one batch of memory. The wait is the task's `responseTimeout`, as without a
//! token (then the task is answered as it is, still working), and at most `--mcp-call-timeout`
//! (then `STILL_WORKING`, the task going on).

use super::state::McpState;
use crate::model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, LeaderCommand, Task, Timestamp,
};
use crate::protocol::mcp::progress::Progress;
use crate::protocol::mcp::result::with_task;
use crate::protocol::mcp::tool_error::tool_error;
use crate::task::{EngineError, StreamStart};
use crate::transport::kit::caller::Caller;
use rmcp::model::{CallToolResult, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};

/// What the MCP door asks of the engine: a task is done when its partner has a result (a tool
/// call has no state in which its caller reviews one), and ended tasks take no more commands;
/// a command is answered when the task rests.
pub(super) const POLICY: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// Why a command's task was not followed to its rest.
pub(super) enum Stop {
    /// The engine refused the command (or failed).
    Refused(EngineError),
    /// The client closed the call; its task was cancelled.
    Closed,
    /// `--mcp-call-timeout` ran out first: the task goes on, unwatched.
    Waited,
}

/// Carry out `inbound` (a start or a continue) and follow its task until it rests (or its
/// `responseTimeout` ends): through the feed with progress when the client sent a token, else
/// by the command's own reply. If the client closes the call meanwhile, the task is cancelled.
pub(super) async fn run(
    app: &McpState,
    caller: &Caller,
    inbound: Inbound,
    ctx: &RequestContext<RoleServer>,
) -> Result<Task, Stop> {
    let task_id = inbound.command.task_id.clone().unwrap_or_default();
    let followed = async {
        match ctx.meta.get_progress_token() {
            Some(token) => follow(app, caller, inbound, token, &ctx.peer).await,
            None => app
                .engine
                .command(&caller.agent, inbound, None)
                .await
                .map(|reply| reply.task),
        }
    };
    tokio::select! {
        task = tokio::time::timeout(app.config.call_timeout, followed) => match task {
            Ok(task) => task.map_err(Stop::Refused),
            Err(_) => Err(Stop::Waited),
        },
        () = ctx.ct.cancelled() => {
            if let Err(e) = cancel(app, caller, &task_id, "the MCP client closed the call").await {
                tracing::debug!(error = %e, task = %task_id, "the task of a closed MCP call was not cancelled");
            }
            Err(Stop::Closed)
        }
    }
}

/// The answer of a call whose task did not rest within `--mcp-call-timeout`: the task goes
/// on (it is not canceled), and the answer names it so the client can read it later.
pub(super) fn still_working(app: &McpState, task_id: &str) -> CallToolResult {
    let waited = app.config.call_timeout.as_millis();
    let result = tool_error(
        "STILL_WORKING",
        json!({
            "taskId": task_id,
            "waitedMs": waited,
            "reason": format!(
                "task {task_id} goes on after this call's {waited} ms wait; read it with AIP get or A2A GetTask"
            ),
        }),
    );
    with_task(result, task_id)
}

/// The error of a call its client closed (nobody reads it: the stream is gone).
pub(super) fn closed() -> ErrorData {
    ErrorData::internal_error("the call was cancelled", None)
}

/// Cancel task `task_id` of the caller with `text` as the reason (an ended task, or one never
/// started, refuses).
pub(super) async fn cancel(
    app: &McpState,
    caller: &Caller,
    task_id: &str,
    text: &str,
) -> Result<Task, EngineError> {
    cancel_under(app, caller, task_id, text, POLICY).await
}

/// [`cancel`] under `policy` (the tasks extension's answers at once).
pub(super) async fn cancel_under(
    app: &McpState,
    caller: &Caller,
    task_id: &str,
    text: &str,
    policy: CommandPolicy,
) -> Result<Task, EngineError> {
    let inbound = Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            data_items: vec![DataItem::text(text)],
            ..LeaderCommand::cancel_of(task_id)
        },
        owner: caller.owner.clone(),
        policy,
    };
    let reply = app.engine.command(&caller.agent, inbound, None).await?;
    Ok(reply.task)
}

/// A command of the MCP door naming task `task_id` (a start's id is chosen by the door).
pub(super) fn command(
    caller: &Caller,
    kind: CommandKind,
    task_id: &str,
    items: Vec<DataItem>,
    params: Map<String, Value>,
) -> Inbound {
    Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            id: format!("mcp-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command: kind,
            params,
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

/// Carry out `inbound` (a start or a continue) for `caller`, reporting its task's progress to
/// `peer` under `token`; the task as it rests (or as it is when its `responseTimeout` ends).
async fn follow(
    app: &McpState,
    caller: &Caller,
    inbound: Inbound,
    token: ProgressToken,
    peer: &Peer<RoleServer>,
) -> Result<Task, EngineError> {
    let start = app.engine.stream(&caller.agent, inbound, None).await?;
    let StreamStart::Events(mut feed) = start else {
        return Err(EngineError::Internal(
            "a call's command was answered without its task's events",
        ));
    };
    let task_id = feed.key().task.clone();
    let mut progress = Progress::new(token, &task_id, feed.completes_on_result());
    let within = feed.response_timeout();
    let followed = async {
        loop {
            let batch = match feed.next_batch().await {
                Ok(batch) if batch.is_empty() => return,
                Ok(batch) => batch,
                Err(e) => {
                    // The result is read from the task itself: only the progress stops here.
                    tracing::warn!(error = %e, task = %task_id, "an MCP call's progress could not be read");
                    return;
                }
            };
            let (notes, rested) = progress.batch(&batch);
            for note in notes {
                if let Err(e) = peer.notify_progress(note).await {
                    // The client is gone: its call's token is cancelled too (call.rs).
                    tracing::debug!(error = %e, task = %task_id, "a progress notification was not sent");
                    return;
                }
            }
            if rested {
                return;
            }
        }
    };
    // Still running at the end of the wait: answered as it is, as an AIP start would be.
    let _ = tokio::time::timeout(within, followed).await;
    let reply = app
        .engine
        .read(&caller.agent, caller.owner.as_deref(), &task_id)
        .await?;
    Ok(reply.task)
}
