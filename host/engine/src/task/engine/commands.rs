//! Applying Leader commands: where a command enters the engine (whatever door it came through),
//! is checked against the state machine and the Leader's caps, and changes its task.

use super::admission::Admitted;
use super::notifications::{Split, Subscribe};
use super::slots::{Slot, SlotState, is_resting};
use super::{EngineError, Reply, TaskEngine};
use crate::agent::Agent;
use crate::task::forms;
use crate::task::live_tasks::{Starting, liveness};
use crate::task::record::{TaskLimits, TaskRecord};
use aiphost_model::activity::InputRequest;
use aiphost_model::notification::{NotificationConfig, Subscription};
use aiphost_model::state::{self, CommandEffect};
use aiphost_model::{
    CommandKind, CommandPolicy, DataItem, EventKind, HistoryFilter, Inbound, InvalidField,
    LeaderCommand, Task, TaskState, TaskStatus, WireForm,
};
use aiphost_runtime::{EndReason, Invocation, PartnerEvent};
use aiphost_store::{StoreError, TaskKey};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// A Leader command on its way into a task's slot.
pub(super) struct Incoming {
    pub(super) command: LeaderCommand,
    pub(super) task_id: String,
    pub(super) form: Option<WireForm>,
    /// What its door asks where protocols differ.
    pub(super) policy: CommandPolicy,
    /// The history filter its door read, said only if the command reads the task.
    pub(super) history: Result<HistoryFilter, InvalidField>,
    /// Where a start notifies the task's changes (`notification/start`, or a config sent with
    /// it).
    pub(super) notify: Option<Subscription>,
    /// A config sent with the command, to store with its change, and the states it hears of.
    pub(super) inline: Option<(NotificationConfig, Vec<TaskState>)>,
    /// The group membership the task's results are published to (a command from a group).
    pub(super) group: Option<String>,
}

/// What applying a command did.
pub(super) struct Applied {
    /// The answer, unless the command started an invocation and was told not to wait.
    pub(super) reply: Option<Reply>,
    /// The task's newest event before the command (0 for a new task).
    pub(super) seq_before: u64,
}

pub(super) struct PendingStart {
    pub(super) command: LeaderCommand,
    pub(super) task_id: String,
    pub(super) form: Option<WireForm>,
    pub(super) limits: TaskLimits,
    pub(super) notify: Option<Subscription>,
    /// The config sent with the start: stored with the task's creation.
    pub(super) config: Option<NotificationConfig>,
    pub(super) group: Option<String>,
    /// The host completes it as soon as the partner has a result.
    pub(super) complete_on_result: bool,
    /// The partner answers with a plain reply (set by the reply itself, just before the task is
    /// created as its record).
    pub(super) plain_reply: bool,
    /// The partner version deciding it: the task runs on that version to its end.
    pub(super) agent_version: u64,
    /// Its place under the Leader's cap of live tasks, until the partner decides.
    pub(super) _starting: Starting,
}

impl TaskEngine {
    /// Carry out a Leader command for `agent` and answer with the task; `subscribe`: where the
    /// task's changes are to be notified from this command on.
    pub async fn command(
        &self,
        agent: &Arc<Agent>,
        inbound: Inbound,
        subscribe: Option<Subscribe>,
    ) -> Result<Reply, EngineError> {
        self.routed_command(agent, inbound, subscribe, None).await
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
        self.ensure_loaded(&slot, &mut st).await?;
        Ok(st
            .record
            .as_ref()
            .is_some_and(|r| r.task.commands.iter().any(|c| c.id == id)))
    }

    pub(super) async fn routed_command(
        &self,
        agent: &Arc<Agent>,
        inbound: Inbound,
        subscribe: Option<Subscribe>,
        group: Option<String>,
    ) -> Result<Reply, EngineError> {
        self.check_inline_target(subscribe.as_ref()).await?;
        let style = match (&subscribe, &group) {
            (_, Some(_)) => "group",
            (Some(_), None) => "notification",
            (None, None) => "rpc",
        };
        let Admitted {
            key,
            task_id,
            command,
            form,
            policy,
            history,
            span,
        } = self.let_in(agent, inbound, style)?;
        if command.command == CommandKind::ReStream {
            return Err(EngineError::ReStreamNotStreamed);
        }
        let Split { notify, inline } =
            self.split_subscribe(&key, subscribe, command.command == CommandKind::Start)?;
        async move {
            let slot = self.hold(&key);
            let result = self
                .command_in_slot(
                    agent,
                    &slot,
                    Incoming {
                        command,
                        task_id,
                        form,
                        policy,
                        history,
                        notify,
                        inline,
                        group,
                    },
                    true,
                )
                .await;

            result?.reply.ok_or(EngineError::Internal(
                "the command was applied but not answered",
            ))
        }
        .instrument(span)
        .await
    }

