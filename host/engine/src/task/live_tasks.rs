//! How many tasks each Leader has with each partner that have not ended, against the cap
//! ([`super::TaskDefaults::max_live_tasks`]): without it, one client could make a host store
//! tasks without bound.
//!
//! The count follows each task's state in memory (it rises when a task is accepted, falls when
//! it ends) and is rebuilt from the store's live index at start-up. A start the partner has not
//! decided yet holds a [`Starting`] reservation, so concurrent starts cannot all slip under the
//! cap at once.

use aiphost_model::TaskState;
use aiphost_store::{Liveness, TaskKey};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A Leader's namespace with one partner: the partner, and the authenticated Leader (`None`:
/// every Leader of an open partner).
type Namespace = (String, Option<String>);

#[derive(Default)]
struct Count {
    /// Tasks that have not ended.
    live: u64,
    /// Starts not decided yet.
    starting: u64,
}

/// The live-task counts of every namespace.
pub struct LiveTasks {
    max: u64,
    counts: Mutex<HashMap<Namespace, Count>>,
}

/// A start counted against its namespace's cap until the partner decides it.
pub struct Starting {
    owner: Arc<LiveTasks>,
    namespace: Namespace,
}

impl Drop for Starting {
    fn drop(&mut self) {
        self.owner.change(&self.namespace, |c| {
            c.starting = c.starting.saturating_sub(1)
        });
    }
}

/// Whether a task in `state` has not ended, and how its entry in the live index reads.
pub fn liveness(state: TaskState) -> Option<Liveness> {
    match state {
        TaskState::Accepted | TaskState::Working => Some(Liveness::Running),
        TaskState::AwaitingInput | TaskState::AwaitingCompletion => Some(Liveness::Waiting),
        TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected => {
            None
        }
    }
}

fn namespace(key: &TaskKey) -> Namespace {
    (key.agent.clone(), key.leader.clone())
}

impl LiveTasks {
    /// Counts capped at `max` live tasks per namespace.
    pub fn new(max: u64) -> Arc<Self> {
        Arc::new(LiveTasks {
            max,
            counts: Mutex::new(HashMap::new()),
        })
    }

    /// The cap.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Reserve room for a new task of `key`'s namespace, or say how many it has (`Err`).
    pub fn admit(self: &Arc<Self>, key: &TaskKey) -> Result<Starting, u64> {
        let namespace = namespace(key);
        let mut counts = self.lock();
        let count = counts.entry(namespace.clone()).or_default();
        if count.live + count.starting >= self.max {
            let live = count.live;
            if live == 0 && count.starting == 0 {
                counts.remove(&namespace);
            }
            return Err(live);
        }
        count.starting += 1;
        Ok(Starting {
            owner: self.clone(),
            namespace,
        })
    }

    /// A task of `key` went from liveness `before` to `after` (in memory).
    pub fn moved(&self, key: &TaskKey, before: Option<Liveness>, after: Option<Liveness>) {
        match (before.is_some(), after.is_some()) {
            (false, true) => self.change(&namespace(key), |c| c.live += 1),
            (true, false) => self.change(&namespace(key), |c| c.live = c.live.saturating_sub(1)),
            _ => {}
        }
    }

    /// Live tasks of `key`'s namespace now.
    pub fn live(&self, key: &TaskKey) -> u64 {
        self.lock().get(&namespace(key)).map_or(0, |c| c.live)
    }

    fn change(&self, namespace: &Namespace, f: impl FnOnce(&mut Count)) {
        let mut counts = self.lock();
        let count = counts.entry(namespace.clone()).or_default();
        f(count);
        // Namespaces with nothing in them are forgotten: the map holds only live ones.
        if count.live == 0 && count.starting == 0 {
            counts.remove(namespace);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Namespace, Count>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_and_live_tasks_count_against_the_cap_per_namespace() {
        let live = LiveTasks::new(2);
        let mine = TaskKey::owned("echo", Some("L1"), "t");
        let theirs = TaskKey::owned("echo", Some("L2"), "t");
        let a = live.admit(&mine).unwrap();
        let b = live.admit(&mine).unwrap();
        assert_eq!(
            live.admit(&mine).err(),
            Some(0),
            "two starts undecided fill the cap"
        );
        assert!(
            live.admit(&theirs).is_ok(),
            "another Leader has its own count"
        );
        // One is accepted, one rejected.
        live.moved(&mine, None, Some(Liveness::Running));
        drop(a);
        drop(b);
        assert_eq!(live.live(&mine), 1);
        let c = live.admit(&mine).unwrap();
        live.moved(&mine, None, Some(Liveness::Waiting));
        drop(c);
        assert_eq!(live.admit(&mine).err(), Some(2));
        // Moving between running and waiting changes nothing; ending frees room.
        live.moved(&mine, Some(Liveness::Running), Some(Liveness::Waiting));
        assert_eq!(live.live(&mine), 2);
        live.moved(&mine, Some(Liveness::Waiting), None);
        assert!(live.admit(&mine).is_ok());
        live.moved(&mine, Some(Liveness::Waiting), None);
        assert_eq!(live.live(&mine), 0);
        assert!(live.lock().is_empty(), "empty namespaces are forgotten");
    }
}
