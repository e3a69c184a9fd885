//! The group door as the server sees it: no routes of its own (invitations come through the AIP
//! door's `group` method, which the server wires to [`Groups`], or through the partners'
//! inboxes), and its counters.

use super::groups::Groups;
use crate::transport::kit::door::Door;
use crate::transport::kit::metrics;
use crate::transport::kit::state::HostState;
use axum::Router;
use std::sync::atomic::Ordering;

/// The group door.
pub struct GroupDoor {
    groups: Groups,
}

impl GroupDoor {
    /// The door of `groups`' memberships.
    pub fn new(groups: Groups) -> Self {
        GroupDoor { groups }
    }
}

impl Door for GroupDoor {
    fn name(&self) -> &'static str {
        "group"
    }

    fn routes(&self) -> Router<HostState> {
        Router::new()
    }

    fn metrics(&self, text: &mut String) {
        let stats = self.groups.stats();
        for (name, help, value) in [
            (
                "aiphost_group_commands_total",
                "Commands taken from group queues",
                stats.commands.load(Ordering::Relaxed),
            ),
            (
                "aiphost_group_published_total",
                "Messages published to groups (confirmed by the broker)",
                stats.published.load(Ordering::Relaxed),
            ),
            (
                "aiphost_group_duplicates_total",
                "Redelivered group commands recognised as already applied",
                stats.duplicates.load(Ordering::Relaxed),
            ),
            (
                "aiphost_group_reconnects_total",
                "Group links that broke and were reopened",
                stats.reconnects.load(Ordering::Relaxed),
            ),
        ] {
            metrics::counter(text, name, help, value);
        }
        metrics::family(
            text,
            "aiphost_group_commands_refused_total",
            "Group commands the engine refused, by JSON-RPC error code (group mode has no channel for errors)",
            "counter",
        );
        for (code, n) in stats.refusals() {
            text.push_str(&format!(
                "aiphost_group_commands_refused_total{{code=\"{code}\"}} {n}\n"
            ));
        }
    }
}
