//! A chat door's sessions (the Agent API's `session_id`, AIFlowy's `conversationId`): chat
//! protocols name no task, so a session's newest task says what a request does, and one turn
//! at a time runs in a session.
//!
//! [`newest`] finds the session's newest task in the caller's namespace (another Leader's
//! session of the same id is simply another session); [`turn`] says what a request does by it
//! ([`Next`]: continue it while it awaits input, refuse while it runs, else start one), and
//! [`inbound`] makes the turn's engine command under the chat doors' [`POLICY`].
//! [`SessionGuard`] makes a door's look-up and start one step: a start's task is recorded only
//! once its partner has decided, so two requests of one session at once would both find none
//! running and start two. A door holds the session from the look-up until its turn's first
//! event; a request that finds it held is told the session is busy. The guard is one door's,
//! in one process: a start at another door in the same instant is caught only once decided.

use super::caller::Caller;
use crate::model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, JsonObject, LeaderCommand, Task,
    TaskState, Timestamp,
};
use crate::task::{EngineError, TaskEngine};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// What a chat door asks of the engine: a task is done when its partner has a result (a chat
/// has no state in which a client reviews one), and ended tasks take no more commands. Its
/// cancels go by the same.
pub const POLICY: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// What a request in a session does, by the session's newest task.
pub enum Next {
    /// No task of the session waits or runs: start one.
    Start,
    /// The task awaits input: the request is its answer.
    Continue(Task),
    /// The task is accepted or working: one turn at a time.
    Busy(Task),
}

/// The session's newest task in the caller's namespace (most recently changed first), if any:
/// the engine's look-up by the store's session index, which counts nothing.
pub async fn newest(
    engine: &TaskEngine,
    caller: &Caller,
    session_id: &str,
) -> Result<Option<Task>, EngineError> {
    engine
        .newest_in_session(&caller.agent, caller.owner.as_deref(), session_id)
        .await
}

/// What a request in the caller's `session_id` does now.
pub async fn turn(
    engine: &TaskEngine,
    caller: &Caller,
    session_id: &str,
) -> Result<Next, EngineError> {
    Ok(match newest(engine, caller, session_id).await? {
        Some(task) if task.status.state == TaskState::AwaitingInput => Next::Continue(task),
        Some(task) if is_running(task.status.state) => Next::Busy(task),
        _ => Next::Start,
    })
}

/// Accepted or working: the partner is at it.
pub fn is_running(state: TaskState) -> bool {
    matches!(state, TaskState::Accepted | TaskState::Working)
}

/// A stop of `session_id` (the Agent API's `process/stop`, AIFlowy's `chat/stop`): cancel the
/// session's newest task if it is accepted, working or awaiting input, as its Leader would;
/// `Ok(None)` when there is none (the door's 404). A task that ends between the look-up and
/// the cancel is the engine's 409.
pub async fn stop(
    engine: &TaskEngine,
    caller: &Caller,
    session_id: &str,
) -> Result<Option<Task>, EngineError> {
    let running = newest(engine, caller, session_id)
        .await?
        .filter(|t| is_running(t.status.state) || t.status.state == TaskState::AwaitingInput);
    let Some(task) = running else {
        return Ok(None);
    };
    let inbound = Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand::cancel_of(&task.id),
        owner: caller.owner.clone(),
        policy: POLICY,
    };
    let reply = engine.command(&caller.agent, inbound, None).await?;
    Ok(Some(reply.task))
}

/// The engine's command of a turn in `session_id`: the start of a new task (`task_id` `None`,
/// with `params`) or the continue of `task_id`, carrying `items`, under [`POLICY`]; its id is
/// the door's `prefix` and a fresh UUID.
pub fn inbound(
    caller: &Caller,
    prefix: &str,
    items: Vec<DataItem>,
    task_id: Option<String>,
    session_id: &str,
    params: JsonObject,
) -> Inbound {
    let command = if task_id.is_some() {
        CommandKind::Continue
    } else {
        CommandKind::Start
    };
    Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            id: format!("{prefix}-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: String::new(),
            command,
            params,
            data_items: items,
            task_id,
            session_id: Some(session_id.to_string()),
            group_id: None,
            mentions: None,
        },
        owner: caller.owner.clone(),
        policy: POLICY,
    }
}

/// The sessions whose turn is being looked up and started right now (one set per door).
#[derive(Clone, Default)]
pub struct SessionGuard(Arc<Mutex<HashSet<String>>>);

/// A session held by one request until its turn's task exists (released when dropped).
pub struct HeldSession {
    guard: SessionGuard,
    key: String,
}

impl SessionGuard {
    /// Hold the caller's `session_id` of its partner (`None`: another request holds it).
    pub fn hold(&self, caller: &Caller, session_id: &str) -> Option<HeldSession> {
        // The session ids of different partners and Leaders are different sessions.
        let key = format!(
            "{}\0{}\0{session_id}",
            caller.agent.id(),
            caller.owner.as_deref().unwrap_or_default()
        );
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        held.insert(key.clone()).then(|| HeldSession {
            guard: self.clone(),
            key,
        })
    }
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        let mut held = self.guard.0.lock().unwrap_or_else(PoisonError::into_inner);
        held.remove(&self.key);
    }
}
