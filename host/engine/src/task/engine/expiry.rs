//! Expiry and recovery: timers that run out on resting tasks, and tasks whose invocation died
//! with the previous process.

use super::slots::Loaded;
use super::{EngineError, TaskEngine};
use crate::task::live_tasks::liveness;
use crate::task::record::TaskRecord;
use aiphost_model::TaskState;
use aiphost_model::cause::Cause;
use aiphost_model::state;
use aiphost_runtime::{EndReason, PartnerEvent};
use aiphost_store::{Liveness, TaskKey, TaskWrite, Ticket};

impl TaskEngine {
    /// An awaiting timer ran out for `key` at `at`: cancel (awaiting input) or complete (awaiting
    /// completion), if the task still waits on that very deadline.
    pub(super) async fn expire(&self, key: TaskKey, at: i64) {
        let slot = self.hold(&key);
        let result: Result<(), EngineError> = async {
            let mut st = slot.state.lock().await;
            self.ensure_loaded(&slot, &mut st).await?;
            let Some(record) = st.record.as_ref() else {
                return Ok(());
            };
            if record.deadline_ms != Some(at) {
                return Ok(());
            }
            let Some((to, row)) = state::on_timeout(record.state()) else {
                return Ok(());
            };
            let (cause, ms) = if record.state() == TaskState::AwaitingInput {
                (
                    Cause::AwaitingInputTimeout,
                    record.limits.awaiting_input_timeout_ms,
                )
            } else {
                (
                    Cause::AwaitingCompletionTimeout,
                    record.limits.awaiting_completion_timeout_ms,
                )
            };
            let note = format!("{} of {ms} ms expired", cause.as_str());
            tracing::info!(task = %key.task, %note, "awaiting timer expired");
            self.inner.observer.timeout(&key.agent);
            // The words for people, the cause typed for doors (a form's timeout is not a cancel).
            self.transition(&slot, &mut st, to, vec![cause.item(note)], row)
                .await?;
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
            // Set aside: failed, and off the counts and the index already.
            if self.ensure_loaded(&slot, &mut st).await? == Loaded::SetAside
                || st.running.is_some()
                || st.pending.is_some()
            {
                continue;
            }
            let state = st.record.as_ref().map(TaskRecord::state);
            let path = state::host_failure_path(state);
            if state.is_none() || path.is_empty() {
                // The index said running, the record says otherwise (or is gone): mend the
                // index, and the count start-up took from it.
                let now = state.and_then(liveness);
                self.inner.live.moved(&key, Some(Liveness::Running), now);
                last = self
                    .inner
                    .store
                    .write_task(TaskWrite {
                        live: (Some(Liveness::Running), now),
                        ..TaskWrite::without_record(&key)
                    })?
                    .applied()
                    .await?;
                st.stored_live = now;
                continue;
            }
            tracing::warn!(agent = %key.agent, task = %key.task, "failing a task whose invocation the previous process did not finish");
            self.fail_through(&slot, &mut st, path, REASON.to_string())
                .await?;
            last = last.max(st.ticket);
            failed += 1;
        }
        // One flush for all of them.
        self.inner.store.durable(last).await?;
        Ok(failed)
    }
}
