//! One membership's link to its group's broker, over lapin: connect, declare and bind the queue,
//! consume, publish with confirms, and leave. Nothing here knows about tasks.
//!
//! The broker is the Leader's to name, so where the link may connect is the operator's to say:
//! the name is resolved and checked against the address policy ([`crate::net_policy`]) unless
//! the operator listed that broker or allows private brokers, and the link connects to the
//! checked addresses, never to the name again. Every open checks anew (joins, reconnects and
//! resumes after a restart), so a tightened policy holds for memberships made before it.

use super::config::GroupConfig;
use crate::net_policy::{self, AddressError};
use crate::protocol::aip::group::{self, Credentials, Invitation, Server};
use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions,
    BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions, ExchangeDeclareOptions,
    QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::uri::AMQPUri;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer, ExchangeKind};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Why the broker could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// Opening the link took longer than the connect timeout (given here); it was cut.
    #[error("could not connect within {0:?}")]
    Timeout(Duration),
    /// The connection, the channel or an AMQP operation failed.
    #[error("{0}")]
    Amqp(#[from] lapin::Error),
    /// The broker did not acknowledge a publish.
    #[error("the broker did not confirm a publish")]
    NotConfirmed,
    /// The invitation asks for SASL EXTERNAL, which needs a client certificate this host lacks.
    #[error(
        "the invitation carries no accessToken, which means SASL EXTERNAL over TLS with a client \
         certificate; this host has no client certificate configured for groups"
    )]
    NoClientCertificate,
    /// The queue's consumer ended: cancelled, or the connection closed.
    #[error("the consumer was cancelled or the connection closed")]
    ConsumerEnded,
    /// The broker's name did not resolve, or resolved to an address the address policy forbids.
    #[error("{0}")]
    Address(#[from] AddressError),
    /// The invitation's server does not make a valid AMQP URI (the parser's reason).
    #[error("no AMQP URI could be made for the broker: {0}")]
    Uri(String),
}

impl BrokerError {
    /// What the Leader is told: the same words whatever the network or the broker did (refused,
    /// aborted, timed out, a refused login, no such exchange, an address the policy does not
    /// allow), so invitations cannot map what the host reaches. Only what the invitation alone
    /// decides is said as it is.
    pub fn leader_reason(&self) -> String {
        match self {
            BrokerError::NoClientCertificate => self.to_string(),
            _ => group::JOIN_FAILED.to_string(),
        }
    }
}

/// The most addresses of one broker name tried in one open.
const MAX_ADDRESSES: usize = 4;

