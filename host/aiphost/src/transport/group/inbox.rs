//! The second invitation route of AIP v02.01: a Leader invites a partner by an AMQP message to
//! the partner's inbox (queue `inbox_{AIC}`, bound to the topic exchange `inbox.topic` with its own
//! name as the key), on the broker the group lives on. With an inbox broker configured
//! (`--inbox-broker`), the host consumes the inbox of every hosted partner, and joins the group an
//! invitation names through the same path as a JSON-RPC `group` invitation ([`Groups::join`]): the
//! member's `group-mgmt-result{connected:true}` is the Leader's answer. A refused invitation is
//! answered with a `group-invitation-error` on the Leader's inbox.
//!
//! An inbox message carries no credential of its Leader, so partners whose manifest asks Leaders
//! to authenticate (`api-key`, `mtls`) refuse inbox invitations (their Leaders invite over
//! JSON-RPC, where they authenticate); open partners take them.

use super::groups::Groups;
use super::inbox_broker::InboxBroker;
use crate::agent::Registry;
use crate::agent::manifest::LeaderAuth;
use crate::model::Timestamp;
use crate::protocol::RpcError;
use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The topic exchange every inbox is bound to.
pub const EXCHANGE: &str = "inbox.topic";
/// How long an unused inbox queue lives (`x-expires`, 60 days), exactly as the spec declares it:
/// a queue declared again with other arguments is refused by the broker.
pub const QUEUE_EXPIRES_MS: i64 = 5_184_000_000;
/// How long an invitation waits in an inbox (`x-message-ttl`, 7 days), exactly as the spec says.
pub const MESSAGE_TTL_MS: i64 = 604_800_000;
/// Invitations the broker hands the host at a time, unacknowledged (each is handled before the
/// next): without it the broker pushes a whole flooded inbox into the host's memory.
const PREFETCH: u16 = 4;
/// How often the set of hosted partners is checked for new inboxes to consume.
const RESCAN: Duration = Duration::from_secs(1);

/// Consume the inboxes of every hosted partner until `stop`, reconnecting with backoff.
pub fn spawn(groups: Groups, agents: Arc<Registry>, broker: InboxBroker, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(200);
        loop {
            let served = tokio::select! {
                _ = stop.cancelled() => return,
                served = serve(&groups, &agents, &broker, &stop) => served,
            };
            if let Err(e) = served {
                tracing::warn!(error = %e, retry_in = ?backoff, "inbox broker link failed");
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    });
}

