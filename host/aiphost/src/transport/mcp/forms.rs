//! Forms at the MCP door (protocol revision 2026-07-28, multi-round-trip requests): a task that
//! rests asking for input is asked of the client in the call's answer, and the client's answer
//! continues it.
//!
//! - **Asking** ([`ask`]): only a client that speaks 2026-07-28 and declared form elicitation in
//!   its request's `clientCapabilities` (the spec: servers MUST NOT send input requests the
//!   client has not declared). The answer is `InputRequired` with one input request, keyed
//!   `{requestId}.{ms}` of the awaiting-input status (unique per asking, the same after a
//!   restart), the form as an elicitation (`aiphost-protocol`'s `mcp::elicitation`: flat schemas
//!   as they are, others as one free-text field), and a `requestState` (`mcp::request_state`)
//!   naming the task, the key, the tool and the wrong answers so far. A client that cannot be
//!   asked gets a result saying input is required and how to give it (`mcp::result`).
//! - **The retry** ([`retry`]): the state is not sealed, so it is checked against the engine:
//!   the task is read in the caller's namespace, must have been started by the tool called
//!   (any task of the caller for `aiphost.continue_task`) and await the very key; else
//!   `FORM_CLOSED`. Then the answer: `accept` continues the task with one data item, the values
//!   tagged as the form's answer (as every door answers a form), and the call goes on as a
//!   first call does (followed, answered, maybe asking the next form); values the engine
//!   refuses (its check against the form's full schema) ask the same form again, the message
//!   led by the failing paths, at most [`MAX_WRONG`] times per call before `INVALID_ANSWER`
//!   (the task keeps waiting); `decline` / `cancel` cancel the task ("the user declined form
//!   trip") and end the call with `INPUT_DECLINED` / `INPUT_CANCELED`.
//! - **`aiphost.continue_task {taskId, values, action}`** ([`continue_task`]): the same answer to
//!   whatever form the caller's task awaits now, for clients that cannot be asked; its result
//!   is the call's result, or the next form.
//!
//! The door checks the form's key itself before the engine checks the values: the engine lets
//! an answer tagged for another form through unchecked, and a stale answer must not reach the
//! partner.

use super::errors;
use super::follow::{self, Stop};
use super::scope::Scope;
use super::state::McpState;
use crate::model::activity::{self, InputRequest};
use crate::model::{CommandKind, DataItem, Task, TaskState};
use crate::protocol::mcp::arguments::{self, ArgumentError};
use crate::protocol::mcp::elicitation::{self, Answer, Elicitation, Unreadable};
use crate::protocol::mcp::request_state::RequestState;
use crate::protocol::mcp::result::{self, CONTINUE_TASK, with_task};
use crate::protocol::mcp::tool_error::tool_error;
use crate::task::EngineError;
use crate::task::forms::FormError;
use crate::transport::kit::caller::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InputRequiredResult, MetaObject,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The most wrong answers one call takes before it ends with `INVALID_ANSWER`.
pub(super) const MAX_WRONG: u32 = 5;

/// How long a form asked by `elicitation/create` (2025-11-25) waits for the client's answer
/// within the call; then the call answers that input is required (`aiphost.continue_task`).
const ELICITATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether this request's client can be asked a form in the call's answer: it speaks
/// 2026-07-28 (multi-round-trip requests) and declared form elicitation (an `elicitation`
/// capability with `form`, or with neither mode, which means form).
fn can_ask(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| !v.has_initialize()) && declared_form(ctx)
}

/// The form `task` awaits now, and the key of this asking.
fn awaited(task: &Task) -> Option<(InputRequest, String)> {
    if task.status.state != TaskState::AwaitingInput {
        return None;
    }
    let form = InputRequest::of(&task.status.data_items)?;
    let key = elicitation::key(&form.request_id, task.status.state_changed_at.unix_millis());
    Some((form, key))
}

/// The answer to a call whose task rests as `task`: its form, when it asks one and the client
/// can be asked (in this answer at 2026-07-28, by `elicitation/create` in a 2025-11-25
/// session), else its result.
pub(super) async fn answer(
    app: &McpState,
    caller: &Caller,
    task: Task,
    tool: &str,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if let Some(asked) = ask(&task, tool, 0, None, ctx) {
        return Ok(asked.into());
    }
    if can_elicit(ctx) && awaited(&task).is_some() {
        return elicit(app, caller, task, tool, ctx).await;
    }
    Ok(unasked(caller, &task, ctx).into())
}

