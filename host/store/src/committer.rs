//! The committer: one thread that applies every task change waiting for it to sled, key by key,
//! and makes the whole round durable with one record in the write-ahead log and one `fdatasync`.
//!
//! Why one thread: the changes of many writers go to disk with one `fdatasync`, and no writer
//! ever waits behind another's I/O. Why a log of our own (`wal.rs`): sled 0.34 wakes its I/O
//! thread pool for every multi-key `apply_batch` and every `flush`, and its `flush()` only calls
//! `sync_file_range`, which does not flush the disk's cache or the file's size. Single-key
//! writes to sled cost no I/O at all; the log's record, synced, is what makes the round survive
//! a crash or a power loss, and start-up applies the rounds sled lost again.
//!
//! A change gets its [`Ticket`] when it is handed over ([`PendingWrite`]). A round: take every
//! waiting change → apply their writes to sled in order, then the round's seq under
//! [`APPLIED_KEY`] → tell each writer (its change is now visible to readers) → append the round
//! to the log and `fdatasync` it → every ticket issued before the round took the queue is
//! durable. Changes that arrive during a round wait for the next one.
//!
//! Under load a round gathers: a round that finds fewer changes than the last rounds took
//! waits up to [`GATHER_WAIT`] for that many (at most eight) before it applies them, so one
//! `fdatasync` covers several changes (`gather.rs`; issue 35 point 3: an echo start at 16
//! connections found 1.6 changes per round without it). A lone writer never waits.
//!
//! Writes that do not go through the committer (key-value entries, configs, tenancy, the
//! outbox's deliveries, retention's deletions) take a ticket after they reach sled
//! ([`Committer::written`]); the next round then checkpoints: it writes the checkpoint's number
//! to sled, flushes sled and `fdatasync`s sled's log file `db` (values are kept below sled's
//! blob threshold, [`crate::parts`], so that file is the only one a write lives in), which makes
//! everything applied so far durable, records the checkpoint in the file `identity`
//! (`identity.rs`: what tells a `db` that lost data at the next start), and the write-ahead log
//! starts over. A round also checkpoints instead of logging when its record would
//! not fit in the log's cycle ([`crate::wal::CYCLE_BYTES`]).
//!
//! Traced (at `debug`, so only when spans are wanted: see `aiphost::telemetry`): each round is a
//! root span `store.commit`, since it serves many writers and a span has one parent; a writer's
//! wait is a `store.wait_durable` span in the writer's own trace, which the round that ends it
//! links to itself (a span link, `follows_from`).

use super::gather::Gather;
use super::identity::{self, Found, IdentityFile, Mark, StoreId};
use super::timing::Timing;
use super::wal::{APPLIED_KEY, Replayed, Wal};
use super::write_batch::WriteBatch;
use super::{StoreError, Ticket};
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
// A futures oneshot, not tokio's: a pending write that is dropped blocks on it (see
// [`PendingWrite`]), which tokio's refuses to do inside a runtime.
use futures::channel::oneshot;
use tokio::sync::watch;
use tracing::Instrument;

/// The longest a round waits to gather changes (`gather.rs`).
const GATHER_WAIT: std::time::Duration = std::time::Duration::from_micros(300);

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
    /// The newest ticket of a write that reached sled outside the committer (see
    /// [`Committer::written`]): a checkpoint makes it durable.
    direct: u64,
    /// The committer waits for work (a writer must wake it).
    idle: bool,
    /// The changes it waits for: a writer wakes it only once that many are queued (or, with
    /// none queued, once a sync is wanted; or to stop), so a round that gathers is woken once,
    /// not once per change (each wake is a futex call and a switch of threads on both sides).
    wanted: usize,
    stop: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Tickets issued: to a task change when it is queued (under the queue's lock), to any other
    /// write once it has reached sled.
    written: AtomicU64,
    /// Rounds that made writes durable (a log sync or a checkpoint).
    syncs: AtomicU64,
    /// Rounds that checkpointed (flushed sled).
    checkpoints: AtomicU64,
    /// Changes applied by the committer.
    applied: AtomicU64,
    /// Keys those changes wrote to sled (inserts and removals; the round's mark not counted).
    keys: AtomicU64,
    /// Traced waits for durability, by ticket: the round that ends one links it to its span.
    /// Only spans that are enabled are kept; each leaves at the next round that reaches it.
    waiters: Mutex<Vec<(u64, tracing::Span)>>,
    /// Who hears how long rounds and syncs take.
    timing: Arc<Timing>,
}

