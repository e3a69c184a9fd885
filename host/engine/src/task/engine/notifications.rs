//! The notification configs of a task (spec 6.3): where its changes are POSTed. A config may be
//! made before its task starts; a start names one to be notified through it.
//!
//! Both are bounded, so that no Leader can grow the disk with configs: a task has at most
//! [`MAX_CONFIGS_PER_TASK`], and a namespace (a partner and an authenticated Leader, or a
//! partner's shared namespace) holds at most [`MAX_WAITING_CONFIGS`] configs of tasks that have
//! not started. A waiting config whose task has not started [`WAITING_CONFIG_TTL`] after it was
//! made is deleted when the namespace is full.
//!
//! Where a config may point is checked here, below every door, with the address policy the
//! engine was given ([`crate::task::TaskDefaults::webhook_targets`]). A config sent with a command
//! ([`Subscribe::Inline`], A2A's message) is stored in the same write as the change the command
//! makes, or, if the command is refused, not at all.

use super::slots::SlotState;
use super::{ConfigRef, EngineError, TaskEngine};
use aiphost_model::notification::{NotificationConfig, SetConfig, Subscription};
use aiphost_model::{TaskState, Timestamp};
use aiphost_store::{StoreError, TaskKey};
use std::time::Duration;

/// How a command subscribes its task to notifications.
#[derive(Clone, Debug)]
pub enum Subscribe {
    /// A start subscribes its task to a config the task has already (AIP `notification/start`).
    Named(Subscription),
    /// A config sent with the command (A2A's `configuration.taskPushNotificationConfig`): the
    /// task's status changes that `states` lets through (empty: every one) go to it from the
    /// command's change on, stored with that change.
    Inline {
        /// The config, replacing the task's config with its id if there is one.
        config: NotificationConfig,
        /// The states whose entry it is told of.
        states: Vec<TaskState>,
    },
}

/// A [`Subscribe`] split into what a start records and what is stored with the change.
pub(super) struct Split {
    pub(super) notify: Option<Subscription>,
    pub(super) inline: Option<(NotificationConfig, Vec<TaskState>)>,
}

/// The most notification configs one task may have.
pub const MAX_CONFIGS_PER_TASK: usize = 16;
/// The most configs of tasks that have not started one namespace may hold.
pub const MAX_WAITING_CONFIGS: usize = 1024;
/// How long a config made before its task waits for the task to start.
pub const WAITING_CONFIG_TTL: Duration = Duration::from_secs(600);

impl TaskEngine {
    /// Create (no id) or replace (the id of one of the task's configs) a config of `key`'s task,
    /// durably. The task need not exist yet. A URL the address policy refuses is
    /// [`EngineError::TargetRefused`].
    pub async fn set_notification_config(
        &self,
        key: &TaskKey,
        set: SetConfig,
    ) -> Result<NotificationConfig, EngineError> {
        self.check_target(&set.url, false).await?;
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
    /// task that does not exist is TaskNotFound, a URL the address policy refuses
    /// [`EngineError::TargetRefused`].
    pub async fn put_push_config(
        &self,
        key: &TaskKey,
        config: NotificationConfig,
        states: Vec<TaskState>,
    ) -> Result<NotificationConfig, EngineError> {
        self.check_target(&config.url, false).await?;
        let store = &self.inner.store;
        let slot = self.hold(key);
        // Under the slot's lock, so that no status change is written between storing the
        // config and subscribing the task to it.
        let mut st = slot.state.lock().await;
        self.ensure_loaded(&slot, &mut st).await?;
        if st.record.is_none() {
            return Err(EngineError::task_not_found(&key.task));
        }
        self.take_inline(key, &mut st, config.clone(), states)?;
        self.store_change(&slot, &mut st, Vec::new(), false).await?;
        let ticket = st.ticket;
        drop(st);
        store.durable(ticket).await?;
        Ok(config)
    }

    /// Take `config` into the slot's task, to be stored with its next change: room for it is
    /// checked (unless it replaces one), and a task that has not ended is subscribed to it with
    /// `states` unless it is already.
    pub(super) fn take_inline(
        &self,
        key: &TaskKey,
        st: &mut SlotState,
        config: NotificationConfig,
        states: Vec<TaskState>,
    ) -> Result<(), EngineError> {
        let store = &self.inner.store;
        let known = store.config(key, &config.id)?.is_some()
            || st.unwritten.configs.iter().any(|c| c.id == config.id);
        if !known {
            self.room_for_a_config(key, true)?;
        }
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
                if store.config(key, &s.config_id)?.is_some()
                    || st.unwritten.configs.iter().any(|c| c.id == s.config_id)
                {
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
        }
        st.unwritten.configs.retain(|c| c.id != config.id);
        st.unwritten.configs.push(config);
        Ok(())
    }

    /// Refused ([`EngineError::TargetRefused`]) unless `url` is one the host may call back
    /// under its address policy. `with_command`: the config came with a command.
    pub(super) async fn check_target(
        &self,
        url: &str,
        with_command: bool,
    ) -> Result<(), EngineError> {
        self.inner
            .defaults
            .webhook_targets
            .check(url)
            .await
            .map(drop)
            .map_err(|reason| EngineError::TargetRefused {
                with_command,
                reason,
            })
    }

    /// Refused unless an inline config's URL passes the address policy: checked before the
    /// command is admitted, as the doors did.
    pub(super) async fn check_inline_target(
        &self,
        subscribe: Option<&Subscribe>,
    ) -> Result<(), EngineError> {
        match subscribe {
            Some(Subscribe::Inline { config, .. }) => self.check_target(&config.url, true).await,
            _ => Ok(()),
        }
    }

    /// What `subscribe` asks of a command on `key`'s task (`start`: the command is a start),
    /// checked before the command is let into its slot: a named config exists.
    pub(super) fn split_subscribe(
        &self,
        key: &TaskKey,
        subscribe: Option<Subscribe>,
        start: bool,
    ) -> Result<Split, EngineError> {
        Ok(match subscribe {
            None => Split {
                notify: None,
                inline: None,
            },
            Some(Subscribe::Named(subscription)) => {
                self.check_subscription(key, &subscription)?;
                Split {
                    notify: Some(subscription),
                    inline: None,
                }
            }
            Some(Subscribe::Inline { config, states }) => {
                // A start subscribes its new task as `notification/start` does; a later
                // command adds the config to the task's push list.
                let notify = start.then(|| Subscription {
                    config_id: config.id.clone(),
                    states: states.clone(),
                });
                Split {
                    notify,
                    inline: Some((config, states)),
                }
            }
        })
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
