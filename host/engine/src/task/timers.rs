//! The awaiting-input / awaiting-completion timers. Deadlines live in the store; this keeps the
//! armed ones in memory in deadline order and says when one is due. A task has at most one armed
//! deadline: arming again replaces it, and a task that leaves its awaiting state is disarmed, so a
//! host that completes millions of tasks does not keep a timer for each until it would have run
//! out (an hour by default). The engine still checks the task's current deadline before acting.

use aiphost_model::Timestamp;
use aiphost_store::TaskKey;
use std::collections::{BTreeSet, HashMap};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};

enum Change {
    Arm(i64, TaskKey),
    Disarm(TaskKey),
}

/// The armed deadlines, in order and by task.
#[derive(Default)]
struct Armed {
    by_deadline: BTreeSet<(i64, TaskKey)>,
    by_task: HashMap<TaskKey, i64>,
}

impl Armed {
    fn apply(&mut self, change: Change) {
        match change {
            Change::Arm(at, task) => {
                if let Some(old) = self.by_task.insert(task.clone(), at) {
                    self.by_deadline.remove(&(old, task.clone()));
                }
                self.by_deadline.insert((at, task));
            }
            Change::Disarm(task) => {
                if let Some(old) = self.by_task.remove(&task) {
                    self.by_deadline.remove(&(old, task));
                }
            }
        }
    }

    fn next(&self) -> Option<i64> {
        self.by_deadline.first().map(|(at, _)| *at)
    }

    /// The first deadline if it is due at `now`, taken out.
    fn pop_due(&mut self, now: i64) -> Option<(i64, TaskKey)> {
        if self.next()? > now {
            return None;
        }
        let (at, task) = self.by_deadline.pop_first()?;
        self.by_task.remove(&task);
        Some((at, task))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_deadline.len()
    }
}

/// Arms timers; the timer task sends `(deadline_ms, task)` on the channel given to [`Timers::start`]
/// when one is due.
#[derive(Clone)]
pub struct Timers {
    changes: mpsc::UnboundedSender<Change>,
}

impl Timers {
    /// Start the timer task on the current runtime.
    pub fn start(due: mpsc::UnboundedSender<(i64, TaskKey)>) -> Self {
        let (changes, mut rx) = mpsc::unbounded_channel::<Change>();
        tokio::spawn(async move {
            let mut armed = Armed::default();
            loop {
                let next = armed.next();
                let sleep_until = next.map_or_else(
                    || Instant::now() + Duration::from_secs(3600),
                    |at| {
                        Instant::now()
                            + Duration::from_millis(
                                u64::try_from(at - Timestamp::now_ms()).unwrap_or(0),
                            )
                    },
                );
                tokio::select! {
                    change = rx.recv() => match change {
                        Some(change) => armed.apply(change),
                        None => break,
                    },
                    _ = tokio::time::sleep_until(sleep_until), if next.is_some() => {
                        let now = Timestamp::now_ms();
                        while let Some(entry) = armed.pop_due(now) {
                            if due.send(entry).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Timers { changes }
    }

    /// Arm the task's deadline, replacing any it had.
    pub fn arm(&self, at_ms: i64, task: TaskKey) {
        let _ = self.changes.send(Change::Arm(at_ms, task));
    }

    /// The task no longer waits on a deadline.
    pub fn disarm(&self, task: TaskKey) {
        let _ = self.changes.send(Change::Disarm(task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fires_in_deadline_order_and_past_deadlines_at_once() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let timers = Timers::start(tx);
        let now = Timestamp::now_ms();
        timers.arm(now + 120, TaskKey::new("a", "late"));
        timers.arm(now + 40, TaskKey::new("a", "early"));
        timers.arm(now - 1000, TaskKey::new("a", "overdue"));
        let order: Vec<String> = [rx.recv().await, rx.recv().await, rx.recv().await]
            .into_iter()
            .map(|e| e.unwrap().1.task)
            .collect();
        assert_eq!(order, ["overdue", "early", "late"]);
        assert!(Timestamp::now_ms() >= now + 120);
    }

    #[test]
    fn one_deadline_per_task_and_disarmed_tasks_leave_nothing() {
        let mut armed = Armed::default();
        for i in 0..1000 {
            armed.apply(Change::Arm(i, TaskKey::new("a", format!("t{i}"))));
        }
        // Re-arming replaces; disarming removes.
        armed.apply(Change::Arm(5000, TaskKey::new("a", "t0")));
        assert_eq!(armed.len(), 1000);
        for i in 1..1000 {
            armed.apply(Change::Disarm(TaskKey::new("a", format!("t{i}"))));
        }
        assert_eq!(armed.len(), 1);
        assert!(armed.by_task.len() == 1 && armed.pop_due(4999).is_none());
        assert_eq!(
            armed.pop_due(5000).map(|(at, k)| (at, k.task)),
            Some((5000, "t0".into()))
        );
        assert_eq!((armed.len(), armed.by_task.len()), (0, 0));
        // Disarming what is not armed is harmless.
        armed.apply(Change::Disarm(TaskKey::new("a", "t0")));
        assert_eq!(armed.len(), 0);
    }
}
