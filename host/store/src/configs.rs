//! A task's notification configs (`n\0{agent}\0{scoped task}\0{config id}` in tree `tasks`) and
//! the index of configs made for tasks that have not started yet ("waiting" configs,
//! `w\0{agent}\0{leader}\0{task}\0{config id}` → when it was made, in ms).
//!
//! A config may be made before its task starts (spec 6.3), so a Leader could make configs for
//! any number of task ids it never starts. The waiting index lets the engine count and expire
//! those per namespace (an agent and a Leader, or an agent's shared namespace) without scanning
//! every config: an entry leaves it when [`Store::sweep_waiting_configs`] finds that its task
//! started, that its config is gone, or that it is older than the cut-off (then its config goes
//! too).

use super::{Store, StoreError, TaskKey, Ticket, from_json, parts, to_json};
use aiphost_model::notification::NotificationConfig;

/// What a sweep of a namespace's waiting configs left and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingConfigs {
    /// Configs still waiting for their task (made after the cut-off, task not started).
    pub waiting: usize,
    /// Configs deleted because they waited since before the cut-off.
    pub expired: usize,
}

impl TaskKey {
    /// `w\0{agent}\0{leader}\0`: the waiting configs of this task's namespace.
    fn waiting_prefix(&self) -> Vec<u8> {
        let leader = self.leader.as_deref().unwrap_or_default();
        let mut k = Vec::with_capacity(4 + self.agent.len() + leader.len() + 48);
        k.extend_from_slice(b"w\0");
        k.extend_from_slice(self.agent.as_bytes());
        k.push(0);
        k.extend_from_slice(leader.as_bytes());
        k.push(0);
        k
    }

    /// `w\0{agent}\0{leader}\0{task}\0`: this task's waiting configs.
    pub(crate) fn waiting_task_prefix(&self) -> Vec<u8> {
        let mut k = self.waiting_prefix();
        k.extend_from_slice(self.task.as_bytes());
        k.push(0);
        k
    }

    fn waiting_key(&self, config: &str) -> Vec<u8> {
        let mut k = self.waiting_task_prefix();
        k.extend_from_slice(config.as_bytes());
        k
    }

    /// The task and config of a waiting entry `tail` (the key after [`Self::waiting_prefix`]).
    fn waiting_entry(&self, tail: &[u8]) -> Option<(TaskKey, String)> {
        let tail = std::str::from_utf8(tail).ok()?;
        // Task ids hold no control characters (`model::task::check_task_id`).
        let (task, config) = tail.split_once('\0')?;
        let key = TaskKey::owned(&self.agent, self.leader.as_deref(), task);
        Some((key, config.to_string()))
    }
}

impl Store {
    /// A notification config of a task.
    pub fn config(
        &self,
        key: &TaskKey,
        config: &str,
    ) -> Result<Option<NotificationConfig>, StoreError> {
        parts::get(&self.inner.tasks, &key.config_key(config))?
            .map(|bytes| from_json(&bytes))
            .transpose()
    }

    /// Every notification config of a task, in id order.
    pub fn configs(&self, key: &TaskKey) -> Result<Vec<NotificationConfig>, StoreError> {
        let tasks = &self.inner.tasks;
        tasks
            .scan_prefix(key.tagged_prefix(b'n'))
            .filter_map(|entry| match entry {
                Ok((k, head)) => parts::assemble(tasks, &k, &head)
                    .and_then(|v| v.map(|v| from_json(&v)).transpose())
                    .transpose(),
                Err(e) => Some(Err(e.into())),
            })
            .collect()
    }

    /// How many notification configs a task has, counting no further than `up_to`.
    pub fn count_configs(&self, key: &TaskKey, up_to: usize) -> Result<usize, StoreError> {
        self.count_keys(&key.tagged_prefix(b'n'), up_to)
    }

