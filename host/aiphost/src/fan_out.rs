//! The host's [`FanOut`]: the engine's durable notifications go to the webhook notifier, its
//! group results to the membership's link.

use crate::notify::Notifier;
use crate::store::TaskKey;
use crate::task::FanOut;
use crate::transport::group::links::GroupLinks;
use std::sync::Arc;

/// The notifier and the group links, as the engine sees them.
pub struct Deliverers {
    /// Webhook delivery of the notification style.
    pub notifier: Arc<Notifier>,
    /// Live group memberships.
    pub groups: Arc<GroupLinks>,
}

impl FanOut for Deliverers {
    fn notifications_due(&self, task: TaskKey, durable_seq: u64) {
        self.notifier.wake(task, durable_seq);
    }

    fn group_is_live(&self, membership: &str) -> bool {
        self.groups.is_live(membership)
    }

    fn group_results_due(&self, membership: &str) {
        self.groups.wake(membership);
    }
}
