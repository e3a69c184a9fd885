//! Push notification configs (spec 3.1.7–3.1.10): made, read, listed and deleted per task,
//! or sent along with a message; delivered through the same durable outbox, retries and address
//! policy as AIP's notifications (`crate::notify`), rendered as A2A `StreamResponse`s.
//!
//! A config made while its task lives is subscribed to the task's status changes at once (under
//! the task's lock, so no change slips between); one sent with a message goes to the engine with
//! the message's command, which stores it in the same write as the change the message makes (or,
//! if the message is refused, not at all). A config made for an ended task is stored (A2A lets
//! clients make one) and never used. Every change a client of A2A can see is notified:
//! awaiting-completion is only a step on the way to completed under A2A's policy. Where a
//! config's URL may point is the engine's rule, the same as for AIP's notification configs.

use super::common::{admit_read, field, object};
use super::entry::Caller;
use super::errors;
use super::state::A2aState;
use crate::model::notification::NotificationConfig;
use crate::model::{Inbound, TaskState};
use crate::protocol::a2a::{self, A2aError, A2aErrorKind, PushConfig};
use crate::task::Subscribe;
use base64::Engine as _;
use serde_json::{Value, json};

/// The states whose entry a push config is told of.
fn notified_states() -> Vec<TaskState> {
    TaskState::ALL
        .into_iter()
        .filter(|s| *s != TaskState::AwaitingCompletion)
        .collect()
}

/// The config `push` that came with `inbound`, as the engine stores it with the message's
/// change (a start gets its task id here, so the config can name it).
pub(super) fn inline(
    caller: &Caller,
    inbound: &mut Inbound,
    push: Option<PushConfig>,
) -> Option<Subscribe> {
    let push = push?;
    let task_id = inbound
        .command
        .task_id
        .get_or_insert_with(|| format!("task-{}", uuid::Uuid::new_v4()))
        .clone();
    let config = NotificationConfig {
        format: caller.notice_format().form(),
        ..push.into_config(&task_id)
    };
    Some(Subscribe::Inline {
        config,
        states: notified_states(),
    })
}

/// `CreateTaskPushNotificationConfig`. `path_task`: the task the HTTP+JSON path names (the
/// body's `taskId` otherwise, which must agree if both are given).
pub(super) async fn create(
    app: &A2aState,
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
        format: caller.notice_format().form(),
        ..push.into_config(&task_id)
    };
    let config = app
        .engine
        .put_push_config(&key, config, notified_states())
        .await
        .map_err(errors::engine)?;
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
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let (task, id) = config_ref(params)?;
    admit_read(caller)?;
    let configs = app
        .engine
        .notification_configs(&caller.key(&task), None)
        .map_err(errors::engine)?;
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
    app: &A2aState,
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
        .map_err(errors::engine)?;
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
    app: &A2aState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, A2aError> {
    let (task, id) = config_ref(params)?;
    admit_read(caller)?;
    app.engine
        .delete_push_config(&caller.key(&task), &id)
        .await
        .map_err(errors::engine)?;
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
