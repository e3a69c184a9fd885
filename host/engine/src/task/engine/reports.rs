//! The engine's side of a partner's reports: status changes, product chunks, text deltas, tool
//! activity, forms, coded failures and plain replies arriving through the partner's host
//! imports, checked against the state machine and the task's activity budget, and stored like
//! any change (a delta is a product chunk, activity an event of its own, a form or a failure the
//! items of a status: see [`aiphost_model::activity`]).

use super::slots::SlotState;
use super::{Held, current_after};
use crate::task::forms;
use aiphost_model::activity::{Activity, Failure, InputRequest, TextDelta};
use aiphost_model::state::{self, ReportRefused};
use aiphost_model::{DataItem, EventKind, Product, ProductChunk, TaskState, TaskStatus};
use aiphost_runtime::{EndReason, PartnerEvent, ReportError, Reporter};
use futures::FutureExt;
use futures::future::BoxFuture;

/// The engine's side of a partner's reports during one invocation.
pub(super) struct TaskReporter {
    /// A hold on the task's slot: a partner's invocation may outlive the command that started it
    /// (a cancel aborts it), and its last report must still find the slot it holds.
    pub(super) slot: Held,
    /// The start/continue run this reporter belongs to; `None` for end-of-task hooks.
    pub(super) run: Option<u64>,
}

impl TaskReporter {
    async fn report_status(&self, to: TaskState, items: Vec<DataItem>) -> Result<(), ReportError> {
        let mut st = self.slot.state.lock().await;
        let current = current_after(&st);
        if self.run.is_none() || st.running.as_ref().map(|r| r.id) != self.run {
            return Err(match current {
                Some(s) if s.is_terminal() => ReportError::TaskEnded,
                _ => ReportError::InvalidTransition(
                    "this invocation no longer drives the task".into(),
                ),
            });
        }
        let row = state::on_partner_report(current, to).map_err(|e| match e {
            ReportRefused::Ended(_) => ReportError::TaskEnded,
            other => ReportError::InvalidTransition(other.to_string()),
        })?;
        let engine = &self.slot.engine;
        let stored = if st.record.is_none() {
            engine
                .create(&self.slot, &mut st, TaskStatus::now(to, items))
                .await
        } else if to == TaskState::AwaitingCompletion
            && st
                .record
                .as_ref()
                .is_some_and(|r| r.task.completes_on_result)
        {
            // The host completes the task for its Leader (row 12), in the same lock so nobody
            // sees it rest in awaiting-completion; the completed status repeats what the partner
            // said with its result. The partner hears the completion once this invocation ends.
            let said = items.clone();
            let completed = match engine.transition(&self.slot, &mut st, to, items, row).await {
                Ok(()) => {
                    engine
                        .transition(&self.slot, &mut st, TaskState::Completed, said, 12)
                        .await
                }
                Err(e) => Err(e),
            };
            if completed.is_ok() {
                st.end_hook = Some(PartnerEvent::Complete(EndReason::Leader));
            }
            completed
        } else {
            engine.transition(&self.slot, &mut st, to, items, row).await
        };
        stored.map_err(|e| {
            tracing::error!(error = %e, "could not store a partner report");
            ReportError::InvalidTransition("the host could not store the change; try again".into())
        })
    }

    async fn report_chunk(&self, chunk: ProductChunk) -> Result<(), ReportError> {
        let mut st = self.slot.state.lock().await;
        let current = self.producing(&st, "emitting products")?;
        self.store_chunk(&mut st, current, chunk).await
    }

    /// The task's state if this invocation may add to it now (`doing` words the refusal): the
    /// task is accepted or working, driven by this invocation.
    fn producing(&self, st: &SlotState, doing: &str) -> Result<TaskState, ReportError> {
        match current_after(st) {
            Some(s) if s.is_terminal() => Err(ReportError::TaskEnded),
            Some(s @ (TaskState::Accepted | TaskState::Working))
                if st.running.as_ref().map(|r| r.id) == self.run =>
            {
                Ok(s)
            }
            None => Err(ReportError::InvalidTransition(format!(
                "accept the task before {doing}"
            ))),
            Some(s) => Err(ReportError::InvalidTransition(format!(
                "{doing} is for a task that is working, not one that is {s}"
            ))),
        }
    }

