//! Per-tenant quotas and the request-rate limiter (pure: time is passed in).

use serde::{Deserialize, Serialize};

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
    pub request_burst: u32,
    /// The largest component a publish may upload, in bytes.
    pub max_component_bytes: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

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
