//! The Agent API door as the server sees it: its two routes, whose handlers draw the door's
//! state from the host's.

use super::{process, stop};
use crate::transport::kit::door::Door;
use crate::transport::kit::sessions::SessionGuard;
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use axum::routing::post;
use axum::{Extension, Router};

/// The Agent API door.
pub struct AgentApiDoor;

impl Door for AgentApiDoor {
    fn name(&self) -> &'static str {
        "agent-api"
    }

    fn routes(&self) -> Router<HostState> {
        Router::new()
            .route("/agents/{agent}/process", post(process::handle))
            .route("/agents/{agent}/process/stop", post(stop::handle))
            .route_layer(axum::middleware::from_fn(|r, n| {
                span::request("agent-api", r, n)
            }))
            // One guard for the door: routes are made once, when the server starts.
            .layer(Extension(SessionGuard::default()))
    }
}
