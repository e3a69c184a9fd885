//! Retention of ended tasks. When a task ends, its write adds `x\0{ended ms}{agent}\0{task}`.
//! After the event retention, [`Store::sweep_ended_events`] drops the task's events and moves the
//! entry to `y\0…` (so later sweeps do not meet it again); after the task retention,
//! [`Store::delete_task`] removes the task and everything kept for it, found through
//! [`Store::ended_before`] in either index.

use super::{KvScope, Store, StoreError, TaskKey, Ticket, kv_key, parts};

/// The index of ended tasks whose events are kept.
const ENDED: u8 = b'x';
/// The index of ended tasks whose events were dropped.
const EVENTS_DROPPED: u8 = b'y';

impl Store {
    /// Drop the events of tasks that ended before `before_ms` (Unix ms); returns how many tasks.
    pub fn sweep_ended_events(&self, before_ms: i64) -> Result<usize, StoreError> {
        let mut swept = 0;
        for (at, task) in self.ended_in(ENDED, before_ms, usize::MAX)? {
            let mut batch = sled::Batch::default();
            for entry in self.inner.tasks.scan_prefix(task.events_prefix()) {
                let (k, head) = entry?;
                parts::remove(&mut batch, &k, &head);
            }
            batch.remove(task.timed_key(ENDED, at));
            batch.insert(task.timed_key(EVENTS_DROPPED, at), &[][..]);
            self.inner.tasks.apply_batch(batch)?;
            swept += 1;
        }
        Ok(swept)
    }

    /// At most `limit` tasks that ended before `before_ms`: `(ended ms, task)`, oldest first
    /// within each index.
    pub fn ended_before(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TaskKey)>, StoreError> {
        let mut ended = self.ended_in(EVENTS_DROPPED, before_ms, limit)?;
        if ended.len() < limit {
            ended.extend(self.ended_in(ENDED, before_ms, limit - ended.len())?);
        }
        Ok(ended)
    }

    fn ended_in(
        &self,
        tag: u8,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TaskKey)>, StoreError> {
        let start = vec![tag, 0];
        let end = TaskKey::new("", "").timed_key(tag, before_ms);
        let mut out = Vec::new();
        for entry in self.inner.tasks.range(start..end) {
            if out.len() >= limit {
                break;
            }
            let (k, _) = entry?;
            let parsed = (|| {
                let at = i64::try_from(u64::from_be_bytes(k.get(2..10)?.try_into().ok()?)).ok()?;
                Some((at, TaskKey::from_tail(k.get(10..)?)?))
            })();
            out.push(parsed.ok_or_else(|| StoreError::Corrupt("malformed ended-task key".into()))?);
        }
        Ok(out)
    }

