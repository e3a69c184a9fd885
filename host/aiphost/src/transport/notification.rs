//! The notification style's methods (spec 6.3): `notification/set`, `get`, `delete` and `start`.

use super::AppState;
use crate::agent::Agent;
use crate::notify::policy;
use crate::protocol::notification::{self, NotificationConfig};
use crate::protocol::{CommandKind, RpcError};
use crate::store::{StoreError, TaskKey};
use crate::task::TaskRecord;
use serde_json::{Value, json};
use std::sync::Arc;

fn store_error(e: StoreError) -> RpcError {
    tracing::error!(error = %e, "store failure in a notification method");
    RpcError::internal("the host could not read or store notification configs; retry")
}

fn parse_config(bytes: &[u8]) -> Result<NotificationConfig, RpcError> {
    serde_json::from_slice(bytes).map_err(|e| store_error(StoreError::Corrupt(e.to_string())))
}

/// A stored config as it is shown: the credentials of a URL stored before they were refused
/// are not.
fn shown_config(bytes: &[u8]) -> Result<NotificationConfig, RpcError> {
    let config = parse_config(bytes)?;
    Ok(NotificationConfig {
        url: policy::redact(&config.url),
        ..config
    })
}

/// Create (no `id`) or update a config. The URL must be http(s), carry no user name or password
/// and, unless the operator allows private targets, resolve only to public addresses.
pub async fn set(
    app: &AppState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let p = notification::parse_set(params)?;
    let url = policy::check_url(&p.url)
        .map_err(|e| RpcError::invalid_params("params.url", e.to_string()))?;
    policy::resolve_checked(&url, app.notifier.allows_private())
        .await
        .map_err(|e| RpcError::invalid_params("params.url", e.to_string()))?;
    let store = app.engine.store();
    let key = TaskKey::owned(agent.id(), owner, &p.task_id);
    let id = match p.id {
        Some(id) => {
            if store.config(&key, &id).map_err(store_error)?.is_none() {
                return Err(RpcError::invalid_params(
                    "params.id",
                    format!(
                        "no notification config {id:?} for task {:?}; omit the id to create one",
                        p.task_id
                    ),
                ));
            }
            id
        }
        None => format!("notification-{}", uuid::Uuid::new_v4()),
    };
    let config = NotificationConfig {
        id,
        url: p.url,
        token: p.token,
        task_id: p.task_id,
    };
    let bytes =
        serde_json::to_vec(&config).map_err(|e| store_error(StoreError::Corrupt(e.to_string())))?;
    let ticket = store
        .put_config(&key, &config.id, &bytes)
        .map_err(store_error)?;
    store.durable(ticket).await.map_err(store_error)?;
    Ok(json!(config))
}

/// Whether the task exists (configs may be made before it starts).
fn task_exists(app: &AppState, key: &TaskKey) -> Result<bool, RpcError> {
    Ok(app
        .engine
        .store()
        .load_task::<TaskRecord>(key)
        .map_err(store_error)?
        .is_some())
}

fn unknown_config(id: &str, task: &str) -> RpcError {
    RpcError::invalid_params(
        "params.notificationConfigId",
        format!("no notification config {id:?} for task {task:?}"),
    )
}

/// One config, or all of a task's.
pub fn get(
    app: &AppState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let p = notification::parse_id(params)?;
    let key = TaskKey::owned(agent.id(), owner, &p.task_id);
    let store = app.engine.store();
    let configs = match &p.config_id {
        Some(id) => match store.config(&key, id).map_err(store_error)? {
            Some(bytes) => vec![shown_config(&bytes)?],
            None => return Err(unknown_config(id, &p.task_id)),
        },
        None => store
            .configs(&key)
            .map_err(store_error)?
            .iter()
            .map(|b| shown_config(b))
            .collect::<Result<Vec<_>, _>>()?,
    };
    if configs.is_empty() && !task_exists(app, &key)? {
        return Err(RpcError::task_not_found(&p.task_id));
    }
    Ok(json!(configs))
}

/// Delete one config, or all of a task's.
pub async fn delete(
    app: &AppState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let p = notification::parse_id(params)?;
    let key = TaskKey::owned(agent.id(), owner, &p.task_id);
    let store = app.engine.store();
    let (deleted, ticket) = store
        .delete_configs(&key, p.config_id.as_deref())
        .map_err(store_error)?;
    if deleted == 0 {
        if let Some(id) = &p.config_id {
            return Err(unknown_config(id, &p.task_id));
        }
        if !task_exists(app, &key)? {
            return Err(RpcError::task_not_found(&p.task_id));
        }
    }
    store.durable(ticket).await.map_err(store_error)?;
    Ok(json!({"success": true}))
}

/// A start whose `commandParams` name a config (and optionally the states to notify).
pub async fn start(
    app: &AppState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let inbound = super::aip::parse_command_of(owner, params)?;
    let field = if params.get("command").is_some_and(Value::is_object) {
        "params.command"
    } else {
        "params.message"
    };
    if inbound.command.command != CommandKind::Start {
        return Err(RpcError::invalid_params(
            &format!("{field}.command"),
            format!(
                "notification/start carries a start command, not {}",
                inbound.command.command
            ),
        ));
    }
    let task_id = inbound.command.task_id.clone().ok_or_else(|| {
        RpcError::invalid_params(
            &format!("{field}.taskId"),
            "notification/start needs the taskId its notification config was made for",
        )
    })?;
    let subscription = notification::parse_subscription(&inbound.command.params)?;
    let key = TaskKey::owned(agent.id(), owner, &task_id);
    if app
        .engine
        .store()
        .config(&key, &subscription.config_id)
        .map_err(store_error)?
        .is_none()
    {
        return Err(RpcError::invalid_params(
            "commandParams.notificationConfigId",
            format!(
                "no notification config {:?} for task {task_id:?}; make one with notification/set",
                subscription.config_id
            ),
        ));
    }
    super::aip::command(app, agent, inbound, Some(subscription)).await
}
