//! The awaiting-input / awaiting-completion timers. Deadlines live in the store; this keeps in
//! memory, in deadline order, only those due within the *horizon* (ten minutes ahead by
//! default) and says when one is due. A deadline further away is left to the store: every half
//! horizon a sweep reads back the stored deadlines that have come within it. So the memory the
//! timers take follows the deadlines of the next minutes, not the tasks waiting — 100,000 tasks
//! waiting a day for input hold no timer (issue 35). A task has at most one armed deadline:
//! arming again replaces it, and a task that leaves its awaiting state is disarmed. The engine
//! still checks the task's current deadline before acting, so a stale one is harmless.
//!
//! Why a sweep sees every deadline left to it: the engine arms a deadline after handing its
//! write to the store, and the sweep first waits until every write issued so far is applied,
//! then reads; changes that arrive meanwhile wait in the channel and are applied after it,
//! newest last.

use aiphost_model::Timestamp;
use aiphost_store::{Store, StoreError, TaskKey};
use futures::future::BoxFuture;
use std::collections::{BTreeSet, HashMap};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};

/// How far ahead deadlines are held in memory, by default.
pub const HORIZON: Duration = Duration::from_secs(600);

enum Change {
    Arm(i64, TaskKey),
    Disarm(TaskKey),
}

/// Where deadlines beyond the horizon are found when they come near.
pub trait StoredDeadlines: Send + Sync + 'static {
    /// Every stored deadline at or before `until` (ms), read once every write issued so far is
    /// applied.
    fn deadlines_until(&self, until: i64)
    -> BoxFuture<'_, Result<Vec<(i64, TaskKey)>, StoreError>>;
}

impl StoredDeadlines for Store {
    fn deadlines_until(
        &self,
        until: i64,
    ) -> BoxFuture<'_, Result<Vec<(i64, TaskKey)>, StoreError>> {
        Box::pin(async move {
            self.durable(self.latest_ticket()).await?;
            // A scan of the waiting tasks' entries: off the runtime's workers.
            let store = self.clone();
            tokio::task::spawn_blocking(move || store.deadlines_until(until))
                .await
                .map_err(|e| StoreError::Flush(format!("the deadline sweep stopped: {e}")))?
        })
    }
}

/// The armed deadlines, in order and by task.
#[derive(Default)]
struct Armed {
    by_deadline: BTreeSet<(i64, TaskKey)>,
    by_task: HashMap<TaskKey, i64>,
}

