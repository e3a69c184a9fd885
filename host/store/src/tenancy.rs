//! The tenancy side of the store (tree `tenancy`): tenants, their credentials, published
//! partners and Leader API keys, each a JSON record under a typed key (see `tenant::records`).

use super::{Encoded, Store, StoreError, Ticket, parts};

impl Store {
    /// Read the tenancy record at `key`.
    pub fn tenancy_get(&self, key: &str) -> Result<Option<Encoded>, StoreError> {
        Ok(self
            .inner
            .tenancy
            .get(key.as_bytes())?
            .map(|v| Encoded::from_stored(v.to_vec())))
    }

    /// Write several tenancy records and deletions atomically.
    pub fn tenancy_apply(
        &self,
        puts: &[(String, Encoded)],
        deletes: &[String],
    ) -> Result<Ticket, StoreError> {
        // Deletions free room: only what adds is refused on a full disk.
        if !puts.is_empty() {
            self.inner.space.writable()?;
        }
        let mut batch = sled::Batch::default();
        for (key, value) in puts {
            batch.insert(key.as_bytes(), value.as_bytes());
        }
        for key in deletes {
            batch.remove(key.as_bytes());
        }
        self.inner.tenancy.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Every tenancy record whose key starts with `prefix`, in key order.
    pub fn tenancy_scan(&self, prefix: &str) -> Result<Vec<(String, Encoded)>, StoreError> {
        self.inner
            .tenancy
            .scan_prefix(prefix.as_bytes())
            .map(|entry| {
                let (k, v) = entry?;
                let key = String::from_utf8(k.to_vec())
                    .map_err(|_| StoreError::Corrupt("a tenancy key is not UTF-8".into()))?;
                Ok((key, Encoded::from_stored(v.to_vec())))
            })
            .collect()
    }

    /// Bytes stored for `agent`: its tasks, events, indexes and key-value entries (an estimate
    /// that counts keys and values as sled holds them).
    pub fn agent_bytes(&self, agent: &str) -> Result<u64, StoreError> {
        let mut total = 0u64;
        let count = |tree: &sled::Tree, prefix: &[u8]| -> Result<u64, StoreError> {
            let mut bytes = 0u64;
            // The entries, and the parts of the large ones.
            for prefix in [prefix.to_vec(), parts::parts_prefix(prefix)] {
                for entry in tree.scan_prefix(prefix) {
                    let (k, v) = entry?;
                    bytes += (k.len() + v.len()) as u64;
                }
            }
            Ok(bytes)
        };
        for tag in [b't', b'e', b'c', b'h', b'l', b'n', b'o', b'g', b'q'] {
            let mut prefix = vec![tag, 0];
            prefix.extend_from_slice(agent.as_bytes());
            prefix.push(0);
            total += count(&self.inner.tasks, &prefix)?;
        }
        let mut prefix = agent.as_bytes().to_vec();
        prefix.push(0);
        total += count(&self.inner.kv, &prefix)?;
        Ok(total)
    }
}