pub(super) struct Committer {
    shared: Arc<Shared>,
    synced: watch::Receiver<Synced>,
    thread: Option<JoinHandle<()>>,
}

impl Committer {
    /// Check the store in `dir` is whole (`identity.rs`; with [`OnDamage::Accept`], go on from
    /// what is left), recover the rounds sled lost from the write-ahead log, then start the
    /// committer's thread over `tree` of `db`, whose own log is the file `log`. Returns the
    /// committer and the problems accepted (none unless told to accept them).
    pub(super) fn start(
        db: sled::Db,
        tree: sled::Tree,
        log: File,
        dir: &Path,
        on_damage: OnDamage,
        timing: Arc<Timing>,
    ) -> Result<(Self, Vec<String>), StoreError> {
        let (wal, checkpoint, accepted) = recover(db, tree, log, dir, on_damage)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            written: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            applied: AtomicU64::new(0),
            keys: AtomicU64::new(0),
            waiters: Mutex::new(Vec::new()),
            timing,
        });
        let (publish, synced) = watch::channel(Synced::default());
        let thread = std::thread::Builder::new()
            .name("aiphost-committer".into())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, checkpoint, wal, &publish)
            })?;
        let committer = Committer {
            shared,
            synced,
            thread: Some(thread),
        };
        Ok((committer, accepted))
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

    /// Issue a ticket for a write that has just reached sled by another path: the next round
    /// checkpoints. The committer is not woken: a [`Committer::durable`] wait does that.
    pub(super) fn written(&self) -> Ticket {
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        // Under the queue's lock, like a change's ticket: a round that reads `written` sees
        // `direct` as of the same instant.
        let ticket = self.shared.written.fetch_add(1, Ordering::SeqCst) + 1;
        queue.direct = ticket;
        Ticket(ticket)
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
        let span = tracing::debug_span!("store.wait_durable", ticket = ticket.0);
        if !span.is_disabled() {
            // Before the round is asked for: the round that ends this wait finds it.
            let mut waiters = self
                .shared
                .waiters
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            waiters.push((ticket.0, span.clone()));
        }
        self.wait_durable(ticket).instrument(span).await
    }

    /// [`Committer::durable`]'s wait.
    async fn wait_durable(&self, ticket: Ticket) -> Result<(), StoreError> {
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

    /// Rounds that made writes durable so far.
    pub(super) fn sync_count(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    /// Rounds that checkpointed (flushed sled) so far.
    pub(super) fn checkpoint_count(&self) -> u64 {
        self.shared.checkpoints.load(Ordering::Relaxed)
    }

    /// Changes applied by the committer so far.
    pub(super) fn applied_count(&self) -> u64 {
        self.shared.applied.load(Ordering::Relaxed)
    }

    /// Keys the committer's changes wrote to sled so far.
    pub(super) fn keys_count(&self) -> u64 {
        self.shared.keys.load(Ordering::Relaxed)
    }

    /// Change the queue and wake the committer if it sleeps.
    fn enqueue(&self, change: impl FnOnce(&mut Queue)) {
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut queue);
        let woken = queue.applies.len() >= queue.wanted
            || (queue.sync_wanted && queue.applies.is_empty())
            || queue.stop;
        if queue.idle && woken {
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

/// Record in sled that the log's rounds up to `seq` are applied to it (read back by [`recover`]).
fn write_mark(tree: &sled::Tree, seq: u64) -> Result<(), sled::Error> {
    tree.insert(APPLIED_KEY, &seq.to_be_bytes()).map(drop)
}

/// What to do with a store that lost data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OnDamage {
    /// Refuse to open it ([`StoreError::Damaged`]), changing nothing.
    Refuse,
    /// Open it with what is left, and give it its identity anew.
    Accept,
}

/// What start-up found of a store: its identity and sled's, and the write-ahead log if it is
/// there (opened, not yet replayed).
pub(super) struct Inspected<'a> {
    found: Found<'a>,
    opened: Option<(Wal, Vec<Replayed>)>,
}

impl Inspected<'_> {
    /// What the store lost, each naming its files; empty when it is whole.
    pub(super) fn problems(&self) -> Vec<String> {
        identity::problems(&self.found)
    }
}

