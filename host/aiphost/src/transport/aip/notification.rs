//! The notification style's methods (spec 6.3): `notification/set`, `get`, `delete` and `start`.

use super::state::AipState;
use crate::agent::Agent;
use crate::aip_error;
use crate::model::CommandKind;
use crate::model::notification::NotificationConfig;
use crate::protocol::RpcError;
use crate::protocol::aip::notification;
use crate::redact;
use crate::store::TaskKey;
use crate::task::Subscribe;
use serde_json::{Value, json};
use std::sync::Arc;

/// A stored config as it is shown: the credentials of a URL stored before they were refused
/// are not.
fn shown(config: NotificationConfig) -> NotificationConfig {
    NotificationConfig {
        url: redact::url(&config.url),
        ..config
    }
}

/// Create (no `id`) or update a config. The URL must be http(s), carry no user name or password
/// and, unless the operator allows private targets, not point at a forbidden address: the
/// engine's rule (`TaskEngine::set_notification_config`), the same for every door.
pub(super) async fn set(
    app: &AipState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let p = notification::parse_set(params)?;
    let key = TaskKey::owned(agent.id(), owner, &p.task_id);
    let config = app
        .engine
        .set_notification_config(&key, p)
        .await
        .map_err(aip_error::engine)?;
    Ok(json!(config))
}

/// One config, or all of a task's.
pub(super) fn get(
    app: &AipState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let p = notification::parse_id(params)?;
    let key = TaskKey::owned(agent.id(), owner, &p.task_id);
    let configs = app
        .engine
        .notification_configs(&key, p.config_id.as_deref())
        .map_err(aip_error::engine)?;
    Ok(json!(configs.into_iter().map(shown).collect::<Vec<_>>()))
}

/// Delete one config, or all of a task's.
pub(super) async fn delete(
    app: &AipState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let p = notification::parse_id(params)?;
    let key = TaskKey::owned(agent.id(), owner, &p.task_id);
    app.engine
        .delete_notification_configs(&key, p.config_id.as_deref())
        .await
        .map_err(aip_error::engine)?;
    Ok(json!({"success": true}))
}

/// A start whose `commandParams` name a config (and optionally the states to notify).
pub(super) async fn start(
    app: &AipState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: Value,
) -> Result<super::command::TaskAnswer, RpcError> {
    let field = if params.get("command").is_some_and(Value::is_object) {
        "params.command"
    } else {
        "params.message"
    };
    let inbound = super::command::parse_command_of(owner, params)?;
    if inbound.command.command != CommandKind::Start {
        return Err(RpcError::invalid_params(
            &format!("{field}.command"),
            format!(
                "notification/start carries a start command, not {}",
                inbound.command.command
            ),
        ));
    }
    if inbound.command.task_id.is_none() {
        return Err(RpcError::invalid_params(
            &format!("{field}.taskId"),
            "notification/start needs the taskId its notification config was made for",
        ));
    }
    let subscription = notification::parse_subscription(&inbound.command.params)?;
    super::command::command(app, agent, inbound, Some(Subscribe::Named(subscription))).await
}
