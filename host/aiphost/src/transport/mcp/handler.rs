//! The door's `rmcp` server handler: one per request (the service's factory makes it from the
//! door's state). It says who it is — the partner named in the path, or the host at `/mcp` —
//! from the scope the entry put in the request's extensions, and serves `tools/list` and
//! `tools/call`; every other method is `rmcp`'s default (prompts and resources: method not
//! found).
//!
//! At `/mcp` a call is routed by the host's tool table to its partner and run there as at the
//! partner's own server; the partner's request rate is charged then (the entry cannot know
//! which partner a request is for).

use super::call;
use super::errors;
use super::scope::Scope;
use super::state::McpState;
use super::tools::{HostTools, Tools};
use crate::transport::kit::caller::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, DiscoverResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

/// The handler of one MCP request.
pub(super) struct McpHandler {
    state: McpState,
}

impl McpHandler {
    /// A handler over the door's state.
    pub(super) fn new(state: McpState) -> Self {
        McpHandler { state }
    }
}

/// What the server says of itself: a partner its name, version and description; the host its
/// own, and how its tools are named.
fn identity(scope: &Scope, mut info: ServerConfig) -> ServerConfig {
    match scope {
        Scope::Partner(caller) => {
            let agent = &caller.agent.manifest.agent;
            info.server_info = Implementation::new(agent.name.clone(), agent.version.clone());
            info.instructions = Some(agent.description.clone());
        }
        Scope::Host(_) => {
            info.server_info = Implementation::new("aiphost", env!("CARGO_PKG_VERSION"));
            info.instructions = Some(
                "The partners hosted here that you may use, each skill a tool named \
                 {partner}__{skill}."
                    .into(),
            );
        }
    }
    info
}

/// `result` naming the partner that answered it (`_meta["aiphost.agent"]`), as every result
/// names its task.
fn named(caller: &Caller, mut result: CallToolResult) -> CallToolResult {
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0
        .insert("aiphost.agent".into(), json!(caller.agent.id()));
    result.meta = Some(meta);
    result
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn discover(&self, ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let info = identity(&Scope::of(&ctx)?, self.get_info());
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let scope = Scope::of(&ctx)?;
        ctx.peer.set_peer_info(request.clone());
        Ok(identity(&scope, self.negotiate_initialize(&request)?))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        match Scope::of(&ctx)? {
            // One page: a manifest's skills are few.
            Scope::Partner(caller) => Ok(ListToolsResult::with_all_items(
                Tools::of(&caller.agent).list(),
            )),
            Scope::Host(callers) => {
                let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
                let (tools, next) = HostTools::of(&callers)
                    .page(cursor)
                    .ok_or_else(|| errors::bad_cursor(cursor.unwrap_or_default()))?;
                let mut page = ListToolsResult::with_all_items(tools);
                page.next_cursor = next;
                Ok(page)
            }
        }
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = match Scope::of(&ctx)? {
            Scope::Partner(caller) => caller,
            Scope::Host(callers) => {
                let table = HostTools::of(&callers);
                let Some((caller, own)) = table.route(&request.name) else {
                    return Err(errors::unknown_host_tool(&request.name));
                };
                if let Err(e) = caller.agent.admit_request() {
                    return Ok(named(caller, errors::quota_in_call(&e)).into());
                }
                request.name = own.to_string().into();
                caller.clone()
            }
        };
        call::call(&self.state, &caller, request, &ctx)
            .await
            .map(|result| CallToolResponse::from(named(&caller, result)))
    }
}