/// One connection's life: consume every hosted partner's inbox, taking new partners as they come.
async fn serve(
    groups: &Groups,
    agents: &Arc<Registry>,
    broker: &InboxBroker,
    stop: &CancellationToken,
) -> Result<(), String> {
    let connection = Connection::connect(
        &broker.url,
        ConnectionProperties::default().with_connection_name("aiphost-inbox".into()),
    )
    .await
    .map_err(|e| e.to_string())?;
    let channel = connection
        .create_channel()
        .await
        .map_err(|e| e.to_string())?;
    channel
        .basic_qos(PREFETCH, BasicQosOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    channel
        .exchange_declare(
            EXCHANGE.into(),
            ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(broker = ?broker.listed, "consuming hosted partners' inboxes");
    // The inboxes consumed, by AIC: each consumer's tag, and a token that says it was retired
    // on purpose (its stream then ends without the connection being lost).
    let mut consumed: HashMap<String, (String, CancellationToken)> = HashMap::new();
    let lost = CancellationToken::new();
    loop {
        // A partner unpublished, or its tenant removed, is no longer invited through its inbox:
        // its consumer is cancelled (the queue stays, durable, for whoever hosts it next).
        let hosted: HashSet<String> = agents.list().iter().map(|a| a.aic().to_string()).collect();
        let gone: Vec<String> = consumed
            .keys()
            .filter(|aic| !hosted.contains(*aic))
            .cloned()
            .collect();
        for aic in gone {
            if let Some((tag, retired)) = consumed.remove(&aic) {
                retired.cancel();
                channel
                    .basic_cancel(tag.as_str().into(), BasicCancelOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                tracing::info!(inbox = %aic, "stopped consuming the inbox of a partner no longer hosted");
            }
        }
        for agent in agents.list() {
            let aic = agent.aic().to_string();
            if consumed.contains_key(&aic) {
                continue;
            }
            let queue = format!("inbox_{aic}");
            let mut arguments = FieldTable::default();
            arguments.insert("x-expires".into(), AMQPValue::LongLongInt(QUEUE_EXPIRES_MS));
            arguments.insert(
                "x-message-ttl".into(),
                AMQPValue::LongLongInt(MESSAGE_TTL_MS),
            );
            channel
                .queue_declare(
                    queue.clone().into(),
                    QueueDeclareOptions {
                        durable: true,
                        ..QueueDeclareOptions::default()
                    },
                    arguments,
                )
                .await
                .map_err(|e| e.to_string())?;
            channel
                .queue_bind(
                    queue.clone().into(),
                    EXCHANGE.into(),
                    queue.clone().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| e.to_string())?;
            let tag = format!("aiphost-inbox-{}", uuid::Uuid::new_v4());
            let consumer = channel
                .basic_consume(
                    queue.clone().into(),
                    tag.as_str().into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|e| e.to_string())?;
            let retired = CancellationToken::new();
            consumed.insert(aic.clone(), (tag, retired.clone()));
            let (groups, agents, broker) = (groups.clone(), agents.clone(), broker.clone());
            let (channel, lost) = (channel.clone(), lost.clone());
            tokio::spawn(async move {
                let mut consumer = consumer;
                while let Some(delivery) = consumer.next().await {
                    let Ok(delivery) = delivery else { break };
                    invitation(&groups, &agents, &broker, &channel, &aic, &delivery.data).await;
                    if let Err(e) = delivery.acker.ack(BasicAckOptions::default()).await {
                        tracing::debug!(error = %e, "inbox ack failed; the invitation comes again");
                    }
                }
                if !retired.is_cancelled() {
                    lost.cancel();
                }
            });
        }
        tokio::select! {
            _ = stop.cancelled() => {
                let _ = connection.close(200, "host stopping".into()).await;
                return Ok(());
            }
            _ = lost.cancelled() => return Err("an inbox consumer ended".to_string()),
            _ = tokio::time::sleep(RESCAN) => {}
        }
    }
}

/// The largest inbox message read. An invitation is a few hundred bytes; anyone who may publish
/// to the inbox exchange could otherwise make the host parse (and hold) messages as large as the
/// broker allows (128 MiB by default).
const MAX_INBOX_MESSAGE_BYTES: usize = 64 * 1024;

/// Handle one message in the inbox of the partner `aic`.
async fn invitation(
    groups: &Groups,
    agents: &Registry,
    broker: &InboxBroker,
    channel: &Channel,
    aic: &str,
    body: &[u8],
) {
    if body.len() > MAX_INBOX_MESSAGE_BYTES {
        tracing::warn!(inbox = %aic, bytes = body.len(), limit = MAX_INBOX_MESSAGE_BYTES, "an inbox message too large to be an invitation; dropped unread");
        return;
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        tracing::warn!(inbox = %aic, "an inbox message that is not JSON; dropped");
        return;
    };
    if message["type"] != "group-invitation" {
        tracing::warn!(inbox = %aic, kind = %message["type"], "an inbox message that is not an invitation; dropped");
        return;
    }
    let leader = message["group"]["leader"]["aic"]
        .as_str()
        .unwrap_or_default();
    let refusal = match join(groups, agents, broker, aic, &message).await {
        Ok(()) => return,
        Err(refusal) => refusal,
    };
    tracing::warn!(inbox = %aic, leader, code = refusal.code, data = %refusal.data, "inbox invitation refused");
    if leader.is_empty() {
        return; // nowhere to answer
    }
    // acps-sdk reads `error.data` as `{errorType, details}`.
    let mut refusal = refusal;
    if refusal.data.get("errorType").is_none() {
        refusal.data = json!({"errorType": "INVITATION_REJECTED", "details": refusal.data});
    }
    let answer = json!({
        "type": "group-invitation-error",
        "groupId": message["group"]["groupId"],
        "partnerAic": aic,
        "invitationToken": message["invitationToken"],
        "error": refusal,
    });
    let published = channel
        .basic_publish(
            EXCHANGE.into(),
            format!("inbox_{leader}").into(),
            BasicPublishOptions::default(),
            answer.to_string().as_bytes(),
            BasicProperties::default()
                .with_content_type("application/json".into())
                .with_delivery_mode(2),
        )
        .await;
    if let Err(e) = published {
        tracing::warn!(error = %e, leader, "could not answer a refused inbox invitation");
    }
}

/// Join the group `message` invites the partner `aic` to, or say why not.
async fn join(
    groups: &Groups,
    agents: &Registry,
    broker: &InboxBroker,
    aic: &str,
    message: &Value,
) -> Result<(), RpcError> {
    let rejected = |details: &str| {
        RpcError::new(
            crate::protocol::ErrorCode::InvalidParams,
            json!({"errorType": "INVITATION_REJECTED", "details": details}),
        )
    };
    let expires = message["expiresAt"]
        .as_str()
        .ok_or_else(|| rejected("the invitation has no expiresAt"))?;
    let expires = Timestamp::parse(expires)
        .ok_or_else(|| rejected("the invitation's expiresAt is not an RFC 3339 time"))?;
    if expires.unix_millis() <= Timestamp::now_ms() {
        return Err(rejected(
            "the invitation expired before the partner read it",
        ));
    }
    let id = agents
        .holder_of_aic(aic)
        .ok_or_else(|| rejected("no partner with this AIC is hosted here any more"))?;
    let agent = agents
        .get(&id)
        .ok_or_else(|| rejected("no partner with this AIC is hosted here any more"))?;
    if agent.manifest.access.leaders != LeaderAuth::Open {
        return Err(rejected(
            "this partner's Leaders authenticate, and an inbox invitation carries no credential; invite it over JSON-RPC",
        ));
    }
    let params = json!({
        "protocol": message["protocol"],
        "group": message["group"],
        "server": broker.server(),
        "amqp": message["amqp"],
    });
    groups.join(&agent, None, &params).await.map(|_| ())
}
