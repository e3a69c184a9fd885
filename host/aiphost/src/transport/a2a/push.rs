//! Push notification configs (spec 3.1.7–3.1.10): made, read, listed and deleted per task,
//! or sent along with a message; delivered through the same durable outbox, retries and address
//! policy as AIP's notifications (`crate::notify`), rendered as A2A `StreamResponse`s.
//!
//! A config made while its task lives is subscribed to the task's status changes at once (under
//! the task's lock, so no change slips between); one sent with the message that starts a task is
//! stored first and subscribed by the start itself. A config made for an ended task is stored
//! (A2A lets clients make one) and never used. Every change a client of A2A can see is
//! notified: awaiting-completion is only a step on the way to completed under A2A's policy.

use super::Caller;
use super::operations::{admit_read, engine_error, field, object};
use crate::notify::policy;
use crate::protocol::a2a::{self, A2aError, A2aErrorKind, PushConfig};
use crate::protocol::notification::{NotificationConfig, Subscription};
use crate::protocol::{CommandKind, Inbound, TaskState};
use crate::store::TaskKey;
use crate::transport::AppState;
use base64::Engine as _;
use serde_json::{Value, json};

/// The states whose entry a push config is told of.
fn notified_states() -> Vec<TaskState> {
    TaskState::ALL
        .into_iter()
        .filter(|s| *s != TaskState::AwaitingCompletion)
        .collect()
}

/// Store `config` for `key`'s task once its URL passes the address policy (`path`: where the
/// URL was in the request). A task that does not exist is TaskNotFound unless `may_wait` (the
/// config comes with the message that starts it).
async fn put(
    app: &AppState,
    key: &TaskKey,
    config: NotificationConfig,
    may_wait: bool,
    path: &str,
) -> Result<NotificationConfig, A2aError> {
    policy::check_target(&config.url, app.notifier.allows_private())
        .await
        .map_err(|e| A2aError::invalid_params(&format!("{path}.url"), e.to_string()))?;
    app.engine
        .put_push_config(key, config, notified_states(), may_wait)
        .await
        .map_err(engine_error)
}

/// A config that came with a message and was stored before the message was carried out (so
/// that none of the changes the message causes is missed).
pub(super) struct Inline {
    key: TaskKey,
    id: String,
    /// Whether this request made it (rather than replacing one of the same id).
    made: bool,
}

/// Store the config `push` that came with `inbound` (a start gets its task id here, so the
/// config can be stored under it). Returns what to undo if the message is refused, and, for a
/// start, the subscription the start makes.
pub(super) async fn inline(
    app: &AppState,
    caller: &Caller,
    inbound: &mut Inbound,
    push: Option<PushConfig>,
) -> Result<(Option<Inline>, Option<Subscription>), A2aError> {
    let Some(push) = push else {
        return Ok((None, None));
    };
    let start = inbound.command.command == CommandKind::Start;
    let task_id = inbound
        .command
        .task_id
        .get_or_insert_with(|| format!("task-{}", uuid::Uuid::new_v4()))
        .clone();
    let key = caller.key(&task_id);
    let config = NotificationConfig {
        format: caller.notice_format(),
        ..push.into_config(&task_id)
    };
    let made = start
        || !app
            .engine
            .notification_configs(&key, None)
            .map_err(engine_error)?
            .iter()
            .any(|c| c.id == config.id);
    let path = "configuration.taskPushNotificationConfig";
    let stored = put(app, &key, config, start, path).await?;
    let subscription = start.then(|| Subscription {
        config_id: stored.id.clone(),
        states: notified_states(),
    });
    let inline = Inline {
        key,
        id: stored.id,
        made,
    };
    Ok((Some(inline), subscription))
}

/// Undo `inline` after its message was refused: nothing a refused request made stays.
pub(super) async fn undo(app: &AppState, inline: Option<Inline>) {
    let Some(inline) = inline.filter(|i| i.made) else {
        return;
    };
    if let Err(e) = app
        .engine
        .delete_notification_configs(&inline.key, Some(&inline.id))
        .await
    {
        tracing::warn!(task = %inline.key.task, error = %e,
            "could not delete the push notification config of a refused message");
    }
}

