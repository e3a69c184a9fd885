//! The A2A agent card of a partner (spec 4.4.1, 8), built from its manifest like its ACS
//! document: identity, skills, input and output modes, the two bindings this host serves, what
//! it can do, and how Leaders authenticate. Its `capabilities.extensions` has one entry naming
//! the partner's chat doors and MCP server (the kit's list): they are not A2A bindings, so they stay out of
//! `supportedInterfaces`, from which a client picks one.
//!
//! The JSON-RPC binding also speaks A2A v0.3 ([`v03`]), so the card says so twice: as a third
//! interface with `protocolVersion` 0.3 (v1.0 3.6.2: an agent may serve several versions of a
//! binding), and in v0.3's own top-level fields (`url`, `preferredTransport`,
//! `protocolVersion`, `additionalInterfaces`), without which a v0.3 client can neither read the
//! card (`url` is required there) nor find the endpoint. The official SDK's server does the
//! same. v1.0 clients ignore fields they do not know (v1.0 5.7), though a strict reading of
//! v1.0's card schema, which allows no others, does not.

use super::state::A2aState;
use crate::agent::Agent;
use crate::agent::manifest::{LeaderAuth, Skill};
use crate::protocol::a2a::{VERSION, v03};
use crate::transport::kit::door_urls::{self, DOOR_URLS};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// How long clients may cache a card. A publish changes it (and its `ETag`) at once.
const CARD_MAX_AGE_SECS: u32 = 60;

/// The path under a partner's URL where its JSON-RPC binding is served.
pub const JSONRPC_PATH: &str = "a2a";
/// The path under a partner's URL where its HTTP+JSON binding is served (no trailing `/`: the
/// binding's paths are appended to it).
pub const REST_PATH: &str = "a2a/rest";

/// The agent card of `agent`, served at `agent_url` (e.g. `http://host:port/agents/echo`).
pub fn card(agent: &Agent, agent_url: &str) -> Value {
    let manifest = &agent.manifest;
    let info = &manifest.agent;
    let skills: Vec<Value> = manifest.skills.iter().map(skill).collect();
    let mut card = Map::new();
    card.insert("name".into(), json!(info.name));
    card.insert("description".into(), json!(info.description));
    card.insert("version".into(), json!(info.version));
    // Both fields are required of a provider: a manifest with only one of them has none here.
    if let Some(p) = &info.provider
        && let (Some(organization), Some(url)) = (&p.organization, &p.url)
    {
        card.insert(
            "provider".into(),
            json!({"organization": organization, "url": url}),
        );
    }
    if let Some(url) = &info.documentation_url {
        card.insert("documentationUrl".into(), json!(url));
    }
    let jsonrpc = format!("{agent_url}/{JSONRPC_PATH}");
    card.insert(
        "supportedInterfaces".into(),
        json!([
            {"url": jsonrpc, "protocolBinding": "JSONRPC", "protocolVersion": VERSION},
            {"url": format!("{agent_url}/{REST_PATH}"), "protocolBinding": "HTTP+JSON", "protocolVersion": VERSION},
            // Last, so that a client taking the first JSON-RPC interface gets v1.0.
            {"url": jsonrpc, "protocolBinding": "JSONRPC", "protocolVersion": v03::VERSION},
        ]),
    );
    // v0.3's view: only the JSON-RPC binding speaks v0.3 here (the HTTP+JSON one is v1.0's).
    card.insert("protocolVersion".into(), json!(v03::VERSION));
    card.insert("url".into(), json!(jsonrpc));
    card.insert("preferredTransport".into(), json!("JSONRPC"));
    card.insert(
        "additionalInterfaces".into(),
        json!([{"url": jsonrpc, "transport": "JSONRPC"}]),
    );
    card.insert(
        "capabilities".into(),
        json!({
            "streaming": true,
            "pushNotifications": true,
            "extendedAgentCard": false,
            "extensions": [chat_doors_extension(agent_url)],
        }),
    );
    let security = match manifest.access.leaders {
        LeaderAuth::Open => None,
        LeaderAuth::ApiKey => Some((
            "apiKey",
            json!({"httpAuthSecurityScheme": {
                "scheme": "bearer",
                "description": "An API key the partner's tenant issued to the Leader, sent as `Authorization: Bearer <key>`; it identifies the Leader.",
            }}),
        )),
        LeaderAuth::Mtls => Some((
            "mtls",
            json!({"mtlsSecurityScheme": {
                "description": "A client certificate from the host operator's CA whose URI SAN is acps://{the Leader's AIC}.",
            }}),
        )),
    };
    if let Some((name, scheme)) = security {
        card.insert("securitySchemes".into(), json!({ name: scheme }));
        card.insert(
            "securityRequirements".into(),
            json!([{"schemes": { name: {"list": []} }}]),
        );
    }
    card.insert("defaultInputModes".into(), json!(manifest.input_modes()));
    card.insert("defaultOutputModes".into(), json!(manifest.output_modes()));
    card.insert("skills".into(), Value::Array(skills));
    Value::Object(card)
}

/// The extension naming the partner's other doors (chat doors, MCP): optional (an A2A client needs none of it),
/// its `params` each door's entry URL.
fn chat_doors_extension(agent_url: &str) -> Value {
    let params: Map<String, Value> = DOOR_URLS
        .iter()
        .filter_map(|door| Some((door.card_param?.to_string(), json!(door.at(agent_url)))))
        .collect();
    json!({
        "uri": door_urls::EXTENSION,
        "description": "The same partner and tasks through protocols other than A2A (chat protocols, MCP): params name the URL of each, by protocol.",
        "required": false,
        "params": params,
    })
}

fn skill(s: &Skill) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(s.id));
    out.insert("name".into(), json!(s.name));
    out.insert("description".into(), json!(s.description));
    out.insert("tags".into(), json!(s.tags));
    if !s.examples.is_empty() {
        out.insert("examples".into(), json!(s.examples));
    }
    if !s.input_modes.is_empty() {
        out.insert("inputModes".into(), json!(s.input_modes));
    }
    if !s.output_modes.is_empty() {
        out.insert("outputModes".into(), json!(s.output_modes));
    }
    Value::Object(out)
}

/// `GET /agents/{agent}/.well-known/agent-card.json`, with `ETag`, `Cache-Control` and
/// `Last-Modified`.
pub(super) async fn serve(
    State(app): State<A2aState>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(agent) = app.agents.get(&agent_id) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": format!("no agent {agent_id:?} is hosted here")})),
        )
            .into_response();
    };
    let url = format!("{}/agents/{}", app.http.base_url(&headers), agent.id());
    let body = card(&agent, &url).to_string();
    let etag = format!(
        "\"{}\"",
        Sha256::digest(body.as_bytes())
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let mut response = if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::ETAG, etag),
        (
            header::CACHE_CONTROL,
            format!("public, max-age={CARD_MAX_AGE_SECS}"),
        ),
        (header::LAST_MODIFIED, agent.loaded_at.to_http_date()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    response
}
