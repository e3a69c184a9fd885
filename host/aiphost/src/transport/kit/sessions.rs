//! A chat door's sessions (the Agent API's `session_id`, AIFlowy's `conversationId`): chat
//! protocols name no task, so a session's newest task says what a request does, and one turn
//! at a time runs in a session.
//!
//! [`newest`] finds the session's newest task in the caller's namespace (another Leader's
//! session of the same id is simply another session). [`SessionGuard`] makes a door's look-up
//! and start one step: a start's task is recorded only once its partner has decided, so two
//! requests of one session at once would both find none running and start two. A door holds
//! the session from the look-up until its turn's first event; a request that finds it held is
//! told the session is busy. The guard is one door's, in one process: a start at another door
//! in the same instant is caught only once decided.

use super::caller::Caller;
use crate::model::Task;
use crate::task::{EngineError, TaskEngine, TaskQuery};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The session's newest task in the caller's namespace (most recently changed first), if any.
pub async fn newest(
    engine: &TaskEngine,
    caller: &Caller,
    session_id: &str,
) -> Result<Option<Task>, EngineError> {
    let query = TaskQuery {
        session_id: Some(session_id.to_string()),
        states: None,
        changed_after_ms: None,
        page_size: 1,
        after: None,
    };
    let page = engine
        .list(&caller.agent, caller.owner.as_deref(), &query)
        .await?;
    Ok(page.tasks.into_iter().next())
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
