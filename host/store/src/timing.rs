//! How long the committer's work takes, told to whoever watches ([`CommitObserver`]): the host
//! turns it into its store histograms. The store names no metrics crate; with no observer set
//! it reads no clock.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Told of each committer round and each `fdatasync` it makes. Called on the committer's
/// thread, between rounds: an implementation must be quick and must not block.
pub trait CommitObserver: Send + Sync {
    /// One round: taking the queue, applying its changes to sled, making them durable (a log
    /// record and its sync, or a checkpoint), telling the writers.
    fn round(&self, took: Duration);

    /// One `fdatasync`: of the write-ahead log, or of sled's log at a checkpoint.
    fn synced(&self, took: Duration);
}

/// The observer of a store, set once (the host sets it after opening the store).
#[derive(Default)]
pub(crate) struct Timing(OnceLock<Arc<dyn CommitObserver>>);

impl Timing {
    /// Set the observer; a second one is ignored (`false`).
    pub(crate) fn set(&self, observer: Arc<dyn CommitObserver>) -> bool {
        self.0.set(observer).is_ok()
    }

    /// The clock's now, if anyone watches.
    pub(crate) fn start(&self) -> Option<std::time::Instant> {
        self.0.get().map(|_| std::time::Instant::now())
    }

    /// A round that began at `started` ended.
    pub(crate) fn round(&self, started: Option<std::time::Instant>) {
        if let (Some(observer), Some(at)) = (self.0.get(), started) {
            observer.round(at.elapsed());
        }
    }

    /// An `fdatasync` that began at `started` ended.
    pub(crate) fn synced(&self, started: Option<std::time::Instant>) {
        if let (Some(observer), Some(at)) = (self.0.get(), started) {
            observer.synced(at.elapsed());
        }
    }
}
