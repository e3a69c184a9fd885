//! Each hosted partner's series, labelled `agent` and `tenant`: what the engine counts for it
//! (through [`crate::task::Observer`], which [`Partners`] is), how long its invocations take,
//! its invocations running and waiting, and its tasks by live state. A partner's series are
//! registered when it is first seen hosted (at start-up, at publish: the next scrape finds it),
//! so they are present at zero. A partner no longer hosted keeps its series until the host
//! restarts (the exporter cannot remove one), its gauges set to zero.

use super::quantile::Buckets;
use super::{Labels, Metrics, Partner};
use crate::agent::Registry;
use crate::model::TaskState;
use crate::task::{InvocationOutcome, Observer, TaskEngine};
use metrics::{Counter, Gauge, Histogram};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// The states of a task that has not ended, as `aiphost_tasks` labels them.
pub const LIVE_STATES: [TaskState; 4] = [
    TaskState::Accepted,
    TaskState::Working,
    TaskState::AwaitingInput,
    TaskState::AwaitingCompletion,
];

/// One partner's series.
pub struct PartnerMetrics {
    /// Its labels.
    pub partner: Partner,
    commands: Counter,
    transitions: Counter,
    timeouts: Counter,
    events: Counter,
    /// By [`InvocationOutcome::ALL`].
    invocations: [Counter; 5],
    invocation_failures: Counter,
    invocation_seconds: Histogram,
    /// The same durations, readable ([`PartnerMetrics::stats`]).
    buckets: Buckets,
    /// Invocations that failed their task (for the admin API's `failures`).
    failures: AtomicU64,
    running: Gauge,
    waiting: Gauge,
    /// By [`LIVE_STATES`].
    tasks: [Gauge; 4],
}

/// What the admin API says of a partner's invocations since the host started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InvocationStats {
    /// Invocations that ran (aborted before their turn not counted).
    pub invocations: u64,
    /// Invocations that ended otherwise than `ok` or `aborted` (an error, a trap, a deadline).
    pub failures: u64,
    /// Median invocation time, seconds.
    pub p50_seconds: Option<f64>,
    /// 99th percentile, seconds.
    pub p99_seconds: Option<f64>,
}

impl PartnerMetrics {
    fn new(metrics: &Metrics, partner: Partner) -> Self {
        let p = &partner;
        let counter = |name, help| metrics.counter(name, help, Labels::partner(p));
        let invocations = InvocationOutcome::ALL.map(|outcome| {
            metrics.counter(
                "aiphost_invocations_total",
                "Partner invocations that ran, by how they ended: ok, failed (handle returned err), trap (a trap or a broken limit), deadline, aborted (its task canceled)",
                Labels::partner(p).with("outcome", outcome.as_str()),
            )
        });
        let tasks = LIVE_STATES.map(|state| {
            metrics.gauge(
                "aiphost_tasks",
                "Tasks that have not ended, by state (as the store's listing index counts them)",
                Labels::partner(p).with("state", state.as_str()),
            )
        });
        PartnerMetrics {
            commands: counter("aiphost_commands_total", "Leader commands handled"),
            transitions: counter(
                "aiphost_transitions_total",
                "Task state transitions stored",
            ),
            timeouts: counter("aiphost_timeouts_total", "Awaiting timers that expired"),
            events: counter("aiphost_events_total", "Task events logged"),
            invocations,
            invocation_failures: counter(
                "aiphost_invocation_failures_total",
                "Invocations that failed their task (trap, deadline, limit, error)",
            ),
            invocation_seconds: metrics.histogram(
                "aiphost_invocation_duration_seconds",
                "Time of a partner invocation, from its turn to its end (waiting for its turn not counted)",
                Labels::partner(p),
            ),
            buckets: Buckets::default(),
            failures: AtomicU64::new(0),
            running: metrics.gauge(
                "aiphost_partner_invocations_running",
                "Invocations of a partner running now",
                Labels::partner(p),
            ),
            waiting: metrics.gauge(
                "aiphost_partner_invocations_waiting",
                "Invocations of a partner waiting for its turn (its share of the guest threads is in use)",
                Labels::partner(p),
            ),
            tasks,
            partner,
        }
    }

    /// Its invocations since the host started.
    pub fn stats(&self) -> InvocationStats {
        InvocationStats {
            invocations: self.buckets.count(),
            failures: self.failures.load(Ordering::Relaxed),
            p50_seconds: self.buckets.quantile(0.5),
            p99_seconds: self.buckets.quantile(0.99),
        }
    }

    fn zero_gauges(&self) {
        self.running.set(0.0);
        self.waiting.set(0.0);
        for gauge in &self.tasks {
            gauge.set(0.0);
        }
    }
}