    pub(super) async fn command_in_slot(
        &self,
        agent: &Arc<Agent>,
        slot: &Arc<Slot>,
        incoming: Incoming,
        wait: bool,
    ) -> Result<Applied, EngineError> {
        let Incoming {
            command,
            task_id,
            form,
            policy,
            history,
            mut notify,
            mut inline,
            mut group,
        } = incoming;
        loop {
            let mut st = slot.state.lock().await;
            self.ensure_loaded(slot, &mut st).await?;
            // A task runs on the partner version it started on, whatever serves new tasks now.
            let pinned = match st.record.as_ref() {
                Some(r) if r.agent_version != agent.version => Some(
                    self.inner
                        .agents
                        .version(agent.id(), r.agent_version)
                        .ok_or(EngineError::PartnerVersionUnavailable {
                            version: r.agent_version,
                        })?,
                ),
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
                let change = st.next_change();
                drop(st);
                let _ = change.await;
                continue;
            }
            let current = st.record.as_ref().map(TaskRecord::state);
            let seq_before = st.record.as_ref().map_or(0, |r| r.last_event_seq);
            let applied = |reply| Applied { reply, seq_before };
            let effect = state::on_command(current, command.command);
            if policy.strict
                && let Some(record) = &st.record
            {
                refuse_strictly(&record.task, &command, effect)?;
            }
            return match effect {
                CommandEffect::NotFound => Err(EngineError::task_not_found(&task_id)),
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
                    let response_timeout = if policy.answer_at_once {
                        Duration::ZERO
                    } else {
                        Duration::from_millis(limits.response_timeout_ms)
                    };
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
                        form,
                        limits,
                        notify: notify.take(),
                        config: inline.take().map(|(config, _)| config),
                        group: group.take(),
                        complete_on_result: policy.complete_on_result,
                        plain_reply: false,
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
                        CommandEffect::Read => Some(history.clone()?),
                        _ => {
                            tracing::debug!(state = ?current, "command does not apply; ignored");
                            None
                        }
                    };
                    if st.record.is_none() {
                        return Err(EngineError::task_not_found(&task_id));
                    }
                    let with_config = inline.is_some();
                    if let Some((config, states)) = inline.take() {
                        self.take_inline(&slot.key, &mut st, config, states)?;
                    }
                    let record = st
                        .record
                        .as_mut()
                        .ok_or_else(|| EngineError::task_not_found(&task_id))?;
                    record.record_command(command, true, &self.inner.defaults.history);
                    match self.persist_history(slot, &mut st).await {
                        // On a full disk a read still answers, the task as stored; only its
                        // entry in the history is not kept (but a config sent with the
                        // command is refused with it: it is stored with the command or not).
                        Err(StoreError::Full { .. }) if !with_config => {
                            self.ensure_loaded(slot, &mut st).await?;
                        }
                        other => other?,
                    }
                    self.durable_reply(slot, st, filter)
                        .await
                        .map(|r| applied(Some(r)))
                }
                CommandEffect::Transition(to, row) => {
                    let mut command = command;
                    // A continue answering the task's form is checked against its schema
                    // first: a wrong answer is refused with nothing stored.
                    if command.command == CommandKind::Continue
                        && let Some(request) = st
                            .record
                            .as_ref()
                            .filter(|r| r.state() == TaskState::AwaitingInput)
                            .and_then(|r| InputRequest::of(&r.task.status.data_items))
                    {
                        forms::take_answer(&request, &mut command.data_items)?;
                    }
                    let kind = command.command;
                    let data_items = command.data_items.clone();
                    let params = command.params.clone();
                    if st.record.is_none() {
                        return Err(EngineError::task_not_found(&task_id));
                    }
                    if let Some((config, states)) = inline.take() {
                        self.take_inline(&slot.key, &mut st, config, states)?;
                    }
                    let record = st
                        .record
                        .as_mut()
                        .ok_or_else(|| EngineError::task_not_found(&task_id))?;
                    record.record_command(command, false, &self.inner.defaults.history);
                    self.transition(slot, &mut st, to, Vec::new(), row).await?;
                    match kind {
                        CommandKind::Continue => {
                            let response_timeout = if policy.answer_at_once {
                                Duration::ZERO
                            } else {
                                self.response_timeout(&st)
                            };
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

    /// Create the record of the slot's pending start with its first status (accepted or
    /// rejected), logging the task's first event.
    pub(super) async fn create(
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
            p.form,
            p.limits,
            status.clone(),
            &self.inner.defaults.history,
        );
        record.agent_version = p.agent_version;
        record.notify = p.notify;
        st.unwritten.configs.extend(p.config);
        record.group = p.group;
        record.task.completes_on_result = p.complete_on_result;
        record.task.plain_reply = p.plain_reply;
        // Counted before the start's reservation (in `p`) is given back.
        self.inner
            .live
            .moved(&slot.key, None, liveness(status.state));
        *slot
            .made_in_session
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = record.task.session_id.clone();
        st.record = Some(record);
        self.inner.observer.transition(&slot.key.agent);
        self.persist(
            slot,
            st,
            vec![EventKind::Created {
                status,
                plain_reply: p.plain_reply,
            }],
        )
        .await
    }

    /// Move the slot's task to `to` (row `row` of the table), persisting it.
    pub(super) async fn transition(
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
        self.inner.observer.transition(&slot.key.agent);
        self.persist(slot, st, vec![EventKind::Status { status }])
            .await
    }

    /// The refusal of a start over the Leader's cap of tasks that have not ended.
    pub(super) fn too_many_live_tasks(&self, key: &TaskKey, live: u64) -> EngineError {
        EngineError::TooManyLiveTasks {
            task_id: key.task.clone(),
            limit: self.inner.live.max(),
            live,
        }
    }
}

/// Under [`CommandPolicy::strict`]: refuse a command that does not apply to an ended task, and a
/// continue that names another session than its task's, before anything is recorded.
fn refuse_strictly(
    task: &Task,
    command: &LeaderCommand,
    effect: CommandEffect,
) -> Result<(), EngineError> {
    let state = task.status.state;
    if effect == CommandEffect::Ignored && state.is_terminal() {
        return Err(EngineError::TaskEnded {
            task_id: task.id.clone(),
            state,
            command: command.command,
        });
    }
    if command.command == CommandKind::Continue
        && let Some(given) = &command.session_id
        && task.session_id.as_ref() != Some(given)
    {
        return Err(EngineError::OtherSession {
            task_id: task.id.clone(),
            session_id: given.clone(),
            task_session_id: task.session_id.clone(),
        });
    }
    Ok(())
}
