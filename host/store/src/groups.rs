//! The group side of the store: memberships (tree `groups`) and the group outbox, the task
//! results waiting to be published on a group's exchange (`p\0{membership}\0{id}` in tree
//! `tasks`, written in the same batch as the change they announce).

use super::{Encoded, Outgoing, Store, StoreError, Ticket, parts, to_json};

/// One result waiting in a membership's outbox.
pub struct Pending {
    /// Opaque: hand it back to [`Store::published`].
    pub key: Vec<u8>,
    /// Its stored head (how many parts it has).
    head: Vec<u8>,
    /// The message to publish, or why it cannot be read (drop it with [`Store::published`]).
    pub message: Result<Outgoing, String>,
}

pub(super) fn outbox_prefix(membership: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(3 + membership.len() + 8);
    k.extend_from_slice(b"p\0");
    k.extend_from_slice(membership.as_bytes());
    k.push(0);
    k
}

impl Store {
    /// Record a membership (replacing what was stored under `id`).
    pub fn put_membership(&self, id: &str, record: &Encoded) -> Result<Ticket, StoreError> {
        self.inner.space.writable()?;
        self.inner.groups.insert(id.as_bytes(), record.as_bytes())?;
        Ok(self.inner.commit.written())
    }

    /// Forget a membership and every result still waiting to be published to it.
    pub fn delete_membership(&self, id: &str) -> Result<Ticket, StoreError> {
        self.inner.groups.remove(id.as_bytes())?;
        let mut batch = sled::Batch::default();
        for entry in self.inner.tasks.scan_prefix(outbox_prefix(id)) {
            let (key, head) = entry?;
            parts::remove(&mut batch, &key, &head);
        }
        self.inner.tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Every stored membership: `(id, record)`.
    pub fn memberships(&self) -> Result<Vec<(String, Encoded)>, StoreError> {
        self.inner
            .groups
            .iter()
            .map(|entry| {
                let (k, v) = entry?;
                let id = String::from_utf8(k.to_vec())
                    .map_err(|_| StoreError::Corrupt("a membership id is not UTF-8".into()))?;
                Ok((id, Encoded::from_stored(v.to_vec())))
            })
            .collect()
    }

    /// The results waiting for `membership`, oldest first, at most `limit`.
    pub fn group_outbox(&self, membership: &str, limit: usize) -> Result<Vec<Pending>, StoreError> {
        let tasks = &self.inner.tasks;
        tasks
            .scan_prefix(outbox_prefix(membership))
            .take(limit)
            .map(|entry| {
                let (k, head) = entry?;
                // Only the membership's own session removes its entries: each is there whole.
                let body = parts::assemble(tasks, &k, &head)?
                    .ok_or_else(|| StoreError::Corrupt("a group result vanished".into()))?;
                Ok(Pending {
                    key: k.to_vec(),
                    message: serde_json::from_slice(&body).map_err(|e| e.to_string()),
                    head: head.to_vec(),
                })
            })
            .collect()
    }

    /// Queue one message for `membership` outside any task change (the answer to a `get`).
    pub fn enqueue_result(
        &self,
        membership: &str,
        message: &Outgoing,
    ) -> Result<Ticket, StoreError> {
        self.inner.space.writable()?;
        let body = to_json(message)?;
        let mut key = outbox_prefix(membership);
        key.extend_from_slice(&self.inner.db.generate_id()?.to_be_bytes());
        let mut batch = sled::Batch::default();
        parts::insert(&mut batch, &self.inner.db, &key, &body, None)?;
        self.inner.tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// A result has been published (the broker confirmed it): drop it from the outbox.
    pub fn published(&self, pending: &Pending) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        parts::remove(&mut batch, &pending.key, &pending.head);
        self.inner.tasks.apply_batch(batch)?;
        Ok(())
    }

    /// Outbox entries of memberships that no longer exist (left while results were pending, or
    /// before a crash): dropped at start-up.
    pub fn drop_orphaned_results(&self, live: &[String]) -> Result<usize, StoreError> {
        let mut batch = sled::Batch::default();
        let mut dropped = 0;
        for entry in self.inner.tasks.scan_prefix(b"p\0") {
            let (key, head) = entry?;
            let owner = key
                .get(2..)
                .and_then(|rest| rest.split(|b| *b == 0).next())
                .and_then(|id| std::str::from_utf8(id).ok());
            if owner.is_none_or(|id| !live.iter().any(|l| l == id)) {
                parts::remove(&mut batch, &key, &head);
                dropped += 1;
            }
        }
        self.inner.tasks.apply_batch(batch)?;
        Ok(dropped)
    }
}

#[cfg(test)]
mod tests {
    /// A stored value as the store would hold it, byte for byte.
    fn raw(bytes: impl AsRef<[u8]>) -> crate::Encoded {
        crate::Encoded(bytes.as_ref().to_vec())
    }

    use crate::tests::WriteNow;
    use crate::{Outgoing, Store, TaskKey, TaskWrite};
    use serde_json::json;

    #[tokio::test]
    async fn results_wait_per_membership_in_order_and_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("echo", "t1");
        for (i, membership) in ["m1", "m2", "m1"].iter().enumerate() {
            store
                .write_task_now(TaskWrite {
                    published: vec![(membership.to_string(), Outgoing::Rendered(json!(i)))],
                    ..TaskWrite::record_only(&key, raw(b"{}"))
                })
                .unwrap();
        }
        store
            .put_membership("m1", &crate::Encoded::of(&json!({})).unwrap())
            .unwrap();
        let m1 = store.group_outbox("m1", 10).unwrap();
        let bodies: Vec<_> = m1.iter().map(|p| p.message.clone().unwrap()).collect();
        assert_eq!(
            bodies,
            [Outgoing::Rendered(json!(0)), Outgoing::Rendered(json!(2))]
        );
        store.published(&m1[0]).unwrap();
        assert_eq!(store.group_outbox("m1", 10).unwrap().len(), 1);
        // m2 has no membership: its result is an orphan.
        assert_eq!(store.drop_orphaned_results(&["m1".into()]).unwrap(), 1);
        assert!(store.group_outbox("m2", 10).unwrap().is_empty());
        store.delete_membership("m1").unwrap();
        assert!(store.group_outbox("m1", 10).unwrap().is_empty());
        assert!(store.memberships().unwrap().is_empty());
    }
}
