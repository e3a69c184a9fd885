//! The writes of one change, in order, kept until the committer appends them to the writes of
//! the other changes of its round, applies them and logs them (sled's own `Batch` cannot be
//! merged, read back or written out).

use sled::IVec;

/// Inserts and removals, applied in order (a later write of a key wins).
#[derive(Default)]
pub(crate) struct WriteBatch {
    writes: Vec<(IVec, Option<IVec>)>,
}

impl WriteBatch {
    pub(crate) fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// How many writes (each one key).
    pub(crate) fn len(&self) -> usize {
        self.writes.len()
    }

    /// The keys written, in order.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> Vec<&[u8]> {
        self.writes.iter().map(|(k, _)| k.as_ref()).collect()
    }

    /// Append every write of `other`, after this batch's own.
    pub(crate) fn append(&mut self, other: WriteBatch) {
        self.writes.extend(other.writes);
    }

    /// Apply the writes to `tree` one key at a time, in order. Not atomic: the write-ahead log
    /// makes a round whole again after a crash (`wal.rs`); readers of a task hold its slot
    /// while its change is applied.
    pub(crate) fn apply_each(&self, tree: &sled::Tree) -> Result<(), sled::Error> {
        for (key, value) in &self.writes {
            match value {
                Some(value) => tree.insert(key, value.clone())?,
                None => tree.remove(key)?,
            };
        }
        Ok(())
    }

    /// The writes as bytes: per write `0` (remove) or `1` (insert), the key's length (`u32`,
    /// big-endian) and the key, and for an insert the value's length and the value.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let size: usize = self
            .writes
            .iter()
            .map(|(k, v)| 9 + k.len() + v.as_ref().map_or(0, |v| v.len()))
            .sum();
        let mut out = Vec::with_capacity(size);
        let put = |bytes: &[u8], out: &mut Vec<u8>| {
            // A key or value is far below 4 GiB: sled's own limit and the host's part size.
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(bytes);
        };
        for (key, value) in &self.writes {
            out.push(u8::from(value.is_some()));
            put(key, &mut out);
            if let Some(value) = value {
                put(value, &mut out);
            }
        }
        out
    }

    /// Read back what [`WriteBatch::encode`] wrote; `None` if `bytes` is not such an encoding.
    pub(crate) fn decode(mut bytes: &[u8]) -> Option<WriteBatch> {
        fn take<'b>(bytes: &mut &'b [u8]) -> Option<&'b [u8]> {
            let (len, rest) = bytes.split_first_chunk::<4>()?;
            let len = u32::from_be_bytes(*len) as usize;
            let (item, rest) = rest.split_at_checked(len)?;
            *bytes = rest;
            Some(item)
        }
        let mut batch = WriteBatch::default();
        while let Some((&op, rest)) = bytes.split_first() {
            bytes = rest;
            let key = IVec::from(take(&mut bytes)?);
            let value = match op {
                0 => None,
                1 => Some(IVec::from(take(&mut bytes)?)),
                _ => return None,
            };
            batch.writes.push((key, value));
        }
        Some(batch)
    }
}

/// Where [`crate::parts`] and the store's write paths put their inserts and removals: a sled
/// batch applied at once, or a [`WriteBatch`] handed to the committer.
pub(crate) trait Writes {
    fn insert(&mut self, key: impl Into<IVec>, value: impl Into<IVec>);
    fn remove(&mut self, key: impl Into<IVec>);
}

impl Writes for sled::Batch {
    fn insert(&mut self, key: impl Into<IVec>, value: impl Into<IVec>) {
        sled::Batch::insert(self, key, value);
    }

    fn remove(&mut self, key: impl Into<IVec>) {
        sled::Batch::remove(self, key);
    }
}

impl Writes for WriteBatch {
    fn insert(&mut self, key: impl Into<IVec>, value: impl Into<IVec>) {
        self.writes.push((key.into(), Some(value.into())));
    }

    fn remove(&mut self, key: impl Into<IVec>) {
        self.writes.push((key.into(), None));
    }
}
