//! The committer: one thread that applies every task change waiting for it as one merged sled
//! batch, then makes everything written so far durable with one `flush` and one `fdatasync`.
//!
//! Why one thread and merged batches: sled 0.34 seals and writes its log buffer through its I/O
//! thread pool for every multi-key `apply_batch` (two `pwrite` + `sync_file_range` per change,
//! each waking the pool), and `flush()` holds a lock that `apply_batch` waits for during the whole
//! I/O. Applying the changes of many writers at once and flushing between applies pays that once
//! per round instead of once per change, and never has a writer wait behind a flush. Why
//! `fdatasync` too: sled's `flush()` only calls `sync_file_range`, which does not flush the disk's
//! cache or the file's size; only an `fdatasync` of the log makes an acknowledged write survive
//! a power loss. Values are kept below sled's blob threshold ([`crate::parts`]), so the log file
//! `db` is the only file a write lives in.
//!
//! A change gets its [`Ticket`] when it is handed over ([`PendingWrite`]). A round: take every
//! waiting change → one `apply_batch` → tell each writer (its change is now visible to readers)
//! → `flush` + `fdatasync` → every ticket issued before the round took the queue is durable. Changes that arrive during a round wait for the next one. Writes that
//! do not go through the committer (key-value entries, configs, tenancy) take a ticket after
//! they reach sled ([`Committer::written`]) and are covered by the next round's flush, which a
//! [`Committer::durable`] wait asks for.

use super::write_batch::WriteBatch;
use super::{StoreError, Ticket};
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
// A futures oneshot, not tokio's: a pending write that is dropped blocks on it (see
// [`PendingWrite`]), which tokio's refuses to do inside a runtime.
use futures::channel::oneshot;
use tokio::sync::watch;

/// What the committer has made durable.
#[derive(Clone, Debug, Default)]
struct Synced {
    /// Every ticket up to this one is on disk.
    flushed: u64,
    /// The last round that failed: tickets above `flushed` up to the first value were lost to the
    /// error in the second.
    failed: Option<(u64, String)>,
}

/// A change waiting to be applied, and where to say it was.
struct Apply {
    batch: WriteBatch,
    done: oneshot::Sender<Result<(), String>>,
}

/// A task change handed to the committer: its ticket is known at once; [`PendingWrite::applied`]
/// waits until the change is in sled, visible to readers.
///
/// Dropping it before then (a request abandoned half-way) blocks the thread until the change is
/// applied, at most one round: the change will be applied either way, and whoever writes or
/// reads the task next must see it.
#[must_use = "a change is visible only once applied"]
pub struct PendingWrite {
    ticket: Ticket,
    applied: Option<oneshot::Receiver<Result<(), String>>>,
}

impl PendingWrite {
    /// The ticket to wait for with [`crate::Store::durable`].
    pub fn ticket(&self) -> Ticket {
        self.ticket
    }

    /// Wait until the change is in sled.
    pub async fn applied(mut self) -> Result<Ticket, StoreError> {
        let outcome = match self.applied.as_mut() {
            Some(applied) => applied.await,
            None => Ok(Ok(())),
        };
        self.applied = None;
        match outcome {
            Ok(Ok(())) => Ok(self.ticket),
            Ok(Err(e)) => Err(StoreError::Flush(e)),
            Err(_) => Err(StoreError::Flush("the committer has stopped".into())),
        }
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        if let Some(applied) = self.applied.take()
            && let Ok(Err(e)) = futures::executor::block_on(applied)
        {
            tracing::error!(error = %e, "a task change nobody waited for failed to apply");
        }
    }
}

