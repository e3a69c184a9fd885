//! The door's `rmcp` server handler: one per request (the service's factory makes it from the
//! door's state). It says who it is — the partner named in the path, whose caller the entry
//! put in the request's extensions — and serves `tools/list`, `tools/call` and the tasks
//! extension's `tasks/get`, `tasks/update` and `tasks/cancel` (`tasks.rs`); every other method
//! is `rmcp`'s default (prompts and resources: method not found).

use super::call;
use super::state::McpState;
use super::tasks;
use super::tools::Tools;
use crate::transport::kit::caller::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, DiscoverResult, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

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

/// The caller the entry authenticated. Every request has passed the entry (it is the route's
/// layer), so its absence is the host's fault.
fn caller(ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the request has no authenticated caller", None))
}

/// What the partner of `caller` says of itself: its name and version, its description as the
/// instructions.
fn identity(caller: &Caller, mut info: ServerConfig) -> ServerConfig {
    let agent = &caller.agent.manifest.agent;
    info.server_info = Implementation::new(agent.name.clone(), agent.version.clone());
    info.instructions = Some(agent.description.clone());
    info
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        // The tasks extension is advertised: `rmcp` answers `tasks/*` with -32601 otherwise,
        // and with -32021 to a request that did not declare it.
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn discover(&self, ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let info = identity(&caller(&ctx)?, self.get_info());
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
        let caller = caller(&ctx)?;
        ctx.peer.set_peer_info(request.clone());
        Ok(identity(&caller, self.negotiate_initialize(&request)?))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller(&ctx)?;
        // One page: a manifest's skills are few (the plan pages by 100 at the host-level /mcp);
        // the door's own aiphost.continue_task comes last.
        Ok(ListToolsResult::with_all_items(
            Tools::of(&caller.agent).list(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&ctx)?;
        call::call(&self.state, &caller, request, &ctx).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::get(&self.state, &caller(&ctx)?, request).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::update(&self.state, &caller(&ctx)?, request).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::cancel(&self.state, &caller(&ctx)?, request).await
    }
}
