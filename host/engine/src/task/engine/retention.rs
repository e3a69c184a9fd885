//! Retention: the events of an ended task go after the event retention, the task itself (and
//! everything kept for it) after the task retention. Both run in one background sweep.

use super::TaskEngine;
use aiphost_protocol::Timestamp;
use aiphost_store::StoreError;
use std::time::Duration;

/// Tasks deleted per store scan; a sweep scans until none are due.
const SWEEP_BATCH: usize = 256;

impl TaskEngine {
    /// How often the retention sweep runs: a tenth of the shorter retention, between 100 ms and
    /// a minute.
    pub(super) fn retention_period(&self) -> Duration {
        let defaults = &self.inner.defaults;
        let shortest = defaults
            .task_retention_ms
            .map_or(defaults.event_retention_ms, |t| {
                t.min(defaults.event_retention_ms)
            });
        Duration::from_millis((shortest / 10).clamp(100, 60_000))
    }

    /// One pass of the retention sweep at `now_ms`: drop the events of tasks past the event
    /// retention, delete the tasks past the task retention. Returns (tasks whose events went,
    /// tasks deleted).
    pub(super) async fn sweep_retention(&self, now_ms: i64) -> Result<(usize, usize), StoreError> {
        let defaults = &self.inner.defaults;
        let ago = |ms: u64| now_ms.saturating_sub(i64::try_from(ms).unwrap_or(i64::MAX));
        let events = self
            .inner
            .store
            .sweep_ended_events(ago(defaults.event_retention_ms))?;
        let Some(retention) = defaults.task_retention_ms else {
            return Ok((events, 0));
        };
        let before = ago(retention);
        let mut deleted = 0;
        loop {
            let due = self.inner.store.ended_before(before, SWEEP_BATCH)?;
            let full = due.len() == SWEEP_BATCH;
            for (ended_at, key) in due {
                // Hold the task: no command of it runs while it goes, and the next one finds
                // it unknown.
                let slot = self.hold(&key);
                let mut st = slot.state.lock().await;
                if let Err(e) = self.ensure_loaded(&key, &mut st) {
                    tracing::warn!(agent = %key.agent, task = %key.task, error = %e, "an ended task that cannot be read is deleted all the same");
                }
                let deadline = st.stored_deadline;
                self.inner.store.delete_task(&key, ended_at, deadline)?;
                if deadline.is_some() {
                    self.inner.timers.disarm(key.clone());
                }
                self.forget_cached(&slot, &mut st);
                deleted += 1;
            }
            if !full {
                return Ok((events, deleted));
            }
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub(super) fn now_ms() -> i64 {
    Timestamp::now().unix_millis()
}