/// `task` as the call's result, to a client that is not asked its form: the result names the
/// tool that answers it (`aiphost.continue_task`, at the host's `/mcp` the partner's
/// `{agent}__aiphost.continue_task`).
fn unasked(caller: &Caller, task: &Task, ctx: &RequestContext<RoleServer>) -> CallToolResult {
    let host = matches!(Scope::of(ctx), Ok(Scope::Host(_)));
    let tool = if host {
        format!("{}__{CONTINUE_TASK}", caller.agent.id())
    } else {
        CONTINUE_TASK.to_string()
    };
    result::render_named(task, &caller.agent.manifest.agent.name, &tool)
}

/// Whether this request's client can be asked a form by `elicitation/create` in its session: it
/// speaks a revision with sessions (2025-11-25 and before) and declared form elicitation.
fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| v.has_initialize()) && declared_form(ctx)
}

/// Whether the client declared form elicitation (an `elicitation` capability with `form`, or
/// with neither mode, which means form).
fn declared_form(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Ask the form `task` awaits of a 2025-11-25 client, in its session, until the task no longer
/// awaits one (then its result), the user declines or cancels, or [`MAX_WRONG`] answers are
/// wrong. A client that does not answer within [`ELICITATION_TIMEOUT`] (or whose session is
/// gone) gets the input-required result, naming `aiphost.continue_task`: the task waits on,
/// durably, for its own `awaitingInputTimeout`. `notifications/cancelled` for the call (rmcp
/// cancels its token) cancels the task, as for a 2026-07-28 call whose stream closes.
async fn elicit(
    app: &McpState,
    caller: &Caller,
    mut task: Task,
    tool: &str,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let mut wrong_answers = 0;
    let mut note: Option<String> = None;
    loop {
        let Some((form, key)) = awaited(&task) else {
            return Ok(unasked(caller, &task, ctx).into());
        };
        let elicitation = Elicitation::of(&form, note.as_deref());
        let request = ctx
            .peer
            .create_elicitation_with_timeout(elicitation.params.clone(), Some(ELICITATION_TIMEOUT));
        let answered = tokio::select! {
            answered = request => answered,
            () = ctx.ct.cancelled() => {
                let why = "the MCP client cancelled the call";
                if let Err(e) = follow::cancel(app, caller, &task.id, why).await {
                    tracing::debug!(error = %e, task = %task.id, "the task of a cancelled MCP call was not cancelled");
                }
                return Err(follow::closed());
            }
        };
        let result = match answered {
            Ok(result) => result,
            Err(e) => {
                tracing::debug!(error = %e, task = %task.id, "a form asked by elicitation/create was not answered");
                return Ok(unasked(caller, &task, ctx).into());
            }
        };
        let asked = Asked {
            task: &task,
            form: &form,
            key,
            tool,
            wrong: wrong_answers,
        };
        let given = Answer::of(&result, elicitation.fallback);
        match settle(app, caller, &asked, given, ctx).await? {
            Given::Rested(next) => {
                task = next;
                wrong_answers = 0;
                note = None;
            }
            Given::Wrong { note: why, paths } => {
                if wrong_answers + 1 >= MAX_WRONG {
                    return Ok(wrong(asked, &why, paths.as_deref(), ctx));
                }
                wrong_answers += 1;
                note = Some(why);
            }
            Given::Done(response) => return Ok(response),
        }
    }
}

/// The form `task` awaits as the call's `InputRequired` answer, if it awaits one and the client
/// can be asked; `wrong` answers so far, `note` leading the message.
fn ask(
    task: &Task,
    tool: &str,
    wrong: u32,
    note: Option<&str>,
    ctx: &RequestContext<RoleServer>,
) -> Option<InputRequiredResult> {
    if !can_ask(ctx) {
        return None;
    }
    let (form, key) = awaited(task)?;
    Some(asking(task, &form, key, tool, wrong, note))
}

/// `form` of `task`, asked under `key`.
fn asking(
    task: &Task,
    form: &InputRequest,
    key: String,
    tool: &str,
    wrong: u32,
    note: Option<&str>,
) -> InputRequiredResult {
    let state = RequestState {
        task: task.id.clone(),
        key: key.clone(),
        tool: tool.to_string(),
        wrong,
    };
    let request = Elicitation::of(form, note).request();
    let mut meta = MetaObject::default();
    meta.0.insert("aiphost.taskId".into(), json!(task.id));
    InputRequiredResult::new(Some(BTreeMap::from([(key, request)])), Some(state.encode()))
        .with_meta(meta)
}

/// Another round of a call that asked a form: the client's answer, under the `requestState`
/// `state` it echoed.
pub(super) async fn retry(
    app: &McpState,
    caller: &Caller,
    request: &CallToolRequestParams,
    state: &str,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let state =
        RequestState::decode(state).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
    if state.tool != request.name {
        return Err(ErrorData::invalid_params(
            format!(
                "requestState belongs to a call of tool {:?}, not {:?}",
                state.tool, request.name
            ),
            None,
        ));
    }
    let Some(task) = read(app, caller, &state.task).await? else {
        return Ok(form_closed(&state.task, "the task is not one of this caller's").into());
    };
    if request.name != CONTINUE_TASK && tool_of(&task) != Some(request.name.as_ref()) {
        return Ok(form_closed(&task.id, "the task was not started by this tool").into());
    }
    let Some((form, key)) = awaited(&task).filter(|(_, key)| *key == state.key) else {
        return Ok(form_closed(&task.id, &no_longer(&task)).into());
    };
    let Some(response) = request.input_responses.as_ref().and_then(|r| r.get(&key)) else {
        // Retried without an answer to the form: it is still the question.
        return Ok(asking(&task, &form, key, &request.name, state.wrong, None).into());
    };
    let fallback = Elicitation::of(&form, None).fallback;
    let answer = Answer::of_value(response, fallback);
    let asked = Asked {
        task: &task,
        form: &form,
        key,
        tool: &request.name,
        wrong: state.wrong,
    };
    give(app, caller, asked, answer, ctx).await
}

/// `aiphost.continue_task {taskId, values, action}`: answer the form the caller's task awaits.
pub(super) async fn continue_task(
    app: &McpState,
    caller: &Caller,
    request: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let (task_id, answer) = match continue_arguments(request.arguments.as_ref()) {
        Ok(read) => read,
        Err(wrong) => {
            return Ok(tool_error("INVALID_ARGUMENTS", arguments::facts(&wrong)).into());
        }
    };
    let Some(task) = read(app, caller, &task_id).await? else {
        let facts =
            json!({"taskId": task_id, "reason": format!("no task {task_id} of this caller")});
        return Ok(tool_error("TASK_NOT_FOUND", facts).into());
    };
    let Some((form, key)) = awaited(&task) else {
        return Ok(form_closed(&task.id, &no_longer(&task)).into());
    };
    let asked = Asked {
        task: &task,
        form: &form,
        key,
        tool: CONTINUE_TASK,
        wrong: 0,
    };
    give(app, caller, asked, Ok(answer), ctx).await
}

/// A form as it was asked: the task, the form, its key, the tool called and the wrong answers
/// so far.
struct Asked<'a> {
    task: &'a Task,
    form: &'a InputRequest,
    key: String,
    tool: &'a str,
    wrong: u32,
}

