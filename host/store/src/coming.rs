//! Writers known to be coming: what lets a round of the committer wait for more changes only
//! when one is on its way (issue 35 point 3).
//!
//! Why: a round's `fdatasync` costs about the same for one change as for ten, so under load a
//! round should gather several; but a round that waits for changes that cannot come (a lone
//! writer, or every writer already waiting for this very round) only adds its wait to every
//! reply. What can come is known to whoever runs the commands: the engine wraps each command in
//! [`Expecting`] ([`crate::Store::expecting`]), which counts it as coming from then until its
//! change is handed over or until the command first waits for anything, whichever is first. A
//! quick command runs from its arrival to its change without waiting once (its partner runs
//! inline); one that waits (a partner calling out, a lock another command holds, its reply
//! waiting for a round) is not about to write, and a round must not wait for it.
//!
//! How a change finds the command it ends: [`Expecting`] lends its [`Coming`] to the thread for
//! the length of its first poll, and [`crate::committer::Committer::apply`] takes it from there
//! (the change is handed over inside that poll, on that thread). A change handed over outside
//! any such poll finds nothing to take and counts nothing.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

/// The count of writers coming, kept by the committer.
#[derive(Default)]
pub(crate) struct Arrivals {
    /// Commands under way whose change has not been handed over.
    coming: AtomicUsize,
    /// The committer waits for them (set and read under its queue's lock): a writer that stops
    /// being expected must wake it.
    pub(crate) gathering: AtomicBool,
}

impl Arrivals {
    /// Writers coming now.
    pub(crate) fn coming(&self) -> usize {
        self.coming.load(Ordering::SeqCst)
    }
}

/// What a [`Coming`] needs of the committer: its count, and a way to wake a round that waits.
pub(crate) trait Gatherer: Send + Sync {
    fn arrivals(&self) -> &Arrivals;
    /// Wake the round waiting for writers (called only while it is `gathering`).
    fn wake(&self);
}

/// One writer counted as coming; dropped, it no longer is.
pub(crate) struct Coming {
    committer: Option<Arc<dyn Gatherer>>,
}

impl Coming {
    pub(crate) fn new(committer: Arc<dyn Gatherer>) -> Self {
        committer.arrivals().coming.fetch_add(1, Ordering::SeqCst);
        Coming {
            committer: Some(committer),
        }
    }

    /// Its change was handed over: it is no longer coming, and the committer, woken by the
    /// change itself, needs no other wake.
    fn arrived(mut self) {
        if let Some(committer) = self.committer.take() {
            committer.arrivals().coming.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Coming {
    fn drop(&mut self) {
        let Some(committer) = self.committer.take() else {
            return;
        };
        let arrivals = committer.arrivals();
        arrivals.coming.fetch_sub(1, Ordering::SeqCst);
        // After the count: a round that read the count before it changed had already set
        // `gathering`, so it is seen here and woken.
        if arrivals.gathering.load(Ordering::SeqCst) {
            committer.wake();
        }
    }
}

thread_local! {
    /// The writer whose command is being polled on this thread, lent by [`Expecting`].
    static LENT: Cell<Option<Coming>> = const { Cell::new(None) };
}

/// Take the writer this thread is polling, if it is counted in `arrivals`, and count it as
/// arrived: called as its change is handed over.
pub(crate) fn arrive(arrivals: &Arrivals) {
    let Some(coming) = LENT.take() else {
        return;
    };
    match &coming.committer {
        Some(mine) if std::ptr::eq(mine.arrivals(), arrivals) => coming.arrived(),
        // Another store's writer (tests open several): not this change's.
        _ => LENT.set(Some(coming)),
    }
}

pin_project_lite::pin_project! {
    /// A command counted as a writer coming until its change is handed over or it first
    /// waits (see the module's doc).
    pub struct Expecting<F> {
        #[pin]
        command: F,
        coming: Option<Coming>,
    }
}

impl<F> Expecting<F> {
    pub(crate) fn new(coming: Coming, command: F) -> Self {
        Expecting {
            command,
            coming: Some(coming),
        }
    }
}

impl<F: Future> Future for Expecting<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Some(coming) = this.coming.take() else {
            return this.command.poll(cx);
        };
        let outer = LENT.replace(Some(coming));
        let polled = this.command.poll(cx);
        // Ready or waiting, it is no longer coming: dropped here unless its change took it.
        drop(LENT.replace(outer));
        polled
    }
}

#[cfg(test)]
mod tests {
    use crate::{Encoded, Store, TaskKey, TaskWrite, Ticket};
    use std::time::Duration;

