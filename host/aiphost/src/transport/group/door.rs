//! The group door as the server sees it: no routes of its own (invitations come through the AIP
//! door's `group` method, which the server wires to [`Groups`], or through the partners'
//! inboxes), and its counters (on the host's metrics).

use super::groups::Groups;
use crate::metrics::{LabelValue, Labels, Metrics};
use crate::transport::kit::door::Door;
use crate::transport::kit::state::HostState;
use axum::Router;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The group door.
pub struct GroupDoor;

impl GroupDoor {
    /// The door of `groups`' memberships, its counters on `metrics` (copied from the groups'
    /// own when scraped: they count on paths that know nothing of metrics).
    pub fn new(groups: Groups, metrics: &Arc<Metrics>) -> Self {
        let counters = [
            (
                "aiphost_group_commands_total",
                "Commands taken from group queues",
            ),
            (
                "aiphost_group_published_total",
                "Messages published to groups (confirmed by the broker)",
            ),
            (
                "aiphost_group_duplicates_total",
                "Redelivered group commands recognised as already applied",
            ),
            (
                "aiphost_group_reconnects_total",
                "Group links that broke and were reopened",
            ),
        ]
        .map(|(name, help)| metrics.counter(name, help, Labels::none()));
        let registry = Arc::downgrade(metrics);
        metrics.on_scrape(move || {
            let stats = groups.stats();
            for (counter, value) in counters.iter().zip([
                &stats.commands,
                &stats.published,
                &stats.duplicates,
                &stats.reconnects,
            ]) {
                counter.absolute(value.load(Ordering::Relaxed));
            }
            // A weak reference: the hook is the metrics' own, and must not keep them alive.
            let Some(metrics) = registry.upgrade() else {
                return;
            };
            for (code, n) in stats.refusals() {
                metrics
                    .counter(
                        "aiphost_group_commands_refused_total",
                        "Group commands the engine refused, by JSON-RPC error code (group mode has no channel for errors)",
                        Labels::none().with("code", LabelValue::code(code)),
                    )
                    .absolute(n);
            }
        });
        GroupDoor
    }
}

impl Door for GroupDoor {
    fn name(&self) -> &'static str {
        "group"
    }

    fn routes(&self) -> Router<HostState> {
        Router::new()
    }
}
