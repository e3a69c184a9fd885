//! HTTP: the AIP endpoints of every hosted agent, its ACS document, and the host's own endpoints.

pub mod a2a;
mod acs;
mod admin;
mod aip;
mod body;
pub mod connections;
mod gate;
pub mod tls;

use crate::agent::Registry;
use crate::agent::code::Readiness;
use crate::agent::manifest::LeaderAuth;
use crate::task::TaskEngine;
use crate::tenant::Tenancy;
use acs::HostCapabilities;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What the HTTP layer needs to know about its host.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// The URL Leaders reach this host at (for ACS documents and agent cards); without it the
    /// request's Host is used.
    pub public_url: Option<String>,
    /// The listener serves HTTPS: a URL built from a request's Host is an `https://` one.
    pub https: bool,
    /// How often an idle stream gets a keep-alive comment.
    pub sse_keep_alive: std::time::Duration,
}

/// Shared state of the HTTP handlers.
#[derive(Clone)]
pub struct AppState {
    /// The task engine every AIP command goes through.
    pub engine: TaskEngine,
    /// Webhook delivery (its configs are checked against its address policy).
    pub notifier: Arc<crate::notify::Notifier>,
    /// Group memberships: answers `group` invitations and lists memberships.
    pub groups: crate::group::Groups,
    /// The hosted partners.
    pub agents: Arc<Registry>,
    /// Tenants, publishing and keys: authenticates admin callers and Leaders.
    pub tenancy: Arc<Tenancy>,
    /// HTTP settings.
    pub config: Arc<HttpConfig>,
    /// The connection layer's counters.
    pub connections: Arc<connections::ConnectionStats>,
}

/// The router of a host.
pub fn router(state: AppState) -> Router {
    let endpoint = post(aip::handle);
    Router::new()
        .route("/", get(home))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/agents/{agent}", get(agent_summary))
        .route("/metrics", get(metrics))
        .route("/agents", get(list_agents))
        .route("/admin/notifications/given-up", get(given_up))
        .route("/admin/groups", get(group_memberships))
        .route("/agents/{agent}/.well-known/acs.json", get(acs_document))
        .route("/agents/{agent}/rpc", endpoint.clone())
        .route("/agents/{agent}/stream", endpoint.clone())
        .route(
            "/agents/{agent}/notification/{op}",
            post(|s, p, Path((agent, _op)): Path<(String, String)>, h, b| {
                aip::handle(s, p, Path(agent), h, b)
            }),
        )
        .route("/agents/{agent}/group", endpoint.clone())
        .route("/agents/{agent}/group/rpc", endpoint)
        .merge(admin_routes())
        .merge(a2a::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            gate::partner,
        ))
        .with_state(state)
}

/// Tenancy and publishing. Every handler reads its body itself, after authenticating, against
/// its own limit (see `admin`); every route here takes its body as a stream.
fn admin_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/admin/tenants",
            get(admin::list_tenants).post(admin::create_tenant),
        )
        .route("/admin/tenants/{tenant}", delete(admin::remove_tenant))
        .route(
            "/admin/agents",
            get(admin::list_published).post(admin::publish),
        )
        .route("/admin/agents/{agent}", delete(admin::unpublish))
        .route("/admin/agents/{agent}/versions", get(admin::versions))
        .route("/admin/agents/{agent}/rollback", post(admin::rollback))
        .route(
            "/admin/agents/{agent}/keys",
            get(admin::list_keys).post(admin::issue_key),
        )
        .route(
            "/admin/agents/{agent}/keys/{key}",
            delete(admin::revoke_key),
        )
        .route("/admin/agents/{agent}/values", get(admin::list_values))
        .route(
            "/admin/agents/{agent}/config/{name}",
            put(admin::set_config).delete(admin::delete_config),
        )
        .route(
            "/admin/agents/{agent}/secrets/{name}",
            put(admin::set_secret).delete(admin::delete_secret),
        )
}

fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(url) = &state.config.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let scheme = if state.config.https { "https" } else { "http" };
    format!("{scheme}://{host}")
}

