//! The task engine: applies Leader commands, partner reports and timer expiries to tasks, one at a
//! time per task, persisting every transition before anyone hears of it, and runs the partner
//! invocations that commands call for.
//!
//! Each task that is in use has a slot: an async mutex over its cached record and the invocation
//! running for it, plus a watch channel that ticks on every change. Idle slots are dropped; the
//! record in the store is the truth.

use super::feed::EventFeed;
use super::live::Watermarks;
use super::live_tasks::{LiveTasks, Starting, liveness};
use super::record::{TaskDefaults, TaskLimits, TaskRecord};
use super::shares::{ShareView, Shares};
use super::timers::Timers;
use crate::agent::{Agent, Registry};
use crate::task::FanOut;
use aiphost_protocol::dialect::render_task;
use aiphost_protocol::notification::Subscription;
use aiphost_protocol::state::{self, CommandEffect};
use aiphost_protocol::{
    CommandKind, DataItem, Dialect, ErrorCode, EventKind, HistoryFilter, Inbound, LeaderCommand,
    RpcError, Task, TaskEvent, TaskState, TaskStatus, Timestamp,
};
use aiphost_runtime::{EndReason, Invocation, InvocationEnd, KvOwner, PartnerEvent, Runtime};
use aiphost_store::{
    ChunkWrite, Liveness, OutboxEntry, Store, StoreError, TaskKey, TaskWrite, Ticket,
};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

mod reports;
mod streaming;

use reports::TaskReporter;

/// Why a command could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request is wrong (bad params, unknown task...): answered as this JSON-RPC error.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The store failed; nothing was acknowledged.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a command answers: the task as it durably is, and whether histories were asked for.
#[derive(Clone, Debug)]
pub struct Reply {
    pub task: Task,
    pub history: Option<HistoryFilter>,
    /// The task's newest event when this answer was taken.
    pub seq: u64,
}

/// How a stream begins: with the task's events from some seq on, or (for `get`) one snapshot.
pub enum StreamStart {
    Events(EventFeed),
    Snapshot { reply: Reply, seq: u64 },
}

/// The tracing span of one invocation.
fn invocation_span(slot: &Slot, invocation: &Invocation) -> tracing::Span {
    tracing::info_span!("invocation", agent = %slot.key.agent, task = %slot.key.task, event = ?invocation.event)
}

