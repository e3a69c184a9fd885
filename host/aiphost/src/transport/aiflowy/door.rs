//! The AIFlowy door as the server sees it: its four routes, whose handlers draw the door's
//! state from the host's, and its settings and busy guard, given to them as extensions.

use super::config::AiflowyConfig;
use super::{chat, events, form, stop};
use crate::transport::kit::door::Door;
use crate::transport::kit::sessions::SessionGuard;
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use axum::routing::{get, post};
use axum::{Extension, Router};
use std::sync::Arc;

/// The AIFlowy chat door.
pub struct AiflowyDoor {
    config: Arc<AiflowyConfig>,
}

impl AiflowyDoor {
    /// The door with its settings.
    pub fn new(config: AiflowyConfig) -> Self {
        AiflowyDoor {
            config: Arc::new(config),
        }
    }
}

impl Door for AiflowyDoor {
    fn name(&self) -> &'static str {
        "aiflowy"
    }

    fn routes(&self) -> Router<HostState> {
        Router::new()
            .route("/agents/{agent}/aiflowy/chat", post(chat::handle))
            .route("/agents/{agent}/aiflowy/chat/events", get(events::handle))
            .route("/agents/{agent}/aiflowy/chat/stop", post(stop::handle))
            .route("/agents/{agent}/aiflowy/form", post(form::handle))
            .route_layer(axum::middleware::from_fn(|r, n| {
                span::request("aiflowy", r, n)
            }))
            // One guard for the door: routes are made once, when the server starts.
            .layer(Extension(SessionGuard::default()))
            .layer(Extension(self.config.clone()))
    }
}