/// Percent-encode one URI component (user, password, vhost).
fn encode(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The user and password the invitation logs in with.
fn login(server: &Server) -> Result<(&str, &str), BrokerError> {
    match &server.credentials {
        Credentials::UserPassword { user, password } => Ok((user.as_str(), password.as_str())),
        // A bearer-style token is the password; RabbitMQ's OAuth 2 backend ignores the user.
        Credentials::Token(token) => Ok(("", token.as_str())),
        Credentials::External => Err(BrokerError::NoClientCertificate),
    }
}

/// The AMQP URI for an invitation's server at `addr`, one of the checked addresses its host
/// resolved to (the name itself never reaches the connector, which would resolve it again).
pub fn uri(invitation: &Invitation, addr: SocketAddr) -> Result<AMQPUri, BrokerError> {
    let server = &invitation.server;
    let (user, password) = login(server)?;
    // A socket address prints as a URI authority wants it (`[::1]:5672`).
    let text = format!(
        "amqp://{}:{}@{addr}/{}",
        encode(user),
        encode(password),
        encode(&server.vhost)
    );
    let mut uri: AMQPUri = text.parse().map_err(BrokerError::Uri)?;
    // The parser keeps an IPv6 host in its brackets, which the connector would take for a name.
    uri.authority.host = addr.ip().to_string();
    uri.authority.port = addr.port();
    Ok(uri)
}

/// Where a link to `server` may connect: the addresses its host resolves to, checked against
/// the address policy unless the operator listed this broker or allows private brokers.
pub async fn addresses(
    server: &Server,
    config: &GroupConfig,
) -> Result<Vec<SocketAddr>, AddressError> {
    let listed = config
        .brokers
        .iter()
        .any(|b| b.names(&server.host, server.port));
    net_policy::resolve_checked(&server.host, server.port, listed || config.allow_private).await
}

/// A handle on the socket of a link that is still opening, to end it if the open is given up
/// on. lapin has no handshake timeout, and a connection dropped before it is open leaves lapin's
/// I/O thread waiting on the peer for good: a broker that accepts and stays silent would cost
/// the host a thread and a socket per invitation.
#[derive(Clone, Default)]
struct Abort(Arc<Mutex<AbortState>>);

#[derive(Default)]
struct AbortState {
    aborted: bool,
    /// A second handle on the socket lapin connected (lapin's own one is out of reach).
    socket: Option<std::net::TcpStream>,
}

impl Abort {
    fn lock(&self) -> MutexGuard<'_, AbortState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keep a handle on a socket lapin has just connected; refuse it if the open was given up
    /// on meanwhile (lapin then ends the attempt).
    fn watch(&self, socket: std::os::fd::BorrowedFd<'_>) -> std::io::Result<()> {
        let mut state = self.lock();
        if state.aborted {
            return Err(std::io::Error::other("the open was given up on"));
        }
        state.socket = Some(std::net::TcpStream::from(socket.try_clone_to_owned()?));
        Ok(())
    }

    /// Give up: shut the socket down, so lapin's I/O thread sees the end and stops.
    fn abort(&self) {
        let mut state = self.lock();
        state.aborted = true;
        if let Some(socket) = state.socket.take() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    /// The link is open (or failed on its own): lapin alone owns the socket from now on.
    fn release(&self) {
        self.lock().socket = None;
    }
}

/// Connect to `uri` (a checked address), with `abort` holding the socket.
async fn connect_to(
    uri: AMQPUri,
    connection_name: &str,
    abort: &Abort,
) -> Result<Connection, lapin::Error> {
    let properties =
        ConnectionProperties::default().with_connection_name(connection_name.to_string().into());
    let abort = abort.clone();
    // What lapin's own `connect_uri` does, plus the handle on the socket.
    Connection::connector(
        uri,
        lapin::runtime::default_runtime()?,
        async move |uri, runtime| {
            let stream = lapin::tcp::AMQPUriTcpExt::connect_with_config_async(
                &uri,
                lapin::tcp::TLSConfig::default(),
                &runtime,
            )
            .await?;
            if let lapin::tcp::AsyncTcpStream::Plain(plain) = &stream {
                abort.watch(plain.get_ref().as_fd())?;
            }
            Ok(stream)
        },
        properties,
    )
    .await
}

/// Connect to the first of `server`'s checked addresses that takes the connection.
async fn connect(
    invitation: &Invitation,
    connection_name: &str,
    config: &GroupConfig,
    abort: &Abort,
) -> Result<Connection, BrokerError> {
    let addrs = addresses(&invitation.server, config).await?;
    let mut failed = None;
    for addr in addrs.into_iter().take(MAX_ADDRESSES) {
        match connect_to(uri(invitation, addr)?, connection_name, abort).await {
            Ok(connection) => return Ok(connection),
            Err(e) => {
                tracing::debug!(%addr, error = %e, "a broker address did not take the connection");
                failed = Some(e);
            }
        }
    }
    Err(match failed {
        Some(e) => e.into(),
        None => AddressError::NoAddresses {
            host: invitation.server.host.clone(),
        }
        .into(),
    })
}

/// A live link: one connection, one channel in confirm mode, one consumer on the queue.
pub struct Link {
    connection: Connection,
    channel: Channel,
    /// The consumer on the membership's queue; [`Link::next`] takes its deliveries.
    pub consumer: Consumer,
    queue: String,
    exchange: String,
    routing_key: String,
    consumer_tag: String,
}

/// How many unacknowledged commands the broker hands one membership at a time.
const PREFETCH: u16 = 64;

/// Why a link is opened, which says what a failed open leaves on the broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A new membership: its queue goes again if the open fails.
    Join,
    /// A membership that stands: its queue holds its commands and stays.
    Resume,
}

impl Link {
    /// Connect and set up the membership's topology: check the Leader's exchange exists (it is
    /// the Leader's to declare), declare and bind the partner's queue, start consuming; then
    /// publish `announcement` (the member's status) and wait for the broker's confirm.
    ///
    /// The queue is durable and not auto-deleted, unlike acps-sdk's, so commands sent while the
    /// host restarts or reconnects wait in it; leaving deletes it.
    ///
    /// Refused without connecting when the invitation cannot log in or names a broker the
    /// operator's rules do not allow. All of it takes at most `config.connect_timeout`, whatever
    /// the broker does: past that the connection is cut.
    pub async fn open(
        invitation: &Invitation,
        queue: &str,
        connection_name: &str,
        config: &GroupConfig,
        announcement: &[u8],
        purpose: Purpose,
    ) -> Result<Link, BrokerError> {
        login(&invitation.server)?;
        let abort = Abort::default();
        let opening = async {
            let connection = connect(invitation, connection_name, config, &abort).await?;
            let link = match Self::topology(connection, invitation, queue).await {
                Ok(link) => link,
                Err((connection, e)) => {
                    let _ = connection.close(0, "join failed".into()).await;
                    return Err(e);
                }
            };
            if let Err(e) = link.publish(announcement).await {
                match purpose {
                    Purpose::Join => {
                        let _ = link.leave().await;
                    }
                    Purpose::Resume => link.close().await,
                }
                return Err(e);
            }
            Ok(link)
        };
        let timeout = config.connect_timeout;
        match tokio::time::timeout(timeout, opening).await {
            Ok(opened) => {
                abort.release();
                opened
            }
            Err(_) => {
                abort.abort();
                Err(BrokerError::Timeout(timeout))
            }
        }
    }

    async fn topology(
        connection: Connection,
        invitation: &Invitation,
        queue: &str,
    ) -> Result<Link, (Connection, BrokerError)> {
        macro_rules! tried {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Err((connection, e.into())),
                }
            };
        }
        let channel = tried!(connection.create_channel().await);
        tried!(
            channel
                .exchange_declare(
                    invitation.exchange.clone().into(),
                    ExchangeKind::Fanout,
                    ExchangeDeclareOptions {
                        passive: true,
                        ..ExchangeDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
        );
        tried!(
            channel
                .queue_declare(
                    queue.to_string().into(),
                    QueueDeclareOptions {
                        durable: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
        );
        tried!(
            channel
                .queue_bind(
                    queue.to_string().into(),
                    invitation.exchange.clone().into(),
                    invitation.routing_key.clone().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
        );
        tried!(
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await
        );
        tried!(
            channel
                .basic_qos(PREFETCH, BasicQosOptions::default())
                .await
        );
        let consumer_tag = format!("aiphost-{}", uuid::Uuid::new_v4());
        let consumer = tried!(
            channel
                .basic_consume(
                    queue.to_string().into(),
                    consumer_tag.clone().into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
        );

        Ok(Link {
            connection,
            channel,
            consumer,
            queue: queue.to_string(),
            exchange: invitation.exchange.clone(),
            routing_key: invitation.routing_key.clone(),
            consumer_tag,
        })
    }

    /// Publish one message on the group's exchange and wait for the broker's confirm.
    pub async fn publish(&self, body: &[u8]) -> Result<(), BrokerError> {
        let confirm = self
            .channel
            .basic_publish(
                self.exchange.clone().into(),
                self.routing_key.clone().into(),
                BasicPublishOptions::default(),
                body,
                BasicProperties::default()
                    .with_content_type("application/json".into())
                    .with_delivery_mode(2),
            )
            .await?
            .await?;
        if confirm.is_ack() {
            Ok(())
        } else {
            Err(BrokerError::NotConfirmed)
        }
    }

    /// The next delivery, or why there is none.
    pub async fn next(&mut self) -> Result<lapin::message::Delivery, BrokerError> {
        match self.consumer.next().await {
            Some(Ok(delivery)) => Ok(delivery),
            Some(Err(e)) => Err(e.into()),
            None => Err(BrokerError::ConsumerEnded),
        }
    }

    /// Leave for good: stop consuming, delete the queue, close the channel and connection.
    pub async fn leave(self) -> Result<(), BrokerError> {
        self.channel
            .basic_cancel(
                self.consumer_tag.clone().into(),
                BasicCancelOptions::default(),
            )
            .await?;
        self.channel
            .queue_delete(self.queue.clone().into(), QueueDeleteOptions::default())
            .await?;
        self.channel.close(200, "left the group".into()).await?;
        self.connection.close(200, "left the group".into()).await?;
        Ok(())
    }

    /// Close without leaving (host shutdown, or giving up on a broken link): the queue stays.
    pub async fn close(self) {
        let _ = self.connection.close(200, "host stopping".into()).await;
    }
}

/// Acknowledge a delivery once what it caused is durable. A failed ack means the channel is gone:
/// the broker redelivers the message, and its id tells the duplicate apart.
pub async fn ack(acker: &lapin::Acker) {
    if let Err(e) = acker.ack(BasicAckOptions::default()).await {
        tracing::debug!(error = %e, "ack failed; the message will be redelivered");
    }
}

/// Give a delivery back to the queue (the host could not make its effect durable).
pub async fn requeue(acker: &lapin::Acker) {
    let _ = acker
        .nack(BasicNackOptions {
            requeue: true,
            ..BasicNackOptions::default()
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invitation(credentials: Credentials, vhost: &str) -> Invitation {
        Invitation {
            protocol: "rabbitmq:4.0".into(),
            group_id: "g".into(),
            leader_aic: "l".into(),
            partner_aics: vec![],
            server: Server {
                host: "127.0.0.1".into(),
                port: 5672,
                vhost: vhost.into(),
                credentials,
            },
            exchange: "x".into(),
            exchange_type: "fanout".into(),
            routing_key: String::new(),
        }
    }

    #[test]
    fn uris_escape_what_they_must_and_name_the_checked_address() {
        let up = Credentials::UserPassword {
            user: "guest".into(),
            password: "p@ss:/w".into(),
        };
        let at = "127.0.0.1:5672".parse().unwrap();
        let uri = uri(&invitation(up.clone(), "/"), at).unwrap();
        assert_eq!(uri.authority.userinfo.username, "guest");
        assert_eq!(uri.authority.userinfo.password, "p@ss:/w");
        assert_eq!(uri.vhost, "/");
        assert_eq!(
            (uri.authority.host.as_str(), uri.authority.port),
            ("127.0.0.1", 5672)
        );
        let token =
            super::uri(&invitation(Credentials::Token("eyJ.x".into()), "acps"), at).unwrap();
        assert_eq!(token.authority.userinfo.password, "eyJ.x");
        assert_eq!(token.vhost, "acps");
        // An IPv6 address without brackets, as the connector reads it.
        let v6 = super::uri(&invitation(up, "/"), "[::1]:5671".parse().unwrap()).unwrap();
        assert_eq!(
            (v6.authority.host.as_str(), v6.authority.port),
            ("::1", 5671)
        );
        assert!(matches!(
            super::uri(&invitation(Credentials::External, "/"), at),
            Err(BrokerError::NoClientCertificate)
        ));
    }

    #[tokio::test]
    async fn brokers_are_checked_unless_listed_or_private_ones_allowed() {
        let up = Credentials::UserPassword {
            user: "guest".into(),
            password: "guest".into(),
        };
        let local = invitation(up, "/");
        let mut config = GroupConfig::default();
        let refused = addresses(&local.server, &config).await.unwrap_err();
        assert!(
            matches!(
                refused,
                AddressError::Forbidden {
                    why: "loopback",
                    ..
                }
            ),
            "{refused}"
        );
        config.brokers = vec!["127.0.0.1:5673".parse().unwrap()];
        assert!(
            addresses(&local.server, &config).await.is_err(),
            "another port"
        );
        config.brokers.push("127.0.0.1:5672".parse().unwrap());
        assert_eq!(
            addresses(&local.server, &config).await.unwrap(),
            ["127.0.0.1:5672".parse().unwrap()]
        );
        let config = GroupConfig {
            allow_private: true,
            ..GroupConfig::default()
        };
        assert!(addresses(&local.server, &config).await.is_ok());
        // Failures tell the Leader nothing, but what its invitation alone decides.
        assert_eq!(
            BrokerError::Address(refused).leader_reason(),
            group::JOIN_FAILED
        );
        assert_eq!(
            BrokerError::Timeout(Duration::from_secs(1)).leader_reason(),
            group::JOIN_FAILED
        );
        assert!(
            BrokerError::NoClientCertificate
                .leader_reason()
                .contains("client certificate")
        );
    }
}
