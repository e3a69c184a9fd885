//! The AIP door as the server sees it: its routes, with its state, and its streams' rendering of
//! a task's events for the admin timeline (`stream.rs`'s frames).

use super::invitations::GroupInvitations;
use super::state::AipState;
use super::{acs, entry};
use crate::transport::kit::door::{Door, EventWire, RenderEvent};
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use axum::Router;
use axum::extract::Path;
use axum::routing::{get, post};
use std::sync::Arc;

/// The AIP door.
pub struct AipDoor {
    state: AipState,
}

impl AipDoor {
    /// The AIP door of `host`, whose `group` method `invitations` answers.
    pub fn new(host: &HostState, invitations: Arc<dyn GroupInvitations>) -> Self {
        AipDoor {
            state: AipState::new(host, invitations),
        }
    }
}

impl Door for AipDoor {
    fn name(&self) -> &'static str {
        "aip"
    }

    fn routes(&self) -> Router<HostState> {
        let endpoint = post(entry::handle);
        Router::new()
            .route("/agents/{agent}/rpc", endpoint.clone())
            .route("/agents/{agent}/stream", endpoint.clone())
            .route(
                "/agents/{agent}/notification/{op}",
                post(|s, p, Path((agent, _op)): Path<(String, String)>, h, b| {
                    entry::handle(s, p, Path(agent), h, b)
                }),
            )
            .route("/agents/{agent}/group", endpoint.clone())
            .route("/agents/{agent}/group/rpc", endpoint)
            .route_layer(span::request("aip"))
            .route("/agents/{agent}/.well-known/acs.json", get(acs::serve))
            .with_state(self.state.clone())
    }

    fn event_wire(&self) -> Option<&dyn EventWire> {
        Some(self)
    }
}

impl EventWire for AipDoor {
    fn wire(&self) -> &'static str {
        "aip"
    }

    fn renderer(
        &self,
        agent: &crate::agent::Agent,
        task: &crate::task::TaskView,
    ) -> Box<dyn RenderEvent> {
        Box::new(super::stream::Frames::timeline(agent, task))
    }
}