/// Read what tells whether the store in `dir` is whole, changing nothing.
pub(super) fn inspect<'a>(
    db: &sled::Db,
    tree: &sled::Tree,
    dir: &'a Path,
) -> Result<Inspected<'a>, StoreError> {
    let applied = applied_mark(tree)?;
    let path = dir.join("wal");
    let wal_existed = path.exists();
    // Opened only if it is there: a store refused must be left as it was found.
    let opened = match wal_existed {
        true => Some(Wal::open(&path, applied).map_err(|e| StoreError::Flush(e.to_string()))?),
        false => None,
    };
    let found = Found {
        dir,
        file: identity::read(dir),
        sled: sled_identity(tree)?,
        sled_has_data: has_data(db)?,
        applied,
        wal_existed,
        wal_first: opened.as_ref().and_then(|(wal, _)| wal.first_seq()),
    };
    Ok(Inspected { found, opened })
}

/// Check the store in `dir` against its identity, apply to sled what the write-ahead log holds
/// beyond sled's mark, then checkpoint: the log is written from its start again.
fn recover(
    db: sled::Db,
    tree: sled::Tree,
    log: File,
    dir: &Path,
    on_damage: OnDamage,
) -> Result<(Wal, Checkpoint, Vec<String>), StoreError> {
    let Inspected { found, opened } = inspect(&db, &tree, dir)?;
    let problems = identity::problems(&found);
    if !problems.is_empty() && on_damage == OnDamage::Refuse {
        return Err(StoreError::Damaged {
            dir: dir.display().to_string(),
            problems,
        });
    }
    for problem in &problems {
        tracing::warn!(problem = %problem, "the store's loss is accepted");
    }
    let path = dir.join("wal");
    let applied = found.applied;
    let (identity, number) = adopt(&found, !problems.is_empty())?;
    let (mut wal, rounds) = match opened {
        Some(opened) => opened,
        None => Wal::open(&path, applied).map_err(|e| StoreError::Flush(e.to_string()))?,
    };
    if !rounds.is_empty() {
        tracing::info!(
            rounds = rounds.len(),
            from = rounds[0].seq,
            "applying the rounds sled lost from the write-ahead log"
        );
    }
    for round in rounds {
        round.batch.apply_each(&tree)?;
        write_mark(&tree, round.seq)?;
    }
    let mut checkpoint = Checkpoint {
        db,
        tree,
        log,
        identity,
        number,
    };
    // Even with nothing to apply: what sled recovered may sit in the page cache only, and the
    // log is about to be overwritten.
    checkpoint.make(wal.next_seq() - 1, true, &Timing::default())?;
    wal.restart();
    Ok((wal, checkpoint, problems))
}

/// The last round sled holds (0: none).
fn applied_mark(tree: &sled::Tree) -> Result<u64, StoreError> {
    match tree.get(APPLIED_KEY)? {
        None => Ok(0),
        Some(mark) => <[u8; 8]>::try_from(mark.as_ref())
            .map(u64::from_be_bytes)
            .map_err(|_| StoreError::Corrupt("malformed write-ahead log mark".into())),
    }
}

/// sled's copy of the store's identity: `Err(())` when it is malformed.
fn sled_identity(tree: &sled::Tree) -> Result<Result<Option<(StoreId, u64)>, ()>, StoreError> {
    Ok(match tree.get(identity::SLED_KEY)? {
        None => Ok(None),
        Some(value) => identity::parse_sled_value(&value).map(Some).ok_or(()),
    })
}

