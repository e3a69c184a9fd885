//! The ACS (Agent Capability Specification) document served at `{base}/.well-known/acs.json`.
//! Its `endPoints` are AIP's JSON-RPC one first, then each other door's entry URL (the chat
//! doors' and the MCP door's, from the kit's list), its `transport` naming the door's protocol (`AGENT_API`): ACS's `transport`
//! is free text, and a Leader that looks for `JSONRPC` finds it where it always was.

use super::state::AipState;
use crate::agent::manifest::{LeaderAuth, Manifest};
use crate::model::Timestamp;
use crate::transport::kit::door_urls::DOOR_URLS;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// `GET /agents/{agent}/.well-known/acs.json`: the partner's ACS document, with the security
/// scheme its Leaders authenticate with.
pub(super) async fn serve(
    State(app): State<AipState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(agent) = app.agents.get(&agent) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": format!("no agent {agent:?} is hosted here")})),
        )
            .into_response();
    };
    let url = format!("{}/agents/{}", app.http.base_url(&headers), agent.id());
    let mut document = document(
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
        LeaderAuth::ApiKey => require(&mut document, SecurityScheme::Bearer),
        LeaderAuth::Mtls => require(&mut document, SecurityScheme::MutualTls),
    }
    axum::Json(document).into_response()
}

/// What the host can do for every partner, which the ACS `capabilities` reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostCapabilities {
    /// The host answers with SSE streams (the streaming style).
    pub streaming: bool,
    /// The host pushes task notifications to the URLs Leaders register (the notification style).
    pub notification: bool,
    /// The host runs group mode (a message queue, reported as `rabbitmq:3.11`).
    pub group: bool,
}

/// Build the ACS document of a partner served at `agent_url` (e.g. `http://host:port/agents/echo`).
pub fn document(
    manifest: &Manifest,
    agent_url: &str,
    loaded_at: &Timestamp,
    caps: HostCapabilities,
) -> Value {
    let agent = &manifest.agent;
    let mut provider = Map::new();
    if let Some(p) = &agent.provider {
        for (key, value) in [
            ("countryCode", &p.country_code),
            ("organization", &p.organization),
            ("department", &p.department),
            ("url", &p.url),
        ] {
            if let Some(v) = value {
                provider.insert(key.into(), json!(v));
            }
        }
    }
    let skills: Vec<Value> = manifest
        .skills
        .iter()
        .map(|s| {
            json!({
                "id": s.id,
                "name": s.name,
                "description": s.description,
                "version": s.version.clone().unwrap_or_else(|| agent.version.clone()),
                "tags": s.tags,
                "examples": s.examples,
                "inputModes": s.input_modes,
                "outputModes": s.output_modes,
            })
        })
        .collect();
    let mut end_points = vec![json!({"url": format!("{agent_url}/rpc"), "transport": "JSONRPC"})];
    for door in DOOR_URLS {
        if let Some(transport) = door.acs_transport {
            end_points.push(json!({"url": door.at(agent_url), "transport": transport}));
        }
    }
    let mut doc = json!({
        "aic": agent.aic,
        "active": true,
        "lastModifiedTime": loaded_at,
        "protocolVersion": "02.00",
        "name": agent.name,
        "description": agent.description,
        "version": agent.version,
        "provider": provider,
        "securitySchemes": {},
        "endPoints": end_points,
        "capabilities": {
            "streaming": caps.streaming,
            "notification": caps.notification,
            "messageQueue": if caps.group { json!(["rabbitmq:3.11"]) } else { json!([]) },
        },
        "defaultInputModes": manifest.input_modes(),
        "defaultOutputModes": manifest.output_modes(),
        "skills": skills,
    });
    if let (Some(url), Value::Object(obj)) = (&agent.documentation_url, &mut doc) {
        obj.insert("documentationUrl".into(), json!(url));
    }
    doc
}

/// How Leaders authenticate to a partner, as its ACS document declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecurityScheme {
    /// `Authorization: Bearer <API key>`.
    Bearer,
    /// A client certificate naming the Leader's AIC.
    MutualTls,
}

/// Declare `scheme` (OpenAPI-style) and require it on every endpoint.
pub fn require(document: &mut Value, scheme: SecurityScheme) {
    let (name, definition) = match scheme {
        SecurityScheme::Bearer => (
            "apiKey",
            json!({
                "type": "http",
                "scheme": "bearer",
                "description": "An API key the partner's tenant issued to the Leader, sent as `Authorization: Bearer <key>`; it identifies the Leader's AIC.",
            }),
        ),
        SecurityScheme::MutualTls => (
            "mtls",
            json!({
                "type": "mutualTLS",
                "description": "A client certificate from the host operator's CA whose URI SAN is acps://{the Leader's AIC}.",
            }),
        ),
    };
    let requirement = json!([{ name: [] }]);
    document["securitySchemes"] = json!({ name: definition });
    document["security"] = requirement.clone();
    if let Some(endpoints) = document["endPoints"].as_array_mut() {
        for endpoint in endpoints {
            endpoint["security"] = requirement.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_carries_identity_skills_and_endpoint() {
        let m = Manifest::parse(
            r#"
[agent]
id = "echo"
aic = "1.2.3"
name = "Echo"
description = "d"
version = "1.0.0"
[[skills]]
id = "s"
name = "S"
description = "sd"
input-modes = ["text/plain"]
output-modes = ["text/plain"]
"#,
            "t",
        )
        .unwrap();
        let doc = document(
            &m,
            "http://h/agents/echo",
            &Timestamp::now(),
            HostCapabilities::default(),
        );
        assert_eq!(doc["aic"], "1.2.3");
        assert_eq!(doc["endPoints"][0]["url"], "http://h/agents/echo/rpc");
        assert_eq!(doc["endPoints"][0]["transport"], "JSONRPC");
        assert_eq!(
            doc["endPoints"][1],
            json!({"url": "http://h/agents/echo/process", "transport": "AGENT_API"})
        );
        assert_eq!(doc["skills"][0]["version"], "1.0.0");
        assert_eq!(doc["skills"][0]["inputModes"][0], "text/plain");
        assert_eq!(doc["capabilities"]["streaming"], false);
        assert_eq!(doc["defaultInputModes"], json!(["text/plain"]));
    }
}
