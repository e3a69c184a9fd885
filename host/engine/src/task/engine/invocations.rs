//! Invocations: running the partner for a task (its turn under the partner's share, its pool
//! slot, the tenant's permits) and what happens when it ends or fails.

use super::reports::TaskReporter;
use super::slots::{Slot, SlotState, current_after};
use super::{EngineError, Reply, TaskEngine};
use crate::agent::Agent;
use crate::task::InvocationOutcome;
use crate::task::record::TaskRecord;
use aiphost_model::state;
use aiphost_model::{DataItem, TaskState, TaskStatus};
use aiphost_runtime::{Invocation, InvocationEnd, KvOwner, PartnerEvent};
use aiphost_store::{StoreError, TaskKey};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How often a task whose end could not be stored on a full disk looks for room again.
const ROOM_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// The tracing span of one invocation: the partner, the version that runs, the task and what
/// the partner is told.
pub(super) fn invocation_span(
    agent: &Agent,
    slot: &Slot,
    invocation: &Invocation,
) -> tracing::Span {
    tracing::info_span!("invocation", agent = %slot.key.agent, version = agent.version, task = %slot.key.task, event = ?invocation.event)
}

pub(super) struct Running {
    pub(super) id: u64,
    pub(super) abort: CancellationToken,
}

pub(super) static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// An invocation and what its end does to the task, ready to run.
type Run = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A [`Run`] polled by the command that started it. Dropped before the run ended (the answer
/// was ready first, or the client went away and its request was dropped), it hands the rest of
/// the run to a task of its own: an invocation, once begun, always ends and is recorded.
struct Inline(Option<Run>);

impl Future for Inline {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(run) = self.0.as_mut() else {
            return Poll::Ready(());
        };
        std::task::ready!(run.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(())
    }
}

impl Drop for Inline {
    fn drop(&mut self) {
        if let Some(run) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(run);
        }
    }
}

impl TaskEngine {
    /// Run `invocation` for the slot's task and, if asked to wait, answer once the task rests
    /// or `timeout` passes.
    ///
    /// A command that waits runs the invocation itself, polling it beside its wait for the
    /// answer: no task of its own and no hop between threads when the partner is quick. What is
    /// left of the invocation when the answer is ready (the task rested before the partner
    /// returned, or the timeout passed) or when the client goes away goes on as a task of its
    /// own ([`Inline`]).
    pub(super) async fn invoke_and_answer(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        mut st: tokio::sync::MutexGuard<'_, SlotState>,
        invocation: Invocation,
        timeout: Duration,
        wait: bool,
    ) -> Result<Option<Reply>, EngineError> {
        let run = self.invocation_run(agent, slot, &mut st, invocation);
        drop(st);
        if !wait {
            tokio::spawn(run);
            return Ok(None);
        }
        let mut run = Inline(Some(run));
        let answer = self.wait_for_rest(slot, timeout);
        tokio::pin!(answer);
        let reply = tokio::select! {
            biased;
            () = &mut run => answer.await,
            reply = &mut answer => reply,
        };
        reply.map(Some)
    }

    /// How long a command of the slot's task waits for its partner to rest: the task's
    /// `responseTimeout`, fixed at its start (a start not yet decided has its limits already).
    pub(super) fn response_timeout(&self, st: &SlotState) -> Duration {
        let limits = st
            .record
            .as_ref()
            .map(|r| &r.limits)
            .or(st.pending.as_ref().map(|p| &p.limits));
        Duration::from_millis(limits.map_or(self.inner.defaults.response_timeout_ms, |l| {
            l.response_timeout_ms
        }))
    }

