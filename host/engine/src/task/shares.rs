//! Each partner's share of the threads that run partner code: at most
//! [`super::TaskDefaults::max_invocations_per_partner`] of its invocations run at once, the rest
//! wait their turn. A partner whose invocations spin until their deadline then holds at most
//! that many turns of the guest threads, and the invocations of every other partner still get
//! theirs (below a tenant's own cap, which bounds all its partners together).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// One partner's share.
struct Share {
    slots: Arc<Semaphore>,
    running: AtomicU64,
    waiting: AtomicU64,
}

/// The shares of every partner that has run, by agent id.
pub struct Shares {
    per_partner: u32,
    shares: Mutex<HashMap<String, Arc<Share>>>,
}

/// A running invocation's turn; dropping it lets the partner's next invocation run.
pub struct Turn {
    share: Arc<Share>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.share.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One invocation waiting for its turn, counted until it stops waiting (however it stops).
struct Waiting<'a>(&'a AtomicU64);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicU64) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many of a partner's invocations run and wait now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareView {
    /// The partner's agent id.
    pub agent: String,
    /// Its invocations holding a turn now.
    pub running: u64,
    /// Its invocations waiting for a turn.
    pub waiting: u64,
}

impl Shares {
    /// Shares of `per_partner` invocations at once (at least 1).
    pub fn new(per_partner: u32) -> Self {
        Shares {
            per_partner: per_partner.max(1),
            shares: Mutex::new(HashMap::new()),
        }
    }

    /// Wait for a turn of partner `agent`.
    pub async fn turn(&self, agent: &str) -> Option<Turn> {
        let share = {
            let mut shares = self.shares.lock().unwrap_or_else(|p| p.into_inner());
            shares
                .entry(agent.to_string())
                .or_insert_with(|| {
                    Arc::new(Share {
                        slots: Arc::new(Semaphore::new(self.per_partner as usize)),
                        running: AtomicU64::new(0),
                        waiting: AtomicU64::new(0),
                    })
                })
                .clone()
        };
        let permit = {
            // Counted while waiting, also when the wait is given up (the future dropped).
            let _waiting = Waiting::new(&share.waiting);
            share.slots.clone().acquire_owned().await
        };
        let permit = permit.ok()?;
        share.running.fetch_add(1, Ordering::Relaxed);
        Some(Turn {
            share,
            _permit: permit,
        })
    }

    /// Every partner with invocations running or waiting, by id.
    pub fn busy(&self) -> Vec<ShareView> {
        let shares = self.shares.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<ShareView> = shares
            .iter()
            .map(|(agent, s)| ShareView {
                agent: agent.clone(),
                running: s.running.load(Ordering::Relaxed),
                waiting: s.waiting.load(Ordering::Relaxed),
            })
            .filter(|v| v.running > 0 || v.waiting > 0)
            .collect();
        out.sort_by(|a, b| a.agent.cmp(&b.agent));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_partner_runs_at_most_its_share_and_others_are_not_held_up() {
        let shares = Arc::new(Shares::new(2));
        let a1 = shares.turn("a").await.unwrap();
        let _a2 = shares.turn("a").await.unwrap();
        let waiting = {
            let shares = shares.clone();
            tokio::spawn(async move { shares.turn("a").await.map(|_| ()) })
        };
        tokio::task::yield_now().await;
        let b = tokio::time::timeout(std::time::Duration::from_secs(1), shares.turn("b"))
            .await
            .expect("another partner gets its turn at once");
        assert!(b.is_some());
        let busy = shares.busy();
        assert_eq!(
            busy[0],
            ShareView {
                agent: "a".into(),
                running: 2,
                waiting: 1
            }
        );
        drop(a1);
        waiting.await.unwrap().unwrap();
    }
}
