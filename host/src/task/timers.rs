//! The awaiting-input / awaiting-completion timers. Deadlines live in the store; this keeps them in
//! memory in deadline order and says when one is due. A stale entry (the task moved on) is harmless:
//! the engine checks the task's current deadline before acting.

use crate::protocol::Timestamp;
use crate::store::TaskKey;
use std::collections::BTreeSet;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};

/// Arms timers; the timer task sends `(deadline_ms, task)` on the channel given to [`Timers::start`]
/// when one is due.
#[derive(Clone)]
pub struct Timers {
    arm: mpsc::UnboundedSender<(i64, TaskKey)>,
}

impl Timers {
    /// Start the timer task on the current runtime.
    pub fn start(due: mpsc::UnboundedSender<(i64, TaskKey)>) -> Self {
        let (arm, mut rx) = mpsc::unbounded_channel::<(i64, TaskKey)>();
        tokio::spawn(async move {
            let mut pending: BTreeSet<(i64, TaskKey)> = BTreeSet::new();
            loop {
                let next = pending.first().map(|(at, _)| *at);
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
                    armed = rx.recv() => match armed {
                        Some(entry) => { pending.insert(entry); }
                        None => break,
                    },
                    _ = tokio::time::sleep_until(sleep_until), if next.is_some() => {
                        let now = Timestamp::now_ms();
                        while let Some(first) = pending.first() {
                            if first.0 > now {
                                break;
                            }
                            if let Some(entry) = pending.pop_first()
                                && due.send(entry).is_err()
                            {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Timers { arm }
    }

    /// Fire for `task` at `at_ms` (Unix milliseconds; a past deadline fires at once).
    pub fn arm(&self, at_ms: i64, task: TaskKey) {
        let _ = self.arm.send((at_ms, task));
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
}
