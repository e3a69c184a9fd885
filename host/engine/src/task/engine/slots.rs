//! Slots: each task in use has one, an async mutex over its cached record, the invocation
//! running for it and whoever waits for its next change (one-shot channels, woken under the
//! lock on every change). Idle slots are dropped; the record in the store is the truth.

use super::TaskEngine;
use super::commands::PendingStart;
use super::invocations::Running;
use super::journal::Unwritten;
use crate::task::live_tasks::liveness;
use crate::task::record::TaskRecord;
use aiphost_model::EventKind;
use aiphost_model::TaskState;
use aiphost_store::{Liveness, StoreError, TaskKey, Ticket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::oneshot;

/// A hold on a task's slot: dropping it releases the slot, also when a request is abandoned
/// half-way (the client went away and its future was dropped).
pub(super) struct Held {
    pub(super) engine: TaskEngine,
    pub(super) slot: Arc<Slot>,
}

impl std::ops::Deref for Held {
    type Target = Arc<Slot>;

    fn deref(&self) -> &Arc<Slot> {
        &self.slot
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.engine.release(&self.slot);
    }
}

pub(super) struct Slot {
    pub(super) key: TaskKey,
    pub(super) state: tokio::sync::Mutex<SlotState>,
    /// The [`Held`]s of the slot, counted under the slot map's lock: the last one to go removes
    /// the slot (a count of `Arc`s cannot tell two holds dropped at once from two that remain).
    pub(super) holders: AtomicUsize,
    /// The session of the task a start made in this slot (`None`: none made here, or one in no
    /// session), set with its record and readable without the state's lock: a task made here
    /// may not be stored yet, and a look-up by session locks only the slots of its session
    /// (`reads.rs`). A task loaded from the store is found through the store's index instead.
    pub(super) made_in_session: std::sync::Mutex<Option<String>>,
}

#[derive(Default)]
pub(super) struct SlotState {
    pub(super) loaded: bool,
    pub(super) record: Option<TaskRecord>,
    /// A start the partner has not decided on yet.
    pub(super) pending: Option<PendingStart>,
    /// The start or continue invocation running for the task.
    pub(super) running: Option<Running>,
    /// The end the partner hears once its running invocation has returned: the host completed
    /// the task while it ran ([`aiphost_model::CommandPolicy::complete_on_result`]).
    pub(super) end_hook: Option<aiphost_runtime::PartnerEvent>,
    /// The newest write of this task; a reply waits for it to be durable.
    pub(super) ticket: Ticket,
    /// The deadline the store's index holds for the task.
    pub(super) stored_deadline: Option<i64>,
    /// The entry the store's live index holds for the task.
    pub(super) stored_live: Option<Liveness>,
    /// Changes made while an invocation runs that nobody can have seen yet; they go to the store
    /// with the next change somebody can see (see [`TaskEngine::persist`]).
    pub(super) unwritten: Unwritten,
    /// Whether the store holds a record of the task: a task created during an invocation may
    /// exist in the slot alone for a while (its creation kept back), and a listing must still
    /// show it (`reads.rs`).
    pub(super) stored: bool,
    /// Who waits for the task's next change ([`SlotState::next_change`]).
    pub(super) waiters: Vec<oneshot::Sender<()>>,
}

impl SlotState {
    /// A wait for the task's next change. Taken under the slot's lock, as every change is made,
    /// so no change between this and the wait is missed; it also ends if the slot's state is
    /// replaced (its sender dropped): either way the waiter looks again.
    pub(super) fn next_change(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        // A waiter that gave up (a timeout) left its sender behind; drop those first.
        self.waiters.retain(|w| !w.is_closed());
        self.waiters.push(tx);
        rx
    }

    /// The task changed: wake everyone waiting for it.
    pub(super) fn changed(&mut self) {
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(());
        }
    }
}

/// How [`TaskEngine::ensure_loaded`] found the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loaded {
    /// As stored (or not stored at all).
    AsStored,
    /// Unreadable: set aside just now, failed.
    SetAside,
}

pub(super) fn is_resting(st: &SlotState) -> bool {
    st.record.as_ref().is_some_and(|r| r.state().is_resting())
}

pub(super) fn current_after(st: &SlotState) -> Option<TaskState> {
    st.record.as_ref().map(TaskRecord::state)
}

