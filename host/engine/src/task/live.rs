//! Live watermarks: how far each followed task's event log is durable.
//!
//! A stream reads events from the log, never from a broadcast payload, so a slow stream holds
//! nothing in memory and the switch from replay to live cannot lose or repeat an event. What a
//! stream waits on is this watermark, which moves only once a write is on disk.

use aiphost_store::TaskKey;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The watermarks of every task someone follows.
#[derive(Default)]
pub struct Watermarks {
    map: Mutex<HashMap<TaskKey, watch::Sender<u64>>>,
    open: AtomicU64,
}

/// One follower's view of a task's watermark; dropping it unregisters the follower.
pub struct Follow {
    /// Always `Some` until dropped (taken out in `drop`, under the map lock).
    rx: Option<watch::Receiver<u64>>,
    key: TaskKey,
    owner: Arc<Watermarks>,
}

impl Watermarks {
    /// Start following `key`.
    pub fn follow(self: &Arc<Self>, key: &TaskKey) -> Follow {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let rx = map
            .entry(key.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        self.open.fetch_add(1, Ordering::Relaxed);
        Follow {
            rx: Some(rx),
            key: key.clone(),
            owner: self.clone(),
        }
    }

    /// Whether anyone follows `key` (if not, nobody needs to hear of its writes).
    pub fn has_followers(&self, key: &TaskKey) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(key)
    }

    /// Events of `key` up to `seq` are durable.
    pub fn advance(&self, key: &TaskKey, seq: u64) {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(key) {
            tx.send_if_modified(|current| {
                let moved = seq > *current;
                *current = (*current).max(seq);
                moved
            });
        }
    }

    /// Streams open now.
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }
}

impl Follow {
    /// The watermark seen last (and mark it seen).
    pub(super) fn current(&mut self) -> u64 {
        self.rx.as_mut().map_or(0, |rx| *rx.borrow_and_update())
    }

    /// Wait until the watermark moves; `false` if it never can again.
    pub(super) async fn moved(&mut self) -> bool {
        match self.rx.as_mut() {
            Some(rx) => rx.changed().await.is_ok(),
            None => false,
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.owner.open.fetch_sub(1, Ordering::Relaxed);
        let mut map = self.owner.map.lock().unwrap_or_else(|p| p.into_inner());
        // Drop our receiver under the lock first, so two followers leaving at once cannot each
        // count the other and leave the entry behind.
        drop(self.rx.take());
        if map
            .get(&self.key)
            .is_some_and(|tx| tx.receiver_count() == 0)
        {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn followers_register_advance_and_leave() {
        let marks = Arc::new(Watermarks::default());
        let key = TaskKey::new("a", "t");
        assert!(!marks.has_followers(&key));
        let a = marks.follow(&key);
        let b = marks.follow(&key);
        assert_eq!(marks.open(), 2);
        marks.advance(&key, 5);
        marks.advance(&key, 3);
        let mut a = a;
        assert_eq!(a.current(), 5, "the watermark never goes back");
        drop(a);
        assert!(marks.has_followers(&key));
        let mut b = b;
        assert_eq!(b.current(), 5);
        drop(b);
        assert!(!marks.has_followers(&key));
        assert_eq!(marks.open(), 0);
    }
}
