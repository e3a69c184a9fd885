//! Removing a partner's tasks when its tenant is removed: every task, whatever its state, goes
//! with everything kept for it, as retention deletes an ended one.

use super::TaskEngine;
use aiphost_store::{StoreError, Ticket};

/// Tasks deleted per store scan; between two, the runtime serves others.
const REMOVAL_BATCH: usize = 128;

impl TaskEngine {
    /// Delete every task of `agent` and everything the store keeps for it (key-value entries,
    /// index entries), in batches. The agent is no longer hosted, so no new command reaches
    /// it; a start or report already under way finds its task gone and writes nothing. Returns
    /// how many tasks went, and the ticket of the last write.
    pub async fn remove_agent_tasks(&self, agent: &str) -> Result<(usize, Ticket), StoreError> {
        let store = &self.inner.store;
        let mut deleted = 0;
        loop {
            let tasks = store.agent_tasks(agent, REMOVAL_BATCH)?;
            if tasks.is_empty() {
                break;
            }
            for key in tasks {
                // Hold the task: no command or report of it runs while it goes.
                let slot = self.hold(&key);
                let mut st = slot.state.lock().await;
                if let Err(e) = self.load(&key, &mut st) {
                    tracing::warn!(agent = %key.agent, task = %key.task, error = %e, "a task that cannot be read is removed all the same");
                }
                let deadline = st.stored_deadline;
                store.delete_removed_task(&key, deadline)?;
                if deadline.is_some() {
                    self.inner.timers.disarm(key.clone());
                }
                // A start not yet created is dropped with it: nothing creates the task again.
                st.pending = None;
                // Nothing is stored of it now: the Leader's count of live tasks drops it.
                (st.stored_deadline, st.stored_live) = (None, None);
                self.forget_cached(&slot, &mut st);
                deleted += 1;
            }
            tokio::task::yield_now().await;
        }
        let (_, ticket) = store.purge_agent(agent)?;
        Ok((deleted, ticket))
    }
}
