//! A minimal group Leader for the group-mode tests, speaking AMQP to the real RabbitMQ on
//! 127.0.0.1:5672 the way acps-sdk's Leader does: it declares the group's fanout exchange, listens
//! on a queue of its own bound to it, publishes commands, and can look for a partner's queue.

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, ExchangeDeclareOptions,
    ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties, ExchangeKind};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The broker every test uses (started by `scripts/rabbitmq.sh`).
pub const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// That broker as invitations name it, and as test hosts list it (`--group-brokers`).
pub const BROKER: &str = "127.0.0.1:5672";
/// The Leader's AIC in these tests (valid for acps-sdk's AIC check).
pub const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";

/// A group and its Leader's view of the exchange.
pub struct Leader {
    /// The Leader's AIC ([`LEADER`] unless made with [`Leader::v2_as`]).
    pub aic: String,
    pub group_id: String,
    pub exchange: String,
    connection: Connection,
    channel: lapin::Channel,
    own_queue: String,
    heard: mpsc::UnboundedReceiver<Value>,
    /// Everything heard so far (kept for `seen` and failure messages).
    pub log: Vec<Value>,
}

impl Leader {
    /// A new group named as acps-sdk names it (`group_{leader}_{group}`: a v02.01 group).
    pub async fn v2() -> Leader {
        Self::v2_as(LEADER).await
    }

    /// A new v02.01 group of the Leader `aic`.
    pub async fn v2_as(aic: &str) -> Leader {
        let group_id = format!("g-{}", &crate::uuid()[..8]);
        let exchange = format!("group_{aic}_{group_id}");
        Self::create(aic, group_id, exchange).await
    }

    /// A new group with a freely named exchange, as in the v01.00 spec's example.
    pub async fn v1() -> Leader {
        let group_id = format!("g-{}", &crate::uuid()[..8]);
        let exchange = format!("group-exchange-{group_id}");
        Self::create(LEADER, group_id, exchange).await
    }

