//! The store's committer, timed: `aiphost_store_commit_duration_seconds` (one round: its
//! changes applied and made durable, its writers told) and `aiphost_store_sync_duration_seconds`
//! (one `fdatasync`). Host-wide, no labels: one committer serves every partner.

use super::{Labels, Metrics};
use crate::store::CommitObserver;
use metrics::Histogram;
use std::time::Duration;

/// The store's histograms.
pub struct StoreTiming {
    commit: Histogram,
    sync: Histogram,
}

impl StoreTiming {
    /// Registered in `metrics`.
    pub fn new(metrics: &Metrics) -> Self {
        StoreTiming {
            commit: metrics.histogram(
                "aiphost_store_commit_duration_seconds",
                "Time of one store committer round: its changes applied to sled and made durable (a write-ahead log record and its fdatasync, or a checkpoint), its writers told",
                Labels::none(),
            ),
            sync: metrics.histogram(
                "aiphost_store_sync_duration_seconds",
                "Time of one fdatasync of the store (the write-ahead log, or sled's log at a checkpoint)",
                Labels::none(),
            ),
        }
    }
}

impl CommitObserver for StoreTiming {
    fn round(&self, took: Duration) {
        self.commit.record(took.as_secs_f64());
    }

    fn synced(&self, took: Duration) {
        self.sync.record(took.as_secs_f64());
    }
}
