//! Group commit: one sled flush serves every write issued before it began.

use super::{StoreError, Ticket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

/// A ticket to make durable, the database to flush (waiters lend it, so the flusher holds no handle
/// of its own and the store closes when its last user drops it), and where to say it is done.
type Waiter = (u64, sled::Db, oneshot::Sender<Result<(), String>>);

pub(super) struct GroupCommit {
    counters: Arc<Counters>,
    requests: mpsc::UnboundedSender<Waiter>,
}

#[derive(Default)]
struct Counters {
    /// Tickets issued: bumped after each write has reached sled.
    written: AtomicU64,
    /// Every ticket up to this one is on disk.
    flushed: AtomicU64,
    flushes: AtomicU64,
}

impl GroupCommit {
    /// Start the flusher task on the current tokio runtime.
    pub(super) fn start() -> Self {
        let counters = Arc::new(Counters::default());
        let (requests, mut rx) = mpsc::unbounded_channel::<Waiter>();
        let c = counters.clone();
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut waiters = vec![first];
                while let Ok(w) = rx.try_recv() {
                    waiters.push(w);
                }
                // Every waiter's write finished before its ticket was issued, so a flush that
                // starts now covers all tickets up to `target`.
                let target = c.written.load(Ordering::SeqCst);
                let highest = waiters.iter().map(|w| w.0).max().unwrap_or(0);
                let result = if c.flushed.load(Ordering::SeqCst) >= highest {
                    // A flush that finished meanwhile covered these waiters. It covered only the
                    // tickets issued before it began, so `flushed` must not move here.
                    Ok(())
                } else {
                    c.flushes.fetch_add(1, Ordering::Relaxed);
                    let flushed = waiters[0]
                        .1
                        .flush_async()
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string());
                    if flushed.is_ok() {
                        c.flushed.fetch_max(target, Ordering::SeqCst);
                    }
                    flushed
                };
                for (_, _, tx) in waiters {
                    let _ = tx.send(result.clone());
                }
            }
        });
        GroupCommit { counters, requests }
    }

    /// Issue a ticket for a write that has just reached sled.
    pub(super) fn written(&self) -> Ticket {
        Ticket(self.counters.written.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// The newest ticket issued.
    pub(super) fn latest(&self) -> Ticket {
        Ticket(self.counters.written.load(Ordering::SeqCst))
    }

    pub(super) async fn durable(&self, db: &sled::Db, ticket: Ticket) -> Result<(), StoreError> {
        if self.counters.flushed.load(Ordering::SeqCst) >= ticket.0 {
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        self.requests
            .send((ticket.0, db.clone(), tx))
            .map_err(|_| StoreError::Flush("the flusher has stopped".into()))?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StoreError::Flush(e)),
            Err(_) => Err(StoreError::Flush("the flusher has stopped".into())),
        }
    }

    pub(super) fn flush_count(&self) -> u64 {
        self.counters.flushes.load(Ordering::Relaxed)
    }
}
