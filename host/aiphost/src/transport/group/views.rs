//! A membership as operators see it (`/admin/groups`, `aiphost groups`): its group, broker and
//! Leader, and where its link stands.

use super::membership::Membership;
use crate::model::Timestamp;
use crate::protocol::aip::Dialect;
use serde::Serialize;

/// Where a membership's link stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberState {
    /// The link is open and serving.
    Connected,
    /// The link is down (or not yet reopened after a restart); it is retried with backoff.
    Reconnecting,
}

/// A membership as `/admin/groups` and `aiphost groups` show it.
#[derive(Clone, Debug, Serialize)]
pub struct MemberView {
    /// The hosted partner's id.
    pub agent: String,
    /// The group's id.
    #[serde(rename = "groupId")]
    pub group_id: String,
    /// The AIC of the Leader the invitation names.
    pub leader: String,
    /// The member's queue on the broker (also the membership's id).
    pub queue: String,
    /// The group's exchange, where the member publishes.
    pub exchange: String,
    /// The broker's host and port, followed by the vhost.
    pub broker: String,
    /// The dialect the group speaks, as far as the host knows: `v01.00` or `v02.01`.
    pub dialect: &'static str,
    /// Whether the link is up.
    pub state: MemberState,
    /// The Leader muted the member: it handles only messages that name it.
    pub muted: bool,
    /// When the partner joined the group.
    #[serde(rename = "joinedAt")]
    pub joined_at: Timestamp,
    /// Why the link last failed, while it is reconnecting.
    #[serde(rename = "lastError", skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The view of `m` with its link in `state`.
pub(super) fn view(m: &Membership, state: MemberState) -> MemberView {
    let s = &m.invitation.server;
    MemberView {
        agent: m.agent.clone(),
        group_id: m.invitation.group_id.clone(),
        leader: m.invitation.leader_aic.clone(),
        queue: m.id(),
        exchange: m.invitation.exchange.clone(),
        broker: format!("{}:{}{}", s.host, s.port, s.vhost),
        dialect: match m.dialect {
            Dialect::V1 => "v01.00",
            Dialect::V2 => "v02.01",
        },
        state,
        muted: m.muted,
        joined_at: m.joined_at,
        last_error: None,
    }
}
