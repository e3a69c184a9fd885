//! The writes of one change, in order, kept until the committer merges them with the writes of
//! other changes into one sled batch (sled's own `Batch` cannot be merged or read back).

use sled::IVec;

/// Inserts and removals, applied in order (a later write of a key wins).
#[derive(Default)]
pub(crate) struct WriteBatch {
    writes: Vec<(IVec, Option<IVec>)>,
}

impl WriteBatch {
    /// Move every write into `batch`, after what it holds.
    pub(crate) fn merge_into(self, batch: &mut sled::Batch) {
        for (key, value) in self.writes {
            match value {
                Some(value) => batch.insert(key, value),
                None => batch.remove(key),
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.writes.is_empty()
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