/// Give `answer` to the form `asked` (an MRTR retry, `aiphost.continue_task`): continue the
/// task with it, or cancel it; the call's answer.
async fn give(
    app: &McpState,
    caller: &Caller,
    asked: Asked<'_>,
    given: Result<Answer, Unreadable>,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    match settle(app, caller, &asked, given, ctx).await? {
        Given::Rested(task) => answer(app, caller, task, asked.tool, ctx).await,
        Given::Wrong { note, paths } => Ok(wrong(asked, &note, paths.as_deref(), ctx)),
        Given::Done(response) => Ok(response),
    }
}

/// What came of an answer to a form.
enum Given {
    /// The task took it and rests again.
    Rested(Task),
    /// The answer is wrong: `note` says why, `paths` where (when the engine's check said).
    Wrong {
        note: String,
        paths: Option<Vec<ArgumentError>>,
    },
    /// The call is over (declined, cancelled, refused).
    Done(CallToolResponse),
}

/// Give `given` to the form `asked`: continue the task with the values and follow it to its
/// rest, or cancel it on a decline.
async fn settle(
    app: &McpState,
    caller: &Caller,
    asked: &Asked<'_>,
    given: Result<Answer, Unreadable>,
    ctx: &RequestContext<RoleServer>,
) -> Result<Given, ErrorData> {
    let values = match given {
        Ok(Answer::Accept(Value::Object(values))) => values,
        Ok(Answer::Accept(_)) => {
            return Ok(Given::Wrong {
                note: "/: must be an object".into(),
                paths: None,
            });
        }
        Err(Unreadable(why)) => {
            return Ok(Given::Wrong {
                note: why,
                paths: None,
            });
        }
        Ok(Answer::Decline) => {
            return declined(app, caller, asked, "declined", "INPUT_DECLINED")
                .await
                .map(Given::Done);
        }
        Ok(Answer::Cancel) => {
            return declined(app, caller, asked, "canceled", "INPUT_CANCELED")
                .await
                .map(Given::Done);
        }
    };
    let item = DataItem::Data {
        data: values,
        metadata: Some(activity::answer_metadata(&asked.form.request_id)),
    };
    let inbound = follow::command(
        caller,
        CommandKind::Continue,
        &asked.task.id,
        vec![item],
        Default::default(),
    );
    match follow::run(app, caller, inbound, ctx).await {
        Ok(task) => Ok(Given::Rested(task)),
        Err(Stop::Refused(EngineError::Form(FormError::Invalid { errors, .. }))) => {
            let paths: Vec<ArgumentError> = errors
                .into_iter()
                .map(|e| ArgumentError {
                    path: if e.path.is_empty() {
                        "/".into()
                    } else {
                        e.path
                    },
                    message: e.message,
                })
                .collect();
            let note = paths
                .iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            Ok(Given::Wrong {
                note,
                paths: Some(paths),
            })
        }
        Err(Stop::Refused(e)) => errors::engine(e).map(|r| Given::Done(r.into())),
        Err(Stop::Closed) => Err(follow::closed()),
        Err(Stop::Waited) => Ok(Given::Done(
            follow::still_working(app, &asked.task.id).into(),
        )),
    }
}