    /// Delete an ended task and everything kept for it, in one batch: its record, history,
    /// events, product chunks, outbox entries and notifications given up on, notification
    /// configs (and their waiting entries), its index entries (`ended_at`: its ended-task entry;
    /// `deadline`: a deadline entry it may still hold) and its task-scoped key-value entries.
    /// The caller keeps the task's other writers away (the engine holds its slot).
    pub fn delete_task(
        &self,
        key: &TaskKey,
        ended_at: i64,
        deadline: Option<i64>,
    ) -> Result<Ticket, StoreError> {
        // Key-value entries first (another tree, another batch): a crash between the two leaves
        // the task, which the next sweep deletes again.
        let kv = &self.inner.kv;
        let mut batch = sled::Batch::default();
        let scoped = key.scoped_task();
        for entry in kv.scan_prefix(kv_key(&key.agent, KvScope::Task(&scoped), "")) {
            let (k, head) = entry?;
            parts::remove(&mut batch, &k, &head);
        }
        kv.apply_batch(batch)?;
        let tasks = &self.inner.tasks;
        let mut batch = sled::Batch::default();
        let record_key = key.record_key();
        if let Some(head) = tasks.get(&record_key)? {
            parts::remove(&mut batch, &record_key, &head);
        }
        for tag in [b'h', b'e', b'c', b'o', b'g', b'n'] {
            for entry in tasks.scan_prefix(key.tagged_prefix(tag)) {
                let (k, head) = entry?;
                parts::remove(&mut batch, &k, &head);
            }
        }
        for entry in tasks.scan_prefix(key.waiting_task_prefix()).keys() {
            batch.remove(entry?);
        }
        batch.remove(key.live_key());
        batch.remove(key.timed_key(ENDED, ended_at));
        batch.remove(key.timed_key(EVENTS_DROPPED, ended_at));
        if let Some(at) = deadline {
            batch.remove(key.deadline_key(at));
        }
        tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::WriteNow;
    use crate::{ChunkWrite, Encoded, KvScope, OutboxEntry, Outgoing, Store, TaskKey, TaskWrite};
    use aiphost_protocol::notification::NotificationConfig;

    fn raw(bytes: &[u8]) -> Encoded {
        Encoded::of(&serde_json::Value::String(
            String::from_utf8_lossy(bytes).into(),
        ))
        .unwrap()
    }

    /// Every key of the store's trees, as text (for finding what is left of a task).
    fn all_keys(store: &Store) -> Vec<String> {
        [&store.inner.tasks, &store.inner.kv]
            .into_iter()
            .flat_map(|tree| tree.iter().keys().map(|k| k.unwrap()))
            .map(|k| String::from_utf8_lossy(&k).into_owned())
            .collect()
    }

    /// Everything kept for a task, large values in parts included, goes with it; another task
    /// of the same Leader and the agent's own entries stay.
    #[tokio::test]
    async fn deleting_a_task_leaves_nothing_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (doomed, kept) = (
            TaskKey::owned("a", Some("L"), "doomed"),
            TaskKey::owned("a", Some("L"), "kept"),
        );
        let big = vec![b'x'; 3 * crate::PART_BYTES];
        for key in [&doomed, &kept] {
            store
                .write_task_now(TaskWrite {
                    history: vec![(0, raw(&big))],
                    events: vec![(1, raw(b"e1")), (2, raw(&big))],
                    chunks: vec![ChunkWrite {
                        product: "p".into(),
                        seq: 2,
                        items: raw(&big),
                        replaces: false,
                    }],
                    outbox: vec![(
                        2,
                        OutboxEntry {
                            config_id: "c".into(),
                            body: Outgoing::Rendered(serde_json::json!({})),
                            attempts: 0,
                            first_attempt_ms: 0,
                            next_attempt_ms: 0,
                            last_error: None,
                        },
                    )],
                    ended_at: Some(1_000),
                    live: (None, Some(crate::Liveness::Running)),
                    ..TaskWrite::record_only(key, raw(&big))
                })
                .unwrap();
            let config = NotificationConfig {
                id: "c".into(),
                url: "http://127.0.0.1:9/".into(),
                token: "t".into(),
                task_id: key.task.clone(),
            };
            store.put_config(key, &config, Some(1)).unwrap();
            let scoped = key.scoped_task();
            store
                .kv_set("a", KvScope::Task(&scoped), "k", &big)
                .unwrap();
        }
        store
            .kv_set("a", KvScope::Agent, "doomed", b"agent's")
            .unwrap();
        assert!(
            all_keys(&store)
                .iter()
                .any(|k| k.contains("doomed") && !k.starts_with("a\0a"))
        );

        let ended = store.ended_before(1_001, 10).unwrap();
        assert_eq!(ended.len(), 2);
        let ticket = store.delete_task(&doomed, 1_000, None).unwrap();
        store.durable(ticket).await.unwrap();

        let left: Vec<String> = all_keys(&store)
            .into_iter()
            .filter(|k| k.contains("doomed"))
            .collect();
        assert_eq!(
            left,
            vec!["a\0a\0\0doomed".to_string()],
            "only the agent's own entry"
        );
        assert!(!store.has_task(&doomed).unwrap());
        assert!(store.has_task(&kept).unwrap());
        assert_eq!(store.events_after(&kept, 0, 10).unwrap().len(), 2);
        assert_eq!(store.configs(&kept).unwrap().len(), 1);
        assert_eq!(
            store.ended_before(1_001, 10).unwrap(),
            vec![(1_000, kept.clone())]
        );
        // Part keys (0xFF…) of the deleted task are gone too: no key is left but the kept task's,
        // the agent's entry and the store's own marks.
        assert!(all_keys(&store).len() < 40, "{:?}", all_keys(&store));
    }
}
