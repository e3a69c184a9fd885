//! What a door gives the server: its routes, and how its streams render a task's events (the
//! admin timeline's `wire=`, [`EventWire`]). The server assembles a list of doors and merges
//! them; a door's routes carry its own state (drawn from [`HostState`]), so nothing of a door is
//! edited centrally. A door with counters of its own registers them on the host's
//! [`crate::metrics::Metrics`] when it is made; every door's requests are counted in the kit's
//! request span ([`super::span`]).

use super::state::HostState;
use crate::agent::Agent;
use crate::model::TaskEvent;
use crate::task::TaskView;
use axum::Router;
use serde_json::Value;

/// A door of the host (AIP, A2A, group mode).
pub trait Door: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &'static str;

    /// Its HTTP routes (none for a door with no HTTP entry of its own).
    fn routes(&self) -> Router<HostState>;

    /// How its streams render a task's events (`None`: it streams none of its own).
    fn event_wire(&self) -> Option<&dyn EventWire> {
        None
    }
}

/// A door's rendering of task events, as one of its streams that followed the task from its
/// start would send them: the door's own mapping, shown by the admin API's timeline.
pub trait EventWire: Send + Sync {
    /// Its name in the timeline's `wire=` (`aip`, `a2a`, `agent_api`, ...).
    fn wire(&self) -> &'static str;

    /// A renderer of one stream of `task`, run by `agent`.
    fn renderer(&self, agent: &Agent, task: &TaskView) -> Box<dyn RenderEvent>;
}

/// One stream's renderer: it keeps what the door's stream keeps between events.
pub trait RenderEvent: Send {
    /// What the door sends for `event`: its frames, in order (none, one, or several for a
    /// door whose protocol splits one change into several events).
    fn render_event(&mut self, event: &TaskEvent) -> Vec<Value>;
}
