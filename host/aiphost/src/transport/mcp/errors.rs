//! The MCP door's errors, in its two places. Before `rmcp` reads a request (the entry), a
//! refusal is an HTTP status with a JSON-RPC error body (`id: null`; the kit's status, code and
//! facts, `WWW-Authenticate: Bearer` on a 401, `Retry-After` on a 429). Inside a call, the spec
//! splits them: an unknown tool or a malformed request is a JSON-RPC error (-32602); anything
//! about running the tool — wrong arguments, the engine refusing the start, a quota — is a
//! result with `isError: true` and `CODE: message`, so the model that called can read it and
//! correct itself; a fault of the host is -32603.

use super::sessions::SessionRefusal;
use crate::protocol::error_object::error_object;
use crate::protocol::mcp::tool_error::tool_error;
use crate::quota::QuotaError;
use crate::refusal::{self, Kind, Refusal};
use crate::task::EngineError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use crate::transport::kit::refusals::{self, HttpRefusal};
use axum::response::Response;
use rmcp::ErrorData;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

/// A request refused at the entry.
#[derive(Debug)]
pub(crate) struct EntryRefusal {
    status: u16,
    error: Map<String, Value>,
}

impl EntryRefusal {
    fn of(r: HttpRefusal) -> Self {
        EntryRefusal {
            status: r.status,
            error: error_object(r.code, r.facts),
        }
    }

    /// Its HTTP status.
    pub(crate) fn status(&self) -> u16 {
        self.status
    }

    /// The HTTP answer.
    pub(crate) fn response(&self) -> Response {
        refusals::respond_json_rpc(self.status, &self.error)
    }
}

/// A request from a browser page whose `Origin` is not listed (`--mcp-allow-origin`): 403.
pub(crate) fn origin(origin: &str) -> EntryRefusal {
    EntryRefusal::of(HttpRefusal {
        status: 403,
        code: "ORIGIN_REFUSED",
        facts: json!({
            "origin": origin,
            "reason": "requests from this Origin (a browser page) are refused by this MCP door; its operator lists the origins it takes with --mcp-allow-origin",
        }),
    })
}

/// The kit's refusal of a caller: 404 for a partner not hosted, else 401/403/500.
pub(crate) fn caller(e: CallerError) -> EntryRefusal {
    EntryRefusal::of(refusals::caller(e))
}

/// A 2025-11-25 session refused: 503 (with when to try again) when as many are open as the
/// host allows; 404 for another caller's session, as `rmcp` answers a session it does not know
/// (whose it is is not said).
pub(super) fn session(e: &SessionRefusal) -> EntryRefusal {
    match e {
        SessionRefusal::Full { max } => EntryRefusal::of(HttpRefusal {
            status: 503,
            code: "SESSIONS_FULL",
            facts: json!({
                "maxSessions": max,
                "retryAfterMs": SESSION_RETRY_MS,
                "reason": format!("{max} MCP sessions are open, the most this host keeps; try again later, or use protocol revision 2026-07-28, which needs none"),
            }),
        }),
        SessionRefusal::Foreign => EntryRefusal::of(HttpRefusal {
            status: 404,
            code: "SESSION_NOT_FOUND",
            facts: json!({"reason": "no such MCP session for this caller"}),
        }),
    }
}

/// When a client refused a session may try again: a session closes after idle minutes.
const SESSION_RETRY_MS: u64 = 30_000;

/// The partner's request rate: 429 with when to try again.
pub(crate) fn quota(e: &QuotaError) -> EntryRefusal {
    EntryRefusal::of(refusals::of(refusal::quota(e)))
}

/// A body refused before it was parsed: 415, 413/408/400.
pub(crate) fn body(e: BodyRefused) -> EntryRefusal {
    EntryRefusal::of(refusals::body(e, "MCP"))
}

/// A call to a tool the partner does not have: -32602.
pub(crate) fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown tool {name:?}; tools/list lists this partner's tools"),
        Some(json!({"tool": name})),
    )
}

/// A call at the host-level `/mcp` to a tool of no partner the caller may use: -32602.
pub(crate) fn unknown_host_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown tool {name:?}; tools/list lists the tools of the partners you may use, each named {{partner}}__{{skill}}"
        ),
        Some(json!({"tool": name})),
    )
}

/// A `tools/list` cursor this door did not give: -32602.
pub(crate) fn bad_cursor(cursor: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown cursor {cursor:?}; use the nextCursor of the previous page"),
        Some(json!({"cursor": cursor})),
    )
}

/// A partner's request rate reached by a call at the host-level `/mcp` (charged once the call
/// names its partner): a tool error saying when to try again.
pub(crate) fn quota_in_call(e: &QuotaError) -> CallToolResult {
    let Refusal { kind, facts } = refusal::quota(e);
    let (_, code) = refusals::status_and_code(kind);
    tool_error(code, facts)
}

/// The engine refused or failed a call's start: what the caller can act on is a tool error
/// with the refusal's code (a field of the start's items said as the arguments'); the host's
/// own fault is -32603.
pub(crate) fn engine(e: EngineError) -> Result<CallToolResult, ErrorData> {
    let Refusal { kind, mut facts } = refusal::engine(e);
    if kind == Kind::Internal {
        let reason = facts["reason"]
            .as_str()
            .unwrap_or("internal error")
            .to_string();
        return Err(ErrorData::internal_error(reason, None));
    }
    for key in ["field", "dataItem"] {
        if let Some(path) = facts.get_mut(key)
            && let Some(rest) = path.as_str().and_then(|f| f.strip_prefix("dataItems"))
        {
            *path = json!(format!("arguments{rest}"));
        }
    }
    let (_, code) = refusals::status_and_code(kind);
    Ok(tool_error(code, facts))
}
