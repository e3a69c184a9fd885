//! One partner's log as the host keeps it: its ring of recent records, its rate bucket, its
//! counters, and the channel its followers read new records from.
//!
//! A record is numbered, kept and sent to the followers under one lock, so a follower that takes
//! the ring's records and subscribes under that lock misses none and sees none twice.

use super::PartnerLogConfig;
use super::bucket::{Admit, LineBucket};
use super::record::{LogLevel, LogRecord};
use super::ring::Ring;
use crate::model::Timestamp;
use crate::runtime::PartnerLog;
use crate::store::TaskKey;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// New records a follower may be behind before it is told it lagged (then it reads on from the
/// ring).
const FOLLOW_BUFFER: usize = 256;

/// What a follower starts from: the records after its position, and the new ones to come.
pub struct Subscription {
    /// The position it reads after: the one asked for, or 0 for one past the newest record.
    pub after: u64,
    /// The ring's records after the position asked for, oldest first.
    pub backlog: Vec<Arc<LogRecord>>,
    /// Records the ring no longer holds between the position asked for and the backlog.
    pub missed: u64,
    /// Records logged from now on.
    pub live: broadcast::Receiver<Arc<LogRecord>>,
}

/// One partner's log.
pub struct PartnerLogState {
    agent: Arc<str>,
    tenant: Option<Arc<str>>,
    inner: Mutex<Inner>,
    live: broadcast::Sender<Arc<LogRecord>>,
    lines: AtomicU64,
    dropped: AtomicU64,
    followers: AtomicUsize,
    closed: CancellationToken,
}

struct Inner {
    ring: Ring,
    bucket: LineBucket,
    /// The seq of the newest record (0: none yet).
    last_seq: u64,
}

/// A record about to be numbered.
struct Draft {
    level: LogLevel,
    version: u64,
    leader: Option<String>,
    task: Option<String>,
    message: String,
    fields: Vec<(String, String)>,
}

impl PartnerLogState {
    /// An empty log of partner `agent` of `tenant`.
    pub fn new(agent: &str, tenant: Option<&str>, config: &PartnerLogConfig) -> Self {
        PartnerLogState {
            agent: Arc::from(agent),
            tenant: tenant.map(Arc::from),
            inner: Mutex::new(Inner {
                ring: Ring::new(config.lines, config.bytes),
                bucket: LineBucket::new(config.rate, config.burst, Timestamp::now_ms()),
                last_seq: 0,
            }),
            live: broadcast::channel(FOLLOW_BUFFER).0,
            lines: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            followers: AtomicUsize::new(0),
            closed: CancellationToken::new(),
        }
    }

    /// The partner's tenant (`None`: the operator's).
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take a line `version` logged during task `task` (as the store keys it), if the rate
    /// allows: the records kept (a marker of the lines dropped before it, then the line), to
    /// be written to `tracing` too; none when it is over the rate.
    pub fn log(&self, version: u64, task: &str, line: PartnerLog) -> Vec<Arc<LogRecord>> {
        let mut inner = self.lock();
        let dropped = match inner.bucket.admit(Timestamp::now_ms()) {
            Admit::Drop => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return Vec::new();
            }
            Admit::Pass { dropped } => dropped,
        };
        let mut kept = Vec::with_capacity(2);
        if dropped > 0 {
            kept.push(self.keep(&mut inner, gap(version, dropped)));
        }
        // The store's key of an authenticated Leader's task holds the Leader: it is shown as
        // what it is, the Leader and its own task id, never as the key.
        let key = TaskKey::from_scoped(&self.agent, task);
        kept.push(self.keep(
            &mut inner,
            Draft {
                level: line.level.into(),
                version,
                leader: key.leader,
                task: Some(key.task).filter(|t| !t.is_empty()),
                message: line.message,
                fields: line.fields,
            },
        ));
        self.lines.fetch_add(1, Ordering::Relaxed);
        kept
    }

    /// Mark the lines dropped since the last one kept, if any (an invocation ended: a partner
    /// that went quiet after a burst still shows its gap).
    pub fn mark_gap(&self, version: u64) -> Option<Arc<LogRecord>> {
        let mut inner = self.lock();
        let dropped = inner.bucket.take_dropped();
        (dropped > 0).then(|| self.keep(&mut inner, gap(version, dropped)))
    }

    fn keep(&self, inner: &mut Inner, draft: Draft) -> Arc<LogRecord> {
        inner.last_seq += 1;
        let record = Arc::new(LogRecord {
            seq: inner.last_seq,
            time: Timestamp::now(),
            level: draft.level,
            agent: self.agent.clone(),
            version: draft.version,
            tenant: self.tenant.clone(),
            leader: draft.leader,
            task: draft.task,
            message: draft.message,
            fields: draft.fields,
        });
        inner.ring.push(record.clone());
        // No follower: nothing to send (an error only says so).
        let _ = self.live.send(record.clone());
        record
    }

    /// The kept records after seq `after`, oldest first, and the seq of the newest kept.
    pub fn after(&self, after: u64) -> (Vec<Arc<LogRecord>>, u64) {
        let inner = self.lock();
        let after = Self::position(&inner, after);
        (inner.ring.after(after).cloned().collect(), inner.last_seq)
    }

    /// Where `after` reads from: itself, or 0 for a position past the newest record (one from
    /// before the host restarted, when seqs began again).
    fn position(inner: &Inner, after: u64) -> u64 {
        if after > inner.last_seq { 0 } else { after }
    }

    /// Follow the log from after seq `after`.
    pub fn subscribe(&self, after: u64) -> Subscription {
        let inner = self.lock();
        let after = Self::position(&inner, after);
        let backlog: Vec<Arc<LogRecord>> = inner.ring.after(after).cloned().collect();
        let first = backlog.first().map_or(inner.last_seq + 1, |r| r.seq);
        Subscription {
            after,
            missed: first.saturating_sub(after + 1),
            backlog,
            live: self.live.subscribe(),
        }
    }

    /// Count a follower in, if fewer than `max` follow now; it is counted out when the guard
    /// is dropped.
    pub fn admit_follower(self: &Arc<Self>, max: usize) -> Option<FollowerGuard> {
        self.followers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| FollowerGuard(self.clone()))
    }

    /// Cancelled once the partner's log is forgotten (its followers' streams end).
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Lines taken and lines dropped over the rate, since the log began.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.lines.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        )
    }
}

