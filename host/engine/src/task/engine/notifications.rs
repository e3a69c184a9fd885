//! The notification configs of a task (spec 6.3): where its changes are POSTed. A config may be
//! made before its task starts; a start names one to be notified through it.

use super::{EngineError, TaskEngine};
use aiphost_protocol::RpcError;
use aiphost_protocol::notification::{NotificationConfig, SetParams, Subscription};
use aiphost_store::{StoreError, TaskKey};

impl TaskEngine {
    /// Create (no id) or replace (the id of one of the task's configs) a config of `key`'s task,
    /// durably. The task need not exist yet. Whether the URL may be called is the caller's rule
    /// (the notifier's address policy), checked before this.
    pub async fn set_notification_config(
        &self,
        key: &TaskKey,
        set: SetParams,
    ) -> Result<NotificationConfig, EngineError> {
        let store = &self.inner.store;
        let id = match set.id {
            Some(id) => {
                if store.config(key, &id)?.is_none() {
                    return Err(RpcError::invalid_params(
                        "params.id",
                        format!(
                            "no notification config {id:?} for task {:?}; omit the id to create one",
                            set.task_id
                        ),
                    )
                    .into());
                }
                id
            }
            None => format!("notification-{}", uuid::Uuid::new_v4()),
        };
        let config = NotificationConfig {
            id,
            url: set.url,
            token: set.token,
            task_id: set.task_id,
        };
        let ticket = store.put_config(key, &config)?;
        store.durable(ticket).await?;
        Ok(config)
    }

    /// The config `id` of `key`'s task, or (no id) all of them. Not found: an unknown id, or no
    /// configs for a task that does not exist.
    pub fn notification_configs(
        &self,
        key: &TaskKey,
        id: Option<&str>,
    ) -> Result<Vec<NotificationConfig>, EngineError> {
        let store = &self.inner.store;
        let configs = match id {
            Some(id) => match store.config(key, id)? {
                Some(config) => vec![config],
                None => return Err(unknown_config(id, key).into()),
            },
            None => store.configs(key)?,
        };
        if configs.is_empty() && !self.task_exists(key)? {
            return Err(RpcError::task_not_found(&key.task).into());
        }
        Ok(configs)
    }

    /// Delete the config `id` of `key`'s task, or (no id) all of them, durably.
    pub async fn delete_notification_configs(
        &self,
        key: &TaskKey,
        id: Option<&str>,
    ) -> Result<(), EngineError> {
        let store = &self.inner.store;
        let (deleted, ticket) = store.delete_configs(key, id)?;
        if deleted == 0 {
            if let Some(id) = id {
                return Err(unknown_config(id, key).into());
            }
            if !self.task_exists(key)? {
                return Err(RpcError::task_not_found(&key.task).into());
            }
        }
        store.durable(ticket).await?;
        Ok(())
    }

    /// -32602 unless `key`'s task has the config a start subscribes with.
    pub(super) fn check_subscription(
        &self,
        key: &TaskKey,
        subscription: &Subscription,
    ) -> Result<(), EngineError> {
        if self
            .inner
            .store
            .config(key, &subscription.config_id)?
            .is_none()
        {
            return Err(RpcError::invalid_params(
                "commandParams.notificationConfigId",
                format!(
                    "no notification config {:?} for task {:?}; make one with notification/set",
                    subscription.config_id, key.task
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Whether `key`'s task exists (durably or not).
    fn task_exists(&self, key: &TaskKey) -> Result<bool, StoreError> {
        self.inner.store.has_task(key)
    }
}

fn unknown_config(id: &str, key: &TaskKey) -> RpcError {
    RpcError::invalid_params(
        "params.notificationConfigId",
        format!("no notification config {id:?} for task {:?}", key.task),
    )
}
