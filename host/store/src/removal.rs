//! Removing everything the store holds for one agent, when its tenant is removed: its tasks
//! (each with everything kept for it, as retention deletes one), the entries of the time indexes
//! that still name it, and its key-value entries. Each step deletes in batches and may be run
//! again: a removal cut short by a crash is finished by running it again.

use super::{Store, StoreError, TaskKey, Ticket, parts};

/// Keys deleted per sled batch: a removal never holds one large batch that other writers wait
/// behind.
const BATCH_KEYS: usize = 512;

/// The time indexes, whose keys start with an instant, not the agent: `d` deadlines, `x` ended,
/// `r` due for deletion (`lib.rs`, `retention.rs`).
const TIME_INDEXES: [u8; 3] = [b'd', b'x', b'r'];

impl Store {
    /// At most `limit` of `agent`'s tasks, in key order.
    pub fn agent_tasks(&self, agent: &str, limit: usize) -> Result<Vec<TaskKey>, StoreError> {
        let mut prefix = b"t\0".to_vec();
        prefix.extend_from_slice(agent.as_bytes());
        prefix.push(0);
        self.inner
            .tasks
            .scan_prefix(&prefix)
            .keys()
            .take(limit)
            .map(|k| {
                let k = k?;
                k.get(prefix.len()..)
                    .and_then(|scoped| std::str::from_utf8(scoped).ok())
                    .map(|scoped| TaskKey::from_scoped(agent, scoped))
                    .ok_or_else(|| StoreError::Corrupt("malformed task record key".into()))
            })
            .collect()
    }