/// Whether sled holds anything (a store from before identities does; a new one does not).
fn has_data(db: &sled::Db) -> Result<bool, StoreError> {
    for name in db.tree_names() {
        if db.open_tree(&name)?.first()?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The identity file to record checkpoints in, and the last checkpoint made: the store's own
/// when it is whole; else (a new store, one from before identities, or a loss accepted) one
/// written now, which the first checkpoint writes to sled too.
fn adopt(found: &Found<'_>, accepted: bool) -> Result<(IdentityFile, u64), StoreError> {
    let failed = |e: std::io::Error| {
        StoreError::Flush(format!(
            "writing {}: {e}",
            found.dir.join(identity::FILE_NAME).display()
        ))
    };
    let file = found.file.as_ref().ok().copied().flatten();
    let sled = found.sled.ok().flatten();
    match (file, sled) {
        (Some(mark), Some((_, checkpoint))) if !accepted => {
            let identity = IdentityFile::open(found.dir, mark.id).map_err(failed)?;
            Ok((identity, checkpoint.max(mark.checkpoint)))
        }
        // A first start that stopped before its first checkpoint: the file is there.
        (Some(mark), None) if !accepted => {
            let identity = IdentityFile::open(found.dir, mark.id).map_err(failed)?;
            Ok((identity, 0))
        }
        _ => {
            let id = file
                .map(|m| m.id)
                .or(sled.map(|s| s.0))
                .unwrap_or_else(StoreId::fresh);
            let number = file
                .map_or(0, |m| m.checkpoint)
                .max(sled.map_or(0, |s| s.1));
            let mark = Mark {
                id,
                checkpoint: number,
                applied: found.applied,
            };
            let identity = IdentityFile::create(found.dir, mark).map_err(failed)?;
            if found.sled_has_data && !accepted {
                tracing::info!(store = %id, "gave a store from before store identities its identity");
            }
            Ok((identity, number))
        }
    }
}

/// What a checkpoint writes to: sled (its identity mark, then a flush), sled's log file, and the
/// identity file.
struct Checkpoint {
    db: sled::Db,
    tree: sled::Tree,
    /// sled's log, the file `db`.
    log: File,
    identity: IdentityFile,
    /// The last checkpoint made.
    number: u64,
}

impl Checkpoint {
    /// Make everything applied to sled durable: sled's identity mark for the next checkpoint,
    /// sled's flush, an `fdatasync` of its log file; then record the checkpoint in the identity
    /// file (synced if `sync_identity`), at which sled held every round up to `applied`.
    fn make(
        &mut self,
        applied: u64,
        sync_identity: bool,
        timing: &Timing,
    ) -> Result<(), StoreError> {
        let next = Mark {
            id: self.identity.id(),
            checkpoint: self.number + 1,
            applied,
        };
        // Before the flush: a sled that recovers this mark holds everything written before it.
        self.tree.insert(identity::SLED_KEY, &next.sled_value())?;
        self.db.flush()?;
        let syncing = timing.start();
        self.log
            .sync_data()
            .map_err(|e| StoreError::Flush(format!("fdatasync of sled's log: {e}")))?;
        timing.synced(syncing);
        self.number = next.checkpoint;
        self.identity
            .record(next.checkpoint, applied, sync_identity)
            .map_err(|e| StoreError::Flush(format!("recording a checkpoint: {e}")))
    }
}

/// The committer's thread: rounds until stopped.
fn run(shared: &Shared, mut checkpoint: Checkpoint, mut wal: Wal, publish: &watch::Sender<Synced>) {
    let tree = checkpoint.tree.clone();
    let tree = &tree;
    let mut flushed = 0u64;
    // Every write outside the committer up to this ticket is durable in sled.
    let mut checkpointed = 0u64;
    // The log's last write or sync failed: what it holds cannot be trusted, so rounds go to
    // disk through sled until a checkpoint succeeds and the log starts over.
    let mut log_broken = false;
    // How many changes the last rounds took.
    let mut gather = Gather::default();
    loop {
        let (applies, target, direct, stop) = {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            while queue.applies.is_empty() && !queue.sync_wanted && !queue.stop {
                queue.idle = true;
                queue.wanted = 1;
                queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            let wanted = gather.target();
            if !queue.applies.is_empty() && queue.applies.len() < wanted {
                let until = std::time::Instant::now() + GATHER_WAIT;
                while queue.applies.len() < wanted && !queue.stop {
                    let Some(left) = until.checked_duration_since(std::time::Instant::now()) else {
                        break;
                    };
                    queue.idle = true;
                    queue.wanted = wanted;
                    queue = shared
                        .wake
                        .wait_timeout(queue, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
            queue.idle = false;
            queue.sync_wanted = false;
            // Every ticket issued so far belongs to a change taken here, to a round already
            // logged, or to a write already in sled (at most `direct`).
            let target = shared.written.load(Ordering::SeqCst);
            let taken = std::mem::take(&mut queue.applies);
            if !taken.is_empty() {
                gather.took(taken.len());
            }
            (taken, target, queue.direct, queue.stop)
        };
        let round = tracing::debug_span!(
            parent: None,
            "store.commit",
            changes = applies.len(),
            checkpoint = tracing::field::Empty
        );
        let _in_round = round.enter();
        let round_began = shared.timing.start();
        let mut outcome: Result<(), String> = Ok(());
        let mut must_checkpoint = direct > checkpointed || stop || log_broken;
        if !applies.is_empty() {
            let mut round = WriteBatch::default();
            let mut waiting = Vec::with_capacity(applies.len());
            for apply in applies {
                round.append(apply.batch);
                waiting.push(apply.done);
            }
            let seq = wal.next_seq();
            let applied = round
                .apply_each(tree)
                .and_then(|()| write_mark(tree, seq))
                .map_err(|e| e.to_string());
            shared
                .applied
                .fetch_add(waiting.len() as u64, Ordering::Relaxed);
            shared.keys.fetch_add(round.len() as u64, Ordering::Relaxed);
            for done in waiting {
                let _ = done.send(applied.clone());
            }
            match applied {
                Err(e) => outcome = Err(e),
                Ok(()) => {
                    let payload = round.encode();
                    if must_checkpoint || !wal.fits(payload.len()) {
                        // The checkpoint below puts the round on disk through sled.
                        must_checkpoint = true;
                        wal.skip();
                    } else if let Err(e) = wal.append(&payload).and_then(|()| {
                        let syncing = shared.timing.start();
                        let synced = wal.sync();
                        shared.timing.synced(syncing);
                        synced
                    }) {
                        tracing::error!(error = %e, "the write-ahead log failed; sled is flushed instead");
                        log_broken = true;
                        must_checkpoint = true;
                    }
                }
            }
        }
        if must_checkpoint {
            round.record("checkpoint", true);
            shared.checkpoints.fetch_add(1, Ordering::Relaxed);
            match checkpoint.make(wal.next_seq() - 1, stop, &shared.timing) {
                Ok(()) => {
                    checkpointed = target;
                    log_broken = false;
                    wal.restart();
                }
                Err(e) => outcome = outcome.and(Err(e.to_string())),
            }
        }
        if !round.is_disabled() {
            // Before the waiters wake: their spans are still open to take the link.
            link_waiters(shared, &round, target.max(flushed));
        }
        if target > flushed {
            shared.syncs.fetch_add(1, Ordering::Relaxed);
            publish.send_modify(|synced| match outcome {
                Ok(()) => synced.flushed = target,
                Err(e) => synced.failed = Some((target, e)),
            });
            flushed = target;
        }
        shared.timing.round(round_began);
        if stop {
            let queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.applies.is_empty() {
                return;
            }
        }
    }
}

/// Link every traced wait this round ends (its ticket is at most `reached`) to the round's span,
/// and forget it.
fn link_waiters(shared: &Shared, round: &tracing::Span, reached: u64) {
    let mut waiters = shared.waiters.lock().unwrap_or_else(|p| p.into_inner());
    waiters.retain(|(ticket, wait)| {
        let ended = *ticket <= reached;
        if ended {
            wait.follows_from(round);
        }
        !ended
    });
}
