//! The door's `rmcp` server handler: one per request (the service's factory makes it from the
//! door's state). It says who it is — the partner named in the path, or the host at `/mcp` —
//! from the scope the entry put in the request's extensions, and serves `tools/list`,
//! `tools/call` and the tasks extension's `tasks/get`, `tasks/update` and `tasks/cancel`
//! (`tasks.rs`); every other method is `rmcp`'s default (prompts and resources: method not
//! found). Each request it answers is counted by method and outcome (`stats.rs`).
//!
//! At `/mcp` a call is routed by the host's tool table to its partner and run there as at the
//! partner's own server; the partner's request rate is charged then (the entry cannot know
//! which partner a request is for). A task there is named `{agent}/{task}` (agent ids have no
//! `/`): AIP task ids are unique per partner only, so the MCP id says whose it is.

use super::call;
use super::errors;
use super::scope::Scope;
use super::state::McpState;
use super::stats::Method;
use super::tasks;
use super::tools::{HostTools, Tools};
use crate::transport::kit::caller::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, DiscoverResult,
    GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, UpdateTaskParams,
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

/// The caller a task request is for, and whether the request came to the host's `/mcp`: at a
/// partner's server its own; at `/mcp` the partner named by the id's `{agent}/` (left off the
/// id here). An id naming no partner the caller may use is unknown: -32602.
fn task_caller(
    ctx: &RequestContext<RoleServer>,
    task_id: &mut String,
) -> Result<(Caller, bool), ErrorData> {
    match Scope::of(ctx)? {
        Scope::Partner(caller) => Ok((caller, false)),
        Scope::Host(callers) => {
            let found = task_id.split_once('/').and_then(|(agent, task)| {
                callers
                    .iter()
                    .find(|c| c.agent.id() == agent)
                    .map(|c| (c.clone(), task.to_string()))
            });
            let Some((caller, task)) = found else {
                return Err(ErrorData::invalid_params(
                    format!("unknown task {task_id:?}; at /mcp a task id is {{agent}}/{{task}}"),
                    None,
                ));
            };
            *task_id = task;
            Ok((caller, true))
        }
    }
}

/// Task `task_id` of `caller`'s partner as the host's `/mcp` names it.
fn qualified(caller: &Caller, task_id: &str) -> String {
    format!("{}/{task_id}", caller.agent.id())
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
        let answer = Scope::of(&ctx).map(|scope| {
            DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                identity(&scope, self.get_info()),
            )
        });
        self.state.stats.answered(Method::Other, &answer);
        answer
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let answer = Scope::of(&ctx).and_then(|scope| {
            ctx.peer.set_peer_info(request.clone());
            Ok(identity(&scope, self.negotiate_initialize(&request)?))
        });
        self.state.stats.answered(Method::Other, &answer);
        answer
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let answer = list_tools(request, &ctx);
        self.state.stats.answered(Method::ToolsList, &answer);
        answer
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let answer = self.call(request, &ctx).await;
        self.state.stats.called(&answer);
        answer
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let answer = self.get(request, &ctx).await;
        self.state.stats.answered(Method::TasksGet, &answer);
        answer
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let answer = self.update(request, &ctx).await;
        self.state.stats.answered(Method::TasksUpdate, &answer);
        answer
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let answer = self.cancel(request, &ctx).await;
        self.state.stats.answered(Method::TasksCancel, &answer);
        answer
    }
}

/// `tools/list`: the partner's tools, or a page of the host's table.
fn list_tools(
    request: Option<PaginatedRequestParams>,
    ctx: &RequestContext<RoleServer>,
) -> Result<ListToolsResult, ErrorData> {
    match Scope::of(ctx)? {
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

/// The methods' work, counted by the [`ServerHandler`] methods that call them.
impl McpHandler {
    /// `tools/call`: run at the partner (at `/mcp`, the one the tool's name routes to).
    async fn call(
        &self,
        mut request: CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = match Scope::of(ctx)? {
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
        let host = matches!(Scope::of(ctx)?, Scope::Host(_));
        let response = call::call(&self.state, &caller, request, ctx).await?;
        Ok(match response {
            CallToolResponse::Complete(result) => named(&caller, result).into(),
            CallToolResponse::Task(mut handle) if host => {
                handle.task.task_id = qualified(&caller, &handle.task.task_id);
                handle.into()
            }
            other => other,
        })
    }

    /// `tasks/get`.
    async fn get(
        &self,
        mut request: GetTaskParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (caller, host) = task_caller(ctx, &mut request.task_id)?;
        let mut result = tasks::get(&self.state, &caller, request).await?;
        if host {
            result.task.task.task_id = qualified(&caller, &result.task.task.task_id);
        }
        Ok(result)
    }

    /// `tasks/update`.
    async fn update(
        &self,
        mut request: UpdateTaskParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match task_caller(ctx, &mut request.task_id) {
            Ok((caller, _)) => tasks::update(&self.state, &caller, request).await,
            // The SEP: an update of any id is acknowledged.
            Err(_) => Ok(()),
        }
    }

    /// `tasks/cancel`.
    async fn cancel(
        &self,
        mut request: CancelTaskParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match task_caller(ctx, &mut request.task_id) {
            Ok((caller, _)) => tasks::cancel(&self.state, &caller, request).await,
            // The SEP: a cancel of any id is acknowledged.
            Err(_) => Ok(()),
        }
    }
}
