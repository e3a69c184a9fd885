//! Per-tenant quotas, the request-rate limiter (pure: time is passed in), and a tenant's state as
//! the running host enforces it.

use aiphost_model::Timestamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Semaphore;

/// What one tenant may use. Every field has an operator default; a tenant is created with
/// the defaults or with values the operator gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Quotas {
    /// Published partners.
    pub max_agents: u32,
    /// Invocations of the tenant's partners running at once; more wait for one to end.
    pub max_concurrent_invocations: u32,
    /// Linear memory per instance, in MiB (a manifest may ask for less).
    pub max_memory_mib: u64,
    /// Wall-clock time per invocation, in ms (a manifest may ask for less).
    pub max_invocation_ms: u64,
    /// Bytes stored for the tenant: published bundles, tasks, events and key-value entries.
    pub max_stored_bytes: u64,
    /// Sustained AIP requests per second to the tenant's partners, and the burst above it.
    pub requests_per_second: u32,
    /// Requests admitted at once before the sustained rate applies (the token bucket's size).
    pub request_burst: u32,
    /// The largest component a publish may upload, in bytes.
    pub max_component_bytes: u64,
    /// How long the tenant's ended tasks are kept, in seconds (`None`: the operator's
    /// `--task-retention`). Fixed for a task when it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_retention_secs: Option<u64>,
    /// Publishes of the tenant's partners compiling at once (a compile takes a core for
    /// seconds); another is refused until one ends.
    pub max_concurrent_publishes: u32,
    /// Publishes a tenant may start in an hour (up to 5 at once, then evenly spread); more are
    /// refused with when to retry.
    pub publishes_per_hour: u32,
    /// `ListTasks` answers on the tenant's partners whose Leaders do not authenticate (where it
    /// shows every client's tasks to any client). Off unless the operator turns it on.
    pub list_tasks_on_open_partners: bool,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            max_agents: 20,
            max_concurrent_invocations: 16,
            max_memory_mib: 128,
            max_invocation_ms: 30_000,
            max_stored_bytes: 1 << 30,
            requests_per_second: 500,
            request_burst: 1000,
            max_component_bytes: 32 << 20,
            task_retention_secs: None,
            max_concurrent_publishes: 1,
            publishes_per_hour: 60,
            list_tasks_on_open_partners: false,
        }
    }
}

impl Quotas {
    /// The first field that is out of range, and why.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        let positive = [
            ("maxAgents", u64::from(self.max_agents)),
            (
                "maxConcurrentInvocations",
                u64::from(self.max_concurrent_invocations),
            ),
            ("maxMemoryMib", self.max_memory_mib),
            ("maxInvocationMs", self.max_invocation_ms),
            ("maxStoredBytes", self.max_stored_bytes),
            ("requestsPerSecond", u64::from(self.requests_per_second)),
            ("requestBurst", u64::from(self.request_burst)),
            ("maxComponentBytes", self.max_component_bytes),
            ("taskRetentionSecs", self.task_retention_secs.unwrap_or(1)),
            (
                "maxConcurrentPublishes",
                u64::from(self.max_concurrent_publishes),
            ),
            ("publishesPerHour", u64::from(self.publishes_per_hour)),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err((field, "must be at least 1"));
            }
        }
        if self.max_concurrent_invocations > 4096 {
            return Err(("maxConcurrentInvocations", "must be at most 4096"));
        }
        Ok(())
    }
}

/// A token bucket: `rate` tokens a second, at most `burst` saved up.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    tokens: f64,
    last_ms: i64,
}

impl RateLimiter {
    /// A full bucket at `now_ms`.
    pub fn new(rate: u32, burst: u32, now_ms: i64) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            rate: f64::from(rate.max(1)),
            burst,
            tokens: burst,
            last_ms: now_ms,
        }
    }

    /// A full bucket at `now_ms` of `count` tokens an hour, at most `burst` saved up.
    pub fn per_hour(count: u32, burst: u32, now_ms: i64) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            rate: f64::from(count.max(1)) / 3600.0,
            burst,
            tokens: burst,
            last_ms: now_ms,
        }
    }

    /// Take one token at `now_ms`: `Ok` or `Err(ms until one is there)`.
    pub fn take(&mut self, now_ms: i64) -> Result<(), u64> {
        let elapsed = (now_ms - self.last_ms).max(0) as f64 / 1000.0;
        self.last_ms = self.last_ms.max(now_ms);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - self.tokens) / self.rate * 1000.0).ceil() as u64)
        }
    }
}