    pub(super) fn invocation_for(
        &self,
        st: &SlotState,
        event: PartnerEvent,
        data_items: Vec<DataItem>,
        command_params: aiphost_model::JsonObject,
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

    /// Mark the slot's task as running `invocation`, and the run: the partner's invocation,
    /// then what its end does to the task.
    fn invocation_run(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        invocation: Invocation,
    ) -> Run {
        let run = Running {
            id: NEXT_RUN.fetch_add(1, Ordering::Relaxed),
            abort: CancellationToken::new(),
        };
        let (run_id, abort) = (run.id, run.abort.clone());
        st.running = Some(run);
        let (slot, agent) = (self.held(slot), agent.clone());
        let span = invocation_span(&agent, &slot, &invocation);
        Box::pin(
            async move {
                let engine = &slot.engine;
                let end = engine
                    .invoke(&agent, &slot, Some(run_id), invocation, abort)
                    .await;
                match engine.finish(&agent, &slot, run_id, end).await {
                    Ok(()) => {}
                    Err(StoreError::Full { .. }) => engine.fail_when_room(slot.key.clone()),
                    Err(e) => {
                        tracing::error!(error = %e, "could not record the end of an invocation")
                    }
                }
            }
            .instrument(span),
        )
    }

    /// Tell the partner that its task completed or was canceled. Its reports are refused; it may
    /// clean up its store.
    pub(super) fn spawn_hook(&self, agent: &Arc<Agent>, slot: &Arc<Slot>, invocation: Invocation) {
        let (slot, agent) = (self.held(slot), agent.clone());
        let span = invocation_span(&agent, &slot, &invocation);
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

    pub(super) async fn invoke(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        run: Option<u64>,
        invocation: Invocation,
        abort: CancellationToken,
    ) -> Option<InvocationEnd> {
        let reporter = Arc::new(TaskReporter {
            slot: self.held(slot),
            run,
        });
        let store = self.inner.store.clone();
        // When its turn came: the invocation's time is counted from there.
        let began = std::sync::OnceLock::new();
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
            let _ = began.set(std::time::Instant::now());
            self.inner
                .runtime
                .run(agent, reporter, store, owner, invocation, holds)
                .await
        };
        let end = tokio::select! {
            end = run => Some(end),
            _ = abort.cancelled() => None,
        };
        // One aborted before its turn never ran: not counted.
        if let Some(at) = began.get() {
            let outcome = InvocationOutcome::of(end.as_ref());
            self.inner
                .observer
                .invocation(agent.id(), outcome, at.elapsed());
        }
        end
    }

    /// After a start or continue invocation: a task the partner left moving fails, with the reason.
    pub(super) async fn finish(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        run_id: u64,
        end: Option<InvocationEnd>,
    ) -> Result<(), StoreError> {
        let mut st = slot.state.lock().await;
        if st.running.as_ref().is_none_or(|r| r.id != run_id) {
            return Ok(()); // aborted by a cancel, which already settled the task
        }
        st.running = None;
        // A report refused on a full disk left the slot without its record: read what is stored.
        self.ensure_loaded(slot, &mut st).await?;
        if let Some(event) = st.end_hook.take() {
            let hook = self.invocation_for(&st, event, Vec::new(), Default::default());
            self.spawn_hook(agent, slot, hook);
        }
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
            self.write_out(slot, &mut st).await?;
            st.changed();
            return Ok(());
        }
        self.inner.observer.invocation_failed_task(agent.id());
        tracing::warn!(%reason, "partner failed; the task fails");
        self.fail_through(slot, &mut st, path, reason).await
    }

    /// The end of an invocation could not be stored (the disk is full): once there is room
    /// again, fail the task if nothing else moved it meanwhile — else it would stay `working`,
    /// with nothing to move it, until the next start-up.
    fn fail_when_room(&self, key: TaskKey) {
        const REASON: &str = "the host's disk was full when the partner's work was to be stored; \
            that work was lost";
        tracing::warn!(agent = %key.agent, task = %key.task,
            "the end of an invocation could not be stored on a full disk; the task fails once there is room");
        let engine = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(ROOM_POLL).await;
                if engine.inner.store.room_for_new_work().is_err() {
                    continue;
                }
                let slot = engine.hold(&key);
                let mut st = slot.state.lock().await;
                let failed = match engine.ensure_loaded(&slot, &mut st).await {
                    Err(e) => Err(e),
                    // Another command or invocation drives it now.
                    Ok(_) if st.running.is_some() || st.pending.is_some() => return,
                    Ok(_) => {
                        let path =
                            state::host_failure_path(st.record.as_ref().map(TaskRecord::state));
                        if st.record.is_none() || path.is_empty() {
                            return;
                        }
                        engine
                            .fail_through(&slot, &mut st, path, REASON.to_string())
                            .await
                    }
                };
                match failed {
                    Ok(()) => return,
                    Err(StoreError::Full { .. }) => continue,
                    Err(e) => {
                        tracing::error!(agent = %key.agent, task = %key.task, error = %e,
                            "could not fail a task whose work was lost on a full disk");
                        return;
                    }
                }
            }
        });
    }

    /// Walk the slot's task along `path` (rows of the table) to its end, the last status
    /// carrying `reason`.
    pub(super) async fn fail_through(
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
                self.create(slot, st, TaskStatus::now(step, items)).await?;
            } else {
                let row = state::on_partner_report(current_after(st), step).unwrap_or(0);
                self.transition(slot, st, step, items, row).await?;
            }
        }
        Ok(())
    }
}
