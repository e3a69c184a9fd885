//! The task engine: applies Leader commands, partner reports and timer expiries to tasks, one at a
//! time per task, persisting every transition before anyone hears of it, and runs the partner
//! invocations that commands call for.
//!
//! One concept per file: [`TaskEngine`] and its start-up here; `error` (what it refuses, in its
//! own words: [`EngineError`]), `admission` (what a command must
//! pass whatever door it came through), `commands` (applying a command to its task), `slots`
//! (a task in use: its lock, cached record and change ticks), `journal` (the one write path,
//! and what may be kept back), `invocations` (running the partner), `reports` (the partner's
//! reports), `replies` (answers only once durable), `streaming` (the `stream` method's entry),
//! `expiry` (timers and tasks interrupted by a crash), `notifications` (a task's webhook
//! configs) and `overview` (the operator's view: tasks across Leaders, a task's limits).

use super::feed::EventFeed;
use super::live::Watermarks;
use super::live_tasks::{LiveTasks, liveness};
use super::record::{TaskDefaults, TaskRecord};
use super::shares::{ShareView, Shares};
use super::timers::Timers;
use crate::agent::Registry;
use crate::task::{FanOut, Observer, PartnerRunner};
use aiphost_model::{HistoryFilter, Task, Timestamp};
use aiphost_store::{Encoded, Liveness, Store, StoreError, TaskKey};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

mod admission;
mod commands;
mod error;
pub use error::{ConfigRef, EngineError};
mod expiry;
mod invocations;
mod journal;
mod notifications;
pub use notifications::Subscribe;
mod overview;
pub use overview::{
    MAX_OVERVIEW_PAGE, OverviewPage, OverviewPosition, OverviewQuery, Stuck, TaskView,
};
mod reads;
mod removal;
pub use reads::{MAX_PAGE_SIZE, PagePosition, TaskPage, TaskQuery};
mod replies;
mod reports;
mod retention;
mod slots;
mod streaming;
#[cfg(test)]
mod tests;

use commands::Incoming;
use slots::{Held, Slot, current_after};

/// What a command answers: the task as it durably is, and whether histories were asked for.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The task, as durably stored.
    pub task: Task,
    /// `Some` for a `get`: which parts of the histories to include; `None`: no histories.
    pub history: Option<HistoryFilter>,
    /// The task's newest event when this answer was taken.
    pub seq: u64,
}

/// How a stream begins: with the task's events from some seq on, or (for `get`) one snapshot.
pub enum StreamStart {
    /// Follow the task's events with this feed, live until the task ends.
    Events(EventFeed),
    /// Answer once with the task (a `get`).
    Snapshot {
        /// The task, as for a `get` without `stream`.
        reply: Reply,
        /// The task's newest event seq when the snapshot was taken (the same as `reply.seq`).
        seq: u64,
    },
}

/// The task engine. Cheap to clone.
#[derive(Clone)]
pub struct TaskEngine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    runtime: Arc<dyn PartnerRunner>,
    agents: Arc<Registry>,
    defaults: TaskDefaults,
    slots: Mutex<HashMap<TaskKey, Arc<Slot>>>,
    timers: Timers,
    watermarks: Arc<Watermarks>,
    fan_out: Arc<dyn FanOut>,
    /// Who hears what the engine does (the host's metrics).
    observer: Arc<dyn Observer>,
    /// Tasks not ended per Leader and partner, against the cap.
    live: Arc<LiveTasks>,
    /// Each partner's share of the guest threads.
    shares: Shares,
    /// Tasks found running at start-up (their invocation died with the previous process), to
    /// be failed by [`TaskEngine::recover_interrupted`].
    interrupted: Mutex<Vec<TaskKey>>,
    /// The runtime serving Leaders. A partner's reports reach the engine on a guest thread; what
    /// they set off (announcing a durable change) runs here, not behind other partners' code.
    host: tokio::runtime::Handle,
}