/// A tenant as the running host enforces it.
#[derive(Debug)]
pub struct TenantState {
    /// The tenant's id.
    pub id: String,
    /// The quotas enforced for it, as they were when this state was made.
    pub quotas: Quotas,
    /// Invocations of its partners running now.
    pub invocations: Arc<Semaphore>,
    limiter: Mutex<RateLimiter>,
    /// Publishes compiling now.
    publishing: Arc<Semaphore>,
    /// Publishes started, against `publishesPerHour`.
    publishes: Mutex<RateLimiter>,
    /// Bytes stored for it, as last measured.
    stored_bytes: AtomicU64,
}

/// A publish's place in its tenant's budget: held while it compiles.
pub type PublishPermit = tokio::sync::OwnedSemaphorePermit;

impl TenantState {
    /// A tenant with full buckets and no bytes counted yet.
    pub fn new(id: &str, quotas: Quotas) -> Self {
        TenantState {
            id: id.to_string(),
            invocations: Arc::new(Semaphore::new(quotas.max_concurrent_invocations as usize)),
            limiter: Mutex::new(RateLimiter::new(
                quotas.requests_per_second,
                quotas.request_burst,
                Timestamp::now_ms(),
            )),
            publishing: Arc::new(Semaphore::new(quotas.max_concurrent_publishes as usize)),
            publishes: Mutex::new(RateLimiter::per_hour(
                quotas.publishes_per_hour,
                quotas.publishes_per_hour.min(5),
                Timestamp::now_ms(),
            )),
            stored_bytes: AtomicU64::new(0),
            quotas,
        }
    }

    /// Admit a publish that is about to compile: a free place among `maxConcurrentPublishes`
    /// (held until the permit is dropped), then a token of `publishesPerHour`. A publish refused
    /// for being busy takes no token.
    pub fn admit_publish(&self) -> Result<PublishPermit, QuotaError> {
        let permit = self.publishing.clone().try_acquire_owned().map_err(|_| {
            QuotaError::PublishesAtOnce {
                tenant: self.id.clone(),
                limit: self.quotas.max_concurrent_publishes,
            }
        })?;
        let taken = match self.publishes.lock() {
            Ok(mut limiter) => limiter.take(Timestamp::now_ms()),
            Err(poisoned) => poisoned.into_inner().take(Timestamp::now_ms()),
        };
        taken.map_err(|retry_after_ms| QuotaError::PublishRate {
            tenant: self.id.clone(),
            limit: self.quotas.publishes_per_hour,
            retry_after_ms,
        })?;
        Ok(permit)
    }

    /// Count one request against the rate quota.
    pub fn admit_request(&self) -> Result<(), QuotaError> {
        let taken = match self.limiter.lock() {
            Ok(mut limiter) => limiter.take(Timestamp::now_ms()),
            Err(poisoned) => poisoned.into_inner().take(Timestamp::now_ms()),
        };
        taken.map_err(|retry_after_ms| QuotaError::RequestRate {
            tenant: self.id.clone(),
            limit: self.quotas.requests_per_second,
            retry_after_ms,
        })
    }

    /// Refuse new tasks while the tenant's stored bytes exceed its quota.
    pub fn admit_new_task(&self) -> Result<(), QuotaError> {
        let stored = self.stored_bytes.load(Ordering::Relaxed);
        if stored > self.quotas.max_stored_bytes {
            return Err(QuotaError::StoredBytes {
                tenant: self.id.clone(),
                limit: self.quotas.max_stored_bytes,
                stored,
            });
        }
        Ok(())
    }

    /// Bytes stored for the tenant, as last measured.
    pub fn stored_bytes(&self) -> u64 {
        self.stored_bytes.load(Ordering::Relaxed)
    }

    /// Record a new measurement of the bytes stored for the tenant.
    pub fn set_stored_bytes(&self, bytes: u64) {
        self.stored_bytes.store(bytes, Ordering::Relaxed);
    }
}

