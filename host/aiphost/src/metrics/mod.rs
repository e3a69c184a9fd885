//! The host's metrics: one [`Metrics`] per host (tests start many hosts in one process, so there
//! is no global recorder and no macro), rendered by `metrics-exporter-prometheus` as `/metrics`.
//!
//! Every series is registered here through typed constructors, and a label value is bounded
//! by construction ([`LabelValue`]): a `&'static str` (an enum's label, a door's name), a
//! number (an HTTP status, an error code), or a partner's id and tenant taken from the registry
//! ([`Partner`]). Never a task id, a Leader, a session or a key.
//!
//! - [`host`]: the host's own series (engine, store, notifier, connections), read when scraped;
//! - [`partners`]: each hosted partner's series (present at zero from when it is hosted) and
//!   the engine's [`crate::task::Observer`], which counts into them;
//! - [`quantile`]: bucket counts kept beside the exporter's, read back for p50/p99;
//! - [`requests`]: every door's requests, counted and timed in the door kit;
//! - [`store`]: the store's committer rounds and syncs ([`crate::store::CommitObserver`]).

pub mod host;
pub mod partners;
pub mod quantile;
pub mod requests;
pub mod store;
#[cfg(test)]
mod text_tests;

use crate::agent::Agent;
use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The upper bounds, in seconds, of every duration histogram's buckets (0.5 ms to 30 s; what
/// is slower counts in `+Inf`).
pub const BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// How often histogram samples are folded into their buckets when nobody scrapes: the
/// exporter keeps them until then, so without this an unscraped host would hold every sample.
pub const UPKEEP: std::time::Duration = std::time::Duration::from_secs(5);

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A label's value, bounded by construction: no `From<String>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelValue(String);

impl From<&'static str> for LabelValue {
    fn from(value: &'static str) -> Self {
        LabelValue(value.to_string())
    }
}

impl LabelValue {
    /// A number: an HTTP status, an error code.
    pub fn code(code: i64) -> Self {
        LabelValue(code.to_string())
    }
}

/// A partner's labels, `agent` and `tenant` (`""` for the operator's own), taken from a hosted
/// partner; [`Partner::host`] for what is no partner's (a request to `/mcp`, to an unknown id).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Partner {
    agent: String,
    tenant: String,
}

impl Partner {
    /// The labels of hosted partner `agent`.
    pub fn of(agent: &Agent) -> Self {
        Partner {
            agent: agent.id().to_string(),
            tenant: agent
                .tenant
                .as_ref()
                .map_or_else(String::new, |t| t.id.clone()),
        }
    }

    /// The labels of the host itself (both empty).
    pub fn host() -> Self {
        Partner {
            agent: String::new(),
            tenant: String::new(),
        }
    }

