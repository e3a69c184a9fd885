//! The A2A door as the server sees it: its routes (the card, the JSON-RPC binding, the
//! HTTP+JSON binding), whose handlers draw the door's state from the host's; and its streams'
//! rendering of a task's events for the admin timeline (`events.rs`).

use super::{card, jsonrpc, rest};
use crate::transport::kit::door::{Door, EventWire, RenderEvent};
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use axum::Router;
use axum::routing::{any, get, post};

/// The A2A door.
pub struct A2aDoor;

impl Door for A2aDoor {
    fn name(&self) -> &'static str {
        "a2a"
    }

    fn routes(&self) -> Router<HostState> {
        let rest = "/agents/{agent}/a2a/rest";
        Router::new()
            .route("/agents/{agent}/a2a", post(jsonrpc::handle))
            .route("/agents/{agent}/a2a/", post(jsonrpc::handle))
            .route(&format!("{rest}/message:send"), post(rest::send))
            .route(
                &format!("{rest}/message:stream"),
                post(rest::send_streaming),
            )
            .route(&format!("{rest}/tasks"), get(rest::list))
            .route(
                &format!("{rest}/tasks/{{task}}"),
                get(rest::task_get).post(rest::task_post),
            )
            .route(
                &format!("{rest}/tasks/{{task}}/pushNotificationConfigs"),
                any(rest::push_configs),
            )
            .route(
                &format!("{rest}/tasks/{{task}}/pushNotificationConfigs/{{config}}"),
                any(rest::push_config),
            )
            .route(
                &format!("{rest}/extendedAgentCard"),
                get(rest::extended_card),
            )
            .route_layer(span::request("a2a"))
            .route(
                "/agents/{agent}/.well-known/agent-card.json",
                get(card::serve),
            )
    }

    fn event_wire(&self) -> Option<&dyn EventWire> {
        Some(self)
    }
}

impl EventWire for A2aDoor {
    fn wire(&self) -> &'static str {
        "a2a"
    }

    fn renderer(
        &self,
        _agent: &crate::agent::Agent,
        task: &crate::task::TaskView,
    ) -> Box<dyn RenderEvent> {
        Box::new(super::events::Timeline::of(&task.task))
    }
}