impl TaskEngine {
    /// Hold the slot of `key` (made if needed) until the returned guard drops.
    pub(super) fn hold(&self, key: &TaskKey) -> Held {
        let mut slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Slot {
                    key: key.clone(),
                    state: tokio::sync::Mutex::new(SlotState::default()),
                    holders: AtomicUsize::new(0),
                    made_in_session: std::sync::Mutex::new(None),
                })
            })
            .clone();
        slot.holders.fetch_add(1, Ordering::Relaxed);
        Held {
            engine: self.clone(),
            slot,
        }
    }

    /// Another hold on a slot already held, for work that outlives the caller's.
    pub(super) fn held(&self, slot: &Arc<Slot>) -> Held {
        let _slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        slot.holders.fetch_add(1, Ordering::Relaxed);
        Held {
            engine: self.clone(),
            slot: slot.clone(),
        }
    }

    /// The slots of `agent`'s tasks in `owner`'s namespace that are in memory now.
    pub(super) fn slots_of(&self, agent: &str, owner: Option<&str>) -> Vec<Arc<Slot>> {
        let slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .iter()
            .filter(|(key, _)| key.agent == agent && key.leader.as_deref() == owner)
            .map(|(_, slot)| slot.clone())
            .collect()
    }

    /// The slots of `agent`'s tasks in every namespace that are in memory now.
    pub(super) fn slots_of_agent(&self, agent: &str) -> Vec<Arc<Slot>> {
        let slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .iter()
            .filter(|(key, _)| key.agent == agent)
            .map(|(_, slot)| slot.clone())
            .collect()
    }

    /// Slots in memory now (tasks in use).
    pub fn slots_in_use(&self) -> usize {
        self.inner
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Drop a hold on a slot, and the slot itself when it was the last and nothing runs for it
    /// or waits to be written.
    pub(super) fn release(&self, slot: &Arc<Slot>) {
        let mut slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        let left = slot
            .holders
            .fetch_sub(1, Ordering::Relaxed)
            .saturating_sub(1);
        // Whoever holds the state lock holds the slot too (only holders lock it), and will
        // release it after this; so a slot busy now is removed by that last release.
        if left == 0
            && let Ok(st) = slot.state.try_lock()
            && st.running.is_none()
            && st.pending.is_none()
            && st.unwritten.is_empty()
            && !st
                .record
                .as_ref()
                .is_some_and(TaskRecord::has_history_writes)
        {
            slots.remove(&slot.key);
        }
    }

    /// Load the task's record into the slot if it is not yet; a task whose stored state cannot
    /// be read is set aside and failed ([`TaskEngine::set_aside`]), once: nobody meets the
    /// error again.
    pub(super) async fn ensure_loaded(
        &self,
        slot: &Slot,
        st: &mut SlotState,
    ) -> Result<Loaded, StoreError> {
        match self.load(&slot.key, st) {
            Ok(()) => Ok(Loaded::AsStored),
            Err(StoreError::Corrupt(why)) => {
                self.set_aside(slot, st, why).await?;
                Ok(Loaded::SetAside)
            }
            Err(e) => Err(e),
        }
    }

    /// Load the task's record into the slot if it is not yet, as it is stored.
    pub(super) fn load(&self, key: &TaskKey, st: &mut SlotState) -> Result<(), StoreError> {
        if !st.loaded {
            // Whoever wrote the record may not have waited for it to be durable: a reply built
            // from it waits for every write so far.
            st.ticket = self.inner.store.latest_ticket();
            st.record = self.inner.store.load_task::<TaskRecord>(key)?;
            if let Some(record) = st.record.as_mut() {
                let store = &self.inner.store;
                record.restore_products(|product| {
                    store
                        .product_chunks(key, product)?
                        .iter()
                        .map(|items| {
                            items.decode().map_err(|e| {
                                StoreError::Corrupt(format!(
                                    "a product chunk of {}/{}: {e}",
                                    key.agent, key.task
                                ))
                            })
                        })
                        .collect()
                })?;
            }
            if let Some(record) = st.record.as_mut() {
                let entries = self.inner.store.command_history(key)?;
                record.restore_history(entries).map_err(|e| {
                    StoreError::Corrupt(format!("task {}/{}: {e}", key.agent, key.task))
                })?;
            }
            st.stored = st.record.is_some();
            st.stored_deadline = st.record.as_ref().and_then(|r| r.deadline_ms);
            st.stored_live = st.record.as_ref().and_then(|r| liveness(r.state()));
            st.loaded = true;
        }
        Ok(())
    }

    /// The stored state of the task cannot be read (written by an older host, or damaged):
    /// its bytes are set aside in the store, what its indexes held is taken off the counts
    /// (its Leader's live-task slot, its timer), and a new record, failed with the reason,
    /// takes its place. One log line; from then on it is a failed task like any other.
    async fn set_aside(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        why: String,
    ) -> Result<(), StoreError> {
        let key = &slot.key;
        let now = aiphost_model::Timestamp::now();
        let found = self.inner.store.set_aside(key, now.unix_millis())?;
        tracing::error!(agent = %key.agent, task = %key.task, error = %why, bytes = found.bytes,
            "a stored task could not be read: it is failed, and its stored record is set aside");
        self.inner.observer.set_aside(&key.agent);
        self.inner.live.moved(key, found.live, None);
        if !found.deadlines.is_empty() {
            self.inner.timers.disarm(key.clone());
        }
        let version = self.inner.agents.get(&key.agent).map_or(0, |a| a.version);
        let record = TaskRecord::failed_unreadable(
            &key.task,
            key.leader.as_deref(),
            version,
            format!(
                "the host could not read this task's stored state ({why}), so it failed the task"
            ),
        );
        let status = record.task.status.clone();
        *st = SlotState {
            loaded: true,
            record: Some(record),
            ticket: self.inner.store.latest_ticket(),
            ..SlotState::default()
        };
        self.store_change(slot, st, vec![EventKind::Status { status }], false)
            .await
    }

    /// After a failed write: the cached record is ahead of the store, so it is dropped (the next
    /// command reads what is stored), the live count follows the stored state again, and
    /// whoever waits on the task is woken.
    pub(super) fn forget_cached(&self, slot: &Slot, st: &mut SlotState) {
        let cached = st.record.as_ref().and_then(|r| liveness(r.state()));
        self.inner.live.moved(&slot.key, cached, st.stored_live);
        st.record = None;
        st.loaded = false;
        st.unwritten = Unwritten::default();
        st.changed();
    }
}
