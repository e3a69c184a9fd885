//! An event feed: the events of one task after a given seq, replayed from the log and then live,
//! only ever durable ones, ending after the event that ends the task.

use super::live::Follow;
use super::record::TaskDefaults;
use aiphost_model::TaskEvent;
use aiphost_store::{Store, StoreError, TaskKey};
use std::time::Duration;

/// How many events one read takes from the log (bounds a stream's memory).
const BATCH: usize = 64;

/// The events of a task for one stream.
pub struct EventFeed {
    key: TaskKey,
    session_id: Option<String>,
    group_id: Option<String>,
    completes_on_result: bool,
    response_timeout: Duration,
    store: Store,
    follow: Follow,
    /// The next seq to send.
    next: u64,
    /// Events up to here are known durable (from the log at the start, then the watermark).
    durable: u64,
    done: bool,
}

/// The log no longer holds events the stream needs (retention dropped them while it lagged).
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// Retention dropped events the stream had not sent yet.
    #[error("events from seq {wanted} on are no longer stored (the oldest kept is {oldest:?})")]
    Expired {
        /// The seq the stream was to send next.
        wanted: u64,
        /// The oldest seq the log still holds (`None`: it holds none).
        oldest: Option<u64>,
    },
    /// The store could not be read, or held an event that does not parse.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EventFeed {
    /// A feed of `key` from after `after`, where events up to `durable` are on disk; `ended`:
    /// the task has ended, so the feed stops once it has sent what remains.
    pub(super) fn new(
        key: TaskKey,
        (session_id, group_id): (Option<String>, Option<String>),
        store: Store,
        follow: Follow,
        after: u64,
        durable: u64,
        ended: bool,
    ) -> Self {
        EventFeed {
            key,
            session_id,
            group_id,
            completes_on_result: false,
            // The engine sets the task's own (`responding_within`).
            response_timeout: Duration::from_millis(TaskDefaults::default().response_timeout_ms),
            store,
            follow,
            next: after + 1,
            durable,
            done: ended && after >= durable,
        }
    }

    /// The feed's task is completed by the host as soon as its partner has a result
    /// ([`aiphost_model::CommandPolicy::complete_on_result`]).
    pub(super) fn completing_on_result(mut self, completes: bool) -> Self {
        self.completes_on_result = completes;
        self
    }

    /// The task's `responseTimeout`: how long a start or continue waits for its partner to rest.
    pub(super) fn responding_within(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long a start or continue of the feed's task waits for its partner to rest (its
    /// `responseTimeout`): a door that answers a turn in one piece rather than as a stream waits
    /// as long, then answers with the turn as it is.
    pub fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    /// Whether the host completes the task as soon as its partner has a result (its
    /// awaiting-completion status is followed by `completed` in the same change).
    pub fn completes_on_result(&self) -> bool {
        self.completes_on_result
    }

    /// Whether the feed has nothing more to send (its task had ended before the events it
    /// starts after).
    pub fn is_over(&self) -> bool {
        self.done
    }

    /// The task this feed follows.
    pub fn key(&self) -> &TaskKey {
        &self.key
    }

    /// The task's session, for rendering its events.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The task's group, if it belongs to one.
    pub fn group_id(&self) -> Option<&str> {
        self.group_id.as_deref()
    }

    /// The next events; waits while the stream is caught up. An empty batch: the feed is over.
    pub async fn next_batch(&mut self) -> Result<Vec<TaskEvent>, FeedError> {
        loop {
            if self.done {
                return Ok(Vec::new());
            }
            self.durable = self.durable.max(self.follow.current());
            if self.next <= self.durable {
                let wanted = (self.durable - self.next + 1).min(BATCH as u64) as usize;
                let raw = self.store.events_after(&self.key, self.next - 1, wanted)?;
                if raw.first().is_none_or(|(seq, _)| *seq != self.next) {
                    return Err(FeedError::Expired {
                        wanted: self.next,
                        oldest: self.store.first_event_seq(&self.key)?,
                    });
                }
                let mut events = Vec::with_capacity(raw.len());
                for (_, bytes) in raw {
                    let event: TaskEvent = bytes.decode().map_err(|e| {
                        StoreError::Corrupt(format!(
                            "event of {}/{}: {e}",
                            self.key.agent, self.key.task
                        ))
                    })?;
                    self.next = event.seq + 1;
                    let last = event.is_terminal();
                    events.push(event);
                    if last {
                        self.done = true;
                        break;
                    }
                }
                return Ok(events);
            }
            if !self.follow.moved().await {
                return Ok(Vec::new());
            }
        }
    }
}
