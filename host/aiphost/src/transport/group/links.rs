//! The engine's handle on the memberships: which are live, and how to wake one whose results
//! wait in its outbox (the host's `FanOut` calls it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The engine's view of the memberships: which are live, and how to tell one that results wait.
#[derive(Default)]
pub struct GroupLinks {
    live: Mutex<HashMap<String, Arc<Notify>>>,
}

impl GroupLinks {
    /// Whether `membership` is live (results for a left group are not queued).
    pub fn is_live(&self, membership: &str) -> bool {
        self.lock().contains_key(membership)
    }

    /// Tell `membership` that durable results wait in its outbox.
    pub fn wake(&self, membership: &str) {
        if let Some(n) = self.lock().get(membership) {
            n.notify_one();
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}
