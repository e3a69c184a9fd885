//! One membership's link to its group's broker, over lapin: connect, declare and bind the queue,
//! consume, publish with confirms, and leave. Nothing here knows about tasks.

use crate::protocol::group::{Credentials, Invitation};
use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions,
    BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions, ExchangeDeclareOptions,
    QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer, ExchangeKind};
use std::time::Duration;

/// Why the broker could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("could not connect within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Amqp(#[from] lapin::Error),
    #[error("the broker did not confirm a publish")]
    NotConfirmed,
    #[error(
        "the invitation carries no accessToken, which means SASL EXTERNAL over TLS with a client \
         certificate; this host has no client certificate configured for groups"
    )]
    NoClientCertificate,
    #[error("the consumer was cancelled or the connection closed")]
    ConsumerEnded,
}

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

/// The AMQP URI for an invitation's server.
pub fn uri(invitation: &Invitation) -> Result<String, BrokerError> {
    let server = &invitation.server;
    let (user, password) = match &server.credentials {
        Credentials::UserPassword { user, password } => (user.as_str(), password.as_str()),
        // A bearer-style token is the password; RabbitMQ's OAuth 2 backend ignores the user.
        Credentials::Token(token) => ("", token.as_str()),
        Credentials::External => return Err(BrokerError::NoClientCertificate),
    };
    Ok(format!(
        "amqp://{}:{}@{}:{}/{}",
        encode(user),
        encode(password),
        server.host,
        server.port,
        encode(&server.vhost)
    ))
}

/// A live link: one connection, one channel in confirm mode, one consumer on the queue.
pub struct Link {
    connection: Connection,
    channel: Channel,
    pub consumer: Consumer,
    queue: String,
    exchange: String,
    routing_key: String,
    consumer_tag: String,
}

/// How many unacknowledged commands the broker hands one membership at a time.
const PREFETCH: u16 = 64;

impl Link {
    /// Connect and set up the membership's topology: check the Leader's exchange exists (it is
    /// the Leader's to declare), declare and bind the partner's queue, start consuming.
    ///
    /// The queue is durable and not auto-deleted, unlike acps-sdk's, so commands sent while the
    /// host restarts or reconnects wait in it; leaving deletes it.
    pub async fn open(
        invitation: &Invitation,
        queue: &str,
        connection_name: &str,
        timeout: Duration,
    ) -> Result<Link, BrokerError> {
        let uri = uri(invitation)?;
        let properties = ConnectionProperties::default()
            .with_connection_name(connection_name.to_string().into());
        let connection = tokio::time::timeout(timeout, Connection::connect(&uri, properties))
            .await
            .map_err(|_| BrokerError::Timeout(timeout))??;
        match Self::topology(connection, invitation, queue).await {
            Ok(link) => Ok(link),
            Err((connection, e)) => {
                let _ = connection.close(0, "join failed".into()).await;
                Err(e)
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
    use crate::protocol::group::Server;

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
    fn uris_escape_what_they_must() {
        let up = Credentials::UserPassword {
            user: "guest".into(),
            password: "p@ss:/w".into(),
        };
        assert_eq!(
            uri(&invitation(up, "/")).unwrap(),
            "amqp://guest:p%40ss%3A%2Fw@127.0.0.1:5672/%2F"
        );
        assert_eq!(
            uri(&invitation(Credentials::Token("eyJ.x".into()), "acps")).unwrap(),
            "amqp://:eyJ.x@127.0.0.1:5672/acps"
        );
        assert!(matches!(
            uri(&invitation(Credentials::External, "/")),
            Err(BrokerError::NoClientCertificate)
        ));
    }
}
