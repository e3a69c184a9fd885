//! The group door's command-line flags. `aiphost serve` flattens them into its own and hands
//! them back here ([`GroupFlags::apply`]): a door owns its flags, so adding or changing one edits
//! this file and not the server's list.

use super::config::GroupConfig;
use super::inbox_broker::InboxBroker;
use super::membership::UnaddressedPolicy;
use crate::net_policy::HostPort;
use crate::units;
use clap::Args;
use std::time::Duration;

/// Group mode's flags; unset ones leave [`GroupConfig::default`]'s values.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Group mode")]
pub struct GroupFlags {
    #[arg(long, value_enum, help = with_default("What a partner does with a group message that mentions nobody.", unaddressed_default()))]
    group_unaddressed: Option<UnaddressedPolicy>,
    #[arg(long, value_parser = units::millis, help = with_default("Give up joining a group whose broker does not answer within this many ms.", GroupConfig::default().connect_timeout.as_millis()))]
    group_connect_timeout_ms: Option<u64>,
    /// Brokers invitations may name whatever they resolve to, as HOST:PORT (exactly that host,
    /// as spelled, and port), comma-separated. Others must resolve to public addresses.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    group_brokers: Vec<HostPort>,
    /// Let invitations name brokers at loopback, private and link-local addresses.
    #[arg(long)]
    group_allow_private: bool,
    /// Take group invitations from the partners' inboxes (`inbox_{AIC}` on exchange
    /// `inbox.topic`) on this broker, e.g. amqp://user:password@127.0.0.1:5672/%2f; groups invited
    /// this way live on it, so it counts as a listed broker. Default: off.
    #[arg(
        long,
        value_name = "AMQP_URL",
        env = "AIPHOST_INBOX_BROKER",
        hide_env_values = true
    )]
    inbox_broker: Option<InboxBroker>,
}

impl GroupFlags {
    /// `config` with every given flag applied.
    pub fn apply(&self, config: &mut GroupConfig) {
        if let Some(policy) = self.group_unaddressed {
            config.unaddressed = policy;
        }
        if let Some(ms) = self.group_connect_timeout_ms {
            config.connect_timeout = Duration::from_millis(ms.max(1));
        }
        config.brokers = self.group_brokers.clone();
        config.inbox_broker = self.inbox_broker.clone();
        config.allow_private = self.group_allow_private;
    }
}

/// A flag's help: `text` and the default it leaves.
fn with_default(text: &str, default: impl std::fmt::Display) -> String {
    format!("{} [default: {default}]", text.trim_end_matches('.'))
}

/// The name `--group-unaddressed` takes for the default policy.
fn unaddressed_default() -> String {
    use clap::ValueEnum;
    GroupConfig::default()
        .unaddressed
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}
