//! Whom an MCP request is for, as the entry found it: one partner (`/agents/{agent}/mcp`, its
//! Leader authenticated as at every door) or the host (`/mcp`: every partner its caller may
//! use, each with the caller it is used as). The entry puts it in the request's extensions;
//! `rmcp` hands those to the handler (`RequestContext.extensions` holds the HTTP `Parts`).

use crate::transport::kit::caller::Caller;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use std::sync::Arc;

/// The partners one request may reach.
#[derive(Clone)]
pub(super) enum Scope {
    /// One partner's server.
    Partner(Caller),
    /// The host's server: these partners, in the registry's order.
    Host(Arc<[Caller]>),
}

impl Scope {
    /// The scope the entry authenticated. Every request has passed the entry (it is the
    /// route's layer), so its absence is the host's fault.
    pub(super) fn of(ctx: &RequestContext<RoleServer>) -> Result<Scope, ErrorData> {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Scope>())
            .cloned()
            .ok_or_else(|| {
                ErrorData::internal_error("the request has no authenticated caller", None)
            })
    }

    /// Who this scope is, as a session records its opener: the partner or the host, and the
    /// namespaces its caller's tasks live in.
    pub(super) fn owner(&self) -> String {
        let one = |c: &Caller| format!("{}:{}", c.agent.id(), c.owner.as_deref().unwrap_or(""));
        match self {
            Scope::Partner(caller) => format!("partner {}", one(caller)),
            Scope::Host(callers) => {
                let all: Vec<String> = callers.iter().map(one).collect();
                format!("host {}", all.join(" "))
            }
        }
    }
}