    /// Delete a task of a removed agent and everything kept for it, as [`Store::delete_task`]
    /// does, but for its ended-task and retention index entries, which
    /// [`Store::purge_agent`] finds. `deadline`: the deadline entry it may hold. The caller
    /// keeps the task's other writers away (the engine holds its slot).
    pub fn delete_removed_task(
        &self,
        key: &TaskKey,
        deadline: Option<i64>,
    ) -> Result<Ticket, StoreError> {
        let mut batch = self.task_deletion(key)?;
        if let Some(at) = deadline {
            batch.remove(key.deadline_key(at));
        }
        self.inner.tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Delete what is left of `agent` once its tasks are gone: the time index entries that
    /// name it and its key-value entries (its own and its tasks'), large values' parts
    /// included. Returns how many entries went.
    pub fn purge_agent(&self, agent: &str) -> Result<(usize, Ticket), StoreError> {
        let mut deleted = 0;
        let tasks = &self.inner.tasks;
        for tag in TIME_INDEXES {
            let mut batch = sled::Batch::default();
            let mut in_batch = 0;
            // One pass over the index: its keys are small, and a removal runs it once.
            for k in tasks.scan_prefix([tag, 0]).keys() {
                let k = k?;
                let (_, task) = TaskKey::from_timed_key(&k)?;
                if task.agent != agent {
                    continue;
                }
                batch.remove(k);
                in_batch += 1;
                if in_batch == BATCH_KEYS {
                    tasks.apply_batch(std::mem::take(&mut batch))?;
                    deleted += in_batch;
                    in_batch = 0;
                }
            }
            tasks.apply_batch(batch)?;
            deleted += in_batch;
        }
        // Listing entries whose task went without them (none, unless a step was cut short).
        let mut batch = sled::Batch::default();
        deleted += self.unlist_agent(agent, &mut batch)?;
        tasks.apply_batch(batch)?;
        let kv = &self.inner.kv;
        let mut prefix = agent.as_bytes().to_vec();
        prefix.push(0);
        loop {
            let mut batch = sled::Batch::default();
            let mut in_batch = 0;
            for entry in kv.scan_prefix(&prefix).take(BATCH_KEYS) {
                let (k, head) = entry?;
                parts::remove(&mut batch, &k, &head);
                in_batch += 1;
            }
            kv.apply_batch(batch)?;
            deleted += in_batch;
            if in_batch < BATCH_KEYS {
                return Ok((deleted, self.inner.commit.written()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::WriteNow;
    use crate::{Encoded, KvScope, Store, TaskKey, TaskWrite};

    /// Every key and value of the store's trees, as text.
    fn everything(store: &Store) -> Vec<String> {
        [&store.inner.tasks, &store.inner.kv]
            .into_iter()
            .flat_map(|tree| tree.iter().map(|e| e.unwrap()))
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(&k),
                    String::from_utf8_lossy(&v)
                )
            })
            .collect()
    }

    /// A removed agent's tasks (waiting, running, ended and due for deletion), their large
    /// values' parts, its index entries and key-value entries all go; another agent's stay.
    #[tokio::test]
    async fn purging_an_agent_leaves_nothing_of_it_and_all_of_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let big = "x".repeat(3 * crate::PART_BYTES);
        for agent in ["gone", "kept"] {
            for i in 0..5 {
                let key = TaskKey::owned(agent, Some("L"), &format!("{agent}-task-{i}"));
                let record = Encoded::of(&format!("{agent}-record-{i} {big}")).unwrap();
                let event = Encoded::of(&format!("{agent}-event-{i}")).unwrap();
                store
                    .write_task_now(TaskWrite {
                        events: vec![(1, event)],
                        deadline: (None, (i == 0).then_some(9_000)),
                        live: (None, (i == 1).then_some(crate::Liveness::Running)),
                        ended_at: (i > 1).then_some(1_000 + i),
                        delete_at: (i == 3).then_some(5_000),
                        listing: Some(crate::Listing {
                            changed_ms: 1_000 + i,
                            state: aiphost_model::TaskState::Working,
                            session: Some(format!("{agent}-session")),
                        }),
                        ..TaskWrite::record_only(&key, record)
                    })
                    .unwrap();
                let scoped = key.scoped_task();
                store
                    .kv_set(
                        agent,
                        KvScope::Task(&scoped),
                        "k",
                        format!("{agent}-tkv {big}").as_bytes(),
                    )
                    .unwrap();
            }
            store
                .kv_set(
                    agent,
                    KvScope::Agent,
                    "k",
                    format!("{agent}-akv").as_bytes(),
                )
                .unwrap();
        }
        let before: Vec<String> = everything(&store)
            .into_iter()
            .filter(|e| e.contains("kept"))
            .collect();

        // Two at a time, as the engine deletes them in batches.
        loop {
            let tasks = store.agent_tasks("gone", 2).unwrap();
            if tasks.is_empty() {
                break;
            }
            for key in tasks {
                let deadline = (key.task == "gone-task-0").then_some(9_000);
                store.delete_removed_task(&key, deadline).unwrap();
            }
        }
        let (purged, ticket) = store.purge_agent("gone").unwrap();
        store.durable(ticket).await.unwrap();
        assert_eq!(
            purged,
            3 + 1 + 1,
            "three ended, one due, the agent's own entry"
        );

        let after = everything(&store);
        let left: Vec<&String> = after.iter().filter(|e| e.contains("gone")).collect();
        assert!(left.is_empty(), "{left:?}");
        // Parts of large values too: their keys hold their value's key.
        let kept: Vec<String> = after.into_iter().filter(|e| e.contains("kept")).collect();
        assert_eq!(kept, before, "the other agent's entries are untouched");
        assert_eq!(store.deadlines().unwrap().len(), 1);
        assert_eq!(store.due_for_deletion(10_000, 10).unwrap().len(), 1);
        let all = crate::ListQuery {
            limit: 10,
            ..Default::default()
        };
        assert_eq!(store.list_tasks("gone", Some("L"), &all).unwrap().1, 0);
        assert_eq!(store.list_tasks("kept", Some("L"), &all).unwrap().1, 5);
    }
}
