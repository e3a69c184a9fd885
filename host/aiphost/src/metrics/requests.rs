//! Every door's requests, counted and timed where each passes, in the door kit's request span
//! (`transport/kit/span.rs`): `aiphost_requests_total{door,agent,tenant,outcome}` and
//! `aiphost_request_duration_seconds{door,agent,tenant}`. The time is the request's until its
//! response head (a stream's body goes on after it). `agent` is the partner the path names
//! when it is hosted, else `""` (the host's own `/mcp`, an unknown id): a path cannot make a
//! label.

use super::{Labels, Metrics, Partner};
use crate::agent::Registry;
use axum::http::StatusCode;
use metrics::{Counter, Histogram};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How a request was answered, as `outcome` labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Below 400.
    Ok,
    /// 4xx: the caller's request was refused.
    Refused,
    /// 5xx: the host failed it (or was not ready).
    Error,
}

impl Outcome {
    const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Refused, Outcome::Error];

    /// The outcome of a response with `status`.
    pub fn of(status: StatusCode) -> Self {
        if status.is_server_error() {
            Outcome::Error
        } else if status.is_client_error() {
            Outcome::Refused
        } else {
            Outcome::Ok
        }
    }

    /// Its label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Refused => "refused",
            Outcome::Error => "error",
        }
    }
}

/// One door's series for one partner.
struct Series {
    /// By [`Outcome::ALL`].
    answered: [Counter; 3],
    seconds: Histogram,
}

/// The request series of every door, made as requests come (bounded: doors × hosted partners).
pub struct Requests {
    metrics: Arc<Metrics>,
    agents: Arc<Registry>,
    series: RwLock<HashMap<(&'static str, Partner), Arc<Series>>>,
}

impl Requests {
    /// The series of requests to `agents`' partners, in `metrics`.
    pub fn new(metrics: Arc<Metrics>, agents: Arc<Registry>) -> Arc<Self> {
        Arc::new(Requests {
            metrics,
            agents,
            series: RwLock::new(HashMap::new()),
        })
    }

    /// Count a request of `door` to the partner `agent` (the path's; `""`: none) answered with
    /// `status` after `took`.
    pub fn observe(&self, door: &'static str, agent: &str, status: StatusCode, took: Duration) {
        let partner = match self.agents.get(agent) {
            Some(hosted) => Partner::of(&hosted),
            None => Partner::host(),
        };
        let key = (door, partner);
        let found = self
            .series
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let series = match found {
            Some(series) => series,
            None => {
                let mut all = self.series.write().unwrap_or_else(|p| p.into_inner());
                all.entry(key)
                    .or_insert_with_key(|(door, partner)| Arc::new(self.made(door, partner)))
                    .clone()
            }
        };
        let at = Outcome::ALL
            .iter()
            .position(|o| *o == Outcome::of(status))
            .unwrap_or(0);
        series.answered[at].increment(1);
        series.seconds.record(took.as_secs_f64());
    }

    fn made(&self, door: &'static str, partner: &Partner) -> Series {
        Series {
            answered: Outcome::ALL.map(|outcome| {
                self.metrics.counter(
                    "aiphost_requests_total",
                    "Requests each door answered, by partner and outcome: ok (below 400), refused (4xx), error (5xx)",
                    Labels::partner(partner)
                        .with("door", door)
                        .with("outcome", outcome.as_str()),
                )
            }),
            seconds: self.metrics.histogram(
                "aiphost_request_duration_seconds",
                "Time of a door's request until its response head (a stream goes on after it)",
                Labels::partner(partner).with("door", door),
            ),
        }
    }
}