/// What a client needs to know of a hosted partner: who it is, whether it can run, where its doors are.
fn describe(base: &str, agent: &crate::agent::Agent) -> serde_json::Value {
    let url = format!("{base}/agents/{}", agent.id());
    let readiness = agent.code.readiness();
    let mut described = json!({
        "id": agent.id(),
        "aic": agent.aic(),
        "name": agent.manifest.agent.name,
        "description": agent.manifest.agent.description,
        "version": agent.manifest.agent.version,
        "readiness": readiness.as_str(),
        "url": url,
        "aip": {
            "rpc": format!("{url}/rpc"),
            "stream": format!("{url}/stream"),
            "acs": format!("{url}/.well-known/acs.json"),
        },
        "a2a": {
            "card": format!("{url}/.well-known/agent-card.json"),
            "jsonRpc": format!("{url}/a2a"),
            "rest": format!("{url}/a2a/rest"),
        },
        "a2aCard": format!("{url}/.well-known/agent-card.json"),
    });
    if let Readiness::Failed(cause) = readiness {
        described["cause"] = json!(&*cause);
    }
    described
}

async fn list_agents(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let base = base_url(&state, &headers);
    let agents: Vec<_> = state
        .agents
        .list()
        .iter()
        .map(|a| describe(&base, a))
        .collect();
    axum::Json(json!({ "agents": agents })).into_response()
}

