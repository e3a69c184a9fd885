//! Partners' own log lines (their `log` calls), kept per partner for its tenant to read over the
//! admin API (`GET /admin/agents/{agent}/logs`) and `aiphost logs`.
//!
//! The runtime hands each line to a [`sink::InvocationSink`] this module gives every invocation
//! ([`runner::LoggingRunner`]); it knows the partner's version and tenant, which the runtime
//! does not. Per partner the host keeps a ring of the newest lines (2,000 or 1 MiB by default,
//! the oldest dropped) and lets through at most 100 lines a second with bursts of 500: a line
//! over the rate is dropped before it reaches anything (the ring, the followers, `tracing`),
//! counted, and one record "N lines dropped" marks the gap. Everything is in memory only: a
//! restart empties the rings and numbers lines from 1 again. A partner unpublished, or whose
//! tenant is removed, loses its ring ([`PartnerLogs::forget`]).

pub mod bucket;
pub mod flags;
pub mod partner;
pub mod record;
pub mod ring;
pub mod runner;
pub mod sink;

use crate::agent::Agent;
use partner::PartnerLogState;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// How much of each partner's log is kept, and how fast it may log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartnerLogConfig {
    /// Records kept per partner (`serve --partner-log-lines`).
    pub lines: usize,
    /// Bytes of records kept per partner (`serve --partner-log-bytes`).
    pub bytes: usize,
    /// Lines a second a partner may log (`serve --partner-log-rate`).
    pub rate: u32,
    /// Lines a partner may log at once above the rate (`serve --partner-log-burst`).
    pub burst: u32,
}

impl Default for PartnerLogConfig {
    fn default() -> Self {
        PartnerLogConfig {
            lines: 2000,
            bytes: 1 << 20,
            rate: 100,
            burst: 500,
        }
    }
}

/// Followers of one partner's log at once; more are refused (429).
pub const MAX_FOLLOWERS_PER_PARTNER: usize = 32;

/// Lines and dropped lines of one partner's log (for `/metrics`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartnerLogCounts {
    /// The partner.
    pub agent: String,
    /// Its tenant (`None`: the operator's).
    pub tenant: Option<String>,
    /// Lines kept since its log began.
    pub lines: u64,
    /// Lines dropped over the rate since its log began.
    pub dropped: u64,
}

/// Every hosted partner's log.
pub struct PartnerLogs {
    config: PartnerLogConfig,
    partners: RwLock<HashMap<String, Arc<PartnerLogState>>>,
}

impl PartnerLogs {
    /// No log kept yet; each partner's is begun by its first invocation or follower.
    pub fn new(config: PartnerLogConfig) -> Self {
        PartnerLogs {
            config,
            partners: RwLock::default(),
        }
    }

    /// The log of hosted partner `agent`, begun if it has none. A log of another tenant's
    /// partner of that id (one removed, and its id taken since) is replaced, never shown.
    pub fn of(&self, agent: &Agent) -> Arc<PartnerLogState> {
        let tenant = agent.tenant.as_ref().map(|t| t.id.as_str());
        if let Some(log) = self.existing(agent.id())
            && log.tenant() == tenant
        {
            return log;
        }
        let mut partners = self.partners.write().unwrap_or_else(|p| p.into_inner());
        let log = partners
            .entry(agent.id().to_string())
            .or_insert_with(|| Arc::new(PartnerLogState::new(agent.id(), tenant, &self.config)));
        if log.tenant() != tenant {
            log.closed().cancel();
            *log = Arc::new(PartnerLogState::new(agent.id(), tenant, &self.config));
        }
        log.clone()
    }

    /// The log of partner `agent`, if one is kept.
    pub fn existing(&self, agent: &str) -> Option<Arc<PartnerLogState>> {
        let partners = self.partners.read().unwrap_or_else(|p| p.into_inner());
        partners.get(agent).cloned()
    }

    /// Drop partner `agent`'s log (it was unpublished, or its tenant removed); its followers'
    /// streams end.
    pub fn forget(&self, agent: &str) {
        let removed = self
            .partners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(agent);
        if let Some(log) = removed {
            log.closed().cancel();
        }
    }

    /// Lines and dropped lines of every partner with a log, by partner id.
    pub fn counts(&self) -> Vec<PartnerLogCounts> {
        let partners = self.partners.read().unwrap_or_else(|p| p.into_inner());
        let mut counts: Vec<PartnerLogCounts> = partners
            .iter()
            .map(|(agent, log)| {
                let (lines, dropped) = log.counts();
                PartnerLogCounts {
                    agent: agent.clone(),
                    tenant: log.tenant().map(str::to_string),
                    lines,
                    dropped,
                }
            })
            .collect();
        counts.sort_by(|a, b| a.agent.cmp(&b.agent));
        counts
    }
}