    /// The partner's id (`""`: the host).
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Its tenant (`""`: the operator's).
    pub fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// A series' labels: a partner's, if any, then fixed ones.
pub struct Labels<'a> {
    partner: Option<&'a Partner>,
    fixed: Vec<(&'static str, LabelValue)>,
}

impl<'a> Labels<'a> {
    /// No labels.
    pub fn none() -> Self {
        Labels {
            partner: None,
            fixed: Vec::new(),
        }
    }

    /// `agent` and `tenant` of `partner`.
    pub fn partner(partner: &'a Partner) -> Self {
        Labels {
            partner: Some(partner),
            fixed: Vec::new(),
        }
    }

    /// And `name="value"`.
    pub fn with(mut self, name: &'static str, value: impl Into<LabelValue>) -> Self {
        self.fixed.push((name, value.into()));
        self
    }

    fn key(&self, name: &'static str) -> Key {
        let mut labels = Vec::with_capacity(2 + self.fixed.len());
        if let Some(p) = self.partner {
            labels.push(Label::new("agent", p.agent.clone()));
            labels.push(Label::new("tenant", p.tenant.clone()));
        }
        for (n, v) in &self.fixed {
            labels.push(Label::new(*n, v.0.clone()));
        }
        Key::from_parts(name, labels)
    }
}

/// A host's metrics: its recorder, what renders it, and what is read only when scraped.
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    /// Families described so far (each is described once, with its first series).
    described: Mutex<HashSet<&'static str>>,
    /// What copies values kept elsewhere (atomics, the store's counts) into series, run before
    /// each render.
    scrapes: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl Metrics {
    /// A host's metrics: histograms (names ending in `_seconds`) with [`BUCKETS`].
    pub fn new() -> Arc<Self> {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
            .map(PrometheusBuilder::build_recorder)
            // The buckets are a non-empty constant: this arm cannot be taken, and it would still
            // give a working recorder (summaries instead of histograms).
            .unwrap_or_else(|_| PrometheusBuilder::new().build_recorder());
        let handle = recorder.handle();
        Arc::new(Metrics {
            recorder,
            handle,
            described: Mutex::new(HashSet::new()),
            scrapes: Mutex::new(Vec::new()),
        })
    }

    fn describe(&self, name: &'static str, help: &'static str, kind: Kind) {
        let mut described = self.described.lock().unwrap_or_else(|p| p.into_inner());
        if !described.insert(name) {
            return;
        }
        let unit: Option<Unit> = None;
        match kind {
            Kind::Counter => self
                .recorder
                .describe_counter(name.into(), unit, help.into()),
            Kind::Gauge => self.recorder.describe_gauge(name.into(), unit, help.into()),
            Kind::Histogram => self
                .recorder
                .describe_histogram(name.into(), unit, help.into()),
        }
    }

    /// The counter `name` with `labels` (registered at zero; the same series each time).
    pub fn counter(&self, name: &'static str, help: &'static str, labels: Labels<'_>) -> Counter {
        debug_assert!(
            name.ends_with("_total"),
            "a counter's name ends in _total: {name}"
        );
        self.describe(name, help, Kind::Counter);
        let counter = self.recorder.register_counter(&labels.key(name), &METADATA);
        counter.increment(0);
        counter
    }

    /// The gauge `name` with `labels` (registered at zero).
    pub fn gauge(&self, name: &'static str, help: &'static str, labels: Labels<'_>) -> Gauge {
        self.describe(name, help, Kind::Gauge);
        let gauge = self.recorder.register_gauge(&labels.key(name), &METADATA);
        gauge.increment(0.0);
        gauge
    }

    /// The duration histogram `name` (in seconds, so named `..._seconds`) with `labels`.
    pub fn histogram(
        &self,
        name: &'static str,
        help: &'static str,
        labels: Labels<'_>,
    ) -> Histogram {
        debug_assert!(
            name.ends_with("_seconds"),
            "a duration is in seconds: {name}"
        );
        self.describe(name, help, Kind::Histogram);
        self.recorder
            .register_histogram(&labels.key(name), &METADATA)
    }

    /// Run `copy` before each render: it sets series from values kept elsewhere.
    pub fn on_scrape(&self, copy: impl Fn() + Send + Sync + 'static) {
        let mut scrapes = self.scrapes.lock().unwrap_or_else(|p| p.into_inner());
        scrapes.push(Box::new(copy));
    }

    /// The text of `/metrics` (Prometheus text format 0.0.4).
    pub fn render(&self) -> String {
        {
            let scrapes = self.scrapes.lock().unwrap_or_else(|p| p.into_inner());
            for copy in scrapes.iter() {
                copy();
            }
        }
        self.handle.render()
    }

    /// Fold the histograms' samples into their buckets (every [`UPKEEP`], see there).
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// A host's metrics and the parts of them the host's endpoints and the door kit use.
#[derive(Clone)]
pub struct HostMetrics {
    /// Every series, and what renders them.
    pub metrics: Arc<Metrics>,
    /// Each partner's series (the engine's observer).
    pub partners: Arc<partners::Partners>,
    /// Every door's requests.
    pub requests: Arc<requests::Requests>,
}

impl HostMetrics {
    /// The metrics of a host of `agents`.
    pub fn new(agents: Arc<crate::agent::Registry>) -> Self {
        let metrics = Metrics::new();
        HostMetrics {
            partners: partners::Partners::new(metrics.clone(), agents.clone()),
            requests: requests::Requests::new(metrics.clone(), agents),
            metrics,
        }
    }

    /// Fold histogram samples into buckets every [`UPKEEP`] until `stop`.
    pub fn spawn_upkeep(&self, stop: tokio_util::sync::CancellationToken) {
        let metrics = Arc::downgrade(&self.metrics);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.cancelled() => return,
                }
                let Some(metrics) = metrics.upgrade() else {
                    return;
                };
                metrics.upkeep();
            }
        });
    }
}