/// `GET /agents/{agent}`: the partner, its readiness and the URLs of its doors.
async fn agent_summary(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    // The gate answers for a partner that is not hosted; one unpublished since is a 404 too.
    match state.agents.get(&agent) {
        Some(agent) => axum::Json(describe(&base_url(&state, &headers), &agent)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /`: what this host is and where to go from here.
async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let base = base_url(&state, &headers);
    axum::Json(json!({
        "name": "aiphost",
        "version": env!("CARGO_PKG_VERSION"),
        "agents": format!("{base}/agents"),
        "health": format!("{base}/healthz"),
        "readiness": format!("{base}/readyz"),
        "metrics": format!("{base}/metrics"),
        "hosted": state.agents.list().iter().map(|a| format!("{base}/agents/{}", a.id())).collect::<Vec<_>>(),
    }))
    .into_response()
}

/// `GET /readyz`: 200 once every hosted partner is ready and the store's disk has room for new
/// work; 503 while any partner compiles or while the disk is below its reserve (new work is
/// refused then: take the host out of rotation). Each partner's readiness and the store's state
/// either way. (`/healthz` says only that the process answers.)
async fn readyz(State(state): State<AppState>) -> Response {
    let mut partners = serde_json::Map::new();
    let mut compiling = 0;
    let mut failed = 0;
    for agent in state.agents.list() {
        let readiness = agent.code.readiness();
        match readiness {
            Readiness::Ready => {}
            Readiness::Compiling => compiling += 1,
            Readiness::Failed(_) => failed += 1,
        }
        partners.insert(agent.id().to_string(), json!(readiness.as_str()));
    }
    let disk = state.engine.disk();
    let store_ok = disk.state == crate::store::DiskState::Ok;
    let status = if compiling > 0 || !store_ok {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = json!({
        "ready": compiling == 0 && store_ok,
        "compiling": compiling,
        "failed": failed,
        "partners": partners,
        "store": {
            "disk": disk.state.as_str(),
            "freeBytes": disk.free,
            "reserveBytes": disk.reserve,
        },
    });
    (status, axum::Json(body)).into_response()
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
    let mut document = acs::document(
        &agent.manifest,
        &url,
        &agent.loaded_at,
        HostCapabilities {
            streaming: true,
            notification: true,
            ..HostCapabilities::default()
        },
    );
    match agent.manifest.access.leaders {
        LeaderAuth::Open => {}
        LeaderAuth::ApiKey => acs::require(&mut document, acs::SecurityScheme::Bearer),
        LeaderAuth::Mtls => acs::require(&mut document, acs::SecurityScheme::MutualTls),
    }
    axum::Json(document).into_response()
}

/// The hosted partners' current group memberships: all for the operator, a tenant's own for it.
async fn group_memberships(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = match admin::principal(&state, &headers) {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    let list: Vec<_> = state
        .groups
        .list()
        .into_iter()
        .filter(|m| admin::may_see(&state.tenancy, &who, &m.agent))
        .collect();
    axum::Json(json!({ "memberships": list })).into_response()
}

/// Notifications the host gave up on (newest last); tokens are not shown. All for the operator,
/// a tenant's own partners' for it.
async fn given_up(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = match admin::principal(&state, &headers) {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    match state.notifier.given_up(1000) {
        Ok(list) => {
            let list: Vec<_> = list
                .into_iter()
                .filter(|g| admin::may_see(&state.tenancy, &who, &g.agent))
                .collect();
            axum::Json(json!({ "givenUp": list })).into_response()
        }
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
            "aiphost_tasks_set_aside_total",
            "Tasks whose stored state could not be read, failed and set aside",
            stats.set_aside.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notifications_delivered_total",
            "Notifications a receiver took (HTTP 200)",
            state.notifier.stats.delivered.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notification_failed_attempts_total",
            "Notification attempts that failed (to be retried or given up)",
            state.notifier.stats.failed_attempts.load(Ordering::Relaxed),
        ),
        (
            "aiphost_notifications_given_up_total",
            "Notifications given up on after the retry horizon",
            state.notifier.stats.given_up.load(Ordering::Relaxed),
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
            "Store syncs: committer rounds that made writes durable, each with one fdatasync (shared by concurrent writes)",
            state.engine.store_flushes(),
        ),
        (
            "aiphost_store_checkpoints_total",
            "Store checkpoints: rounds that flushed sled (the write-ahead log then starts over)",
            state.engine.store_checkpoints(),
        ),
        (
            "aiphost_store_changes_total",
            "Task changes applied by the store's committer, one write-ahead log record per round",
            state.engine.store_changes(),
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
    text.push_str(&format!(
        "# HELP aiphost_task_slots Tasks held in memory now (in use by a command, an invocation or a stream's start)\n# TYPE aiphost_task_slots gauge\naiphost_task_slots {}\n",
        state.engine.slots_in_use()
    ));
    text.push_str("# HELP aiphost_group_commands_refused_total Group commands the engine refused, by JSON-RPC error code (group mode has no channel for errors)\n# TYPE aiphost_group_commands_refused_total counter\n");
    for (code, n) in state.groups.stats().refusals() {
        text.push_str(&format!(
            "aiphost_group_commands_refused_total{{code=\"{code}\"}} {n}\n"
        ));
    }
    let busy = state.engine.busy_partners();
    text.push_str("# HELP aiphost_partner_invocations_running Invocations of a partner running now\n# TYPE aiphost_partner_invocations_running gauge\n");
    for share in &busy {
        text.push_str(&format!(
            "aiphost_partner_invocations_running{{agent=\"{}\"}} {}\n",
            share.agent, share.running
        ));
    }
    text.push_str("# HELP aiphost_partner_invocations_waiting Invocations of a partner waiting for its turn (its share of the guest threads is in use)\n# TYPE aiphost_partner_invocations_waiting gauge\n");
    for share in &busy {
        text.push_str(&format!(
            "aiphost_partner_invocations_waiting{{agent=\"{}\"}} {}\n",
            share.agent, share.waiting
        ));
    }
    let connections = &state.connections;
    text.push_str(&format!(
        "# HELP aiphost_http_connections HTTP connections open now (TLS handshakes included)\n# TYPE aiphost_http_connections gauge\naiphost_http_connections {}\n",
        connections.open.load(Ordering::Relaxed)
    ));
    for (name, help, value) in [
        (
            "aiphost_http_connections_refused_total",
            "HTTP connections refused over --max-connections",
            connections.refused.load(Ordering::Relaxed),
        ),
        (
            "aiphost_http_connections_timed_out_total",
            "HTTP connections closed for a slow client (request head, or an answer it stopped reading)",
            connections.timed_out.load(Ordering::Relaxed),
        ),
    ] {
        text.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