#[derive(Default)]
struct Queue {
    applies: Vec<Apply>,
    /// A writer outside the committer waits for a flush.
    sync_wanted: bool,
    /// The committer waits for work (a writer must wake it).
    idle: bool,
    stop: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Tickets issued: to a task change when it is queued (under the queue's lock), to any other
    /// write once it has reached sled.
    written: AtomicU64,
    /// Rounds that flushed.
    syncs: AtomicU64,
    /// Changes applied by the committer.
    applied: AtomicU64,
}

pub(super) struct Committer {
    shared: Arc<Shared>,
    synced: watch::Receiver<Synced>,
    thread: Option<JoinHandle<()>>,
}

impl Committer {
    /// Start the committer's thread over `tree` of `db`, whose log is the file `log`.
    pub(super) fn start(db: sled::Db, tree: sled::Tree, log: File) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            written: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            applied: AtomicU64::new(0),
        });
        let (publish, synced) = watch::channel(Synced::default());
        let thread = std::thread::Builder::new()
            .name("aiphost-committer".into())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, &db, &tree, &log, &publish)
            })?;
        Ok(Committer {
            shared,
            synced,
            thread: Some(thread),
        })
    }

    /// Hand `batch` to the next round.
    pub(super) fn apply(&self, batch: WriteBatch) -> PendingWrite {
        if batch.is_empty() {
            return PendingWrite {
                ticket: self.latest(),
                applied: None,
            };
        }
        let (done, applied) = oneshot::channel();
        let mut ticket = Ticket(0);
        self.enqueue(|q| {
            // Issued under the queue's lock: a round that takes the queue and then reads
            // `written` has every queued ticket up to that number in hand.
            ticket = Ticket(self.shared.written.fetch_add(1, Ordering::SeqCst) + 1);
            q.applies.push(Apply { batch, done });
        });
        PendingWrite {
            ticket,
            applied: Some(applied),
        }
    }

    /// Issue a ticket for a write that has just reached sled by another path.
    pub(super) fn written(&self) -> Ticket {
        Ticket(self.shared.written.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// The newest ticket issued.
    pub(super) fn latest(&self) -> Ticket {
        Ticket(self.shared.written.load(Ordering::SeqCst))
    }

    /// Wait until `ticket` (and every earlier one) is on disk.
    pub(super) async fn durable(&self, ticket: Ticket) -> Result<(), StoreError> {
        if self.synced.borrow().flushed >= ticket.0 {
            return Ok(());
        }
        self.enqueue(|q| q.sync_wanted = true);
        let mut synced = self.synced.clone();
        let outcome = synced
            .wait_for(|s| {
                s.flushed >= ticket.0 || s.failed.as_ref().is_some_and(|f| f.0 >= ticket.0)
            })
            .await
            .map_err(|_| StoreError::Flush("the committer has stopped".into()))?;
        if outcome.flushed >= ticket.0 {
            return Ok(());
        }
        let reason = outcome
            .failed
            .as_ref()
            .map(|f| f.1.clone())
            .unwrap_or_default();
        Err(StoreError::Flush(reason))
    }

    /// Rounds that flushed so far.
    pub(super) fn sync_count(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    /// Changes applied by the committer so far.
    pub(super) fn applied_count(&self) -> u64 {
        self.shared.applied.load(Ordering::Relaxed)
    }

    /// Change the queue and wake the committer if it sleeps.
    fn enqueue(&self, change: impl FnOnce(&mut Queue)) {
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut queue);
        if queue.idle {
            queue.idle = false;
            self.shared.wake.notify_one();
        }
    }
}

impl Drop for Committer {
    /// Finish the round under way and the changes queued, flush, and stop the thread: what was
    /// written before the store closes is on disk when it has closed.
    fn drop(&mut self) {
        self.enqueue(|q| q.stop = true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The committer's thread: rounds until stopped.
fn run(
    shared: &Shared,
    db: &sled::Db,
    tree: &sled::Tree,
    log: &File,
    publish: &watch::Sender<Synced>,
) {
    let mut flushed = 0u64;
    loop {
        let (applies, target, stop) = {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            while queue.applies.is_empty() && !queue.sync_wanted && !queue.stop {
                queue.idle = true;
                queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            queue.idle = false;
            queue.sync_wanted = false;
            // Every ticket issued so far belongs to a change taken here or to a write already
            // in sled: once these are applied, a flush covers them all.
            let target = shared.written.load(Ordering::SeqCst);
            (std::mem::take(&mut queue.applies), target, queue.stop)
        };
        if !applies.is_empty() {
            let mut batch = sled::Batch::default();
            let mut waiting = Vec::with_capacity(applies.len());
            for apply in applies {
                apply.batch.merge_into(&mut batch);
                waiting.push(apply.done);
            }
            let outcome = tree.apply_batch(batch).map_err(|e| e.to_string());
            shared
                .applied
                .fetch_add(waiting.len() as u64, Ordering::Relaxed);
            for done in waiting {
                let _ = done.send(outcome.clone());
            }
        }
        if target > flushed {
            shared.syncs.fetch_add(1, Ordering::Relaxed);
            let outcome = db.flush().map_err(|e| e.to_string()).and_then(|_| {
                log.sync_data()
                    .map_err(|e| format!("fdatasync of the log: {e}"))
            });
            publish.send_modify(|synced| match outcome {
                Ok(()) => synced.flushed = target,
                Err(e) => synced.failed = Some((target, e)),
            });
            flushed = target;
        }
        if stop {
            let queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.applies.is_empty() {
                return;
            }
        }
    }
}