/// A follower counted in (see [`PartnerLogState::admit_follower`]).
pub struct FollowerGuard(Arc<PartnerLogState>);

impl Drop for FollowerGuard {
    fn drop(&mut self) {
        self.0.followers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The marker of `dropped` lines refused over the rate.
fn gap(version: u64, dropped: u64) -> Draft {
    Draft {
        level: LogLevel::Warn,
        version,
        leader: None,
        task: None,
        message: format!("{dropped} lines dropped"),
        fields: vec![("dropped".into(), dropped.to_string())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn config(lines: usize, rate: u32, burst: u32) -> PartnerLogConfig {
        PartnerLogConfig {
            lines,
            bytes: 1 << 20,
            rate,
            burst,
        }
    }

    fn line(message: &str) -> PartnerLog {
        PartnerLog::bounded(Level::INFO, message.into(), vec![("k".into(), "v".into())])
    }

    #[test]
    fn a_leaders_task_is_shown_as_the_leader_and_its_task_id() {
        let log = PartnerLogState::new("echo", Some("acme"), &config(10, 100, 100));
        let kept = log.log(3, "LEADER-AIC\u{1f}task-1", line("hi"));
        assert_eq!(kept.len(), 1);
        let r = &kept[0];
        assert_eq!(
            (r.leader.as_deref(), r.task.as_deref()),
            (Some("LEADER-AIC"), Some("task-1"))
        );
        assert_eq!(
            (r.seq, r.version, r.tenant.as_deref()),
            (1, 3, Some("acme"))
        );
        let open = log.log(3, "t2", line("hi"));
        assert_eq!(
            (open[0].leader.as_deref(), open[0].task.as_deref()),
            (None, Some("t2"))
        );
    }

    #[test]
    fn lines_over_the_rate_are_dropped_counted_and_marked_once() {
        let log = PartnerLogState::new("echo", None, &config(100, 1, 3));
        let kept: usize = (0..10)
            .map(|i| log.log(0, "t", line(&format!("{i}"))).len())
            .sum();
        assert_eq!(kept, 3);
        assert_eq!(log.counts(), (3, 7));
        let marker = log.mark_gap(0).expect("a marker");
        assert_eq!(marker.message, "7 lines dropped");
        assert_eq!(marker.seq, 4);
        assert!(log.mark_gap(0).is_none(), "one marker per gap");
        let (records, last) = log.after(0);
        assert_eq!(last, 4);
        assert_eq!(
            records.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }

    #[tokio::test]
    async fn a_follower_gets_the_backlog_then_live_records_and_is_told_what_the_ring_lost() {
        let log = Arc::new(PartnerLogState::new("echo", None, &config(2, 1000, 1000)));
        for i in 0..5 {
            log.log(0, "t", line(&format!("{i}")));
        }
        let mut sub = log.subscribe(1);
        assert_eq!(
            sub.backlog.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!(sub.missed, 2, "seqs 2 and 3 are gone");
        log.log(0, "t", line("new"));
        assert_eq!(sub.live.recv().await.expect("live").seq, 6);
        // A position past the newest (before a restart) reads from the oldest kept.
        assert_eq!(log.subscribe(99).backlog.first().map(|r| r.seq), Some(5));
        let guard = log.admit_follower(1).expect("one may follow");
        assert!(log.admit_follower(1).is_none());
        drop(guard);
        assert!(log.admit_follower(1).is_some());
    }
}
