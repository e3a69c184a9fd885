//! The operator's inbox broker (`--inbox-broker`): where the host consumes its partners'
//! inboxes, read from an `amqp://` URL and shown without its password.

use crate::net_policy::HostPort;
use lapin::uri::AMQPUri;
use serde_json::{Value, json};
use std::str::FromStr;

/// The operator's inbox broker, read from an `amqp://user:password@host:port/vhost` URL.
#[derive(Clone)]
pub struct InboxBroker {
    pub(super) url: String,
    pub(super) listed: HostPort,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) vhost: String,
    pub(super) user: String,
    pub(super) password: String,
}

impl InboxBroker {
    /// The broker as the group address policy lists it: groups invited through the inbox live
    /// on the operator's own broker.
    pub fn listed(&self) -> HostPort {
        self.listed.clone()
    }

    /// The `server` of a JSON-RPC invitation to a group on this broker.
    pub(super) fn server(&self) -> Value {
        json!({
            "host": self.host,
            "port": self.port,
            "vhost": self.vhost,
            "accessToken": format!("{}:{}", self.user, self.password),
        })
    }
}

/// Shown without its password.
impl std::fmt::Debug for InboxBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxBroker")
            .field("broker", &self.listed)
            .field("vhost", &self.vhost)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl FromStr for InboxBroker {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let uri =
            AMQPUri::from_str(text).map_err(|e| format!("{text:?} is not an AMQP URL: {e}"))?;
        if uri.scheme != lapin::uri::AMQPScheme::AMQP {
            return Err("the inbox broker must be amqp:// (TLS is not built in)".into());
        }
        let host = &uri.authority.host;
        let spelled = if host.contains(':') {
            format!("[{host}]:{}", uri.authority.port)
        } else {
            format!("{host}:{}", uri.authority.port)
        };
        Ok(InboxBroker {
            listed: spelled
                .parse()
                .map_err(|e: crate::net_policy::HostPortError| e.to_string())?,
            url: text.to_string(),
            host: uri.authority.host.clone(),
            port: uri.authority.port,
            vhost: uri.vhost.clone(),
            user: uri.authority.userinfo.username.clone(),
            password: uri.authority.userinfo.password.clone(),
        })
    }
}
