//! Where a client starts: the host's home (`GET /`), its partners (`GET /agents`) and one
//! partner (`GET /agents/{agent}`), each with the URLs of its doors (the chat doors' and the
//! MCP door's from the kit's list, grouped by door: `"agentApi": {"process", "stop"}`). The
//! index and the home also name the host's own MCP server (`"mcp"`: every partner a caller may
//! use, at one URL).

use super::endpoints::Endpoints;
use crate::agent::code::Readiness;
use crate::transport::kit::door_urls::{DOOR_URLS, HOST_MCP_PATH};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

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
    for door in DOOR_URLS {
        described[door.door][door.name] = json!(door.at(&url));
    }
    if let Readiness::Failed(cause) = readiness {
        described["cause"] = json!(&*cause);
    }
    described
}

/// `GET /agents`: every hosted partner.
pub(super) async fn list_agents(State(state): State<Endpoints>, headers: HeaderMap) -> Response {
    let base = state.http.base_url(&headers);
    let agents: Vec<_> = state
        .agents
        .list()
        .iter()
        .map(|a| describe(&base, a))
        .collect();
    let mcp = format!("{base}/{HOST_MCP_PATH}");
    axum::Json(json!({ "agents": agents, "mcp": mcp })).into_response()
}

/// `GET /agents/{agent}`: the partner, its readiness and the URLs of its doors.
pub(super) async fn agent_summary(
    State(state): State<Endpoints>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    // The gate answers for a partner that is not hosted; one unpublished since is a 404 too.
    match state.agents.get(&agent) {
        Some(agent) => axum::Json(describe(&state.http.base_url(&headers), &agent)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /`: what this host is and where to go from here.
pub(super) async fn home(State(state): State<Endpoints>, headers: HeaderMap) -> Response {
    let base = state.http.base_url(&headers);
    axum::Json(json!({
        "name": "aiphost",
        "version": env!("CARGO_PKG_VERSION"),
        "agents": format!("{base}/agents"),
        "health": format!("{base}/healthz"),
        "readiness": format!("{base}/readyz"),
        "metrics": format!("{base}/metrics"),
        "mcp": format!("{base}/{HOST_MCP_PATH}"),
        "hosted": state.agents.list().iter().map(|a| format!("{base}/agents/{}", a.id())).collect::<Vec<_>>(),
    }))
    .into_response()
}
