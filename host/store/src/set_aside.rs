//! Setting aside a task whose stored state cannot be read (a record written by an older host,
//! or damaged): its bytes move to `q\0{agent}\0{task}\0{ms, big-endian}`, where an operator can
//! still look at them, and everything else kept for it goes, so the engine can write a new,
//! failed record in its place ([`Store::set_aside`]).
//!
//! Why not leave it where it is: a task nobody can read still holds what its indexes say — a
//! live-task slot of its Leader, a timer that fires and fails again — and every touch fails
//! the same way. Moved aside, it is a failed task like any other, kept by the same retention.

use super::{Liveness, Store, StoreError, TaskKey, parts};

/// The index of set-aside records.
pub(crate) const SET_ASIDE: u8 = b'q';

/// What a task set aside held in the indexes: what the engine's counts took from them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetAside {
    /// Whether the live indexes said it had not ended (its Leader's live-task count holds it).
    pub live: Option<Liveness>,
    /// The deadlines it waited on (timers armed for it).
    pub deadlines: Vec<i64>,
    /// Bytes moved aside (0: there was no record).
    pub bytes: usize,
}

impl Store {
    /// Move the stored record of `key` aside and delete the rest of what is kept for it (its
    /// history, events, product chunks, notification configs, pending notifications and index
    /// entries), in one batch; its key-value entries and retention entries stay (retention
    /// deletes them with the task). The caller holds the task's slot.
    ///
    /// Finding the task's deadline entries reads the deadline index (every waiting task): this
    /// runs once per unreadable task, never on a healthy one.
    pub fn set_aside(&self, key: &TaskKey, now_ms: i64) -> Result<SetAside, StoreError> {
        let tasks = &self.inner.tasks;
        let mut found = SetAside::default();
        // What the indexes held, read before the batch that deletes them.
        if tasks.contains_key(key.live_key())? {
            found.live = Some(Liveness::Running);
        }
        for (at, task) in self.deadlines()? {
            if &task == key {
                found.deadlines.push(at);
            }
        }
        if found.live.is_none() && !found.deadlines.is_empty() {
            found.live = Some(Liveness::Waiting);
        }
        // Everything kept for it but its key-value entries and the records set aside before;
        // it is listed again when the engine writes its failed record.
        let mut batch = self.task_entries_deletion(key, b"hecogn")?;
        for &at in &found.deadlines {
            batch.remove(key.deadline_key(at));
        }
        let record_key = key.record_key();
        if let Some(head) = tasks.get(&record_key)?
            && let Some(bytes) = parts::assemble(tasks, &record_key, &head)?
        {
            // Decompressed when it can be (`packed.rs`): what is kept aside is for a person to read.
            let unpacked = super::packed::Unpacked::new(&bytes);
            let bytes = unpacked.as_ref().map_or(&bytes[..], |v| v.bytes());
            found.bytes = bytes.len();
            let aside = key.seq_key(SET_ASIDE, now_ms.max(0) as u64);
            parts::insert(&mut batch, &self.inner.db, &aside, bytes, None)?;
        }
        tasks.apply_batch(batch)?;
        Ok(found)
    }

    /// How many records have been set aside, and their bytes (for `aiphost store check` and the
    /// operator: each is a task that was failed because it could not be read).
    pub fn set_aside_count(&self) -> Result<(usize, u64), StoreError> {
        let mut count = (0usize, 0u64);
        for entry in self.inner.tasks.scan_prefix([SET_ASIDE, 0]) {
            let (k, head) = entry?;
            if let Some(bytes) = parts::assemble(&self.inner.tasks, &k, &head)? {
                count.0 += 1;
                count.1 += bytes.len() as u64;
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::WriteNow;
    use crate::{Encoded, Liveness, Store, TaskKey, TaskWrite};

    /// A record too deep to read back, stored as an older host could have stored it.
    fn unreadable() -> Encoded {
        let mut text = String::from("{\"task\":");
        text.push_str(&"[".repeat(200));
        text.push_str(&"]".repeat(200));
        text.push('}');
        Encoded(text.into_bytes())
    }

    #[tokio::test]
    async fn a_task_set_aside_leaves_its_bytes_aside_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::owned("echo", Some("L"), "t1");
        let other = TaskKey::owned("echo", Some("L"), "t2");
        for (k, deadline) in [(&key, 5_000), (&other, 6_000)] {
            store
                .write_task_now(TaskWrite {
                    deadline: (None, Some(deadline)),
                    live: (None, Some(Liveness::Waiting)),
                    events: vec![(1, Encoded::of(&"created").unwrap())],
                    history: vec![(0, Encoded::of(&"start").unwrap())],
                    listing: Some(crate::Listing {
                        changed_ms: deadline,
                        state: aiphost_model::TaskState::AwaitingInput,
                        session: None,
                    }),
                    ..TaskWrite::record_only(k, unreadable())
                })
                .unwrap();
        }
        assert!(store.load_task::<serde_json::Value>(&key).is_err());

        let found = store.set_aside(&key, 42).unwrap();
        assert_eq!(found.live, Some(Liveness::Waiting));
        assert_eq!(found.deadlines, vec![5_000]);
        assert!(found.bytes > 400);
        assert!(!store.has_task(&key).unwrap());
        assert!(store.events_after(&key, 0, 10).unwrap().is_empty());
        // Not listed (until the engine writes its failed record), nor counted.
        let all = crate::ListQuery {
            limit: 10,
            ..Default::default()
        };
        let (page, total) = store.list_tasks("echo", Some("L"), &all).unwrap();
        assert_eq!(
            page.iter().map(|l| l.task_id.as_str()).collect::<Vec<_>>(),
            ["t2"]
        );
        assert_eq!(total, 1);
        assert!(store.command_history(&key).unwrap().is_empty());
        assert_eq!(store.deadlines().unwrap(), vec![(6_000, other.clone())]);
        assert_eq!(store.set_aside_count().unwrap(), (1, found.bytes as u64));
        // The neighbour is untouched.
        assert!(store.has_task(&other).unwrap());
        assert_eq!(store.events_after(&other, 0, 10).unwrap().len(), 1);

        // A running task says so; a task with no record moves nothing.
        store
            .write_task_now(TaskWrite {
                live: (None, Some(Liveness::Running)),
                ..TaskWrite::record_only(&other, unreadable())
            })
            .unwrap();
        assert_eq!(
            store.set_aside(&other, 43).unwrap().live,
            Some(Liveness::Running)
        );
        let gone = store.set_aside(&TaskKey::new("echo", "never"), 44).unwrap();
        assert_eq!(gone, Default::default());
        assert_eq!(store.set_aside_count().unwrap().0, 2);
    }
}
