//! The engine's side of a partner's reports: status changes and product chunks arriving through
//! the partner's host imports, checked against the state machine and stored like any change.

use super::{Held, current_after};
use aiphost_model::state::{self, ReportRefused};
use aiphost_model::{DataItem, EventKind, ProductChunk, TaskState, TaskStatus};
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
        let current = current_after(&st);
        match current {
            Some(s) if s.is_terminal() => return Err(ReportError::TaskEnded),
            Some(TaskState::Accepted | TaskState::Working)
                if st.running.as_ref().map(|r| r.id) == self.run => {}
            None => {
                return Err(ReportError::InvalidTransition(
                    "accept the task before emitting products".into(),
                ));
            }
            Some(s) => {
                return Err(ReportError::InvalidTransition(format!(
                    "products are emitted while the task is working, not while it is {s}"
                )));
            }
        }
        let Some(record) = st.record.as_mut() else {
            return Err(ReportError::TaskEnded);
        };
        match record.apply_chunk(chunk.clone()) {
            Ok(()) => {
                self.slot
                    .engine
                    .persist(&self.slot, &mut st, vec![EventKind::Chunk { chunk }])
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
                for &step in state::host_failure_path(current) {
                    let items = if step == TaskState::Failed {
                        vec![DataItem::text(reason.clone())]
                    } else {
                        Vec::new()
                    };
                    let row = state::on_partner_report(current_after(&st), step).unwrap_or(0);
                    self.slot
                        .engine
                        .transition(&self.slot, &mut st, step, items, row)
                        .await
                        .map_err(|_| ReportError::ProductsTooLarge(total))?;
                }
                Err(ReportError::ProductsTooLarge(total))
            }
        }
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
}