/// `CreateTaskPushNotificationConfig`. `path_task`: the task the HTTP+JSON path names (the
/// body's `taskId` otherwise, which must agree if both are given).
pub(super) async fn create(
    app: &AppState,
    caller: &Caller,
    params: &Value,
    path_task: Option<&str>,
) -> Result<Value, A2aError> {
    let push = a2a::parse_push_config(params, "params")?;
    let task_id = match (path_task, push.task_id.as_deref()) {
        (Some(path), Some(body)) if path != body => {
            return Err(A2aError::invalid_params(
                "taskId",
                format!("is {body:?}, but the path names task {path:?}"),
            ));
        }
        (Some(task), _) | (None, Some(task)) => task.to_string(),
        (None, None) => {
            return Err(A2aError::invalid_params(
                "taskId",
                "is required: the task the config is for",
            ));
        }
    };
    admit_read(caller)?;
    let key = caller.key(&task_id);
    let config = NotificationConfig {
        format: caller.notice_format(),
        ..push.into_config(&task_id)
    };
    let config = put(app, &key, config, false, "params").await?;
    Ok(a2a::render_push_config(&config))
}

/// The task and config a Get or Delete names (`taskId` and `id`; HTTP+JSON: the path's).
fn config_ref(params: &Value) -> Result<(String, String), A2aError> {
    let (task, id) = a2a::parse_config_ref(params, false)?;
    let id = id.ok_or_else(|| A2aError::invalid_params("id", "is required: the config's id"))?;
    Ok((task, id))
}

/// `GetTaskPushNotificationConfig`: TaskNotFound for a config the task does not have.
pub(super) async fn get(
    app: &AppState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let (task, id) = config_ref(params)?;
    admit_read(caller)?;
    let configs = app
        .engine
        .notification_configs(&caller.key(&task), None)
        .map_err(engine_error)?;
    let config = configs.into_iter().find(|c| c.id == id).ok_or_else(|| {
        A2aError::new(
            A2aErrorKind::TaskNotFound,
            json!({
                "taskId": task,
                "configId": id,
                "reason": "the task has no push notification config with this id",
            }),
        )
    })?;
    Ok(a2a::render_push_config(&config))
}

/// `ListTaskPushNotificationConfigs`: the task's configs by id, a page at a time (`pageSize`,
/// default all: a task has only a few).
pub(super) async fn list(
    app: &AppState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let (task, _) = a2a::parse_config_ref(params, false)?;
    let object = object(params)?;
    let page_size = match field(object, "pageSize", "page_size") {
        None => None,
        Some(v) => match a2a::count(v, "pageSize")? {
            0 => None,
            n => Some(n),
        },
    };
    let after = match field(object, "pageToken", "page_token") {
        None => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(read_page_token(s)?),
        Some(_) => return Err(A2aError::invalid_params("pageToken", "must be a string")),
    };
    admit_read(caller)?;
    let mut configs = app
        .engine
        .notification_configs(&caller.key(&task), None)
        .map_err(engine_error)?;
    configs.sort_by(|a, b| a.id.cmp(&b.id));
    configs.retain(|c| after.as_deref().is_none_or(|after| c.id.as_str() > after));
    let more = page_size.is_some_and(|n| configs.len() > n);
    if let Some(n) = page_size {
        configs.truncate(n);
    }
    let next = match configs.last() {
        Some(last) if more => page_token(&last.id),
        _ => String::new(),
    };
    let rendered: Vec<Value> = configs.iter().map(a2a::render_push_config).collect();
    Ok(json!({"configs": rendered, "nextPageToken": next}))
}

/// `DeleteTaskPushNotificationConfig`: deleting a config the task does not have (any more) is
/// no error; a task that does not exist is TaskNotFound.
pub(super) async fn delete(
    app: &AppState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let (task, id) = config_ref(params)?;
    admit_read(caller)?;
    app.engine
        .delete_push_config(&caller.key(&task), &id)
        .await
        .map_err(engine_error)?;
    Ok(json!({}))
}

/// The opaque cursor of a page of configs: the last id it held.
fn page_token(id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}

fn read_page_token(token: &str) -> Result<String, A2aError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| A2aError::invalid_params("pageToken", "is not a token this host gave out"))
}
