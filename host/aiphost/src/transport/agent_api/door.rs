//! The Agent API door as the server sees it: its two routes, whose handlers draw the door's
//! state from the host's, and its counters (on the host's metrics).

use super::stats::Stats;
use super::{process, stop};
use crate::metrics::Metrics;
use crate::protocol::agent_api::Turn;
use crate::transport::kit::door::{Door, EventWire, RenderEvent};
use crate::transport::kit::sessions::SessionGuard;
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use crate::transport::kit::turn_stream::Timeline;
use axum::routing::post;
use axum::{Extension, Router};
use std::sync::Arc;

/// The Agent API door.
pub struct AgentApiDoor {
    /// Its counters: counted by its handlers.
    stats: Arc<Stats>,
}

impl AgentApiDoor {
    /// The door, its counters registered on `metrics`.
    pub fn new(metrics: &Arc<Metrics>) -> Self {
        AgentApiDoor {
            stats: Arc::new(Stats::new(metrics)),
        }
    }
}

impl Door for AgentApiDoor {
    fn name(&self) -> &'static str {
        "agent-api"
    }

    fn routes(&self) -> Router<HostState> {
        Router::new()
            .route("/agents/{agent}/process", post(process::handle))
            .route("/agents/{agent}/process/stop", post(stop::handle))
            .route_layer(span::request("agent-api"))
            // One guard for the door: routes are made once, when the server starts.
            .layer(Extension(SessionGuard::default()))
            .layer(Extension(self.stats.clone()))
    }

    fn event_wire(&self) -> Option<&dyn EventWire> {
        Some(self)
    }
}

/// The admin timeline's `wire=agent_api`: the events of one response that followed the task
/// from its start (`response_{task id}`, in its session).
impl EventWire for AgentApiDoor {
    fn wire(&self) -> &'static str {
        "agent_api"
    }

    fn renderer(
        &self,
        _agent: &crate::agent::Agent,
        view: &crate::task::TaskView,
    ) -> Box<dyn RenderEvent> {
        let task = &view.task;
        let created = view.created().unix_millis() / 1000;
        let session = task.session_id.as_deref().unwrap_or_default();
        let turn = Turn::new(&format!("response_{}", task.id), session, &task.id, created)
            .completing_on_result(task.completes_on_result);
        Box::new(Timeline::new(turn, |event| event))
    }
}
