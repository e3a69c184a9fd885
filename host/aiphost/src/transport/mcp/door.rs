//! The MCP door as the server sees it: `POST /agents/{agent}/mcp`, one partner's server, and
//! `POST /mcp`, the host's server of every partner its caller may use (and the GET and DELETE a
//! Streamable HTTP client may send, which `rmcp` answers): one `rmcp` service behind the door's
//! entry, which says for each request which of the two it is (the request's scope).
//!
//! `rmcp`'s own checks are set for a host that is not a local tool server: its `Host`
//! allow-list (loopback names only by default: every request to a public address would be
//! 403) is off, as at every other door; its `Origin` check is off because the entry applies
//! the door's own rule first; its body limit is the host's `--max-body-bytes` (the entry reads
//! the body under the same limit and the connection's deadline before `rmcp` does).
//! 2026-07-28 requests are stateless whatever the setting; a 2025-11-25 client's `initialize`
//! opens a session (`rmcp`'s `LocalSessionManager`, bounded and bound to its caller by
//! `sessions.rs` through the entry), which is what lets the door ask it a form by
//! `elicitation/create`.
//!
//! The admin timeline's `wire=mcp` is the door's progress rendering (`aiphost-protocol`'s
//! `mcp::progress`, as `follow.rs` sends it), under the progress token `"timeline"`.

use super::config::McpConfig;
use super::entry;
use super::handler::McpHandler;
use super::state::McpState;
use crate::metrics::Metrics;
use crate::protocol::mcp::progress::Progress;
use crate::transport::kit::door::{Door, EventWire, RenderEvent};
use crate::transport::kit::span;
use crate::transport::kit::state::HostState;
use axum::Router;
use rmcp::model::{NumberOrString, ProgressToken};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The MCP door.
pub struct McpDoor {
    state: McpState,
    stop: CancellationToken,
}

impl McpDoor {
    /// The door of `host`'s partners with `config`, its counters on `metrics`; `stop` ends its
    /// streams when the server stops.
    pub fn new(
        host: &HostState,
        config: McpConfig,
        stop: CancellationToken,
        metrics: &Arc<Metrics>,
    ) -> Self {
        McpDoor {
            state: McpState::new(host, config, metrics),
            stop,
        }
    }
}

impl Door for McpDoor {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn routes(&self) -> Router<HostState> {
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_legacy_session_mode(true)
            .with_json_response(true)
            .with_sse_keep_alive(Some(self.state.http.sse_keep_alive))
            .with_max_request_body_bytes(self.state.http.max_body_bytes)
            .with_cancellation_token(self.stop.child_token());
        let state = self.state.clone();
        // The factory runs once per stateless request or session: a handler is the door's
        // state (Arc clones).
        let service = StreamableHttpService::new(
            move || Ok(McpHandler::new(state.clone())),
            self.state.sessions.manager(),
            config,
        );
        let partner = Router::new()
            .route_service("/agents/{agent}/mcp", service.clone())
            .route_layer(axum::middleware::from_fn_with_state(
                self.state.clone(),
                entry::partner,
            ));
        let host = Router::new().route_service("/mcp", service).route_layer(
            axum::middleware::from_fn_with_state(self.state.clone(), entry::host),
        );
        partner.merge(host).route_layer(span::request("mcp"))
    }

    fn event_wire(&self) -> Option<&dyn EventWire> {
        Some(self)
    }
}

impl EventWire for McpDoor {
    fn wire(&self) -> &'static str {
        "mcp"
    }

    fn renderer(
        &self,
        _agent: &crate::agent::Agent,
        view: &crate::task::TaskView,
    ) -> Box<dyn RenderEvent> {
        let token = ProgressToken(NumberOrString::String("timeline".into()));
        let task = &view.task;
        Box::new(Timeline(Progress::new(
            token,
            &task.id,
            task.completes_on_result,
        )))
    }
}

/// The notifications of a call's progress, one task event at a time.
struct Timeline(Progress);

impl RenderEvent for Timeline {
    fn render_event(&mut self, event: &crate::model::TaskEvent) -> Vec<serde_json::Value> {
        let (notifications, _) = self.0.batch(std::slice::from_ref(event));
        notifications
            .into_iter()
            .map(|params| {
                serde_json::json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": params,
                })
            })
            .collect()
    }
}