    async fn create(aic: &str, group_id: String, exchange: String) -> Leader {
        let connection = Connection::connect(
            AMQP_URL,
            ConnectionProperties::default().with_connection_name("aiphost-test-leader".into()),
        )
        .await
        .expect("the RabbitMQ broker on 127.0.0.1:5672 (scripts/rabbitmq.sh starts it)");
        let channel = connection.create_channel().await.expect("channel");
        channel
            .exchange_declare(
                exchange.clone().into(),
                ExchangeKind::Fanout,
                ExchangeDeclareOptions {
                    durable: true,
                    auto_delete: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the group exchange");
        let own_queue = format!("{exchange}_leader");
        channel
            .queue_declare(
                own_queue.clone().into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the leader queue");
        channel
            .queue_bind(
                own_queue.clone().into(),
                exchange.clone().into(),
                "".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind the leader queue");
        let mut consumer = channel
            .basic_consume(
                own_queue.clone().into(),
                "leader".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("consume");
        let (tx, heard) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(Ok(delivery)) = consumer.next().await {
                let _ = delivery.acker.ack(BasicAckOptions::default()).await;
                let value = serde_json::from_slice(&delivery.data).unwrap_or_else(
                    |_| json!({"unparsable": String::from_utf8_lossy(&delivery.data)}),
                );
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Leader {
            aic: aic.to_string(),
            group_id,
            exchange,
            connection,
            channel,
            own_queue,
            heard,
            log: Vec::new(),
        }
    }

    /// The `group` invitation's params for `partners`.
    pub fn invitation(&self, partners: &[&str]) -> Value {
        json!({
            "protocol": "rabbitmq:4.0",
            "group": {
                "groupId": self.group_id,
                "leader": {"aic": self.aic},
                "partners": partners.iter().map(|p| json!({"aic": p})).collect::<Vec<_>>(),
            },
            "server": {"host": "127.0.0.1", "port": 5672, "vhost": "/", "accessToken": "guest:guest"},
            "amqp": {"exchange": self.exchange, "exchangeType": "fanout", "routingKey": ""},
        })
    }

    /// The queue a partner joins with.
    pub fn queue_of(&self, partner: &str) -> String {
        format!("group_{}_{}_{partner}", self.aic, self.group_id)
    }

    /// Publish one message on the group exchange.
    pub async fn publish(&self, message: &Value) {
        self.channel
            .basic_publish(
                self.exchange.clone().into(),
                "".into(),
                BasicPublishOptions::default(),
                message.to_string().as_bytes(),
                BasicProperties::default()
                    .with_content_type("application/json".into())
                    .with_delivery_mode(2),
            )
            .await
            .expect("publish")
            .await
            .expect("publish confirm");
    }

    /// A v02.01 task command.
    pub fn command(
        &self,
        command: &str,
        task: &str,
        mentions: Option<Value>,
        items: Value,
    ) -> Value {
        let mut m = json!({
            "type": "task-command", "id": format!("cmd-{}", crate::uuid()), "sentAt": crate::now(),
            "senderRole": "leader", "senderId": self.aic, "dataItems": items,
            "groupId": self.group_id, "sessionId": "sess-1", "command": command, "taskId": task,
        });
        if let Some(mentions) = mentions {
            m["mentions"] = mentions;
        }
        m
    }

    /// A v02.01 management command.
    pub fn mgmt(&self, command: &str, mentions: Value) -> Value {
        json!({
            "type": "group-mgmt-command", "id": format!("mgmt-cmd-{}", crate::uuid()),
            "sentAt": crate::now(), "senderRole": "leader", "senderId": self.aic, "dataItems": [],
            "mentions": mentions, "groupId": self.group_id, "sessionId": "sess-1", "command": command,
        })
    }

    /// Wait for a message matching `want`; panics with what was heard after `limit`.
    pub async fn expect(
        &mut self,
        what: &str,
        limit: Duration,
        want: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(found) = self.log.iter().find(|m| want(m)) {
            return found.clone();
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.heard.recv()).await {
                Ok(Some(message)) => {
                    self.log.push(message.clone());
                    if want(&message) {
                        return message;
                    }
                }
                _ => panic!(
                    "the leader did not hear {what} within {limit:?}; heard:\n{}",
                    self.log
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            }
        }
    }

    /// Listen for `quiet` and return every message heard matching `want` (to show something
    /// did NOT happen, or happened once).
    pub async fn all_within(
        &mut self,
        quiet: Duration,
        want: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + quiet;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.heard.recv()).await {
                Ok(Some(message)) => self.log.push(message),
                _ => break,
            }
        }
        self.log.iter().filter(|m| want(m)).cloned().collect()
    }

    /// Whether `queue` exists on the broker (a passive declare on a channel of its own).
    pub async fn queue_exists(&self, queue: &str) -> bool {
        self.consumers_of(queue).await.is_some()
    }

    /// How many consumers `queue` has (`None`: no such queue).
    pub async fn consumers_of(&self, queue: &str) -> Option<u32> {
        consumers_of(&self.connection, queue).await
    }

    /// Poll until `queue` is gone, up to `limit`.
    pub async fn queue_gone(&self, queue: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if !self.queue_exists(queue).await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// Delete the group's broker objects (a partner queue left behind by a failed test too).
    pub async fn close(self, partners: &[&str]) {
        for p in partners {
            let _ = self
                .channel
                .queue_delete(self.queue_of(p).into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = self
            .channel
            .queue_delete(self.own_queue.clone().into(), QueueDeleteOptions::default())
            .await;
        let _ = self
            .channel
            .exchange_delete(
                self.exchange.clone().into(),
                ExchangeDeleteOptions::default(),
            )
            .await;
        let _ = self.connection.close(200, "test over".into()).await;
    }
}

/// Delete a queue (cleanup of memberships a test leaves standing).
pub async fn delete_queue(queue: &str) {
    if let Ok(connection) = Connection::connect(AMQP_URL, ConnectionProperties::default()).await {
        if let Ok(channel) = connection.create_channel().await {
            let _ = channel
                .queue_delete(queue.to_string().into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = connection.close(200, "cleanup".into()).await;
    }
}

/// Whether `m` is a task result from `sender` for `task` in `state`.
pub fn is_result(m: &Value, sender: &str, task: &str, state: &str) -> bool {
    let task_of = m.get("taskId").or_else(|| m.get("id"));
    matches!(m["type"].as_str(), Some("task-result" | "task"))
        && m["senderId"] == sender
        && task_of.and_then(Value::as_str) == Some(task)
        && m["status"]["state"] == state
}

/// Whether `m` is a membership status from `sender` with `connected` / `muted`.
pub fn is_status(m: &Value, sender: &str, connected: bool, muted: bool) -> bool {
    let status = if m["type"] == "group-mgmt-result" {
        &m["status"]
    } else {
        &m["groupMemberStatus"]
    };
    m["senderId"] == sender && status["connected"] == connected && status["muted"] == muted
}

/// What a [`Probe`] does with a connection it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeMode {
    /// Close it at once (a service that accepts, then aborts).
    Close,
    /// Keep it open and say nothing (a service that never answers), noting when the host
    /// closes it.
    Silent,
    /// Answer with a line of HTTP and close (a service that is not AMQP).
    Http,
}

/// A TCP listener on 127.0.0.1 that counts the connections it accepts: it shows whether the host
/// connected somewhere it was told to.
pub struct Probe {
    pub port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    closed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Probe {
    /// Listen on a free port of 127.0.0.1.
    pub async fn start(mode: ProbeMode) -> Probe {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the probe");
        let port = listener.local_addr().expect("probe address").port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let closed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (count, ends) = (accepted.clone(), closed.clone());
        let task = tokio::spawn(async move {
            let mut held = tokio::task::JoinSet::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                match mode {
                    ProbeMode::Close => drop(socket),
                    ProbeMode::Silent => {
                        let ends = ends.clone();
                        held.spawn(async move {
                            // Read (and drop) what the host sends until it closes or resets.
                            let mut buffer = [0u8; 1024];
                            while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
                            ends.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        });
                    }
                    ProbeMode::Http => {
                        let _ = socket
                            .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                            .await;
                    }
                }
            }
        });
        Probe {
            port,
            accepted,
            closed,
            task,
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Connections the host has closed (kept by a `Silent` probe only).
    pub fn closed(&self) -> usize {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How many consumers `queue` has on the broker of `connection` (`None`: no such queue), by a
/// passive declare on a channel of its own.
pub async fn consumers_of(connection: &lapin::Connection, queue: &str) -> Option<u32> {
    let channel = connection.create_channel().await.expect("channel");
    let declared = channel
        .queue_declare(
            queue.to_string().into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .ok()?;
    let _ = channel.close(200, "checked".into()).await;
    Some(declared.consumer_count())
}