/// A hold on a task's slot: dropping it releases the slot, also when a request is abandoned
/// half-way (the client went away and its future was dropped).
struct Held {
    engine: TaskEngine,
    slot: Arc<Slot>,
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

/// Where a stream of a task starts (see [`TaskEngine::stream_point`]).
struct StreamPoint {
    last: u64,
    ended: bool,
    ids: Option<(Option<String>, Option<String>)>,
    ticket: Ticket,
}

/// A Leader command on its way into a task's slot.
struct Incoming {
    command: LeaderCommand,
    task_id: String,
    dialect: Dialect,
    /// Where to notify the task's changes (`notification/start`).
    notify: Option<Subscription>,
    /// The group membership the task's results are published to (a command from a group).
    group: Option<String>,
}

/// What applying a command did.
struct Applied {
    /// The answer, unless the command started an invocation and was told not to wait.
    reply: Option<Reply>,
    /// The task's newest event before the command (0 for a new task).
    seq_before: u64,
}

/// Counters for `/metrics`.
#[derive(Default)]
pub struct EngineStats {
    pub commands: AtomicU64,
    pub invocations: AtomicU64,
    pub invocation_failures: AtomicU64,
    pub transitions: AtomicU64,
    pub timeouts: AtomicU64,
    pub events: AtomicU64,
}

/// The task engine. Cheap to clone.
#[derive(Clone)]
pub struct TaskEngine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    runtime: Arc<Runtime>,
    agents: Arc<Registry>,
    defaults: TaskDefaults,
    slots: Mutex<HashMap<TaskKey, Arc<Slot>>>,
    timers: Timers,
    watermarks: Arc<Watermarks>,
    fan_out: Arc<dyn FanOut>,
    stats: EngineStats,
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

struct Slot {
    key: TaskKey,
    state: tokio::sync::Mutex<SlotState>,
    changed: watch::Sender<u64>,
    /// The [`Held`]s of the slot, counted under the slot map's lock: the last one to go removes
    /// the slot (a count of `Arc`s cannot tell two holds dropped at once from two that remain).
    holders: AtomicUsize,
}

#[derive(Default)]
struct SlotState {
    loaded: bool,
    record: Option<TaskRecord>,
    /// A start the partner has not decided on yet.
    pending: Option<PendingStart>,
    /// The start or continue invocation running for the task.
    running: Option<Running>,
    /// The newest write of this task; a reply waits for it to be durable.
    ticket: Ticket,
    /// The deadline the store's index holds for the task.
    stored_deadline: Option<i64>,
    /// The entry the store's live index holds for the task.
    stored_live: Option<Liveness>,
    /// Changes made while an invocation runs that nobody can have seen yet; they go to the store
    /// with the next change somebody can see (see [`TaskEngine::persist`]).
    unwritten: Unwritten,
}

/// Events and product chunks of the slot's task not yet handed to the store.
#[derive(Default)]
struct Unwritten {
    events: Vec<(u64, Vec<u8>)>,
    chunks: Vec<ChunkWrite>,
}

impl Unwritten {
    fn bytes(&self) -> usize {
        bytes_of(&self.events, &self.chunks)
    }
}

/// The bytes of serialised events and chunks.
fn bytes_of(events: &[(u64, Vec<u8>)], chunks: &[ChunkWrite]) -> usize {
    events.iter().map(|(_, e)| e.len()).sum::<usize>()
        + chunks.iter().map(|c| c.items.len()).sum::<usize>()
}

/// The most events a running invocation may keep unwritten: bounds the memory they take and how
/// much a partner that never rests can pile up before it is written out.
const MAX_UNWRITTEN_EVENTS: usize = 64;
/// The most bytes of events and chunks an invocation may keep unwritten: a partner streaming
/// large chunks has them written as they come, not held in memory (each is held twice, as its
/// event and as its product chunk).
const MAX_UNWRITTEN_BYTES: usize = 256 * 1024;

struct PendingStart {
    command: LeaderCommand,
    task_id: String,
    dialect: Dialect,
    limits: TaskLimits,
    notify: Option<Subscription>,
    group: Option<String>,
    /// The partner version deciding it: the task runs on that version to its end.
    agent_version: u64,
    /// Its place under the Leader's cap of live tasks, until the partner decides.
    _starting: Starting,
}

struct Running {
    id: u64,
    abort: CancellationToken,
}

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

impl TaskEngine {
    /// Build the engine and re-arm every stored deadline (a restart loses no timer).
    pub fn start(
        store: Store,
        runtime: Arc<Runtime>,
        agents: Arc<Registry>,
        defaults: TaskDefaults,
        fan_out: Arc<dyn FanOut>,
    ) -> Result<Self, StoreError> {
        let (due_tx, mut due_rx) = mpsc::unbounded_channel();
        let timers = Timers::start(due_tx);
        // Tasks that have not ended: the waiting ones have a deadline, the running ones an
        // entry of their own (and lost their invocation with the previous process).
        let live = LiveTasks::new(defaults.max_live_tasks);
        let shares = Shares::new(defaults.max_invocations_per_partner);
        for (at, key) in store.deadlines()? {
            live.moved(&key, None, Some(Liveness::Waiting));
            timers.arm(at, key);
        }
        let interrupted = store.running_tasks(stored_liveness)?;
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
                stats: EngineStats::default(),
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
        let retention = engine.inner.defaults.event_retention_ms;
        let every = Duration::from_millis((retention / 10).clamp(100, 60_000));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { break };
                let before =
                    Timestamp::now().unix_millis() - i64::try_from(retention).unwrap_or(i64::MAX);
                match inner.store.sweep_ended(before) {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        tasks = n,
                        "dropped the events of tasks past their retention"
                    ),
                    Err(e) => tracing::error!(error = %e, "event retention sweep failed"),
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

    pub fn stats(&self) -> &EngineStats {
        &self.inner.stats
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Carry out a Leader command for `agent` and answer with the task.
    pub async fn command(
        &self,
        agent: &Arc<Agent>,
        inbound: Inbound,
        notify: Option<Subscription>,
    ) -> Result<Reply, EngineError> {
        self.routed_command(agent, inbound, notify, None).await
    }

    /// Carry out a command that came from the group of `membership`: a task it starts publishes
    /// its results there.
    pub async fn group_command(
        &self,
        agent: &Arc<Agent>,
        inbound: Inbound,
        membership: String,
    ) -> Result<Reply, EngineError> {
        self.routed_command(agent, inbound, None, Some(membership))
            .await
    }

    /// Whether the task `key` has already taken the command with message id `id` (a broker's
    /// redelivery of a command applied before a reconnect or crash).
    pub async fn knows_command(&self, key: &TaskKey, id: &str) -> Result<bool, EngineError> {
        let slot = self.hold(key);
        let mut st = slot.state.lock().await;
        self.ensure_loaded(key, &mut st)?;
        Ok(st
            .record
            .as_ref()
            .is_some_and(|r| r.task.commands.iter().any(|c| c.id == id)))
    }

    async fn routed_command(
        &self,
        agent: &Arc<Agent>,
        inbound: Inbound,
        notify: Option<Subscription>,
        group: Option<String>,
    ) -> Result<Reply, EngineError> {
        self.inner.stats.commands.fetch_add(1, Ordering::Relaxed);
        inbound.check_sender()?;
        let Inbound {
            dialect,
            command,
            owner,
        } = inbound;
        if command.command == CommandKind::ReStream {
            return Err(RpcError::new(
                ErrorCode::UnsupportedOperation,
                json!({"command": "re-stream", "reason": "re-stream reconnects a stream; send it with the `stream` method"}),
            )
            .into());
        }
        let task_id = command
            .task_id
            .clone()
            .unwrap_or_else(|| format!("task-{}", uuid::Uuid::new_v4()));
        let key = TaskKey::owned(agent.id(), owner.as_deref(), &task_id);
        let span = tracing::info_span!("task", agent = %key.agent, task = %key.task, command = %command.command);
        async move {
            let slot = self.hold(&key);
            let result = self
                .command_in_slot(
                    agent,
                    &slot,
                    Incoming {
                        command,
                        task_id,
                        dialect,
                        notify,
                        group,
                    },
                    true,
                )
                .await;

            result?.reply.ok_or_else(|| {
                RpcError::internal("the command was applied but not answered").into()
            })
        }
        .instrument(span)
        .await
    }

    async fn command_in_slot(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        incoming: Incoming,
        wait: bool,
    ) -> Result<Applied, EngineError> {
        let Incoming {
            command,
            task_id,
            dialect,
            mut notify,
            mut group,
        } = incoming;
        let mut changes = slot.changed.subscribe();
        loop {
            let mut st = slot.state.lock().await;
            self.ensure_loaded(&slot.key, &mut st)?;
            // A task runs on the partner version it started on, whatever serves new tasks now.
            let pinned = match st.record.as_ref() {
                Some(r) if r.agent_version != agent.version => {
                    Some(self.inner.agents.version(agent.id(), r.agent_version).ok_or_else(|| {
                        RpcError::internal(format!(
                            "version {} of the partner, which this task runs on, cannot be loaded",
                            r.agent_version
                        ))
                    })?)
                }
                _ => None,
            };
            let agent = pinned.as_ref().unwrap_or(agent);
            // A start still being decided, or a continue while the last invocation winds down: wait,
            // then look again (commands on one task are serialised).
            let busy = st.pending.is_some()
                || (command.command == CommandKind::Continue
                    && st.running.is_some()
                    && is_resting(&st));
            if busy {
                drop(st);
                let _ = changes.changed().await;
                continue;
            }
            let current = st.record.as_ref().map(TaskRecord::state);
            let seq_before = st.record.as_ref().map_or(0, |r| r.last_event_seq);
            let applied = |reply| Applied { reply, seq_before };
            let effect = state::on_command(current, command.command);
            return match effect {
                CommandEffect::NotFound => Err(RpcError::task_not_found(&task_id).into()),
                CommandEffect::Decide => {
                    if let Some(tenant) = &agent.tenant {
                        tenant.admit_new_task()?;
                    }
                    let limits = TaskLimits::from_params(&command.params, &self.inner.defaults)?;
                    let starting = self
                        .inner
                        .live
                        .admit(&slot.key)
                        .map_err(|live| self.too_many_live_tasks(&slot.key, live))?;
                    let response_timeout = Duration::from_millis(limits.response_timeout_ms);
                    let invocation = Invocation {
                        event: PartnerEvent::Start,
                        task_id: task_id.clone(),
                        session_id: command.session_id.clone(),
                        leader_id: (!command.sender_id.is_empty())
                            .then(|| command.sender_id.clone()),
                        state: None,
                        data_items: command.data_items.clone(),
                        max_products_bytes: limits.leader_max_products_bytes,
                        products_bytes: 0,
                        command_params: command.params.clone(),
                    };
                    st.pending = Some(PendingStart {
                        command,
                        task_id,
                        dialect,
                        limits,
                        notify: notify.take(),
                        group: group.take(),
                        agent_version: agent.version,
                        _starting: starting,
                    });
                    self.invoke_and_answer(agent, slot, st, invocation, response_timeout, wait)
                        .await
                        .map(applied)
                }
                CommandEffect::Ignored | CommandEffect::Read => {
                    // Both are recorded in the history; only a read answers with histories.
                    let filter = match effect {
                        CommandEffect::Read => Some(HistoryFilter::from_params(&command.params)?),
                        _ => {
                            tracing::debug!(state = ?current, "command does not apply; ignored");
                            None
                        }
                    };
                    let record = st
                        .record
                        .as_mut()
                        .ok_or_else(|| RpcError::task_not_found(&task_id))?;
                    record.record_command(command, true, &self.inner.defaults.history);
                    self.persist_history(slot, &mut st)?;
                    self.durable_reply(slot, st, filter)
                        .await
                        .map(|r| applied(Some(r)))
                }
                CommandEffect::Transition(to, row) => {
                    let kind = command.command;
                    let data_items = command.data_items.clone();
                    let params = command.params.clone();
                    let record = st
                        .record
                        .as_mut()
                        .ok_or_else(|| RpcError::task_not_found(&task_id))?;
                    record.record_command(command, false, &self.inner.defaults.history);
                    self.transition(slot, &mut st, to, Vec::new(), row)?;
                    match kind {
                        CommandKind::Continue => {
                            let response_timeout = self.response_timeout(&st);
                            let invocation = self.invocation_for(
                                &st,
                                PartnerEvent::Continue,
                                data_items,
                                params,
                            );
                            self.invoke_and_answer(
                                agent,
                                slot,
                                st,
                                invocation,
                                response_timeout,
                                wait,
                            )
                            .await
                            .map(applied)
                        }
                        _ => {
                            let event = if to == TaskState::Completed {
                                PartnerEvent::Complete(EndReason::Leader)
                            } else {
                                PartnerEvent::Cancel(EndReason::Leader)
                            };
                            if let Some(running) = st.running.take() {
                                running.abort.cancel();
                            }
                            let hook = self.invocation_for(&st, event, Vec::new(), params);
                            let reply = self.durable_reply(slot, st, None).await?;
                            // The partner hears of the end only once it is durable.
                            self.spawn_hook(agent, slot, hook);
                            Ok(applied(Some(reply)))
                        }
                    }
                }
            };
        }
    }

    /// Run `invocation` for the slot's task and, if asked to wait, answer once the task rests
    /// or `timeout` passes.
    async fn invoke_and_answer(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        mut st: tokio::sync::MutexGuard<'_, SlotState>,
        invocation: Invocation,
        timeout: Duration,
        wait: bool,
    ) -> Result<Option<Reply>, EngineError> {
        self.spawn_invocation(agent, slot, &mut st, invocation);
        drop(st);
        if !wait {
            return Ok(None);
        }
        self.wait_for_rest(slot, timeout).await.map(Some)
    }

    fn response_timeout(&self, st: &SlotState) -> Duration {
        Duration::from_millis(
            st.record
                .as_ref()
                .map_or(self.inner.defaults.response_timeout_ms, |r| {
                    r.limits.response_timeout_ms
                }),
        )
    }

    fn invocation_for(
        &self,
        st: &SlotState,
        event: PartnerEvent,
        data_items: Vec<DataItem>,
        command_params: aiphost_protocol::JsonObject,
    ) -> Invocation {
        let record = st.record.as_ref();
        Invocation {
            event,
            task_id: record.map(|r| r.task.id.clone()).unwrap_or_default(),
            session_id: record.and_then(|r| r.task.session_id.clone()),
            leader_id: record.and_then(|r| r.task.leader_id.clone()),
            state: record.map(TaskRecord::state),
            data_items,
            max_products_bytes: record.and_then(|r| r.limits.leader_max_products_bytes),
            products_bytes: record.map_or(0, |r| r.products_bytes),
            command_params,
        }
    }

    /// Hold the slot of `key` (made if needed) until the returned guard drops.
    fn hold(&self, key: &TaskKey) -> Held {
        let mut slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Slot {
                    key: key.clone(),
                    state: tokio::sync::Mutex::new(SlotState::default()),
                    changed: watch::channel(0).0,
                    holders: AtomicUsize::new(0),
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
    fn held(&self, slot: &Arc<Slot>) -> Held {
        let _slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
        slot.holders.fetch_add(1, Ordering::Relaxed);
        Held {
            engine: self.clone(),
            slot: slot.clone(),
        }
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
    fn release(&self, slot: &Arc<Slot>) {
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
            && st.unwritten.events.is_empty()
            && st.unwritten.chunks.is_empty()
            && !st
                .record
                .as_ref()
                .is_some_and(TaskRecord::has_history_writes)
        {
            slots.remove(&slot.key);
        }
    }

    fn ensure_loaded(&self, key: &TaskKey, st: &mut SlotState) -> Result<(), StoreError> {
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
                        .map(|bytes| {
                            serde_json::from_slice(bytes).map_err(|e| {
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
            st.stored_deadline = st.record.as_ref().and_then(|r| r.deadline_ms);
            st.stored_live = st.record.as_ref().and_then(|r| liveness(r.state()));
            st.loaded = true;
        }
        Ok(())
    }

    /// Write the slot's record with the events of this change, move its deadline index entry,
    /// arm a new deadline, and tell the task's followers once the write is durable.
    ///
    /// A change made by a running invocation that leaves the task moving (accepted, working, a
    /// product chunk) and that nobody is told of — no notification, no group result, no stream
    /// following the task — is kept in the slot instead and written with the next change that is
    /// written: a `start` that passes through accepted, working and a product to
    /// awaiting-completion costs one store write instead of four. Nothing is lost that anybody
    /// was promised: every answer and every stream first writes out what the slot keeps
    /// ([`TaskEngine::write_out`]), and an invocation's end always does.
    fn persist(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        events: Vec<EventKind>,
    ) -> Result<(), StoreError> {
        let may_keep_back = st.running.is_some();
        self.store_change(slot, st, events, may_keep_back)
    }

    /// [`TaskEngine::persist`], told whether this change may be kept back in the slot.
    fn store_change(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        events: Vec<EventKind>,
        may_keep_back: bool,
    ) -> Result<(), StoreError> {
        let Some(record) = st.record.as_mut() else {
            return Ok(());
        };
        let at = Timestamp::now();
        let appended = events.len() as u64;
        let mut logged = Vec::with_capacity(events.len());
        let mut chunks = Vec::new();
        let mut ends = false;
        let mut notified = Vec::new();
        let mut status_changed = false;
        for kind in events {
            record.last_event_seq += 1;
            if let EventKind::Created { status } | EventKind::Status { status } = &kind
                && record
                    .notify
                    .as_ref()
                    .is_some_and(|n| n.wants(status.state))
            {
                notified.push(record.last_event_seq);
            }
            status_changed |= matches!(kind, EventKind::Created { .. } | EventKind::Status { .. });
            if let EventKind::Chunk { chunk } = &kind {
                chunks.push(ChunkWrite {
                    product: chunk.product.id.clone(),
                    seq: record.last_event_seq,
                    items: serde_json::to_vec(&chunk.product.data_items)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                    replaces: !chunk.append,
                });
            }
            let event = TaskEvent {
                seq: record.last_event_seq,
                at,
                kind,
            };
            ends |= event.is_terminal();
            let bytes =
                serde_json::to_vec(&event).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            logged.push((event.seq, bytes));
        }
        let outbox = self.outbox_entries(&slot.key, record, &notified)?;
        let published_to = record
            .group
            .clone()
            .filter(|m| status_changed && self.inner.fan_out.group_is_live(m));
        let published = match &published_to {
            Some(membership) => vec![(membership.clone(), self.group_result(&slot.key, record)?)],
            None => Vec::new(),
        };
        let last = record.last_event_seq;
        let unseen = may_keep_back
            && !ends
            && !record.state().is_resting()
            && notified.is_empty()
            && published_to.is_none()
            && st.unwritten.events.len() + logged.len() <= MAX_UNWRITTEN_EVENTS
            && st.unwritten.bytes() + bytes_of(&logged, &chunks) <= MAX_UNWRITTEN_BYTES
            && !self.inner.watermarks.has_followers(&slot.key);
        if unseen {
            st.unwritten.events.extend(logged);
            st.unwritten.chunks.extend(chunks);
            self.inner
                .stats
                .events
                .fetch_add(appended, Ordering::Relaxed);
            slot.changed.send_modify(|n| *n += 1);
            return Ok(());
        }
        let held_back = std::mem::take(&mut st.unwritten);
        let newly = appended;
        let appended = appended + held_back.events.len() as u64;
        let mut events = held_back.events;
        events.extend(logged);
        let mut all_chunks = held_back.chunks;
        all_chunks.extend(chunks);
        let keep = self.inner.defaults.event_retention_count.max(1);
        let trim_below = (appended > 0 && last > keep).then(|| last - keep + 1);
        let (old, new) = (st.stored_deadline, record.deadline_ms);
        let live = liveness(record.state());
        let stored = record
            .stored_bytes()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let history = record.take_history_writes();
        let written = self.inner.store.write_task(TaskWrite {
            key: &slot.key,
            record: Some(stored),
            deadline: (old, new),
            live: (st.stored_live, live),
            history: history.put,
            history_dropped: history.dropped,
            events,
            trim_below,
            ended_at: ends.then(|| at.unix_millis()),
            chunks: all_chunks,
            outbox,
            published,
        });
        st.ticket = match written {
            Ok(ticket) => ticket,
            Err(e) => {
                // The cached record is ahead of the store now: forget it, so the next command
                // reads what is really stored, and wake whoever waits on the task.
                self.forget_cached(slot, st);
                return Err(e);
            }
        };
        if let Some(&newest) = notified.last() {
            let (fan_out, key) = (self.inner.fan_out.clone(), slot.key.clone());
            self.when_durable(st.ticket, "notifications", move || {
                fan_out.notifications_due(key, newest)
            });
        }
        if let Some(membership) = published_to {
            let fan_out = self.inner.fan_out.clone();
            self.when_durable(st.ticket, "group results", move || {
                fan_out.group_results_due(&membership)
            });
        }
        st.stored_deadline = new;
        st.stored_live = live;
        match (old, new) {
            (_, Some(at)) if Some(at) != old => self.inner.timers.arm(at, slot.key.clone()),
            (Some(_), None) => self.inner.timers.disarm(slot.key.clone()),
            _ => {}
        }
        if appended > 0 {
            self.inner.stats.events.fetch_add(newly, Ordering::Relaxed);
            if self.inner.watermarks.has_followers(&slot.key) {
                let (marks, key) = (self.inner.watermarks.clone(), slot.key.clone());
                self.when_durable(st.ticket, "events", move || marks.advance(&key, last));
            }
        }
        slot.changed.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Hand the store what the slot has kept back (see [`TaskEngine::persist`]), before anybody
    /// is shown the task or its events.
    fn write_out(&self, slot: &Slot, st: &mut SlotState) -> Result<(), StoreError> {
        let history = st
            .record
            .as_ref()
            .is_some_and(TaskRecord::has_history_writes);
        if st.unwritten.events.is_empty() && st.unwritten.chunks.is_empty() && !history {
            return Ok(());
        }
        self.store_change(slot, st, Vec::new(), false)
    }

    /// Store what a command that changed nothing added to the task's history: its entry (and
    /// the entries it pushed out), not the record. With changes kept back in the slot, those go
    /// too, in one write.
    fn persist_history(&self, slot: &Slot, st: &mut SlotState) -> Result<(), StoreError> {
        let rewrite = st.record.as_ref().is_some_and(TaskRecord::must_rewrite);
        if rewrite || !st.unwritten.events.is_empty() || !st.unwritten.chunks.is_empty() {
            return self.store_change(slot, st, Vec::new(), false);
        }
        let Some(record) = st.record.as_mut() else {
            return Ok(());
        };
        let history = record.take_history_writes();
        let written = self.inner.store.write_task(TaskWrite {
            record: None,
            history: history.put,
            history_dropped: history.dropped,
            ..TaskWrite::record_only(&slot.key, Vec::new())
        });
        st.ticket = match written {
            Ok(ticket) => ticket,
            Err(e) => {
                self.forget_cached(slot, st);
                return Err(e);
            }
        };
        slot.changed.send_modify(|n| *n += 1);
        Ok(())
    }

    /// After a failed write: the cached record is ahead of the store, so it is dropped (the next
    /// command reads what is stored), the live count follows the stored state again, and
    /// whoever waits on the task is woken.
    fn forget_cached(&self, slot: &Slot, st: &mut SlotState) {
        let cached = st.record.as_ref().and_then(|r| liveness(r.state()));
        self.inner.live.moved(&slot.key, cached, st.stored_live);
        st.record = None;
        st.loaded = false;
        st.unwritten = Unwritten::default();
        slot.changed.send_modify(|n| *n += 1);
    }

    /// The -32009 of a start over the Leader's cap of tasks that have not ended.
    fn too_many_live_tasks(&self, key: &TaskKey, live: u64) -> RpcError {
        RpcError::new(
            ErrorCode::AuthorizationFailed,
            json!({
                "reason": "the Leader has as many tasks with this partner that have not ended as it may; complete or cancel some first",
                "quota": "maxLiveTasks",
                "limit": self.inner.live.max(),
                "liveTasks": live,
                "taskId": key.task,
            }),
        )
    }

    /// The outbox entries for the notified statuses `seqs` of `record`: the task as it now is, in
    /// the dialect of the Leader that started it.
    fn outbox_entries(
        &self,
        key: &TaskKey,
        record: &TaskRecord,
        seqs: &[u64],
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let Some(subscription) = &record.notify else {
            return Ok(Vec::new());
        };
        let aic = self.aic_of(key);
        seqs.iter()
            .map(|&seq| {
                let entry = OutboxEntry {
                    config_id: subscription.config_id.clone(),
                    body: render_task(&record.task, record.dialect, &aic, None),
                    attempts: 0,
                    first_attempt_ms: 0,
                    next_attempt_ms: 0,
                    last_error: None,
                };
                serde_json::to_vec(&entry)
                    .map(|bytes| (seq, bytes))
                    .map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .collect()
    }

    /// The AIC of the agent hosting `key`'s task (its `senderId`).
    fn aic_of(&self, key: &TaskKey) -> String {
        self.inner
            .agents
            .get(&key.agent)
            .map(|a| a.aic().to_string())
            .unwrap_or_default()
    }

    /// The task as its group hears of it: a task result in the dialect of the command that
    /// started it, sent by the partner.
    fn group_result(&self, key: &TaskKey, record: &TaskRecord) -> Result<Vec<u8>, StoreError> {
        let aic = self.aic_of(key);
        let mut body = render_task(&record.task, record.dialect, &aic, None);
        if record.dialect == Dialect::V1 {
            body["senderRole"] = json!("partner");
        }
        serde_json::to_vec(&body).map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    /// Run `announce` once the write behind `ticket` is on disk: streams and webhooks, like
    /// replies, never tell of a change that a crash could take back.
    fn when_durable(
        &self,
        ticket: Ticket,
        what: &'static str,
        announce: impl FnOnce() + Send + 'static,
    ) {
        let store = self.inner.store.clone();
        self.inner.host.spawn(async move {
            match store.durable(ticket).await {
                Ok(()) => announce(),
                Err(e) => tracing::error!(error = %e, "{what} could not be made durable"),
            }
        });
    }

    /// Create the record of the slot's pending start with its first status (accepted or
    /// rejected), logging the task's first event.
    fn create(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        status: TaskStatus,
    ) -> Result<(), StoreError> {
        let Some(p) = st.pending.take() else {
            return Ok(());
        };
        let mut record = TaskRecord::new(
            p.command,
            p.task_id,
            p.dialect,
            p.limits,
            status.clone(),
            &self.inner.defaults.history,
        );
        record.agent_version = p.agent_version;
        record.notify = p.notify;
        record.group = p.group;
        // Counted before the start's reservation (in `p`) is given back.
        self.inner
            .live
            .moved(&slot.key, None, liveness(status.state));
        st.record = Some(record);
        self.inner.stats.transitions.fetch_add(1, Ordering::Relaxed);
        self.persist(slot, st, vec![EventKind::Created { status }])
    }

    /// Move the slot's task to `to` (row `row` of the table), persisting it.
    fn transition(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        to: TaskState,
        data_items: Vec<DataItem>,
        row: state::Row,
    ) -> Result<(), StoreError> {
        let Some(record) = st.record.as_mut() else {
            return Ok(());
        };
        tracing::debug!(from = %record.state(), to = %to, row, "transition");
        let before = liveness(record.state());
        record.enter(to, data_items, self.inner.defaults.history.max_statuses);
        self.inner.live.moved(&slot.key, before, liveness(to));
        let status = record.task.status.clone();
        self.inner.stats.transitions.fetch_add(1, Ordering::Relaxed);
        self.persist(slot, st, vec![EventKind::Status { status }])
    }

    /// Where a stream of the task starts: its newest event, whether it has ended, its session and
    /// group, and the ticket that makes all of that durable — taken together under the slot lock.
    async fn stream_point(&self, key: &TaskKey) -> Result<StreamPoint, EngineError> {
        let slot = self.hold(key);
        let mut st = slot.state.lock().await;
        self.ensure_loaded(key, &mut st)?;
        self.write_out(&slot, &mut st)?;
        Ok(StreamPoint {
            last: st.record.as_ref().map_or(0, |r| r.last_event_seq),
            ended: st.record.as_ref().is_some_and(|r| r.state().is_terminal()),
            ids: st
                .record
                .as_ref()
                .map(|r| (r.task.session_id.clone(), r.task.group_id.clone())),
            ticket: st.ticket,
        })
    }

    /// Answer with the slot's task once its last write is durable.
    async fn durable_reply(
        &self,
        slot: &Slot,
        mut st: tokio::sync::MutexGuard<'_, SlotState>,
        history: Option<HistoryFilter>,
    ) -> Result<Reply, EngineError> {
        self.write_out(slot, &mut st)?;
        let ticket = st.ticket;
        let (task, seq) = st
            .record
            .as_ref()
            .map(|r| (r.task.clone(), r.last_event_seq))
            .ok_or_else(|| RpcError::internal("the task vanished while answering"))?;
        drop(st);
        self.inner.store.durable(ticket).await?;
        Ok(Reply { task, history, seq })
    }

    /// Wait until the task rests (or its invocation ends), or `timeout` passes once the task
    /// exists, then answer with it.
    async fn wait_for_rest(
        &self,
        slot: &Arc<Slot>,
        timeout: Duration,
    ) -> Result<Reply, EngineError> {
        let mut changes = slot.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let st = slot.state.lock().await;
            if let Some(record) = &st.record {
                let done = record.state().is_resting() || st.running.is_none();
                if done || tokio::time::Instant::now() >= deadline {
                    return self.durable_reply(slot, st, None).await;
                }
            }
            let undecided = st.record.is_none();
            if undecided && st.pending.is_none() && st.running.is_none() {
                // The start ended without a stored task (the store failed under it).
                return Err(
                    RpcError::internal("the task could not be stored; retry the start").into(),
                );
            }
            drop(st);
            // Until the partner decides there is no task to report, so only then does the
            // response timeout count; the invocation's own deadline bounds the wait. Past the
            // deadline an undecided start waits for the change itself (never a busy loop).
            if undecided && tokio::time::Instant::now() >= deadline {
                if changes.changed().await.is_err() {
                    return Err(
                        RpcError::internal("the task's slot went away while answering").into(),
                    );
                }
            } else {
                let _ = tokio::time::timeout_at(deadline, changes.changed()).await;
            }
        }
    }

    fn spawn_invocation(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        invocation: Invocation,
    ) {
        let run = Running {
            id: NEXT_RUN.fetch_add(1, Ordering::Relaxed),
            abort: CancellationToken::new(),
        };
        let (run_id, abort) = (run.id, run.abort.clone());
        st.running = Some(run);
        let (slot, agent) = (self.held(slot), agent.clone());
        let span = invocation_span(&slot, &invocation);
        tokio::spawn(
            async move {
                let engine = &slot.engine;
                let end = engine
                    .invoke(&agent, &slot, Some(run_id), invocation, abort)
                    .await;
                if let Err(e) = engine.finish(&slot, run_id, end).await {
                    tracing::error!(error = %e, "could not record the end of an invocation");
                }
            }
            .instrument(span),
        );
    }

    /// Tell the partner that its task completed or was canceled. Its reports are refused; it may
    /// clean up its store.
    fn spawn_hook(&self, agent: &Arc<Agent>, slot: &Arc<Slot>, invocation: Invocation) {
        let (slot, agent) = (self.held(slot), agent.clone());
        let span = invocation_span(&slot, &invocation);
        tokio::spawn(
            async move {
                let end = slot
                    .engine
                    .invoke(&agent, &slot, None, invocation, CancellationToken::new())
                    .await;
                if end != Some(InvocationEnd::Returned) {
                    tracing::warn!(?end, "partner failed while hearing the end of its task");
                }
            }
            .instrument(span),
        );
    }

    async fn invoke(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        run: Option<u64>,
        invocation: Invocation,
        abort: CancellationToken,
    ) -> Option<InvocationEnd> {
        self.inner.stats.invocations.fetch_add(1, Ordering::Relaxed);
        let reporter = Arc::new(TaskReporter {
            slot: self.held(slot),
            run,
        });
        let store = self.inner.store.clone();
        let run = async {
            // The partner's share first, so an invocation waiting for its own partner's turn
            // holds nothing its tenant's other partners need.
            let mut holds: Vec<aiphost_runtime::Hold> = Vec::new();
            if let Some(turn) = self.inner.shares.turn(agent.id()).await {
                holds.push(Box::new(turn));
            }
            // The tenant's concurrency quota: its invocations wait for each other, not for
            // other tenants'.
            if let Some(tenant) = &agent.tenant
                && let Ok(permit) = tenant.invocations.clone().acquire_owned().await
            {
                holds.push(Box::new(permit));
            }
            // Task-scoped entries live in the task's Leader namespace, like the task.
            let task = slot.key.scoped_task();
            let owner = KvOwner {
                agent: agent.id(),
                task: &task,
            };
            self.inner
                .runtime
                .invoke(&agent.code, reporter, store, owner, invocation, holds)
                .await
        };
        tokio::select! {
            end = run => Some(end),
            _ = abort.cancelled() => None,
        }
    }

    /// After a start or continue invocation: a task the partner left moving fails, with the reason.
    async fn finish(
        &self,
        slot: &Arc<Slot>,
        run_id: u64,
        end: Option<InvocationEnd>,
    ) -> Result<(), StoreError> {
        let mut st = slot.state.lock().await;
        if st.running.as_ref().is_none_or(|r| r.id != run_id) {
            return Ok(()); // aborted by a cancel, which already settled the task
        }
        st.running = None;
        let current = st.record.as_ref().map(TaskRecord::state);
        let reason = match &end {
            None | Some(InvocationEnd::Returned) => format!(
                "the partner returned without reaching a resting state (it left the task {})",
                current.map_or("undecided".to_string(), |s| s.to_string())
            ),
            Some(InvocationEnd::PartnerError(m)) => format!("the partner failed: {m}"),
            Some(InvocationEnd::Trapped(r)) => r.clone(),
            Some(InvocationEnd::DeadlineExceeded(d)) => {
                format!(
                    "the partner did not finish within its time limit of {} ms",
                    d.as_millis()
                )
            }
        };
        let path = state::host_failure_path(current);
        if path.is_empty() {
            if !matches!(end, None | Some(InvocationEnd::Returned)) {
                tracing::warn!(%reason, "partner failed after its task came to rest");
            }
            self.write_out(slot, &mut st)?;
            slot.changed.send_modify(|n| *n += 1);
            return Ok(());
        }
        self.inner
            .stats
            .invocation_failures
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%reason, "partner failed; the task fails");
        self.fail_through(slot, &mut st, path, reason)
    }

    /// Walk the slot's task along `path` (rows of the table) to its end, the last status
    /// carrying `reason`.
    fn fail_through(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        path: &[TaskState],
        reason: String,
    ) -> Result<(), StoreError> {
        for (i, &step) in path.iter().enumerate() {
            let items = if i + 1 == path.len() {
                vec![DataItem::text(reason.clone())]
            } else {
                Vec::new()
            };
            if st.record.is_none() {
                self.create(slot, st, TaskStatus::now(step, items))?;
            } else {
                let row = state::on_partner_report(current_after(st), step).unwrap_or(0);
                self.transition(slot, st, step, items, row)?;
            }
        }
        Ok(())
    }

    /// Fail every task that was accepted or working when the previous process stopped: its
    /// invocation died with that process, and nothing else would ever move it again.
    ///
    /// They are failed rather than invoked again: a partner may have acted on the world (an
    /// outbound request, a key-value write) before the host died, and a second invocation would
    /// do it twice. The Leader hears of it as of any failure (its reply, stream, webhook or
    /// group), with the reason. Run once at start-up, before Leaders are served.
    pub async fn recover_interrupted(&self) -> Result<usize, EngineError> {
        const REASON: &str =
            "the host restarted during the invocation; the partner's work on this task was lost";
        let keys = std::mem::take(
            &mut *self
                .inner
                .interrupted
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        let mut failed = 0;
        let mut last = Ticket::default();
        for key in keys {
            let slot = self.hold(&key);
            let mut st = slot.state.lock().await;
            self.ensure_loaded(&key, &mut st)?;
            if st.running.is_some() || st.pending.is_some() {
                continue;
            }
            let state = st.record.as_ref().map(TaskRecord::state);
            let path = state::host_failure_path(state);
            if state.is_none() || path.is_empty() {
                // The index said running, the record says otherwise (or is gone): mend the
                // index, and the count start-up took from it.
                let now = state.and_then(liveness);
                self.inner.live.moved(&key, Some(Liveness::Running), now);
                last = self.inner.store.write_task(TaskWrite {
                    record: None,
                    live: (Some(Liveness::Running), now),
                    ..TaskWrite::record_only(&key, Vec::new())
                })?;
                st.stored_live = now;
                continue;
            }
            tracing::warn!(agent = %key.agent, task = %key.task, "failing a task whose invocation the previous process did not finish");
            self.fail_through(&slot, &mut st, path, REASON.to_string())?;
            last = last.max(st.ticket);
            failed += 1;
        }
        // One flush for all of them.
        self.inner.store.durable(last).await?;
        Ok(failed)
    }

    /// An awaiting timer ran out for `key` at `at`: cancel (awaiting input) or complete (awaiting
    /// completion), if the task still waits on that very deadline.
    async fn expire(&self, key: TaskKey, at: i64) {
        let slot = self.hold(&key);
        let result: Result<(), EngineError> = async {
            let mut st = slot.state.lock().await;
            self.ensure_loaded(&key, &mut st)?;
            let Some(record) = st.record.as_ref() else {
                return Ok(());
            };
            if record.deadline_ms != Some(at) {
                return Ok(());
            }
            let Some((to, row)) = state::on_timeout(record.state()) else {
                return Ok(());
            };
            let (what, ms) = if record.state() == TaskState::AwaitingInput {
                (
                    "awaitingInputTimeout",
                    record.limits.awaiting_input_timeout_ms,
                )
            } else {
                (
                    "awaitingCompletionTimeout",
                    record.limits.awaiting_completion_timeout_ms,
                )
            };
            let note = format!("{what} of {ms} ms expired");
            tracing::info!(task = %key.task, %note, "awaiting timer expired");
            self.inner.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            self.transition(&slot, &mut st, to, vec![DataItem::text(note)], row)?;
            // An invocation still winding down after resting must not outlive the task.
            if let Some(running) = st.running.take() {
                running.abort.cancel();
            }
            let event = if to == TaskState::Canceled {
                PartnerEvent::Cancel(EndReason::Timeout)
            } else {
                PartnerEvent::Complete(EndReason::Timeout)
            };
            let hook = self.invocation_for(&st, event, Vec::new(), Default::default());
            let version = st.record.as_ref().map_or(0, |r| r.agent_version);
            let ticket = st.ticket;
            drop(st);
            self.inner.store.durable(ticket).await?;
            if let Some(agent) = self.inner.agents.version(&key.agent, version) {
                self.spawn_hook(&agent, &slot, hook);
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            tracing::error!(agent = %key.agent, task = %key.task, error = %e, "could not expire a task");
        }
    }
}

fn is_resting(st: &SlotState) -> bool {
    st.record.as_ref().is_some_and(|r| r.state().is_resting())
}

fn current_after(st: &SlotState) -> Option<TaskState> {
    st.record.as_ref().map(TaskRecord::state)
}

/// Whether a stored record's task has not ended (building the live index of an older store).
fn stored_liveness(bytes: &[u8]) -> Result<Option<Liveness>, String> {
    serde_json::from_slice::<TaskRecord>(bytes)
        .map(|r| liveness(r.state()))
        .map_err(|e| e.to_string())
}
