//! Retention of ended tasks. When a task ends, its write adds `x\0{ended ms}{agent}\0{task}`
//! (its events go after the event retention: [`Store::sweep_ended_events`]) and, unless it is to
//! be kept for ever, `r\0{delete at ms}{agent}\0{task}` → ended ms, the instant its retention
//! (the operator's, or its tenant's) runs out, fixed when it ends. The deletion sweep reads `r` in
//! time order, so it meets only the tasks that are due, whatever retention each tenant has:
//! [`Store::due_for_deletion`], then [`Store::delete_task`].

use super::packed;
use super::{KvScope, Store, StoreError, TaskKey, Ticket, kv_key, parts};

/// The index of ended tasks by when they ended (event retention).
const ENDED: u8 = b'x';
/// The index of ended tasks by when they are deleted (task retention).
const DELETE: u8 = b'r';

/// An ended task whose retention has run out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueTask {
    /// The task.
    pub key: TaskKey,
    /// When it ended (Unix ms).
    pub ended_at: i64,
    /// When it was due (Unix ms).
    pub delete_at: i64,
}

impl Store {
    /// Drop the events of tasks that ended before `before_ms` (Unix ms); returns how many tasks.
    pub fn sweep_ended_events(&self, before_ms: i64) -> Result<usize, StoreError> {
        let mut swept = 0;
        for (at, task, _) in self.timed(ENDED, before_ms, usize::MAX)? {
            let mut batch = sled::Batch::default();
            for entry in self.inner.tasks.scan_prefix(task.events_prefix()) {
                let (k, head) = entry?;
                parts::remove(&mut batch, &k, &head);
            }
            batch.remove(task.timed_key(ENDED, at));
            self.inner.tasks.apply_batch(batch)?;
            swept += 1;
        }
        Ok(swept)
    }

    /// At most `limit` ended tasks due for deletion at `now_ms`, the earliest due first.
    pub fn due_for_deletion(&self, now_ms: i64, limit: usize) -> Result<Vec<DueTask>, StoreError> {
        self.timed(DELETE, now_ms, limit)?
            .into_iter()
            .map(|(delete_at, key, value)| {
                let ended_at = <[u8; 8]>::try_from(value.as_ref())
                    .map(i64::from_be_bytes)
                    .map_err(|_| StoreError::Corrupt("malformed retention entry".into()))?;
                Ok(DueTask {
                    key,
                    ended_at,
                    delete_at,
                })
            })
            .collect()
    }

    /// Entries of the time index `tag` before `before_ms`: `(ms, task, value)`, oldest first.
    fn timed(
        &self,
        tag: u8,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TaskKey, sled::IVec)>, StoreError> {
        let start = vec![tag, 0];
        let end = TaskKey::new("", "").timed_key(tag, before_ms);
        let mut out = Vec::new();
        for entry in self.inner.tasks.range(start..end) {
            if out.len() >= limit {
                break;
            }
            let (k, value) = entry?;
            let (at, key) = TaskKey::from_timed_key(&k)?;
            out.push((at, key, value));
        }
        Ok(out)
    }

