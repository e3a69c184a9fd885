//! The A2A door: every hosted partner is also an A2A (v1.0) agent, with the same tasks,
//! durability, tenancy and sandbox as over AIP.
//!
//! - `GET /agents/{agent}/.well-known/agent-card.json`: its agent card ([`card`]), with `ETag`,
//!   `Cache-Control` and `Last-Modified`;
//! - `POST /agents/{agent}/a2a` (and `…/a2a/`): the JSON-RPC binding ([`jsonrpc`]);
//! - `/agents/{agent}/a2a/rest/…`: the HTTP+JSON binding ([`rest`]).
//!
//! Both bindings carry the same [`operations`], which go through the task engine exactly as
//! AIP's doors do (a message is a `start` or a `continue`, a cancel a `cancel`), with A2A's
//! [`CommandPolicy`](crate::model::CommandPolicy): a task completes as soon as its partner
//! has a result, and ended tasks refuse messages. Errors become A2A errors in one place each:
//! `A2aError::to_jsonrpc` and `A2aError::to_http`.

pub mod card;
mod common;
pub(crate) mod errors;
mod events;
mod jsonrpc;
mod operations;
mod push;
mod rest;

use super::AppState;
use super::tls::Peer;
use crate::agent::Agent;
use crate::model::notification::NoticeFormat;
use crate::protocol::a2a::{A2aError, A2aErrorKind, VERSION};
use crate::store::TaskKey;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// How long clients may cache a card. A publish changes it (and its `ETag`) at once.
const CARD_MAX_AGE_SECS: u32 = 60;

/// The A2A routes of every hosted partner.
pub fn routes() -> Router<AppState> {
    let rest = "/agents/{agent}/a2a/rest";
    Router::new()
        .route(
            "/agents/{agent}/.well-known/agent-card.json",
            get(agent_card),
        )
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
}

/// Who is calling, about which partner.
pub(super) struct Caller {
    /// The partner.
    pub(super) agent: Arc<Agent>,
    /// The authenticated Leader, whose task namespace the call acts in (`None`: an open
    /// partner's shared one).
    pub(super) owner: Option<String>,
    /// The request is in A2A v0.3's shapes (the JSON-RPC binding's v0.3 methods).
    pub(super) v03: bool,
}

impl Caller {
    /// What the notifications of a push config this caller makes look like.
    pub(super) fn notice_format(&self) -> NoticeFormat {
        if self.v03 {
            NoticeFormat::A2aV03
        } else {
            NoticeFormat::A2a
        }
    }

    /// Task `task` of this partner in the caller's namespace.
    pub(super) fn key(&self, task: &str) -> TaskKey {
        TaskKey::owned(self.agent.id(), self.owner.as_deref(), task)
    }
}

/// The partner `agent_id` and the Leader calling it, authenticated as over AIP.
fn caller(
    app: &AppState,
    agent_id: &str,
    headers: &HeaderMap,
    peer: &Peer,
) -> Result<Caller, A2aError> {
    let agent = app.agents.get(agent_id).ok_or_else(|| {
        A2aError::new(
            A2aErrorKind::InvalidRequest,
            json!({"reason": format!("no agent {agent_id:?} is hosted here; GET /agents lists them")}),
        )
    })?;
    let owner = app
        .tenancy
        .authenticate_leader(&agent, super::admin::bearer(headers), peer.certificate())
        .map_err(|e| errors::leader_auth(&e))?;
    Ok(Caller {
        agent,
        owner,
        v03: false,
    })
}

/// VersionNotSupported unless the request asks for the version served here (or none).
fn check_version(headers: &HeaderMap) -> Result<(), A2aError> {
    let asked = headers
        .get("a2a-version")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
        .unwrap_or_default();
    if asked.is_empty() || asked == VERSION || asked == "1" {
        return Ok(());
    }
    Err(A2aError::new(
        A2aErrorKind::VersionNotSupported,
        json!({"requested": asked, "supported": VERSION}),
    ))
}

/// ContentTypeNotSupported unless the body says it is JSON (`application/json` or A2A's
/// `application/a2a+json`). Checked before the body is read: a browser may send `text/plain`
/// anywhere without asking (see the AIP door).
fn check_json_body(headers: &HeaderMap) -> Result<(), A2aError> {
    let given = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let media = given
        .as_deref()
        .and_then(|v| v.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    if matches!(
        media.as_deref(),
        Some("application/json" | "application/a2a+json")
    ) {
        return Ok(());
    }
    Err(A2aError::new(
        A2aErrorKind::ContentTypeNotSupported,
        json!({
            "reason": "an A2A request body must be sent as `Content-Type: application/json`",
            "contentType": given,
        }),
    ))
}

/// `GET /agents/{agent}/.well-known/agent-card.json`.
async fn agent_card(
    State(app): State<AppState>,
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
    let url = format!("{}/agents/{}", super::base_url(&app, &headers), agent.id());
    let body = card::card(&agent, &url).to_string();
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
