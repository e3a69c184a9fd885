//! Where a durable change goes beyond the task itself: the webhook outbox and group results.
//!
//! The engine writes notification and group-result entries in the same write as the change they
//! announce; once that write is durable it tells the [`FanOut`], which delivers them. The
//! notifier and group mode sit above the engine and implement this; engine tests use a fake.

use aiphost_store::TaskKey;

/// Deliverers of what the engine has made durable for others.
pub trait FanOut: Send + Sync + 'static {
    /// Notifications of `task` up to its event `durable_seq` are durable in the outbox.
    fn notifications_due(&self, task: TaskKey, durable_seq: u64);

    /// Whether group membership `membership` is live (results for a left group are not queued).
    fn group_is_live(&self, membership: &str) -> bool;

    /// Results for `membership` are durable in its outbox.
    fn group_results_due(&self, membership: &str);
}