    /// Delete an ended task and everything kept for it: its task-scoped key-value entries, then,
    /// in one batch, its record, history, events, product chunks, outbox entries and
    /// notifications given up on, notification configs (and their waiting entries) and its
    /// index entries (`due` names its retention entries; `deadline`: a deadline entry it may
    /// still hold). The caller keeps the task's other writers away (the engine holds its slot).
    pub fn delete_task(&self, due: &DueTask, deadline: Option<i64>) -> Result<Ticket, StoreError> {
        let key = &due.key;
        let mut batch = self.task_deletion(key)?;
        batch.remove(key.timed_key(ENDED, due.ended_at));
        batch.remove(key.timed_key(DELETE, due.delete_at));
        if let Some(at) = deadline {
            batch.remove(key.deadline_key(at));
        }
        self.inner.tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Delete `key`'s task-scoped key-value entries, and answer the batch that deletes the rest
    /// of what is kept for it but its time index entries: record, history, events, product
    /// chunks, outbox entries and notifications given up on, notification configs (and their
    /// waiting entries), its running-index entry and its listing entries.
    pub(super) fn task_deletion(&self, key: &TaskKey) -> Result<sled::Batch, StoreError> {
        // Key-value entries first (another tree, another batch): a crash between the two leaves
        // the task, which is found and deleted again.
        let kv = &self.inner.kv;
        let mut batch = sled::Batch::default();
        let scoped = key.scoped_task();
        for entry in kv.scan_prefix(kv_key(&key.agent, KvScope::Task(&scoped), "")) {
            let (k, head) = entry?;
            parts::remove(&mut batch, &k, &head);
        }
        kv.apply_batch(batch)?;
        self.task_entries_deletion(key, b"hecognq")
    }

    /// The batch that deletes `key`'s record, its entries of the kinds `tags`, its waiting
    /// config entries, its running-index entry and its listing entries (shared by deletion and
    /// `set_aside`, which keeps the records set aside before).
    pub(super) fn task_entries_deletion(
        &self,
        key: &TaskKey,
        tags: &[u8],
    ) -> Result<sled::Batch, StoreError> {
        let tasks = &self.inner.tasks;
        let mut batch = sled::Batch::default();
        let record_key = key.record_key();
        let mut stored = None;
        if let Some(head) = tasks.get(&record_key)? {
            stored = parts::assemble(tasks, &record_key, &head)?.map(|v| v.into_owned());
            parts::remove(&mut batch, &record_key, &head);
        }
        for &tag in tags {
            for entry in tasks.scan_prefix(key.tagged_prefix(tag)) {
                let (k, head) = entry?;
                parts::remove(&mut batch, &k, &head);
            }
        }
        for entry in tasks.scan_prefix(key.waiting_task_prefix()).keys() {
            batch.remove(entry?);
        }
        batch.remove(key.live_key());
        // A value that does not parse says nothing: an older `k` entry may.
        let unpacked = stored
            .as_deref()
            .and_then(|v| packed::Unpacked::new(v).ok());
        let stored = unpacked.as_ref().and_then(|v| v.read().ok());
        let (listed, _) = self.listed_now(&mut batch, key, stored.as_ref())?;
        self.relist(&mut batch, key, listed, None);
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::WriteNow;
    use crate::{ChunkWrite, Encoded, KvScope, OutboxEntry, Outgoing, Store, TaskKey, TaskWrite};
    use aiphost_model::notification::NotificationConfig;

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
                            then: Vec::new(),
                            body: Outgoing::Rendered(serde_json::json!({})),
                            attempts: 0,
                            first_attempt_ms: 0,
                            next_attempt_ms: 0,
                            last_error: None,
                        },
                    )],
                    ended_at: Some(1_000),
                    delete_at: Some(5_000),
                    live: (None, Some(crate::Liveness::Running)),
                    listing: Some(crate::Listing {
                        changed_ms: 1_000,
                        state: aiphost_model::TaskState::Completed,
                        session: Some(format!("session of {}", key.task)),
                    }),
                    ..TaskWrite::record_only(key, raw(&big))
                })
                .unwrap();
            let config = NotificationConfig {
                id: "c".into(),
                url: "http://127.0.0.1:9/".into(),
                token: "t".into(),
                task_id: key.task.clone(),
                ..Default::default()
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

        assert!(
            store.due_for_deletion(4_999, 10).unwrap().is_empty(),
            "not due yet"
        );
        let due = store.due_for_deletion(5_001, 10).unwrap();
        assert_eq!(due.len(), 2);
        let doomed_due = due.iter().find(|d| d.key == doomed).unwrap();
        assert_eq!((doomed_due.ended_at, doomed_due.delete_at), (1_000, 5_000));
        let ticket = store.delete_task(doomed_due, None).unwrap();
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
        // Its listing entries (which name it) went, and the count with them.
        let all = crate::ListQuery {
            limit: 10,
            ..Default::default()
        };
        let (page, total) = store.list_tasks("a", Some("L"), &all).unwrap();
        assert_eq!((page.len(), total), (1, 1));
        assert_eq!(store.events_after(&kept, 0, 10).unwrap().len(), 2);
        assert_eq!(store.configs(&kept).unwrap().len(), 1);
        let left = store.due_for_deletion(5_001, 10).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].key, kept);
        // Part keys (0xFF…) of the deleted task are gone too: no key is left but the kept task's,
        // the agent's entry and the store's own marks.
        assert!(all_keys(&store).len() < 40, "{:?}", all_keys(&store));
    }
}
