//! What every MCP request goes through before `rmcp` reads it: (1) the `Origin` rule, (2) who
//! is calling — at `/agents/{agent}/mcp` the kit's caller of that partner (API key, mTLS or an
//! open partner) and its request rate; at `/mcp` every partner the caller may use (the kit's
//! `leader_partners`: a key's partner, an mTLS Leader's partners, the open ones), whose rates
//! are charged when a call names one — then (3) a POST's body, its content type checked and
//! read under the host's size limit and the connection's deadline (the slow-body bound `rmcp`
//! lacks), handed on whole; (4) a 2025-11-25 session's bounds (`sessions.rs`): an
//! `initialize` only while fewer than `--mcp-max-sessions` are open, a session only by the
//! caller that opened it. The scope found rides in the request's extensions, which `rmcp`
//! gives the handler (`RequestContext.extensions` holds the HTTP `Parts`). Every refusal here is
//! counted by its HTTP status (`stats.rs`).
//!
//! The `Origin` rule (the spec: "Servers MUST validate the Origin header … present and invalid
//! → 403"): a request that carries an `Origin` passes only when `--mcp-allow-origin` lists it
//! (`null` by name); browsers send one, MCP clients that are programs do not. Never "the same
//! as Host": a DNS-rebinding page's Origin matches its Host.

use super::errors::{self, EntryRefusal};
use super::scope::Scope;
use super::state::McpState;
use crate::transport::kit::json_body;
use crate::transport::tls::Peer;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;

/// The media types an MCP request body may be sent as.
const MEDIA: &[&str] = &["application/json"];

/// The entry of a partner's server (`from_fn_with_state` on `/agents/{agent}/mcp`).
pub(super) async fn partner(
    State(app): State<McpState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = origin(&app, &request) {
        return refuse(&app, refused);
    }
    let caller = match app.callers.caller(&agent, request.headers(), &peer) {
        Ok(caller) => caller,
        Err(e) => return refuse(&app, errors::caller(e)),
    };
    if let Err(e) = caller.agent.admit_request() {
        return refuse(&app, errors::quota(&e));
    }
    pass(&app, Scope::Partner(caller), request, next).await
}

/// The entry of the host's server (`from_fn_with_state` on `/mcp`).
pub(super) async fn host(
    State(app): State<McpState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = origin(&app, &request) {
        return refuse(&app, refused);
    }
    let callers = match app.callers.leader_partners(request.headers(), &peer) {
        Ok(callers) => callers,
        Err(e) => return refuse(&app, errors::caller(e)),
    };
    pass(&app, Scope::Host(callers.into()), request, next).await
}

/// The refusal of a request whose `Origin` is not listed, if it is one.
fn origin(app: &McpState, request: &Request) -> Option<EntryRefusal> {
    let origin = request.headers().get(header::ORIGIN)?;
    let origin = String::from_utf8_lossy(origin.as_bytes());
    (!app.config.allows_origin(&origin)).then(|| errors::origin(&origin))
}

/// The answer of a request refused at the entry, counted by its status.
fn refuse(app: &McpState, refused: EntryRefusal) -> Response {
    app.stats.refused(refused.status());
    refused.response()
}

/// A request let in with `scope`: its body read whole (a POST's), its session checked, the
/// scope in its extensions.
async fn pass(app: &McpState, scope: Scope, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let mut opens_session = false;
    let body = if parts.method == Method::POST {
        match json_body::bytes(&parts.headers, body, MEDIA, app.http.max_body_bytes).await {
            Ok(bytes) => {
                opens_session = !parts.headers.contains_key(SESSION_ID) && is_initialize(&bytes);
                Body::from(bytes)
            }
            Err(e) => return refuse(app, errors::body(e)),
        }
    } else {
        body
    };
    let owner = scope.owner();
    if let Some(id) = parts.headers.get(SESSION_ID) {
        let id = String::from_utf8_lossy(id.as_bytes());
        if let Err(e) = app.sessions.check(&id, &owner) {
            return refuse(app, errors::session(&e));
        }
    }
    if opens_session && let Err(e) = app.sessions.admit_new().await {
        return refuse(app, errors::session(&e));
    }
    parts.extensions.insert(scope);
    let response = next.run(Request::from_parts(parts, body)).await;
    if opens_session && let Some(id) = response.headers().get(SESSION_ID) {
        let id = String::from_utf8_lossy(id.as_bytes()).into_owned();
        app.sessions.bind(&id, owner).await;
    }
    response
}

/// The header naming a 2025-11-25 session.
const SESSION_ID: &str = "mcp-session-id";

/// Whether `body` is an `initialize` request (which opens a session at 2025-11-25).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method {
        method: Option<String>,
    }
    serde_json::from_slice::<Method>(body).is_ok_and(|m| m.method.as_deref() == Some("initialize"))
}