/// A wrong answer to `asked` (`note` says why, `paths` where): the same form again, led by the
/// note, while the client can be asked and has tries left; else `INVALID_ANSWER`, the task
/// still waiting.
fn wrong(
    asked: Asked<'_>,
    note: &str,
    paths: Option<&[ArgumentError]>,
    ctx: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let wrong = asked.wrong.saturating_add(1);
    if wrong < MAX_WRONG && can_ask(ctx) {
        return asking(
            asked.task,
            asked.form,
            asked.key,
            asked.tool,
            wrong,
            Some(note),
        )
        .into();
    }
    let mut facts = json!({
        "taskId": asked.task.id,
        "requestId": asked.form.request_id,
        "reason": format!("the answer to form {} is wrong: {note}", asked.form.request_id),
    });
    if let Some(paths) = paths {
        facts["errors"] = arguments::facts(paths)["errors"].clone();
    }
    if can_ask(ctx) {
        facts["wrongAnswers"] = json!(wrong);
    }
    with_task(tool_error("INVALID_ANSWER", facts), &asked.task.id).into()
}

/// The user declined (or canceled) the form: the task is cancelled, saying so, and the call
/// ends with `code`.
async fn declined(
    app: &McpState,
    caller: &Caller,
    asked: &Asked<'_>,
    how: &str,
    code: &str,
) -> Result<CallToolResponse, ErrorData> {
    let reason = format!("the user {how} form {}", asked.form.request_id);
    if let Err(e) = follow::cancel(app, caller, &asked.task.id, &reason).await {
        return errors::engine(e).map(Into::into);
    }
    let facts =
        json!({"taskId": asked.task.id, "requestId": asked.form.request_id, "reason": reason});
    Ok(with_task(tool_error(code, facts), &asked.task.id).into())
}

