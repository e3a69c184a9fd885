//! Retention: the events of an ended task go after the event retention, the task itself (and
//! everything kept for it) after the task retention. Both run in one background sweep.

use super::TaskEngine;
use aiphost_store::{StoreError, TaskKey};
use std::time::Duration;

/// Tasks deleted per store scan; a sweep scans until none are due.
const SWEEP_BATCH: usize = 256;

impl TaskEngine {
    /// How often the retention sweep runs: a tenth of the shorter retention, between 100 ms and
    /// a second (a pass that finds nothing due reads one index key).
    pub(super) fn retention_period(&self) -> Duration {
        let defaults = &self.inner.defaults;
        let shortest = defaults
            .task_retention_ms
            .map_or(defaults.event_retention_ms, |t| {
                t.min(defaults.event_retention_ms)
            });
        // A tenant may keep its tasks for as little as a second.
        Duration::from_millis((shortest / 10).clamp(100, 1_000))
    }

    /// How long `key`'s task is kept once it ends, in ms (`None`: for ever): its tenant's
    /// `taskRetentionSecs`, or the operator's retention.
    pub(super) fn retention_of(&self, key: &TaskKey) -> Option<u64> {
        self.task_retention_ms(&key.agent)
    }

    /// How long a task of partner `agent` is kept once it ends, in ms (`None`: for ever): what
    /// a door tells its client of a task's lifetime (the MCP tasks extension's `ttlMs`).
    pub fn task_retention_ms(&self, agent: &str) -> Option<u64> {
        let tenant = self
            .inner
            .agents
            .get(agent)
            .and_then(|agent| agent.tenant.clone());
        match tenant.and_then(|t| t.quotas.task_retention_secs) {
            Some(secs) => Some(secs.saturating_mul(1000)),
            None => self.inner.defaults.task_retention_ms,
        }
    }

    /// One pass of the retention sweep at `now_ms`: drop the events of tasks past the event
    /// retention, delete the tasks whose retention has run out. Returns (tasks whose events
    /// went, tasks deleted).
    pub(super) async fn sweep_retention(&self, now_ms: i64) -> Result<(usize, usize), StoreError> {
        let retention = i64::try_from(self.inner.defaults.event_retention_ms).unwrap_or(i64::MAX);
        let events = self
            .inner
            .store
            .sweep_ended_events(now_ms.saturating_sub(retention))?;
        let mut deleted = 0;
        loop {
            let due = self.inner.store.due_for_deletion(now_ms, SWEEP_BATCH)?;
            let full = due.len() == SWEEP_BATCH;
            for task in due {
                // Hold the task: no command of it runs while it goes, and the next one finds
                // it unknown.
                let slot = self.hold(&task.key);
                let mut st = slot.state.lock().await;
                if let Err(e) = self.load(&task.key, &mut st) {
                    tracing::warn!(agent = %task.key.agent, task = %task.key.task, error = %e, "an ended task that cannot be read is deleted all the same");
                }
                let deadline = st.stored_deadline;
                self.inner.store.delete_task(&task, deadline)?;
                if deadline.is_some() {
                    self.inner.timers.disarm(task.key.clone());
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
