//! 2025-11-25 sessions, bounded and bound to their caller.
//!
//! A client of the previous revision (2025-11-25) opens a session with `initialize`; `rmcp`
//! keeps it in memory (`LocalSessionManager`, closed after `keep_alive` idle) and names it in
//! the `Mcp-Session-Id` header of every later request. The session is what lets the door ask
//! such a client for a form's values (`elicitation/create` is a request of the server's, which
//! only a session can carry). 2026-07-28 requests never open one: they are stateless.
//!
//! `rmcp` bounds neither how many sessions there are nor who may use one; this file does both,
//! from the entry, which sees every request before `rmcp` does:
//! - an `initialize` beyond `--mcp-max-sessions` open sessions is refused (503, retry later),
//!   so no client can grow the host's memory by opening sessions;
//! - a session belongs to the caller that opened it (its partner and its Leader's namespace): a
//!   request naming another caller's session is refused as if the session did not exist
//!   (session ids are random UUIDs, checked all the same).
//!
//! The owners are recorded from the response to the `initialize` (its `Mcp-Session-Id`); records
//! of sessions `rmcp` has closed are dropped whenever the record outgrows the sessions.

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The open sessions and whom each belongs to.
pub(super) struct Sessions {
    manager: Arc<LocalSessionManager>,
    owners: Mutex<HashMap<String, String>>,
    max: usize,
    /// How many were open when last seen (for `/metrics`, which cannot wait for the manager).
    seen_open: AtomicUsize,
}

/// Why a session request is refused.
#[derive(Debug, PartialEq)]
pub(super) enum SessionRefusal {
    /// As many sessions are open as the host allows.
    Full { max: usize },
    /// The session is another caller's.
    Foreign,
}

impl Sessions {
    /// Sessions kept by `manager`, at most `max` at once.
    pub(super) fn new(manager: Arc<LocalSessionManager>, max: usize) -> Self {
        Sessions {
            manager,
            owners: Mutex::new(HashMap::new()),
            max,
            seen_open: AtomicUsize::new(0),
        }
    }

    /// The manager `rmcp` keeps the sessions in.
    pub(super) fn manager(&self) -> Arc<LocalSessionManager> {
        self.manager.clone()
    }

    /// Whether one more session may be opened.
    pub(super) async fn admit_new(&self) -> Result<(), SessionRefusal> {
        let open = self.manager.sessions.read().await.len();
        self.seen_open.store(open, Ordering::Relaxed);
        if open >= self.max {
            return Err(SessionRefusal::Full { max: self.max });
        }
        Ok(())
    }

    /// How many sessions are open: counted now, or (while `rmcp` is opening or closing one,
    /// which holds its map for a moment) as last seen. `/metrics` is synchronous: it cannot
    /// wait for the manager's lock.
    pub(super) fn open_count(&self) -> usize {
        match self.manager.sessions.try_read() {
            Ok(sessions) => {
                self.seen_open.store(sessions.len(), Ordering::Relaxed);
                sessions.len()
            }
            Err(_) => self.seen_open.load(Ordering::Relaxed),
        }
    }

    /// Session `id` was opened by `owner` (a caller's fingerprint).
    pub(super) async fn bind(&self, id: &str, owner: String) {
        let live = if self.owners().len() >= self.max {
            let sessions = self.manager.sessions.read().await;
            Some(
                sessions
                    .keys()
                    .map(|k| k.to_string())
                    .collect::<std::collections::HashSet<_>>(),
            )
        } else {
            None
        };
        let mut owners = self.owners();
        if let Some(live) = live {
            owners.retain(|id, _| live.contains(id));
        }
        owners.insert(id.to_string(), owner);
    }

    /// Whether `owner` may use session `id` (one the door never saw is `rmcp`'s to refuse).
    pub(super) fn check(&self, id: &str, owner: &str) -> Result<(), SessionRefusal> {
        match self.owners().get(id) {
            Some(o) if o != owner => Err(SessionRefusal::Foreign),
            _ => Ok(()),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A panic while holding the map cannot leave it half-written (single inserts/removes).
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_is_its_openers_and_unknown_ones_pass_to_rmcp() {
        let s = Sessions::new(Arc::new(LocalSessionManager::default()), 4);
        s.bind("s1", "a".into()).await;
        assert_eq!(s.check("s1", "a"), Ok(()));
        assert_eq!(s.check("s1", "b"), Err(SessionRefusal::Foreign));
        assert_eq!(s.check("s2", "b"), Ok(()));
    }

    #[tokio::test]
    async fn records_of_closed_sessions_are_dropped_when_they_outgrow_the_cap() {
        let s = Sessions::new(Arc::new(LocalSessionManager::default()), 2);
        for i in 0..10 {
            s.bind(&format!("s{i}"), "a".into()).await;
        }
        // None of these is open in the manager: each bind at the cap drops the closed ones.
        assert!(s.owners().len() <= 2, "{}", s.owners().len());
        assert_eq!(s.admit_new().await, Ok(()));
    }

    #[tokio::test]
    async fn no_session_beyond_the_cap() {
        use rmcp::transport::streamable_http_server::session::SessionManager;
        let manager = Arc::new(LocalSessionManager::default());
        let s = Sessions::new(manager.clone(), 2);
        for _ in 0..2 {
            assert_eq!(s.admit_new().await, Ok(()));
            let opened = manager.create_session().await;
            assert!(opened.is_ok());
        }
        assert_eq!(s.admit_new().await, Err(SessionRefusal::Full { max: 2 }));
        assert_eq!(s.open_count(), 2);
    }
}
