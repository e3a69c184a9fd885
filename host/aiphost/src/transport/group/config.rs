//! The group door's settings: how members treat unaddressed messages, how links open and reopen,
//! which brokers an invitation may name, and the operator's inbox broker.

use super::inbox_broker::InboxBroker;
use super::membership::UnaddressedPolicy;
use std::time::Duration;

/// Group settings.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// What a member does with a message that mentions nobody.
    pub unaddressed: UnaddressedPolicy,
    /// How long opening a link (resolving, connecting, setting up the queue, announcing the
    /// member) may take before it fails and the connection is cut.
    pub connect_timeout: Duration,
    /// The first reconnect waits this long, each next one twice as long, up to `reconnect_max`.
    pub reconnect_min: Duration,
    /// The longest wait between reconnects.
    pub reconnect_max: Duration,
    /// Brokers an invitation may name whatever they resolve to: exactly these hosts (as
    /// spelled here) and ports. Any other broker must resolve to addresses the address policy
    /// ([`crate::net_policy`]) allows.
    pub brokers: Vec<crate::net_policy::HostPort>,
    /// Let invitations name brokers at any address, also those the address policy forbids
    /// (loopback, private, link-local, ...).
    pub allow_private: bool,
    /// The broker whose inboxes (`inbox_{AIC}`) the host consumes for its partners: the second
    /// invitation route of v02.01 (`None`: only JSON-RPC invitations).
    pub inbox_broker: Option<InboxBroker>,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            unaddressed: UnaddressedPolicy::Handle,
            connect_timeout: Duration::from_secs(10),
            reconnect_min: Duration::from_millis(200),
            reconnect_max: Duration::from_secs(30),
            brokers: Vec::new(),
            allow_private: false,
            inbox_broker: None,
        }
    }
}