/// `FORM_CLOSED`: the form answered is not the one task `task_id` awaits now.
fn form_closed(task_id: &str, why: &str) -> CallToolResult {
    let facts = json!({"taskId": task_id, "reason": format!("the form answered is closed: {why}")});
    with_task(tool_error("FORM_CLOSED", facts), task_id)
}

/// Why `task` takes no answer to the form asked.
fn no_longer(task: &Task) -> String {
    match awaited(task) {
        Some((form, _)) => format!(
            "the task now awaits another asking of form {}",
            form.request_id
        ),
        None => format!(
            "the task is {} and awaits no form",
            task.status.state.as_str()
        ),
    }
}

/// The caller's task `task_id`; `None` when the caller has none such (or the id is no task id).
async fn read(app: &McpState, caller: &Caller, task_id: &str) -> Result<Option<Task>, ErrorData> {
    match app
        .engine
        .read(&caller.agent, caller.owner.as_deref(), task_id)
        .await
    {
        Ok(reply) => Ok(Some(reply.task)),
        Err(EngineError::TaskNotFound { .. } | EngineError::InvalidInput(_)) => Ok(None),
        Err(e) => errors::engine(e).map(|_| None),
    }
}

/// The tool a task of this door was called as (its start's `commandParams.mcp.tool`).
fn tool_of(task: &Task) -> Option<&str> {
    task.commands
        .iter()
        .find(|c| c.command == CommandKind::Start)?
        .params
        .get("mcp")?
        .get("tool")?
        .as_str()
}

/// `aiphost.continue_task`'s arguments: the task and the answer, or every place they are wrong.
fn continue_arguments(
    arguments: Option<&rmcp::model::JsonObject>,
) -> Result<(String, Answer), Vec<ArgumentError>> {
    let empty = rmcp::model::JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    let mut errors = Vec::new();
    let mut fault = |path: &str, message: &str| {
        errors.push(ArgumentError {
            path: path.into(),
            message: message.into(),
        })
    };
    let task_id = match arguments.get("taskId") {
        Some(Value::String(id)) => id.clone(),
        Some(_) => {
            fault("/taskId", "must be a string");
            String::new()
        }
        None => {
            fault("/taskId", "is required");
            String::new()
        }
    };
    let values = match arguments.get("values") {
        None => Value::Object(Default::default()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            fault("/values", "must be an object");
            Value::Null
        }
    };
    let answer = match arguments.get("action").map(Value::as_str) {
        None | Some(Some("accept")) => Answer::Accept(values),
        Some(Some("decline")) => Answer::Decline,
        Some(Some("cancel")) => Answer::Cancel,
        Some(_) => {
            fault("/action", "must be one of accept, decline, cancel");
            Answer::Cancel
        }
    };
    for key in arguments
        .keys()
        .filter(|k| !matches!(k.as_str(), "taskId" | "values" | "action"))
    {
        fault(
            &format!("/{}", key.replace('~', "~0").replace('/', "~1")),
            "is not an argument of this tool (it takes taskId, values and action)",
        );
    }
    if errors.is_empty() {
        Ok((task_id, answer))
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> rmcp::model::JsonObject {
        match v {
            Value::Object(m) => m,
            _ => Default::default(),
        }
    }

    #[test]
    fn continue_task_reads_its_task_values_and_action() {
        let read = continue_arguments(Some(&args(
            json!({"taskId": "task-1", "values": {"city": "Oslo"}}),
        )));
        assert_eq!(
            read,
            Ok(("task-1".into(), Answer::Accept(json!({"city": "Oslo"}))))
        );
        let read = continue_arguments(Some(&args(json!({"taskId": "t", "action": "decline"}))));
        assert_eq!(read, Ok(("t".into(), Answer::Decline)));
        let read = continue_arguments(Some(&args(json!({"taskId": "t", "action": "cancel"}))));
        assert_eq!(read, Ok(("t".into(), Answer::Cancel)));
        let wrong = continue_arguments(Some(&args(
            json!({"values": [], "action": "maybe", "x~y": 1}),
        )))
        .unwrap_err();
        let paths: Vec<_> = wrong.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["/taskId", "/values", "/action", "/x~0y"]);
    }
}