impl TaskEngine {
    /// Build the engine and re-arm every stored deadline (a restart loses no timer; the timers
    /// keep those of the next minutes, `timers.rs`);
    /// `observer` hears what it does from then on.
    pub fn start(
        store: Store,
        runtime: Arc<dyn PartnerRunner>,
        agents: Arc<Registry>,
        defaults: TaskDefaults,
        fan_out: Arc<dyn FanOut>,
        observer: Arc<dyn Observer>,
    ) -> Result<Self, StoreError> {
        let (due_tx, mut due_rx) = mpsc::unbounded_channel();
        let timers = Timers::start(due_tx, store.clone(), super::timers::HORIZON);
        // Tasks that have not ended: the waiting ones have a deadline, the running ones an
        // entry of their own (and lost their invocation with the previous process).
        let live = LiveTasks::new(defaults.max_live_tasks);
        let shares = Shares::new(defaults.max_invocations_per_partner);
        for (at, key) in store.deadlines()? {
            live.moved(&key, None, Some(Liveness::Waiting));
            timers.restore(at, key);
        }
        let interrupted = store.running_tasks(stored_liveness)?;
        store.listing_index(|record| Ok(reads::listing_of(&record.decode::<TaskRecord>()?)))?;
        for key in &interrupted {
            live.moved(key, None, Some(Liveness::Running));
        }
        let engine = TaskEngine {
            inner: Arc::new(Inner {
                store,
                runtime,
                agents,
                defaults,
                slots: Mutex::new(HashMap::new()),
                timers,
                watermarks: Arc::new(Watermarks::default()),
                fan_out,
                observer,
                live,
                shares,
                interrupted: Mutex::new(interrupted),
                host: tokio::runtime::Handle::current(),
            }),
        };
        let weak = Arc::downgrade(&engine.inner);
        tokio::spawn(async move {
            while let Some((at, key)) = due_rx.recv().await {
                let Some(inner) = weak.upgrade() else { break };
                let engine = TaskEngine { inner };
                tokio::spawn(async move { engine.expire(key, at).await });
            }
        });
        let weak = Arc::downgrade(&engine.inner);
        let every = engine.retention_period();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { break };
                let engine = TaskEngine { inner };
                match engine.sweep_retention(Timestamp::now_ms()).await {
                    Ok((0, 0)) => {}
                    Ok((events, tasks)) => tracing::info!(
                        events_dropped_of = events,
                        tasks_deleted = tasks,
                        "retention: ended tasks past their time"
                    ),
                    Err(e) => tracing::error!(error = %e, "retention sweep failed"),
                }
            }
        });
        Ok(engine)
    }

    /// Partners with invocations running or waiting for their turn.
    pub fn busy_partners(&self) -> Vec<ShareView> {
        self.inner.shares.busy()
    }

    /// Streams open now.
    pub fn open_streams(&self) -> u64 {
        self.inner.watermarks.open()
    }

    /// Tasks per partner and state now, as the store's listing index counts them (built at
    /// open, kept with every task write).
    pub fn tasks_by_state(&self) -> Vec<(String, aiphost_model::TaskState, u64)> {
        self.inner.store.tasks_by_state()
    }

    /// Syncs of the engine's store so far, each an fdatasync shared by the writes waiting for it.
    pub fn store_flushes(&self) -> u64 {
        self.inner.store.flush_count()
    }

    /// Checkpoints of the engine's store so far (flushes of sled).
    pub fn store_checkpoints(&self) -> u64 {
        self.inner.store.checkpoint_count()
    }

    /// Task changes applied by the store's committer so far (over [`Self::store_flushes`]:
    /// changes per sync).
    pub fn store_changes(&self) -> u64 {
        self.inner.store.committed_changes()
    }

    /// Keys the store's committer has written to sled (see `Store::committed_keys`).
    pub fn store_keys(&self) -> u64 {
        self.inner.store.committed_keys()
    }

    /// The store's disk as it is now: room for new work, or not (`/readyz`).
    pub fn disk(&self) -> aiphost_store::Disk {
        self.inner.store.disk()
    }

    /// Make every write so far durable (at shutdown).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.inner.store.flush().await
    }
}

/// Whether a stored record's task has not ended (building the live index of an older store).
fn stored_liveness(record: &Encoded) -> Result<Option<Liveness>, StoreError> {
    record.decode::<TaskRecord>().map(|r| liveness(r.state()))
}
