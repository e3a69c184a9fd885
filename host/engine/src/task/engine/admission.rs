//! What a command must pass before it reaches its task, whatever door it came through: the
//! rate quota of the partner's tenant (each command counts once, from any door), its sender (a
//! v2 `senderId` must be the authenticated Leader) and its content types (every data item of a
//! start or continue must be one some skill of the partner accepts), and for a start or a
//! continue, room on the store's disk.

use super::{EngineError, TaskEngine};
use crate::agent::Agent;
use aiphost_model::{
    CommandKind, CommandPolicy, HistoryFilter, Inbound, InvalidField, LeaderCommand, WireForm,
};
use aiphost_store::TaskKey;

/// A command let in: the task it acts on, and the span its work is traced in.
pub(super) struct Admitted {
    /// The task, in the namespace of the Leader the door authenticated.
    pub(super) key: TaskKey,
    /// The task's id as its Leader knows it (made up here for a start without one).
    pub(super) task_id: String,
    /// The command.
    pub(super) command: LeaderCommand,
    /// The wire form its door keeps for a task it starts (the task's notices go out in its
    /// starter's).
    pub(super) form: Option<WireForm>,
    /// What its door asks where protocols differ.
    pub(super) policy: CommandPolicy,
    /// The history filter its door read, said only if the command reads the task.
    pub(super) history: Result<HistoryFilter, InvalidField>,
    /// `engine.command` span: agent, task, command and the style it came in.
    pub(super) span: tracing::Span,
}

impl TaskEngine {
    /// Count `inbound` and let it in for `agent` (see [`admit`]); `style` names how it came
    /// (`rpc`, `stream`, `notification`, `group`) in its span.
    pub(super) fn let_in(
        &self,
        agent: &Agent,
        inbound: Inbound,
        style: &'static str,
    ) -> Result<Admitted, EngineError> {
        self.inner.observer.command(agent.id());
        admit(agent, &inbound)?;
        // New work waits for room on the disk; reads, cancels and completes, which end work or
        // add a little, go on (`store/src/space.rs`).
        if matches!(
            inbound.command.command,
            CommandKind::Start | CommandKind::Continue
        ) {
            self.inner.store.room_for_new_work()?;
        }
        let Inbound {
            form,
            command,
            owner,
            policy,
            history,
        } = inbound;
        let task_id = command
            .task_id
            .clone()
            .unwrap_or_else(|| format!("task-{}", uuid::Uuid::new_v4()));
        let key = TaskKey::owned(agent.id(), owner.as_deref(), &task_id);
        let span = tracing::info_span!("engine.command", agent = %key.agent, task = %key.task, command = %command.command, style);
        Ok(Admitted {
            key,
            task_id,
            command,
            form,
            policy,
            history,
            span,
        })
    }
}

/// Refuse `inbound` for `agent` if it may not reach a task.
fn admit(agent: &Agent, inbound: &Inbound) -> Result<(), EngineError> {
    agent.admit_request()?;
    if let Some((sender, leader)) = inbound.foreign_sender() {
        return Err(EngineError::NotTheLeader {
            sender_id: sender.to_string(),
            leader: leader.to_string(),
        });
    }
    // Whatever door it came through: a value nested too deep to read back is never stored.
    inbound
        .command
        .check_depth()
        .map_err(EngineError::TooDeep)?;
    content_types(agent, inbound)
}

/// Refused when a start or continue carries an item none of the partner's skills accepts.
fn content_types(agent: &Agent, inbound: &Inbound) -> Result<(), EngineError> {
    if !matches!(
        inbound.command.command,
        CommandKind::Start | CommandKind::Continue
    ) {
        return Ok(());
    }
    for (i, item) in inbound.command.data_items.iter().enumerate() {
        let mime = item.mime_type();
        if !agent.manifest.accepts(mime) {
            return Err(EngineError::ContentTypeNotAccepted {
                item: i,
                mime_type: mime.to_string(),
                accepted: agent
                    .manifest
                    .input_modes()
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            });
        }
    }
    Ok(())
}