impl Armed {
    /// Apply `change`; a deadline after `horizon` (ms) replaces the task's armed one but is not
    /// held: the store has it, and a sweep brings it back.
    fn apply(&mut self, change: Change, horizon: i64) {
        match change {
            Change::Arm(at, task) => {
                if let Some(old) = self.by_task.remove(&task) {
                    self.by_deadline.remove(&(old, task.clone()));
                }
                if at <= horizon {
                    self.by_task.insert(task.clone(), at);
                    self.by_deadline.insert((at, task));
                }
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
    horizon: Duration,
}

/// The instant `ms` (Unix milliseconds) falls at, on the runtime's clock.
fn instant_of(ms: i64) -> Instant {
    Instant::now() + Duration::from_millis(u64::try_from(ms - Timestamp::now_ms()).unwrap_or(0))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Timers {
    /// Start the timer task on the current runtime, holding deadlines up to `horizon` ahead and
    /// reading the nearer ones back from `stored` every half `horizon`.
    pub fn start(
        due: mpsc::UnboundedSender<(i64, TaskKey)>,
        stored: impl StoredDeadlines,
        horizon: Duration,
    ) -> Self {
        let (changes, mut rx) = mpsc::unbounded_channel::<Change>();
        let sweep_every = (horizon / 2).max(Duration::from_millis(1));
        tokio::spawn(async move {
            let mut armed = Armed::default();
            let mut until = Timestamp::now_ms().saturating_add(millis(horizon));
            let mut next_sweep = Instant::now() + sweep_every;
            loop {
                let next = armed.next().map(instant_of);
                let wake = next.map_or(next_sweep, |at| at.min(next_sweep));
                tokio::select! {
                    change = rx.recv() => match change {
                        Some(change) => armed.apply(change, until),
                        None => break,
                    },
                    _ = tokio::time::sleep_until(wake) => {
                        if Instant::now() >= next_sweep {
                            let reach = Timestamp::now_ms().saturating_add(millis(horizon));
                            match stored.deadlines_until(reach).await {
                                Ok(near) => {
                                    until = reach;
                                    for (at, task) in near {
                                        armed.apply(Change::Arm(at, task), until);
                                    }
                                    next_sweep = Instant::now() + sweep_every;
                                }
                                Err(e) => {
                                    tracing::error!(error = %e, "could not read the stored deadlines; trying again in a second");
                                    next_sweep = Instant::now() + Duration::from_secs(1);
                                }
                            }
                        }
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
        Timers { changes, horizon }
    }

    /// Arm a deadline read from the store at start-up, when nothing is armed yet: one beyond
    /// the horizon is not even sent (a sweep reads it back), so a store of a million waiting
    /// tasks does not queue a million changes only for them to be dropped.
    pub fn restore(&self, at_ms: i64, task: TaskKey) {
        if at_ms <= Timestamp::now_ms().saturating_add(millis(self.horizon)) {
            self.arm(at_ms, task);
        }
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

    /// A store of deadlines for the tests: what a sweep reads back.
    #[derive(Clone, Default)]
    struct Kept(std::sync::Arc<std::sync::Mutex<Vec<(i64, TaskKey)>>>);

    impl StoredDeadlines for Kept {
        fn deadlines_until(
            &self,
            until: i64,
        ) -> BoxFuture<'_, Result<Vec<(i64, TaskKey)>, StoreError>> {
            let kept = self.0.lock().unwrap().clone();
            Box::pin(async move { Ok(kept.into_iter().filter(|(at, _)| *at <= until).collect()) })
        }
    }

    #[tokio::test]
    async fn fires_in_deadline_order_and_past_deadlines_at_once() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let timers = Timers::start(tx, Kept::default(), HORIZON);
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
            armed.apply(Change::Arm(i, TaskKey::new("a", format!("t{i}"))), i64::MAX);
        }
        // Re-arming replaces; disarming removes.
        armed.apply(Change::Arm(5000, TaskKey::new("a", "t0")), i64::MAX);
        assert_eq!(armed.len(), 1000);
        for i in 1..1000 {
            armed.apply(Change::Disarm(TaskKey::new("a", format!("t{i}"))), i64::MAX);
        }
        assert_eq!(armed.len(), 1);
        assert!(armed.by_task.len() == 1 && armed.pop_due(4999).is_none());
        assert_eq!(
            armed.pop_due(5000).map(|(at, k)| (at, k.task)),
            Some((5000, "t0".into()))
        );
        assert_eq!((armed.len(), armed.by_task.len()), (0, 0));
        // Disarming what is not armed is harmless.
        armed.apply(Change::Disarm(TaskKey::new("a", "t0")), i64::MAX);
        assert_eq!(armed.len(), 0);
    }

    #[test]
    fn a_deadline_beyond_the_horizon_replaces_the_armed_one_and_is_not_held() {
        let mut armed = Armed::default();
        let task = TaskKey::new("a", "t");
        armed.apply(Change::Arm(100, task.clone()), 1000);
        assert_eq!(armed.len(), 1);
        armed.apply(Change::Arm(5000, task.clone()), 1000);
        assert_eq!(
            (armed.len(), armed.by_task.len()),
            (0, 0),
            "the store holds it"
        );
        assert!(
            armed.pop_due(i64::MAX).is_none(),
            "the old deadline is gone too"
        );
    }

    /// A deadline beyond the horizon is not held, yet fires on time: a sweep reads it back from
    /// the store once it comes within the horizon (among 10,000 deadlines an hour away).
    #[tokio::test]
    async fn far_deadlines_wait_in_the_store_and_fire_on_time() {
        let horizon = Duration::from_millis(300);
        let kept = Kept::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let timers = Timers::start(tx, kept.clone(), horizon);
        let now = Timestamp::now_ms();
        let far = now + 700;
        kept.0.lock().unwrap().push((far, TaskKey::new("a", "far")));
        timers.arm(far, TaskKey::new("a", "far"));
        for i in 0..10_000 {
            let at = now + 3_600_000 + i;
            let task = TaskKey::new("a", format!("later{i}"));
            kept.0.lock().unwrap().push((at, task.clone()));
            timers.arm(at, task);
        }
        timers.arm(now + 50, TaskKey::new("a", "near"));
        let (at, task) = rx.recv().await.unwrap();
        assert_eq!((at, task.task.as_str()), (now + 50, "near"));
        let (at, task) = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("the far deadline fires")
            .unwrap();
        assert_eq!((at, task.task.as_str()), (far, "far"));
        let fired = Timestamp::now_ms();
        assert!(
            fired >= far,
            "not before its time: {} ms early",
            far - fired
        );
    }
}