    /// Store a notification config (replacing the one with its id). `waiting_since`: the task
    /// has not started; index the config as waiting since then (ms), in the same batch.
    pub fn put_config(
        &self,
        key: &TaskKey,
        config: &NotificationConfig,
        waiting_since: Option<i64>,
    ) -> Result<Ticket, StoreError> {
        self.inner.space.writable()?;
        let value = to_json(config)?;
        let tasks = &self.inner.tasks;
        let config_key = key.config_key(&config.id);
        let _writing = self.inner.keys.lock(&config_key);
        let mut batch = sled::Batch::default();
        let old = tasks.get(&config_key)?;
        parts::insert(
            &mut batch,
            &self.inner.db,
            &config_key,
            &value,
            old.as_deref(),
        )?;
        if let Some(since) = waiting_since {
            batch.insert(key.waiting_key(&config.id), &since.to_be_bytes());
        }
        tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Delete one notification config (`Some`) or all of a task's; returns how many went.
    /// Their waiting entries, if any, go at the next sweep.
    pub fn delete_configs(
        &self,
        key: &TaskKey,
        config: Option<&str>,
    ) -> Result<(usize, Ticket), StoreError> {
        let tasks = &self.inner.tasks;
        let _writing = self.inner.keys.lock(&key.tagged_prefix(b'n'));
        let found: Vec<(sled::IVec, sled::IVec)> = match config {
            Some(id) => {
                let k = key.config_key(id);
                tasks
                    .get(&k)?
                    .map(|head| (sled::IVec::from(k), head))
                    .into_iter()
                    .collect()
            }
            None => tasks
                .scan_prefix(key.tagged_prefix(b'n'))
                .collect::<Result<_, _>>()?,
        };
        let mut batch = sled::Batch::default();
        for (k, head) in &found {
            parts::remove(&mut batch, k, head);
        }
        tasks.apply_batch(batch)?;
        Ok((found.len(), self.inner.commit.written()))
    }

    /// How many configs wait in `key`'s namespace, counting no further than `up_to`.
    pub fn count_waiting_configs(&self, key: &TaskKey, up_to: usize) -> Result<usize, StoreError> {
        self.count_keys(&key.waiting_prefix(), up_to)
    }

    /// How many keys of tree `tasks` start with `prefix`, counting no further than `up_to`.
    fn count_keys(&self, prefix: &[u8], up_to: usize) -> Result<usize, StoreError> {
        let mut n = 0;
        for entry in self.inner.tasks.scan_prefix(prefix).keys().take(up_to) {
            entry?;
            n += 1;
        }
        Ok(n)
    }

    /// Go through the waiting configs of `key`'s namespace: an entry whose task has started or
    /// whose config is gone leaves the index; one made before `cut_off_ms` leaves it with its
    /// config (its task never started). One batch.
    pub fn sweep_waiting_configs(
        &self,
        key: &TaskKey,
        cut_off_ms: i64,
    ) -> Result<(WaitingConfigs, Ticket), StoreError> {
        let tasks = &self.inner.tasks;
        let prefix = key.waiting_prefix();
        let mut batch = sled::Batch::default();
        let mut left = WaitingConfigs {
            waiting: 0,
            expired: 0,
        };
        for entry in tasks.scan_prefix(&prefix) {
            let (k, since) = entry?;
            let Some((task, config)) = key.waiting_entry(&k[prefix.len()..]) else {
                batch.remove(k); // not an entry this version writes
                continue;
            };
            let config_key = task.config_key(&config);
            let head = tasks.get(&config_key)?;
            if self.has_task(&task)? || head.is_none() {
                batch.remove(k);
                continue;
            }
            let since = <[u8; 8]>::try_from(since.as_ref()).map_or(i64::MIN, i64::from_be_bytes);
            match head {
                Some(head) if since < cut_off_ms => {
                    parts::remove(&mut batch, &config_key, &head);
                    batch.remove(k);
                    left.expired += 1;
                }
                _ => left.waiting += 1,
            }
        }
        tasks.apply_batch(batch)?;
        Ok((left, self.inner.commit.written()))
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::WriteNow;
    use crate::{Encoded, Store, TaskKey, TaskWrite};
    use aiphost_model::notification::NotificationConfig;

    fn config(task: &str, id: &str) -> NotificationConfig {
        NotificationConfig {
            id: id.into(),
            url: "http://127.0.0.1:9/hook".into(),
            token: "t".into(),
            task_id: task.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_sweep_forgets_started_tasks_and_expires_configs_of_tasks_that_never_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (old, new, started) = (
            TaskKey::owned("a", Some("L"), "old"),
            TaskKey::owned("a", Some("L"), "new"),
            TaskKey::owned("a", Some("L"), "started"),
        );
        let other = TaskKey::owned("a", Some("M"), "old");
        store
            .put_config(&old, &config("old", "c1"), Some(1_000))
            .unwrap();
        store
            .put_config(&new, &config("new", "c2"), Some(5_000))
            .unwrap();
        store
            .put_config(&started, &config("started", "c3"), Some(1_000))
            .unwrap();
        store
            .put_config(&other, &config("old", "c4"), Some(1_000))
            .unwrap();
        let record = Encoded::of(&serde_json::json!({"id": "started"})).unwrap();
        store
            .write_task_now(TaskWrite::record_only(&started, record))
            .unwrap();
        assert_eq!(store.count_waiting_configs(&old, 100).unwrap(), 3);
        assert_eq!(store.count_waiting_configs(&old, 2).unwrap(), 2);

        let (left, ticket) = store.sweep_waiting_configs(&old, 2_000).unwrap();
        store.durable(ticket).await.unwrap();
        assert_eq!((left.waiting, left.expired), (1, 1));
        assert!(store.config(&old, "c1").unwrap().is_none(), "expired");
        assert!(store.config(&new, "c2").unwrap().is_some(), "still waiting");
        assert!(
            store.config(&started, "c3").unwrap().is_some(),
            "its task started"
        );
        assert_eq!(store.count_waiting_configs(&old, 100).unwrap(), 1);
        // Another Leader's namespace is its own.
        assert_eq!(store.count_waiting_configs(&other, 100).unwrap(), 1);
        assert!(store.config(&other, "c4").unwrap().is_some());
        // A deleted config leaves the index at the next sweep.
        store.delete_configs(&new, None).unwrap();
        let (left, _) = store.sweep_waiting_configs(&new, 0).unwrap();
        assert_eq!((left.waiting, left.expired), (0, 0));
        assert_eq!(store.count_waiting_configs(&new, 100).unwrap(), 0);
    }
}
