//! Replies: a command is answered with the task only once what it shows is durable, after
//! waiting (up to the response timeout) for the task to rest.

use super::slots::{Slot, SlotState};
use super::{EngineError, Reply, TaskEngine};
use aiphost_model::HistoryFilter;
use aiphost_store::{TaskKey, Ticket};
use std::sync::Arc;
use std::time::Duration;

/// Where a stream of a task starts (see [`TaskEngine::stream_point`]).
pub(super) struct StreamPoint {
    pub(super) last: u64,
    pub(super) ended: bool,
    pub(super) ids: Option<(Option<String>, Option<String>)>,
    pub(super) completes_on_result: bool,
    pub(super) response_timeout: std::time::Duration,
    pub(super) ticket: Ticket,
}

impl TaskEngine {
    /// Where a stream of the task starts: its newest event, whether it has ended, its session and
    /// group, its `responseTimeout`, and the ticket that makes all of that durable — taken
    /// together under the slot lock.
    pub(super) async fn stream_point(&self, key: &TaskKey) -> Result<StreamPoint, EngineError> {
        let slot = self.hold(key);
        let mut st = slot.state.lock().await;
        self.ensure_loaded(&slot, &mut st).await?;
        self.write_out(&slot, &mut st).await?;
        Ok(StreamPoint {
            last: st.record.as_ref().map_or(0, |r| r.last_event_seq),
            ended: st.record.as_ref().is_some_and(|r| r.state().is_terminal()),
            ids: st
                .record
                .as_ref()
                .map(|r| (r.task.session_id.clone(), r.task.group_id.clone())),
            completes_on_result: st
                .record
                .as_ref()
                .is_some_and(|r| r.task.completes_on_result),
            response_timeout: self.response_timeout(&st),
            ticket: st.ticket,
        })
    }

    /// Answer with the slot's task once its last write is durable.
    pub(super) async fn durable_reply(
        &self,
        slot: &Slot,
        mut st: tokio::sync::MutexGuard<'_, SlotState>,
        history: Option<HistoryFilter>,
    ) -> Result<Reply, EngineError> {
        self.write_out(slot, &mut st).await?;
        let ticket = st.ticket;
        let (task, seq) = st
            .record
            .as_ref()
            .map(|r| (r.task.clone(), r.last_event_seq))
            .ok_or(EngineError::Internal("the task vanished while answering"))?;
        drop(st);
        self.inner.store.durable(ticket).await?;
        Ok(Reply { task, history, seq })
    }

    /// Wait until the task rests (or its invocation ends), or `timeout` passes once the task
    /// exists, then answer with it.
    pub(super) async fn wait_for_rest(
        &self,
        slot: &Arc<Slot>,
        timeout: Duration,
    ) -> Result<Reply, EngineError> {
        let deadline = tokio::time::Instant::now() + timeout;
        // One timer for the whole wait, armed when first polled: a timer made per turn of the
        // loop (each report of the partner is a turn) is registered with the runtime's timer
        // wheel and taken out again every time (issue 35 decision 4).
        let timer = tokio::time::sleep_until(deadline);
        tokio::pin!(timer);
        loop {
            let mut st = slot.state.lock().await;
            if let Some(record) = &st.record {
                let done = record.state().is_resting() || st.running.is_none();
                if done || tokio::time::Instant::now() >= deadline {
                    return self.durable_reply(slot, st, None).await;
                }
            }
            let undecided = st.record.is_none();
            if undecided && st.pending.is_none() && st.running.is_none() {
                // The start ended without a stored task (the store failed under it).
                return Err(EngineError::Internal(
                    "the task could not be stored; retry the start",
                ));
            }
            let change = st.next_change();
            drop(st);
            // Until the partner decides there is no task to report, so only then does the
            // response timeout count; the invocation's own deadline bounds the wait. Past the
            // deadline an undecided start waits for the change itself (never a busy loop).
            if undecided && tokio::time::Instant::now() >= deadline {
                let _ = change.await;
            } else {
                tokio::select! {
                    _ = change => {}
                    () = &mut timer => {}
                }
            }
        }
    }
}
