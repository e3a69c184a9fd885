//! The notification configs of a task (spec 6.3): where its changes are POSTed. A config may be
//! made before its task starts; a start names one to be notified through it.
//!
//! Both are bounded, so that no Leader can grow the disk with configs: a task has at most
//! [`MAX_CONFIGS_PER_TASK`], and a namespace (a partner and an authenticated Leader, or a
//! partner's shared namespace) holds at most [`MAX_WAITING_CONFIGS`] configs of tasks that have
//! not started. A waiting config whose task has not started [`WAITING_CONFIG_TTL`] after it was
//! made is deleted when the namespace is full.

use super::{ConfigRef, EngineError, TaskEngine};
use aiphost_protocol::notification::{NotificationConfig, SetParams, Subscription};
use aiphost_protocol::{TaskState, Timestamp};
use aiphost_store::{StoreError, TaskKey};
use std::time::Duration;

/// The most notification configs one task may have.
pub const MAX_CONFIGS_PER_TASK: usize = 16;
/// The most configs of tasks that have not started one namespace may hold.
pub const MAX_WAITING_CONFIGS: usize = 1024;
/// How long a config made before its task waits for the task to start.
pub const WAITING_CONFIG_TTL: Duration = Duration::from_secs(600);

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
        let started = self.task_exists(key)?;
        let id = match set.id {
            Some(id) => {
                if store.config(key, &id)?.is_none() {
                    return Err(unknown_config(&id, key, ConfigRef::Replace));
                }
                id
            }
            None => {
                self.room_for_a_config(key, started)?;
                format!("notification-{}", uuid::Uuid::new_v4())
            }
        };
        let waiting_since = (!started).then(Timestamp::now_ms);
        let config = NotificationConfig {
            id,
            url: set.url,
            token: set.token,
            task_id: set.task_id,
            ..Default::default()
        };
        let ticket = store.put_config(key, &config, waiting_since)?;
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
                None => return Err(unknown_config(id, key, ConfigRef::Lookup)),
            },
            None => store.configs(key)?,
        };
        if configs.is_empty() && !self.task_exists(key)? {
            return Err(EngineError::task_not_found(&key.task));
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
                return Err(unknown_config(id, key, ConfigRef::Lookup));
            }
            if !self.task_exists(key)? {
                return Err(EngineError::task_not_found(&key.task));
            }
        }
        store.durable(ticket).await?;
        Ok(())
    }

    /// Store config `config` of `key`'s task, replacing the one with its id (A2A's push
    /// notification configs: the client may choose the id), durably. While the task lives, its
    /// status changes that `states` lets through (empty: every one) go to the config from now
    /// on. A config for an ended task is stored and never used (A2A lets clients make one); a
    /// task that does not exist is TaskNotFound unless `may_wait`: then the config waits for a
    /// start that subscribes to it, like one made with `notification/set` before its task.
    pub async fn put_push_config(
        &self,
        key: &TaskKey,
        config: NotificationConfig,
        states: Vec<TaskState>,
        may_wait: bool,
    ) -> Result<NotificationConfig, EngineError> {
        let store = &self.inner.store;
        let slot = self.hold(key);
        // Under the slot's lock, so that no status change is written between storing the
        // config and subscribing the task to it.
        let mut st = slot.state.lock().await;
        self.ensure_loaded(&slot, &mut st).await?;
        let started = st.record.is_some() || self.task_exists(key)?;
        if !started && !may_wait {
            return Err(EngineError::task_not_found(&key.task));
        }
        if store.config(key, &config.id)?.is_none() {
            self.room_for_a_config(key, started)?;
        }
        let ticket = store.put_config(key, &config, (!started).then(Timestamp::now_ms))?;
        let subscribe = st.record.as_ref().is_some_and(|r| {
            !r.state().is_terminal() && r.subscriptions().all(|s| s.config_id != config.id)
        });
        if subscribe {
            // Configs deleted since they were subscribed leave the list, which so stays within
            // the task's count of configs.
            let mut kept = Vec::new();
            for s in st
                .record
                .as_ref()
                .map(|r| r.push.clone())
                .unwrap_or_default()
            {
                if store.config(key, &s.config_id)?.is_some() {
                    kept.push(s);
                }
            }
            kept.push(Subscription {
                config_id: config.id.clone(),
                states,
            });
            if let Some(record) = st.record.as_mut() {
                record.push = kept;
            }
            self.store_change(&slot, &mut st, Vec::new(), false).await?;
        }
        let ticket = st.ticket.max(ticket);
        drop(st);
        store.durable(ticket).await?;
        Ok(config)
    }

    /// Delete config `id` of `key`'s task if it has one (A2A: deleting twice is no error);
    /// TaskNotFound if the task does not exist.
    pub async fn delete_push_config(&self, key: &TaskKey, id: &str) -> Result<(), EngineError> {
        if !self.task_exists(key)? {
            return Err(EngineError::task_not_found(&key.task));
        }
        let store = &self.inner.store;
        let (_, ticket) = store.delete_configs(key, Some(id))?;
        store.durable(ticket).await?;
        Ok(())
    }

    /// Refused (an unknown config) unless `key`'s task has the config a start subscribes with.
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
            return Err(unknown_config(
                &subscription.config_id,
                key,
                ConfigRef::Subscription,
            ));
        }
        Ok(())
    }

    /// Refused (a config quota) unless `key`'s task may have one more config: it has fewer than
    /// [`MAX_CONFIGS_PER_TASK`], and, if it has not started, its namespace holds fewer than
    /// [`MAX_WAITING_CONFIGS`] waiting configs once those whose task started or whose time ran
    /// out are swept. (Concurrent sets may pass the count together: the bound holds up to the
    /// number of requests in flight.)
    fn room_for_a_config(&self, key: &TaskKey, started: bool) -> Result<(), EngineError> {
        let store = &self.inner.store;
        let configs = store.count_configs(key, MAX_CONFIGS_PER_TASK)?;
        if configs >= MAX_CONFIGS_PER_TASK {
            return Err(EngineError::TooManyConfigs {
                task_id: key.task.clone(),
                limit: MAX_CONFIGS_PER_TASK,
            });
        }
        if started || store.count_waiting_configs(key, MAX_WAITING_CONFIGS)? < MAX_WAITING_CONFIGS {
            return Ok(());
        }
        let ttl = i64::try_from(WAITING_CONFIG_TTL.as_millis()).unwrap_or(i64::MAX);
        let (left, _ticket) = store.sweep_waiting_configs(key, Timestamp::now_ms() - ttl)?;
        if left.expired > 0 {
            tracing::info!(expired = left.expired, agent = %key.agent, "notification configs of tasks that never started deleted");
        }
        if left.waiting >= MAX_WAITING_CONFIGS {
            return Err(EngineError::TooManyWaitingConfigs {
                task_id: key.task.clone(),
                limit: MAX_WAITING_CONFIGS,
                ttl_seconds: WAITING_CONFIG_TTL.as_secs(),
            });
        }
        Ok(())
    }

    /// Whether `key`'s task exists (durably or not).
    fn task_exists(&self, key: &TaskKey) -> Result<bool, StoreError> {
        self.inner.store.has_task(key)
    }
}

fn unknown_config(id: &str, key: &TaskKey, named_by: ConfigRef) -> EngineError {
    EngineError::UnknownConfig {
        task_id: key.task.clone(),
        config_id: id.to_string(),
        named_by,
    }
}
