//! The notification style's delivery side: a durable outbox in sled, delivered per task in order,
//! with retries (exponential backoff with jitter) up to a horizon, then recorded as given up.
//!
//! A task's notifications are enqueued in the same write as the change they announce, and a
//! task's delivery loop is woken only once that write is durable. Each task has its own loop, so
//! a dead receiver delays only its own tasks' notifications; a bounded number of requests run at
//! once, each with connect and response timeouts, and redirects are not followed.

use crate::model::Timestamp;
use crate::protocol::a2a;
use crate::protocol::aip::notice::{Audience, render_notice};
use crate::protocol::notice_format::NoticeFormat;
use crate::store::{Encoded, OutboxEntry, Outgoing, Store, StoreError, TaskKey};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// The header that carries an AIP config's token.
pub const TOKEN_HEADER: &str = "X-ACPS-AIP-Notification-Token";

/// The header that carries an A2A config's token (when it has one).
pub const A2A_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Delivery settings.
#[derive(Clone, Debug)]
pub struct NotifyConfig {
    /// Allow webhooks to addresses the address policy ([`crate::net_policy`]) forbids: loopback,
    /// private, link-local, ... (tests, local development).
    pub allow_private: bool,
    /// The first retry waits about this long; each next one twice as long.
    pub retry_base: Duration,
    /// No wait between retries is longer than this.
    pub retry_max: Duration,
    /// Give up on a notification this long after its first attempt.
    pub horizon: Duration,
    /// How long connecting to a receiver may take.
    pub connect_timeout: Duration,
    /// How long one delivery request may take in all, connecting included.
    pub timeout: Duration,
    /// Requests in flight at once, over all receivers.
    pub max_in_flight: usize,
    /// Requests in flight at once to one receiver (host and port), so a receiver that hangs can
    /// hold only a few of the slots.
    pub max_in_flight_per_receiver: usize,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            allow_private: false,
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(300),
            horizon: Duration::from_secs(24 * 3600),
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            max_in_flight: 256,
            max_in_flight_per_receiver: 4,
        }
    }
}

/// A notification given up on, kept for operators.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GivenUp {
    /// The partner whose task it was.
    pub agent: String,
    /// The task's id.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The notification's sequence number in the task's outbox.
    pub seq: u64,
    /// The receiver's URL, with any user name and password hidden.
    pub url: String,
    /// The task state the notification announced, if it carried one.
    pub state: Option<String>,
    /// Delivery attempts made.
    pub attempts: u32,
    /// Why the last attempt failed.
    #[serde(rename = "lastError")]
    pub last_error: String,
    /// When the host gave up.
    #[serde(rename = "gaveUpAt")]
    pub gave_up_at: crate::model::Timestamp,
}

/// Counters for `/metrics`.
#[derive(Default)]
pub struct NotifyStats {
    /// Notifications a receiver took (it answered HTTP 200).
    pub delivered: AtomicU64,
    /// Attempts that failed, each then retried or given up on.
    pub failed_attempts: AtomicU64,
    /// Notifications given up on past the horizon.
    pub given_up: AtomicU64,
}

/// Delivers notifications.
pub struct Notifier {
    store: Store,
    config: NotifyConfig,
    http: reqwest::Client,
    /// Tasks whose delivery loop runs, with the newest outbox seq known durable (a loop never
    /// delivers past it).
    running: Mutex<HashMap<TaskKey, u64>>,
    in_flight: Semaphore,
    per_receiver: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Delivery counters, for `/metrics`.
    pub stats: NotifyStats,
}

impl Notifier {
    /// A notifier over `store`; call [`Notifier::resume`] to deliver what was pending at start-up.
    pub fn new(store: Store, config: NotifyConfig) -> Arc<Self> {
        let http = reqwest::Client::builder()
            .dns_resolver(crate::net_policy::PolicyResolver {
                allow_private: config.allow_private,
            })
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .no_proxy()
            .build()
            .unwrap_or_default();
        Arc::new(Notifier {
            store,
            in_flight: Semaphore::new(config.max_in_flight.max(1)),
            config,
            http,
            running: Mutex::new(HashMap::new()),
            per_receiver: Mutex::new(HashMap::new()),
            stats: NotifyStats::default(),
        })
    }

    /// Start delivering every task's pending notifications (after a restart).
    pub fn resume(self: &Arc<Self>) -> Result<usize, StoreError> {
        let tasks = self.store.outbox_tasks()?;
        for task in &tasks {
            // What was stored before the start is on disk.
            self.wake(task.clone(), u64::MAX);
        }
        Ok(tasks.len())
    }

