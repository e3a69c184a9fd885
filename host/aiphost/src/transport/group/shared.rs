//! What the membership actors (the sessions and `Groups`) share: the engine, the hosted
//! partners, the store, the settings, the live links, the views and the counters.

use super::config::GroupConfig;
use super::links::GroupLinks;
use super::membership::Membership;
use super::stats::GroupStats;
use super::views::{MemberState, MemberView};
use crate::agent::Registry;
use crate::store::{Encoded, Store};
use crate::task::TaskEngine;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What the actors share.
pub(super) struct Shared {
    pub(super) engine: TaskEngine,
    /// The partners hosted now: a session whose partner is gone (unpublished, its tenant
    /// removed) leaves its group.
    pub(super) agents: Arc<Registry>,
    pub(super) store: Store,
    pub(super) config: GroupConfig,
    pub(super) links: Arc<GroupLinks>,
    pub(super) views: Mutex<HashMap<String, MemberView>>,
    pub(super) shutdown: CancellationToken,
    pub(super) stats: GroupStats,
}

impl Shared {
    pub(super) fn connection_name(&self, m: &Membership) -> String {
        // acps-sdk names it `agent-{aic}`; the group makes it tell memberships apart.
        format!("agent-{}/{}", m.aic, m.invitation.group_id)
    }

    pub(super) fn set_state(
        &self,
        id: &str,
        state: MemberState,
        error: Option<String>,
        muted: bool,
    ) {
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = views.get_mut(id) {
            v.state = state;
            v.last_error = error;
            v.muted = muted;
        }
    }

    /// Store a membership's changed settings (mute, dialect).
    pub(super) fn save(&self, m: &Membership) {
        let stored = Encoded::of(m).and_then(|record| self.store.put_membership(&m.id(), &record));
        if let Err(e) = stored {
            tracing::error!(error = %e, "could not store a membership change");
        }
    }

    pub(super) fn forget(&self, id: &str) {
        self.links.lock().remove(id);
        self.views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}
