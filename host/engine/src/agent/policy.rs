//! What the operator allows its own partners (the bundles `serve --agents` hosts) beyond the
//! defaults: listing the tasks of an open partner, and a request rate.
//!
//! Why flags of `serve` and not fields of the manifest: a manifest is the partner author's, and
//! both are the operator's decisions about the host it runs (an author cannot be asked to limit
//! its own request rate, nor be the one to expose every client's history). A tenant's published
//! partners take the same from the tenant's quotas, which the operator sets
//! (`listTasksOnOpenPartners`, `requestsPerSecond`; `quota.rs`).

use crate::quota::{QuotaError, RateLimiter};
use aiphost_model::Timestamp;
use std::sync::Mutex;

/// The operator's rules for its own partners.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperatorPolicy {
    /// Partners on which `ListTasks` answers although their Leaders do not authenticate (so
    /// every client sees every client's tasks): `serve --list-tasks-on`. Off for every other.
    pub list_tasks_on: Vec<String>,
    /// Requests a second each operator partner takes, and the burst above it (`None`: no
    /// limit): `serve --requests-per-second`, `--request-burst`.
    pub request_rate: Option<(u32, u32)>,
}

/// One operator partner's request-rate limit.
#[derive(Debug)]
pub struct PartnerRate {
    /// Requests a second.
    pub limit: u32,
    limiter: Mutex<RateLimiter>,
}

impl PartnerRate {
    /// A full bucket of `burst`, refilled at `limit` a second.
    pub fn new(limit: u32, burst: u32) -> Self {
        PartnerRate {
            limit,
            limiter: Mutex::new(RateLimiter::new(limit, burst, Timestamp::now_ms())),
        }
    }

    /// Count one request to partner `agent`.
    pub fn admit(&self, agent: &str) -> Result<(), QuotaError> {
        let now = Timestamp::now_ms();
        let taken = match self.limiter.lock() {
            Ok(mut limiter) => limiter.take(now),
            Err(poisoned) => poisoned.into_inner().take(now),
        };
        taken.map_err(|retry_after_ms| QuotaError::PartnerRate {
            agent: agent.to_string(),
            limit: self.limit,
            retry_after_ms,
        })
    }
}