    /// `task`'s notifications up to `durable_seq` are on disk: make sure its delivery loop runs
    /// and may deliver them.
    pub fn wake(self: &Arc<Self>, task: TaskKey, durable_seq: u64) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        match running.get_mut(&task) {
            Some(durable) => *durable = (*durable).max(durable_seq),
            None => {
                running.insert(task.clone(), durable_seq);
                let me = self.clone();
                tokio::spawn(async move { me.deliver_task(task).await });
            }
        }
    }

    /// Leave the delivery loop of `task` unless there is a durable entry (at most `head`) to
    /// deliver; the check and the leaving happen under the lock `wake` takes.
    fn leave_unless_due(&self, task: &TaskKey, head: Option<u64>) -> bool {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let durable = running.get(task).copied().unwrap_or(0);
        let due = match head {
            Some(seq) => seq <= durable,
            None => matches!(self.store.outbox_head(task), Ok(Some((seq, _))) if seq <= durable),
        };
        if !due {
            running.remove(task);
        }
        !due
    }

    /// Deliver a task's notifications one by one, in order, until its outbox is empty.
    async fn deliver_task(self: Arc<Self>, task: TaskKey) {
        loop {
            let head = match self.store.outbox_head(&task) {
                Ok(head) => head,
                Err(e) => {
                    tracing::error!(agent = %task.agent, task = %task.task, error = %e, "cannot read the outbox");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            // Leave when nothing durable is due (a later wake starts a new loop).
            let head_seq = head.as_ref().map(|(seq, _)| *seq);
            if self.leave_unless_due(&task, head_seq) {
                return;
            }
            let Some((seq, entry)) = head else {
                continue;
            };
            let Some(mut entry) = entry else {
                tracing::error!(agent = %task.agent, task = %task.task, seq, "dropping an unreadable outbox entry");
                if self.store.outbox_remove(&task, seq, None, None).is_err() {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            };
            let wait = entry.next_attempt_ms - Timestamp::now_ms();
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            }
            if let Err(e) = self.attempt(&task, seq, &mut entry).await {
                tracing::error!(agent = %task.agent, task = %task.task, error = %e, "outbox update failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }

    /// One delivery attempt of the entry at `seq`; updates or removes it.
    async fn attempt(
        &self,
        task: &TaskKey,
        seq: u64,
        entry: &mut OutboxEntry,
    ) -> Result<(), StoreError> {
        let config = match self.store.config(task, &entry.config_id) {
            Ok(config) => config,
            Err(StoreError::Corrupt(e)) => {
                tracing::error!(agent = %task.agent, task = %task.task, error = %e, "unreadable notification config");
                None
            }
            Err(e) => return Err(e),
        };
        let Some(config) = config else {
            // The Leader deleted the config: it no longer wants these notifications.
            tracing::info!(agent = %task.agent, task = %task.task, seq, "notification config deleted; dropping the notification");
            return self.done(task, seq, entry, None);
        };
        // An IP literal never reaches the client's resolver: check it here on every delivery
        // (the operator may have tightened the policy since the config was made).
        let literal_refused = (!self.config.allow_private)
            .then(|| reqwest::Url::parse(&config.url).ok())
            .flatten()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
            .and_then(|h| h.parse::<std::net::IpAddr>().ok())
            .and_then(|ip| {
                crate::net_policy::forbidden(ip).map(|why| {
                    format!("{ip} is a {why} address, which this host's policy does not allow")
                })
            });
        if entry.first_attempt_ms == 0 {
            entry.first_attempt_ms = Timestamp::now_ms();
        }
        entry.attempts += 1;
        let format = NoticeFormat::of(config.format.as_ref());
        let a2a = format != NoticeFormat::Aip;
        let body = match (&entry.body, format) {
            (Outgoing::Notice(notice), NoticeFormat::Aip) => {
                render_notice(notice, Audience::Webhook)
            }
            (Outgoing::Notice(notice), NoticeFormat::A2a) => a2a::render_notice(notice),
            (Outgoing::Notice(notice), NoticeFormat::A2aV03) => a2a::v03::render_notice(notice),
            (Outgoing::Rendered(body), _) => body.clone(),
        };
        let outcome = if let Some(reason) = literal_refused {
            Err(reason)
        } else {
            // This receiver's slots first, so a hanging one never holds the shared ones.
            let receiver = self.receiver_slots(&config.url);
            let _mine = receiver.acquire().await;
            let _permit = self.in_flight.acquire().await;
            let mut request = self
                .http
                .post(&config.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json");
            request = match (format, &config.authentication) {
                (NoticeFormat::Aip, _) => request.header(TOKEN_HEADER, &config.token),
                (NoticeFormat::A2a | NoticeFormat::A2aV03, auth) => {
                    if let Some(auth) = auth {
                        request = request.header(
                            reqwest::header::AUTHORIZATION,
                            format!("{} {}", auth.scheme, auth.credentials).trim_end(),
                        );
                    }
                    if config.token.is_empty() {
                        request
                    } else {
                        request.header(A2A_TOKEN_HEADER, &config.token)
                    }
                }
            };
            request
                .body(body.to_string())
                .send()
                .await
                // The URL is in the record already, and an error's copy of it could carry
                // what `redact` hides.
                .map_err(|e| describe(&e.without_url()))
        };
        let error = match outcome {
            // AIP counts only 200; A2A any 2xx (its receivers commonly answer 202 or 204).
            Ok(response)
                if response.status().as_u16() == 200 || (a2a && response.status().is_success()) =>
            {
                self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(agent = %task.agent, task = %task.task, seq, attempts = entry.attempts, "notification delivered");
                return self.done(task, seq, entry, None);
            }
            Ok(response) => format!(
                "the receiver answered HTTP {} (only {} counts)",
                response.status().as_u16(),
                if a2a { "2xx" } else { "200" }
            ),
            Err(e) => e,
        };
        self.stats.failed_attempts.fetch_add(1, Ordering::Relaxed);
        let elapsed =
            Duration::from_millis((Timestamp::now_ms() - entry.first_attempt_ms).max(0) as u64);
        if elapsed >= self.config.horizon {
            self.stats.given_up.fetch_add(1, Ordering::Relaxed);
            let url = crate::redact::url(&config.url);
            tracing::warn!(agent = %task.agent, task = %task.task, seq, attempts = entry.attempts, %url, %error,
                "giving up on a notification");
            let record = GivenUp {
                agent: task.agent.clone(),
                task_id: task.task.clone(),
                seq,
                url,
                // An A2A notification holds the task; AIP's and A2A v0.3's are the task.
                state: body.get("task").unwrap_or(&body)["status"]["state"]
                    .as_str()
                    .map(str::to_string),
                attempts: entry.attempts,
                last_error: error,
                gave_up_at: crate::model::Timestamp::now(),
            };
            let record = Encoded::of(&record)?;
            return self.done(task, seq, entry, Some(&record));
        }
        let random = f64::from(uuid::Uuid::new_v4().as_u128() as u32) / f64::from(u32::MAX);
        let delay = backoff(&self.config, entry.attempts, random);
        tracing::debug!(agent = %task.agent, task = %task.task, seq, attempts = entry.attempts, %error, ?delay, "notification failed; will retry");
        entry.next_attempt_ms = Timestamp::now_ms() + delay.as_millis() as i64;
        entry.last_error = Some(error);
        self.store.outbox_update(task, seq, entry)?;
        Ok(())
    }

    /// Be done with `entry`'s config (delivered, deleted, or given up on: `given_up`): the entry
    /// goes on to its next config, or leaves the outbox.
    fn done(
        &self,
        task: &TaskKey,
        seq: u64,
        entry: &mut OutboxEntry,
        given_up: Option<&Encoded>,
    ) -> Result<(), StoreError> {
        let given_up = given_up.map(|record| (entry.config_id.clone(), record));
        let given_up = given_up.as_ref().map(|(id, record)| (id.as_str(), *record));
        let next = entry.next_config().then_some(&*entry);
        self.store.outbox_remove(task, seq, given_up, next)?;
        Ok(())
    }

    /// The in-flight slots of the receiver at `url` (by host and port).
    fn receiver_slots(&self, url: &str) -> Arc<Semaphore> {
        let origin = reqwest::Url::parse(url)
            .map(|u| {
                format!(
                    "{}:{}",
                    u.host_str().unwrap_or_default(),
                    u.port_or_known_default().unwrap_or(0)
                )
            })
            .unwrap_or_default();
        let mut map = self.per_receiver.lock().unwrap_or_else(|p| p.into_inner());
        // Forget receivers nobody is sending to, so the map stays small.
        map.retain(|_, s| Arc::strong_count(s) > 1);
        map.entry(origin)
            .or_insert_with(|| {
                Arc::new(Semaphore::new(
                    self.config.max_in_flight_per_receiver.max(1),
                ))
            })
            .clone()
    }

    /// Notifications given up on, for operators; a URL's credentials are not shown, also in
    /// records written before they were hidden.
    pub fn given_up(&self, limit: usize) -> Result<Vec<GivenUp>, StoreError> {
        self.store
            .given_up(limit)?
            .iter()
            .map(|b| {
                b.decode::<GivenUp>().map(|g| GivenUp {
                    url: crate::redact::url(&g.url),
                    ..g
                })
            })
            .collect()
    }
}

/// The wait after `attempts` failures: base × 2^(attempts-1), capped at the maximum, scaled by
/// 50–100 % (`random` in 0..=1) so that receivers coming back are not hit by every host at once.
pub fn backoff(config: &NotifyConfig, attempts: u32, random: f64) -> Duration {
    let exp = config
        .retry_base
        .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
        .min(config.retry_max);
    exp.mul_f64(0.5 + random.clamp(0.0, 1.0) / 2.0)
}

fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_a_cap() {
        let config = NotifyConfig {
            retry_base: Duration::from_millis(100),
            retry_max: Duration::from_secs(5),
            ..NotifyConfig::default()
        };
        assert_eq!(backoff(&config, 1, 1.0), Duration::from_millis(100));
        assert_eq!(backoff(&config, 1, 0.0), Duration::from_millis(50));
        assert_eq!(backoff(&config, 4, 1.0), Duration::from_millis(800));
        assert_eq!(backoff(&config, 30, 1.0), Duration::from_secs(5), "capped");
        assert_eq!(
            backoff(&config, 30, 0.0),
            Duration::from_millis(2500),
            "jitter below the cap too"
        );
        let spread: std::collections::HashSet<_> = [0.1, 0.4, 0.9]
            .iter()
            .map(|r| backoff(&config, 3, *r))
            .collect();
        assert_eq!(spread.len(), 3, "different draws wait differently");
    }
}