    fn change(store: &Store, key: &TaskKey) -> Ticket {
        let record = Encoded::of(&serde_json::json!({ "task": key.task })).unwrap();
        // Dropped at once: applied before this returns, durable later.
        store
            .write_task(TaskWrite::record_only(key, record))
            .unwrap()
            .ticket()
    }

    /// Whether `ticket` becomes durable within `limit`.
    async fn durable_within(store: &Store, ticket: Ticket, limit: Duration) -> bool {
        tokio::time::timeout(limit, store.durable(ticket))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// A round that has a change waits for a command counted as coming (in these tests a round
    /// waits up to 600 s, so it ends only when woken): the command's change joins it, and both
    /// are made durable by one sync.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_waits_for_a_command_coming_and_takes_its_change() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, b) = (TaskKey::new("echo", "a"), TaskKey::new("echo", "b"));
        let syncs = store.flush_count();
        let coming = store.expecting({
            let store = store.clone();
            let b = b.clone();
            async move { change(&store, &b) }
        });
        // A change not made by a command: the round takes it, then waits for the coming one.
        let first = tokio::task::spawn_blocking({
            let store = store.clone();
            move || change(&store, &a)
        });
        let first = tokio::time::timeout(Duration::from_secs(1), first).await;
        assert!(first.is_err(), "applied while a command was coming");
        let second = coming.await;
        assert!(durable_within(&store, second, Duration::from_secs(30)).await);
        assert_eq!(store.flush_count() - syncs, 1, "one sync for both changes");
        assert_eq!(store.committed_changes(), 2);
        assert_eq!(store.inner.commit.arrivals().coming(), 0);
    }

    /// A command that waits for something before its change stops being counted at once, and
    /// the round waiting for it is woken and goes on without it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_command_that_waits_first_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, b) = (TaskKey::new("echo", "a"), TaskKey::new("echo", "b"));
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let coming = store.expecting({
            let store = store.clone();
            async move {
                let _ = wait.await;
                change(&store, &b)
            }
        });
        let first = tokio::task::spawn_blocking({
            let store = store.clone();
            move || change(&store, &a)
        });
        // Still counted: not polled yet.
        assert!(
            tokio::time::timeout(Duration::from_millis(500), first)
                .await
                .is_err()
        );
        let later = tokio::spawn(coming);
        // Polled once, it waits for `go`: no longer coming, and the round ends without it.
        let ticket = store.latest_ticket();
        assert!(durable_within(&store, ticket, Duration::from_secs(30)).await);
        assert_eq!(store.committed_changes(), 1);
        go.send(()).unwrap();
        let second = later.await.unwrap();
        assert!(durable_within(&store, second, Duration::from_secs(30)).await);
        assert_eq!(store.inner.commit.arrivals().coming(), 0);
    }

    /// A change handed over outside any command's poll takes nothing; one inside a command of
    /// another store takes nothing from this one.
    #[tokio::test]
    async fn only_the_commands_own_change_ends_its_count() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (one, two) = (
            Store::open(one.path()).unwrap(),
            Store::open(two.path()).unwrap(),
        );
        let key = TaskKey::new("echo", "a");
        let other = two.clone();
        let counted = one.expecting(async move {
            // Another store's change, inside this command's poll.
            change(&other, &TaskKey::new("echo", "x"));
            tokio::task::yield_now().await;
        });
        tokio::pin!(counted);
        assert_eq!(one.inner.commit.arrivals().coming(), 1);
        assert!(futures::poll!(counted.as_mut()).is_pending());
        // It waited: no longer counted, though its store saw no change.
        assert_eq!(one.inner.commit.arrivals().coming(), 0);
        assert_eq!(two.inner.commit.arrivals().coming(), 0);
        counted.await;
        let ticket = change(&one, &key);
        assert!(durable_within(&one, ticket, Duration::from_secs(30)).await);
    }
}
