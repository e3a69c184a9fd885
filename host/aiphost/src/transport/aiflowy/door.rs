//! The AIFlowy door as the server sees it: its four routes, whose handlers draw the door's
//! state from the host's, and its settings and busy guard, given to them as extensions; and its
//! streams' rendering of a task's events for the admin timeline.

use super::config::AiflowyConfig;
use super::{chat, events, form, stop};
use crate::protocol::aiflowy::{Turn, Wire};
use crate::transport::kit::door::{Door, EventWire, RenderEvent};
use crate::transport::kit::sessions::SessionGuard;
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use crate::transport::kit::turn_stream::Timeline;
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
            .route_layer(span::request("aiflowy"))
            // One guard for the door: routes are made once, when the server starts.
            .layer(Extension(SessionGuard::default()))
            .layer(Extension(self.config.clone()))
    }

    fn event_wire(&self) -> Option<&dyn EventWire> {
        Some(self)
    }
}

/// The admin timeline's `wire=aiflowy`: a chat stream (the seed's spelling) that followed the
/// task from its start, each event `{"event": its SSE name, "data": its envelope}`.
impl EventWire for AiflowyDoor {
    fn wire(&self) -> &'static str {
        "aiflowy"
    }

    fn renderer(
        &self,
        _agent: &crate::agent::Agent,
        view: &crate::task::TaskView,
    ) -> Box<dyn RenderEvent> {
        let task = &view.task;
        let conversation = task.session_id.as_deref().unwrap_or_default();
        let started = view.created().unix_millis();
        let turn = Turn::new(Wire::Seed, conversation, Some(&task.id), started)
            .completing_on_result(task.completes_on_result)
            .with_ui(self.config.ui.clone());
        Box::new(Timeline::new(
            turn,
            |event| serde_json::json!({"event": event.name.as_str(), "data": event.data}),
        ))
    }
}