/// A tenant's quota stopped a request. Each door tells its caller in its own protocol's words.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QuotaError {
    /// Over the tenant's sustained request rate and burst.
    #[error(
        "tenant {tenant} is over its rate of {limit} requests a second; retry in {retry_after_ms} ms"
    )]
    RequestRate {
        /// The tenant.
        tenant: String,
        /// Its `requestsPerSecond`.
        limit: u32,
        /// When a request would be admitted again.
        retry_after_ms: u64,
    },
    /// The tenant has `maxConcurrentPublishes` publishes compiling already.
    #[error(
        "tenant {tenant} already has {limit} publish(es) compiling (its maxConcurrentPublishes); retry when it ends"
    )]
    PublishesAtOnce {
        /// The tenant.
        tenant: String,
        /// Its `maxConcurrentPublishes`.
        limit: u32,
    },
    /// Over the tenant's `publishesPerHour`.
    #[error("tenant {tenant} is over its {limit} publishes an hour; retry in {retry_after_ms} ms")]
    PublishRate {
        /// The tenant.
        tenant: String,
        /// Its `publishesPerHour`.
        limit: u32,
        /// When a publish would be admitted again.
        retry_after_ms: u64,
    },
    /// Over the request rate the operator set for its own partner (`serve
    /// --requests-per-second`).
    #[error(
        "partner {agent} is over its rate of {limit} requests a second; retry in {retry_after_ms} ms"
    )]
    PartnerRate {
        /// The partner.
        agent: String,
        /// Its requests a second.
        limit: u32,
        /// When a request would be admitted again.
        retry_after_ms: u64,
    },
    /// The tenant stores more than it may: no new tasks until it stores less.
    #[error("tenant {tenant} stores {stored} bytes, over its quota of {limit}")]
    StoredBytes {
        /// The tenant.
        tenant: String,
        /// Its `maxStoredBytes`.
        limit: u64,
        /// Bytes stored for it, as last measured.
        stored: u64,
    },
}

impl QuotaError {
    /// The quota's name, as the admin API spells it.
    pub fn quota(&self) -> &'static str {
        match self {
            QuotaError::RequestRate { .. } | QuotaError::PartnerRate { .. } => "requestsPerSecond",
            QuotaError::StoredBytes { .. } => "maxStoredBytes",
            QuotaError::PublishesAtOnce { .. } => "maxConcurrentPublishes",
            QuotaError::PublishRate { .. } => "publishesPerHour",
        }
    }

    /// When to try again, in ms, where the quota refills on its own.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            QuotaError::RequestRate { retry_after_ms, .. }
            | QuotaError::PartnerRate { retry_after_ms, .. }
            | QuotaError::PublishRate { retry_after_ms, .. } => Some(*retry_after_ms),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hourly_bucket_spreads_the_rest_over_the_hour() {
        let mut hourly = RateLimiter::per_hour(60, 5, 0);
        for _ in 0..5 {
            assert!(hourly.take(0).is_ok());
        }
        // 60 an hour: one a minute once the burst is spent.
        assert_eq!(hourly.take(0), Err(60_000));
        assert!(hourly.take(60_000).is_ok());
        assert!(hourly.take(60_000).is_err());
    }

    #[test]
    fn bucket_allows_the_burst_then_the_rate() {
        let mut bucket = RateLimiter::new(10, 5, 0);
        for _ in 0..5 {
            assert_eq!(bucket.take(0), Ok(()));
        }
        assert_eq!(bucket.take(0), Err(100));
        assert_eq!(bucket.take(50), Err(50));
        assert_eq!(bucket.take(100), Ok(()));
        assert!(bucket.take(100).is_err());
        // A long pause refills only up to the burst.
        for _ in 0..5 {
            assert_eq!(bucket.take(60_000), Ok(()));
        }
        assert!(bucket.take(60_000).is_err());
        // A clock going backwards neither refills nor panics.
        assert!(bucket.take(1_000).is_err());
    }

    #[test]
    fn quotas_refuse_zero_and_absurd_values() {
        assert_eq!(Quotas::default().check(), Ok(()));
        let zero = Quotas {
            max_agents: 0,
            ..Quotas::default()
        };
        assert_eq!(zero.check(), Err(("maxAgents", "must be at least 1")));
        let parsed: Quotas = serde_json::from_str(r#"{"maxAgents": 3}"#).unwrap();
        assert_eq!(parsed.max_agents, 3);
        assert_eq!(parsed.request_burst, Quotas::default().request_burst);
        assert!(serde_json::from_str::<Quotas>(r#"{"maxAgent": 3}"#).is_err());
    }
}
