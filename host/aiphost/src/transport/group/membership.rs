//! A hosted partner's membership of a group: what is stored of it, and the pure rules of what a
//! member does with a message (mentions, mute, the operator's policy for unaddressed messages).

use crate::model::Timestamp;
use crate::protocol::aip::Dialect;
use crate::protocol::aip::group::{Addressed, Invitation};
use serde::{Deserialize, Serialize};

/// What a member does with a message that mentions nobody (the spec leaves it to the member).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum UnaddressedPolicy {
    /// Handle it as if addressed to this partner (the default).
    #[default]
    Handle,
    /// Leave it to the members it names; a message naming nobody is not handled.
    Ignore,
}

/// A membership as stored in sled (it outlives restarts until the Leader ends it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Membership {
    /// The hosted agent that joined.
    pub agent: String,
    /// Its AIC: the `senderId` of everything it publishes.
    pub aic: String,
    /// The Leader that authenticated the invitation (a partner whose Leaders authenticate): the
    /// membership acts in that Leader's task namespace and takes commands from it alone.
    /// `None`: an open partner, whose tasks share one namespace.
    #[serde(default)]
    pub leader: Option<String>,
    /// The invitation the member joined on: the broker, the exchange, the group.
    pub invitation: Invitation,
    /// The dialect the group speaks, as far as the host knows: guessed from the invitation,
    /// then taken from the Leader's messages.
    pub dialect: Dialect,
    /// The Leader muted the member: it handles only messages that name it.
    pub muted: bool,
    /// When the partner joined the group.
    #[serde(rename = "joinedAt")]
    pub joined_at: Timestamp,
}

impl Membership {
    /// The membership's id: its queue's name, unique per (leader, group, partner).
    pub fn id(&self) -> String {
        self.invitation.queue_name(&self.aic)
    }

    /// Whether a message from `sender` may command this member: anyone in the group of an open
    /// partner, only the authenticating Leader otherwise.
    pub fn takes_commands_from(&self, sender: &str) -> bool {
        self.leader.as_deref().is_none_or(|leader| leader == sender)
    }
}

/// Whether a member handles (and answers) a message addressed as `addressed`.
///
/// ```
/// use aiphost::transport::group::membership::{handles, UnaddressedPolicy};
/// use aiphost::protocol::aip::group::Addressed;
/// assert!(handles(Addressed::Me, true, UnaddressedPolicy::Ignore));
/// assert!(!handles(Addressed::Nobody, true, UnaddressedPolicy::Handle));
/// ```
pub fn handles(addressed: Addressed, muted: bool, policy: UnaddressedPolicy) -> bool {
    match addressed {
        // Named (or `all`): must execute and answer, muted or not (spec 7.2.1).
        Addressed::Me => true,
        Addressed::Others => false,
        // A muted member speaks only when named.
        Addressed::Nobody => !muted && policy == UnaddressedPolicy::Handle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination() {
        use Addressed::*;
        use UnaddressedPolicy::*;
        let table = [
            (Me, false, Handle, true),
            (Me, true, Handle, true),
            (Me, false, Ignore, true),
            (Me, true, Ignore, true),
            (Others, false, Handle, false),
            (Others, true, Handle, false),
            (Others, false, Ignore, false),
            (Others, true, Ignore, false),
            (Nobody, false, Handle, true),
            (Nobody, true, Handle, false),
            (Nobody, false, Ignore, false),
            (Nobody, true, Ignore, false),
        ];
        for (addressed, muted, policy, expected) in table {
            assert_eq!(
                handles(addressed, muted, policy),
                expected,
                "{addressed:?} muted={muted} {policy:?}"
            );
        }
    }
}