    /// Apply a chunk to the record and store it; over `maxProductsBytes` the host fails the task.
    async fn store_chunk(
        &self,
        st: &mut SlotState,
        current: TaskState,
        chunk: ProductChunk,
    ) -> Result<(), ReportError> {
        let Some(record) = st.record.as_mut() else {
            return Err(ReportError::TaskEnded);
        };
        match record.apply_chunk(chunk.clone()) {
            Ok(()) => {
                self.slot
                    .engine
                    .persist(&self.slot, st, vec![EventKind::Chunk { chunk }])
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "could not store a product chunk");
                        ReportError::InvalidTransition(
                            "the host could not store the product; try again".into(),
                        )
                    })?;
                Ok(())
            }
            Err(total) => {
                let limit = record.limits.max_products_bytes;
                let reason = format!(
                    "the products would reach {total} bytes, over maxProductsBytes of {limit}"
                );
                tracing::warn!(%reason, "product limit reached; the task fails");
                for &step in state::host_failure_path(Some(current)) {
                    let items = if step == TaskState::Failed {
                        vec![DataItem::text(reason.clone())]
                    } else {
                        Vec::new()
                    };
                    let row = state::on_partner_report(current_after(st), step).unwrap_or(0);
                    self.slot
                        .engine
                        .transition(&self.slot, st, step, items, row)
                        .await
                        .map_err(|_| ReportError::ProductsTooLarge(total))?;
                }
                Err(ReportError::ProductsTooLarge(total))
            }
        }
    }

    /// Count one activity event of `bytes` against the task's budget, or refuse it (changing
    /// nothing) when a cap is used up.
    fn spend(&self, st: &mut SlotState, bytes: u64) -> Result<(), ReportError> {
        let defaults = &self.slot.engine.inner.defaults;
        let (cap, max_bytes) = (defaults.activity_events_cap(), defaults.max_activity_bytes);
        let Some(record) = st.record.as_mut() else {
            return Err(ReportError::TaskEnded);
        };
        let used = &mut record.activity;
        if used.events >= cap {
            return Err(ReportError::LimitReached(format!(
                "the task has had its {cap} activity events (text deltas, tool calls and results, usage)"
            )));
        }
        if used.bytes.saturating_add(bytes) > max_bytes {
            return Err(ReportError::LimitReached(format!(
                "the task's tool activity and usage would exceed {max_bytes} bytes"
            )));
        }
        used.events += 1;
        used.bytes = used.bytes.saturating_add(bytes);
        Ok(())
    }

    async fn report_delta(&self, delta: TextDelta) -> Result<(), ReportError> {
        let mut st = self.slot.state.lock().await;
        let current = self.producing(&st, "streaming text")?;
        self.spend(&mut st, 0)?;
        self.store_chunk(&mut st, current, delta.into_chunk()).await
    }

    async fn report_activity(&self, activity: Activity) -> Result<(), ReportError> {
        let mut st = self.slot.state.lock().await;
        self.producing(&st, "reporting tool activity or usage")?;
        self.spend(&mut st, activity.bytes())?;
        self.slot
            .engine
            .persist(&self.slot, &mut st, vec![EventKind::Activity { activity }])
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "could not store a partner's activity");
                ReportError::InvalidTransition("the host could not store it; try again".into())
            })
    }

    async fn report_ask(
        &self,
        request: InputRequest,
        items: Vec<DataItem>,
    ) -> Result<(), ReportError> {
        // Compiled now, so a form no client could ever answer is the partner's error, not theirs.
        forms::compile(&request.schema).map_err(ReportError::InvalidData)?;
        let mut all = request.items();
        all.extend(items);
        self.report_status(TaskState::AwaitingInput, all).await
    }

    /// A plain reply. AIP has no stateless answer, so every door sees the same thing: a task that
    /// is completed at once with the reply as its product `reply` (accepted, working, the
    /// product, awaiting-completion, completed, as a Leader completing it would), stored in one
    /// write. The partner is not invoked again for the completion: it knows.
    async fn report_reply(&self, items: Vec<DataItem>) -> Result<(), ReportError> {
        let mut st = self.slot.state.lock().await;
        if st.record.is_some() || st.pending.is_none() || self.run.is_none() {
            return Err(match current_after(&st) {
                Some(s) if s.is_terminal() => ReportError::TaskEnded,
                _ => ReportError::InvalidTransition(
                    "a plain reply answers a start, before the task is accepted or rejected".into(),
                ),
            });
        }
        if st.running.as_ref().map(|r| r.id) != self.run {
            return Err(ReportError::InvalidTransition(
                "this invocation no longer drives the task".into(),
            ));
        }
        if let Some(pending) = st.pending.as_mut() {
            pending.plain_reply = true;
        }
        let engine = &self.slot.engine;
        let failed = |e| {
            tracing::error!(error = %e, "could not store a plain reply");
            ReportError::InvalidTransition("the host could not store the reply; try again".into())
        };
        engine
            .create(
                &self.slot,
                &mut st,
                TaskStatus::now(TaskState::Accepted, Vec::new()),
            )
            .await
            .map_err(failed)?;
        for (to, with) in [
            (TaskState::Working, Vec::new()),
            (TaskState::AwaitingCompletion, items.clone()),
        ] {
            let row = state::on_partner_report(current_after(&st), to)
                .map_err(|e| ReportError::InvalidTransition(e.to_string()))?;
            if to == TaskState::AwaitingCompletion {
                let chunk = ProductChunk {
                    product: Product {
                        id: "reply".into(),
                        name: None,
                        description: None,
                        data_items: items.clone(),
                    },
                    append: false,
                    last_chunk: true,
                };
                self.store_chunk(&mut st, TaskState::Working, chunk).await?;
            }
            engine
                .transition(&self.slot, &mut st, to, with, row)
                .await
                .map_err(failed)?;
        }
        engine
            .transition(&self.slot, &mut st, TaskState::Completed, items, 12)
            .await
            .map_err(failed)
    }
}

impl Reporter for TaskReporter {
    fn set_status(
        &self,
        state: TaskState,
        items: Vec<DataItem>,
    ) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_status(state, items).boxed()
    }

    fn emit_chunk(&self, chunk: ProductChunk) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_chunk(chunk).boxed()
    }

    fn current_state(&self) -> BoxFuture<'_, Option<TaskState>> {
        async move { current_after(&*self.slot.state.lock().await) }.boxed()
    }

    fn stream_text(&self, delta: TextDelta) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_delta(delta).boxed()
    }

    fn activity(&self, activity: Activity) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_activity(activity).boxed()
    }

    fn ask(
        &self,
        request: InputRequest,
        items: Vec<DataItem>,
    ) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_ask(request, items).boxed()
    }

    fn fail(&self, failure: Failure) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_status(TaskState::Failed, failure.items())
            .boxed()
    }

    fn reply(&self, items: Vec<DataItem>) -> BoxFuture<'_, Result<(), ReportError>> {
        self.report_reply(items).boxed()
    }
}