/// Every partner's series, by agent id.
pub struct Partners {
    /// Weak: the engine holds its observer, and the metrics' scrape hooks hold the engine.
    metrics: Weak<Metrics>,
    set_aside: Counter,
    agents: Arc<Registry>,
    known: RwLock<HashMap<String, Arc<PartnerMetrics>>>,
}

impl Partners {
    /// The series of `agents`' partners, in `metrics`.
    pub fn new(metrics: Arc<Metrics>, agents: Arc<Registry>) -> Arc<Self> {
        let set_aside = metrics.counter(
            "aiphost_tasks_set_aside_total",
            "Tasks whose stored state could not be read, failed and set aside",
            Labels::none(),
        );
        Arc::new(Partners {
            metrics: Arc::downgrade(&metrics),
            set_aside,
            agents,
            known: RwLock::new(HashMap::new()),
        })
    }

    /// How many partners are hosted now.
    pub fn hosted(&self) -> usize {
        self.agents.len()
    }

    /// The series of hosted partner `agent` (`None`: not hosted now, nor seen before).
    pub fn get(&self, agent: &str) -> Option<Arc<PartnerMetrics>> {
        if let Some(found) = self
            .known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(agent)
        {
            return Some(found.clone());
        }
        let hosted = self.agents.get(agent)?;
        self.register(Partner::of(&hosted))
    }

    /// The series of `partner`, registered if new (or if its id now belongs to another
    /// tenant); `None` once the host's metrics are gone (it is stopping).
    fn register(&self, partner: Partner) -> Option<Arc<PartnerMetrics>> {
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = known.get(partner.agent())
            && found.partner == partner
        {
            return Some(found.clone());
        }
        let metrics = self.metrics.upgrade()?;
        let made = Arc::new(PartnerMetrics::new(&metrics, partner));
        if let Some(old) = known.insert(made.partner.agent().to_string(), made.clone()) {
            old.zero_gauges();
        }
        Some(made)
    }

    /// Before a scrape: register every partner hosted now, and set the gauges of every partner
    /// known from what `engine` says (a partner not hosted any more reads zero).
    pub fn refresh(&self, engine: &TaskEngine) {
        for agent in self.agents.list() {
            let partner = Partner::of(&agent);
            let current = self
                .known
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(partner.agent())
                .is_some_and(|m| m.partner == partner);
            if !current {
                self.register(partner);
            }
        }
        let known: Vec<Arc<PartnerMetrics>> = self
            .known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let mut shares = HashMap::new();
        for share in engine.busy_partners() {
            shares.insert(share.agent.clone(), share);
        }
        let mut tasks: HashMap<&str, [u64; 4]> = HashMap::new();
        let by_state = engine.tasks_by_state();
        for (agent, state, n) in &by_state {
            if let Some(i) = LIVE_STATES.iter().position(|s| s == state) {
                tasks.entry(agent.as_str()).or_default()[i] += n;
            }
        }
        for m in known {
            let share = shares.get(m.partner.agent());
            m.running.set(share.map_or(0, |s| s.running) as f64);
            m.waiting.set(share.map_or(0, |s| s.waiting) as f64);
            let counts = tasks.get(m.partner.agent()).copied().unwrap_or_default();
            for (gauge, n) in m.tasks.iter().zip(counts) {
                gauge.set(n as f64);
            }
        }
    }
}

/// The engine's counts, into each partner's series (a partner neither hosted nor seen is not
/// counted: its id is no bounded label).
impl Observer for Partners {
    fn command(&self, agent: &str) {
        if let Some(m) = self.get(agent) {
            m.commands.increment(1);
        }
    }

    fn transition(&self, agent: &str) {
        if let Some(m) = self.get(agent) {
            m.transitions.increment(1);
        }
    }

    fn timeout(&self, agent: &str) {
        if let Some(m) = self.get(agent) {
            m.timeouts.increment(1);
        }
    }

    fn events(&self, agent: &str, n: u64) {
        if let Some(m) = self.get(agent) {
            m.events.increment(n);
        }
    }

    fn invocation(&self, agent: &str, outcome: InvocationOutcome, took: Duration) {
        let Some(m) = self.get(agent) else { return };
        let at = InvocationOutcome::ALL
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(0);
        m.invocations[at].increment(1);
        m.invocation_seconds.record(took.as_secs_f64());
        m.buckets.observe(took);
        if !matches!(outcome, InvocationOutcome::Ok | InvocationOutcome::Aborted) {
            m.failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn invocation_failed_task(&self, agent: &str) {
        if let Some(m) = self.get(agent) {
            m.invocation_failures.increment(1);
        }
    }

    fn set_aside(&self, agent: &str) {
        // Host-wide: a partner's id may be all that is left of what could not be read.
        let _ = agent;
        self.set_aside.increment(1);
    }
}
