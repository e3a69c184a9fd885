//! What every MCP request goes through before `rmcp` reads it: (1) the `Origin` rule, (2) who
//! is calling (the kit's caller: API key, mTLS or an open partner), (3) the partner's request
//! rate, (4) a POST's body, its content type checked and read under the host's size limit and
//! the connection's deadline (the slow-body bound `rmcp` lacks), then handed on whole. The
//! caller rides in the request's extensions, which `rmcp` gives the handler
//! (`RequestContext.extensions` holds the HTTP `Parts`).
//!
//! The `Origin` rule (the spec: "Servers MUST validate the Origin header … present and invalid
//! → 403"): a request that carries an `Origin` is refused, whatever it names. Browsers send one;
//! MCP clients that are programs do not. Never "the same as Host": a DNS-rebinding page's
//! Origin matches its Host. An allow-list (`--mcp-allow-origin`, decision 7 of the plan) is
//! still to come; until then no browser page can call the door.

use super::errors;
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

/// The entry layer (`from_fn_with_state`).
pub(super) async fn enter(
    State(app): State<McpState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Path(agent): Path<String>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        return errors::origin(&origin).response();
    }
    let caller = match app.callers.caller(&agent, request.headers(), &peer) {
        Ok(caller) => caller,
        Err(e) => return errors::caller(e).response(),
    };
    if let Err(e) = caller.agent.admit_request() {
        return errors::quota(&e).response();
    }
    let (mut parts, body) = request.into_parts();
    let body = if parts.method == Method::POST {
        match json_body::bytes(&parts.headers, body, MEDIA, app.http.max_body_bytes).await {
            Ok(bytes) => Body::from(bytes),
            Err(e) => return errors::body(e).response(),
        }
    } else {
        body
    };
    parts.extensions.insert(caller);
    next.run(Request::from_parts(parts, body)).await
}
