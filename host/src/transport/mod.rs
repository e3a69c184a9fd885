//! HTTP: the AIP endpoints of every hosted agent, its ACS document, and the host's own endpoints.

mod notification;
mod rpc;
mod stream;

use crate::agent::Registry;
use crate::agent::acs::{self, HostCapabilities};
use crate::task::TaskEngine;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What the HTTP layer needs to know about its host.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// The URL Leaders reach this host at (for ACS documents); without it the request's Host is used.
    pub public_url: Option<String>,
    /// How often an idle stream gets a keep-alive comment.
    pub sse_keep_alive: std::time::Duration,
}

/// Shared state of the HTTP handlers.
#[derive(Clone)]
pub struct AppState {
    pub engine: TaskEngine,
    pub groups: crate::group::Groups,
    pub agents: Arc<Registry>,
    pub config: Arc<HttpConfig>,
}

/// The router of a host.
pub fn router(state: AppState) -> Router {
    let aip = post(rpc::handle);
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/agents", get(list_agents))
        .route("/admin/notifications/given-up", get(given_up))
        .route("/admin/groups", get(group_memberships))
        .route("/agents/{agent}/.well-known/acs.json", get(acs_document))
        .route("/agents/{agent}/rpc", aip.clone())
        .route("/agents/{agent}/stream", aip.clone())
        .route(
            "/agents/{agent}/notification/{op}",
            post(|s, Path((agent, _op)): Path<(String, String)>, b| rpc::handle(s, Path(agent), b)),
        )
        .route("/agents/{agent}/group", aip.clone())
        .route("/agents/{agent}/group/rpc", aip)
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(url) = &state.config.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

async fn list_agents(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let base = base_url(&state, &headers);
    let agents: Vec<_> = state
        .agents
        .iter()
        .map(|a| {
            json!({
                "id": a.id(),
                "aic": a.aic(),
                "name": a.manifest.agent.name,
                "version": a.manifest.agent.version,
                "url": format!("{base}/agents/{}", a.id()),
            })
        })
        .collect();
    axum::Json(json!({ "agents": agents })).into_response()
}

async fn acs_document(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(agent) = state.agents.get(&agent) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": format!("no agent {agent:?} is hosted here")})),
        )
            .into_response();
    };
    let url = format!("{}/agents/{}", base_url(&state, &headers), agent.id());
    axum::Json(acs::document(
        &agent.manifest,
        &url,
        &agent.loaded_at,
        HostCapabilities {
            streaming: true,
            notification: true,
            ..HostCapabilities::default()
        },
    ))
    .into_response()
}

/// The hosted partners' current group memberships.
async fn group_memberships(State(state): State<AppState>) -> Response {
    axum::Json(json!({ "memberships": state.groups.list() })).into_response()
}

/// Notifications the host gave up on (newest last), for operators; tokens are not shown.
async fn given_up(State(state): State<AppState>) -> Response {
    match state.engine.notifier().given_up(1000) {
        Ok(list) => axum::Json(json!({ "givenUp": list })).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot list given-up notifications");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(json!({"error": "the store could not be read"})),
            )
                .into_response()
        }
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let stats = state.engine.stats();
    let counters = [
        (
            "aiphost_commands_total",
            "Leader commands handled",
            stats.commands.load(Ordering::Relaxed),
        ),
        (
            "aiphost_invocations_total",
            "Partner invocations started",
            stats.invocations.load(Ordering::Relaxed),
        ),
        (
            "aiphost_invocation_failures_total",
            "Invocations that failed their task (trap, deadline, limit)",
            stats.invocation_failures.load(Ordering::Relaxed),
        ),
        (
            "aiphost_transitions_total",
            "Task state transitions stored",
            stats.transitions.load(Ordering::Relaxed),
        ),
        (
            "aiphost_timeouts_total",
            "Awaiting timers that expired",
            stats.timeouts.load(Ordering::Relaxed),
        ),
        (
            "aiphost_events_total",
            "Task events logged",
            stats.events.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notifications_delivered_total",
            "Notifications a receiver took (HTTP 200)",
            state
                .engine
                .notifier()
                .stats
                .delivered
                .load(Ordering::Relaxed),
        ),
        (
            "aiphost_notification_failed_attempts_total",
            "Notification attempts that failed (to be retried or given up)",
            state
                .engine
                .notifier()
                .stats
                .failed_attempts
                .load(Ordering::Relaxed),
        ),
        (
            "aiphost_notifications_given_up_total",
            "Notifications given up on after the retry horizon",
            state
                .engine
                .notifier()
                .stats
                .given_up
                .load(Ordering::Relaxed),
        ),
        (
            "aiphost_group_commands_total",
            "Commands taken from group queues",
            state.groups.stats().commands.load(Ordering::Relaxed),
        ),
        (
            "aiphost_group_published_total",
            "Messages published to groups (confirmed by the broker)",
            state.groups.stats().published.load(Ordering::Relaxed),
        ),
        (
            "aiphost_group_duplicates_total",
            "Redelivered group commands recognised as already applied",
            state.groups.stats().duplicates.load(Ordering::Relaxed),
        ),
        (
            "aiphost_group_reconnects_total",
            "Group links that broke and were reopened",
            state.groups.stats().reconnects.load(Ordering::Relaxed),
        ),
        (
            "aiphost_store_flushes_total",
            "Store flushes (shared by concurrent writes)",
            state.engine.store().flush_count(),
        ),
    ];
    let mut text = String::new();
    for (name, help, value) in counters {
        text.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        ));
    }
    text.push_str(&format!(
        "# HELP aiphost_agents Hosted partners\n# TYPE aiphost_agents gauge\naiphost_agents {}\n",
        state.agents.len()
    ));
    text.push_str(&format!(
        "# HELP aiphost_open_streams Event streams open now\n# TYPE aiphost_open_streams gauge\naiphost_open_streams {}\n",
        state.engine.open_streams()
    ));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
