//! The MCP server: an rmcp [`ServerHandler`] whose tools, prompts and instructions all come from
//! the [`ToolRegistry`](toolport_tools::ToolRegistry). One [`ToolportServer`] serves one
//! connection (session); the registry and the operator's workspace are shared ([`Shared`]).
//! This file holds the session and the handler, which delegates each request to the file that
//! owns its concern.
//!
//! What it adds on top of rmcp:
//! - tools/list and tools/call straight from the registry, with argument validation and panic
//!   containment ([`call`]); tool errors are `isError` results, an unknown tool is JSON-RPC
//!   -32602;
//! - `serverInfo` naming toolport (rmcp would otherwise report itself);
//! - client roots ([`roots`]): fetched after `initialize` and on `roots/list_changed`, and
//!   used to *narrow* the operator's roots;
//! - progress notifications for tools that report progress, when the request has a token
//!   ([`progress`]); confirmation of risky calls ([`confirm`]);
//! - prompts: `tool_instructions` and one per tool ([`prompts`]);
//! - `notifications/tools/list_changed` (and `prompts/list_changed`) when a reload changes the
//!   listed tools ([`changes`]). Each request reads the registry once, so a call in flight
//!   finishes with the tool it started with;
//! - MCP tasks ([`tasks`]): for a client that declares the tasks extension, a call that left
//!   work running ([`BackgroundTable`](toolport_tools::host::BackgroundTable): a command that
//!   became a job) is answered with a task (that work), and `tasks/get`/`tasks/cancel` reach
//!   it; the work's output is a resource ([`resources`]);
//! - where a session's results carry their payload, and the result cap its default pages fit
//!   under ([`clients`]: by the client's name, or as the operator fixed it);
//! - the tool surface ([`surface`]): the whole list, or the pinned tools with `search_tools`
//!   and `call_tool`, per client ([`clients`]) or as the operator fixed it;
//! - per-tool `_meta` hints in tools/list for Claude Code (`anthropic/searchHint`,
//!   `anthropic/alwaysLoad`, `anthropic/maxResultSizeChars`; built by the registry).

mod call;
mod changes;
mod clients;
mod confirm;
mod custom;
pub(crate) mod forwarded;
mod progress;
mod prompts;
mod resources;
mod roots;
mod surface;
mod tasks;

pub use surface::SearchIndex;

use std::sync::{Arc, RwLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use toolport_tools::host::{
    BackgroundTable, LiveRegistry, PayloadSetting, ResultCapSetting, Session, SurfaceSettings,
    Upstreams,
};
use toolport_tools::{ConfirmFallback, ToolOutput, Workspace};

use crate::observe::audit::AuditLog;
use crate::observe::budget::{BudgetSettings, PrincipalBudgets, SessionBudget};
use crate::observe::metrics::{Metrics, SessionOpen};

/// What every session shares: built once at start-up.
#[derive(Debug)]
pub struct Shared {
    /// Every tool this server serves, shared by all sessions; swapped whole by a reload.
    pub registry: Arc<LiveRegistry>,
    /// What happens to a call that needs confirmation when the client cannot ask
    /// (`[exec] confirm`).
    pub confirm_fallback: ConfirmFallback,
    /// The operator's workspace (roots opened once).
    pub workspace: Arc<Workspace>,
    /// Where every call is recorded, when the operator asked for it (`--audit-log`).
    pub audit: Option<Arc<AuditLog>>,
    /// Counters, gauges and the duration histogram (`/metrics`, `toolport://metrics`).
    pub metrics: Arc<Metrics>,
    /// How many calls a session may make, how fast and how many at once (`[limits]`).
    pub budgets: Arc<BudgetSettings>,
    /// The work calls left running (the commands that outlived their call): MCP tasks are
    /// this work.
    pub jobs: BackgroundTable,
    /// Where results' payload goes (`[tools] payload`).
    pub payload: PayloadSetting,
    /// The result cap default pages fit under (`[tools] result_cap`).
    pub result_cap: ResultCapSetting,
    /// What `tools/list` holds (`[tools] surface`, `pinned`, `search_above`).
    pub surface: SurfaceSettings,
    /// The search surface's index of the served set.
    pub search_index: SearchIndex,
    /// The other MCP servers whose tools are served (`[[upstreams]]`), for their status.
    pub upstreams: Arc<Upstreams>,
    /// What each principal has used of the budgets its policy rules give it.
    pub principal_budgets: Arc<PrincipalBudgets>,
}

/// A tool's output as a successful `tools/call` result: the text block, then one `image`
/// block per image (an upstream's result: its own content blocks, unchanged). The images go
/// to every client whatever the payload form: the form decides where a result's text payload
/// goes, and an image has one form only.
fn tool_result(output: ToolOutput) -> CallToolResult {
    if let Some(content) = output.mcp_content {
        // An upstream's result, as it gave it.
        let mut result = CallToolResult::success(content);
        result.structured_content = output.structured;
        return result;
    }
    let mut content = Vec::with_capacity(1 + output.images.len());
    content.push(ContentBlock::text(output.text));
    content.extend(
        output
            .images
            .into_iter()
            .map(|image| ContentBlock::image(image.data, image.mime_type)),
    );
    let mut result = CallToolResult::success(content);
    result.structured_content = output.structured;
    result
}

/// A failed call as an `isError` result: the error's message for the model, or, for a
/// result the tool reported whole (an upstream's own `isError` result), that result.
fn error_result(error: toolport_tools::ToolError) -> CallToolResult {
    match error {
        toolport_tools::ToolError::Reported(output) => {
            let mut result = tool_result(*output);
            result.is_error = Some(true);
            result
        }
        other => CallToolResult::error(vec![ContentBlock::text(other.to_string())]),
    }
}

/// The handler for one MCP session.
#[derive(Clone)]
pub struct ToolportServer {
    shared: Arc<Shared>,
    /// The workspace this session's calls use: the operator's, narrowed by the client's roots.
    workspace: Arc<RwLock<Arc<Workspace>>>,
    /// The first `roots/list` round trip; tool calls wait for it (bounded by
    /// `roots::ROOTS_TIMEOUT`).
    initial_roots: Arc<OnceCell<()>>,
    /// Held while roots are being refreshed, so a call that arrives meanwhile waits for the
    /// new roots instead of racing with them.
    refreshing: Arc<tokio::sync::Mutex<()>>,
    /// Cancelled when the last handle of this session is dropped (`_end_guard`): stops the
    /// task that forwards tool-list changes to the client.
    session_ended: CancellationToken,
    _end_guard: Arc<tokio_util::sync::DropGuard>,
    /// A random id for this session in the audit log (never the HTTP token).
    session_id: Arc<str>,
    /// `stdio`, `http`, `http-stateless` or `sse`, for the audit log.
    transport: &'static str,
    /// Counts this session in the metrics from `initialized` until its last handle drops.
    session_open: Arc<std::sync::OnceLock<SessionOpen>>,
    /// What this session has used of its call budgets.
    budget: Arc<SessionBudget>,
}

impl ToolportServer {
    /// A handler for a new session.
    pub fn new(shared: Arc<Shared>) -> Self {
        let workspace = Arc::new(RwLock::new(shared.workspace.clone()));
        let budget = SessionBudget::new(shared.budgets.clone());
        let ended = CancellationToken::new();
        Self {
            shared,
            workspace,
            initial_roots: Arc::new(OnceCell::new()),
            refreshing: Arc::new(tokio::sync::Mutex::new(())),
            session_ended: ended.clone(),
            _end_guard: Arc::new(ended.drop_guard()),
            session_id: Session::new_id(),
            transport: "stdio",
            session_open: Arc::default(),
            budget,
        }
    }

    /// The client's name and version: from the request's `_meta` (2026-07-28 clients send
    /// it with every request), else from `initialize` (never on stateless HTTP, where rmcp
    /// fills in a placeholder of its own).
    fn client_name(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        let info = self.client_info(context)?;
        Some(format!("{} {}", info.name, info.version))
    }

    /// Who the client says it is: in the request's `_meta` (2026-07-28), else in its
    /// `initialize` (never a stateless request's: its peer is not the caller).
    fn client_info(&self, context: &RequestContext<RoleServer>) -> Option<Implementation> {
        context.meta.client_info().or_else(|| {
            (self.transport != "http-stateless")
                .then(|| context.peer.peer_info().map(|i| i.client_info.clone()))
                .flatten()
        })
    }

    /// Who the call's jobs belong to: this session, which kills them when it ends. Stateless
    /// HTTP has no sessions: there jobs belong to the principal the request authenticated as
    /// and its client (name and version), and outlive each request, bounded by their own
    /// limits; among replicas, every replica derives the same owner for the same caller.
    fn job_owner(&self, context: &RequestContext<RoleServer>) -> Session {
        if self.transport == "http-stateless" {
            let client = self.client_name(context).unwrap_or_default();
            let subject = crate::identity::Principal::of(context)
                .map(|p| p.subject.clone())
                .unwrap_or_default();
            return Session {
                id: Arc::from(format!("stateless:{subject:?}:{client:?}")),
                ended: CancellationToken::new(),
            };
        }
        Session {
            id: self.session_id.clone(),
            ended: self.session_ended.clone(),
        }
    }

    /// Count this session in the sessions gauge (once; until its last handle drops).
    fn count_session(&self) {
        self.session_open
            .get_or_init(|| self.shared.metrics.session_opened(self.transport));
    }

    /// A 2026-07-28 client on stdio sends no `initialize`: its first request opens the
    /// session. (Over HTTP such requests stand alone and are not sessions.)
    fn count_stdio_session(&self) {
        if self.transport == "stdio" {
            self.count_session();
        }
    }

    /// Name the transport this session runs on (the audit log records it).
    pub(crate) fn with_transport(mut self, transport: &'static str) -> Self {
        self.transport = transport;
        self
    }

    /// This session's handler with a span around every request (`observe::trace`): what the
    /// transports serve. Call it last (it reads the session id and the transport).
    pub(crate) fn traced(self) -> crate::observe::trace::Traced<Self> {
        let (session, transport) = (self.session_id.clone(), self.transport);
        crate::observe::trace::Traced::new(self, session, transport)
    }
}

impl ServerHandler for ToolportServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_tasks()
                .build(),
        )
        .with_server_info(
            Implementation::new("toolport", env!("CARGO_PKG_VERSION")).with_title("toolport"),
        )
        .with_instructions(self.summary())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.count_session();
        self.forward_list_changes(context.peer.clone());
        self.ensure_roots(&context.peer).await;
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    /// 2026-07-28: list changes flow on the client's `subscriptions/listen` stream.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.listen_for_changes(context).await
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.roots_changed(&context.peer).await;
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.count_stdio_session();
        // At once, unless an upstream that is starting asks listings to wait for it.
        self.shared.upstreams.listing_ready().await;
        let registry = self.shared.registry.load();
        // A principal sees only the tools its access token's scopes and policy allow; a
        // session in the search surface, the pinned ones and the two search tools.
        Ok(ListToolsResult::with_all_items(
            self.listing(&registry, &context),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .registry
            .load()
            .mcp_tool(name)
            .or_else(|| Self::surface_tool_entry(name))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.count_stdio_session();
        if self.is_surface_tool(&request.name, &self.shared.registry.load(), &context) {
            return self.surface_call(request, context).await;
        }
        self.call(request, context, None).await
    }

    /// SEP-2663 `tasks/get`: where the work stands, with its result once it ended.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.task_status(&request, &context).await
    }

    /// SEP-2663 `tasks/update`: refused (toolport's tasks never ask for input).
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_update(&request, &context)
    }

    /// SEP-2663 `tasks/cancel`: end the work, and answer once it is gone.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_cancel(&request, &context).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(custom::unreadable(request.method.as_str()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(resources::list(&self.shared))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if let Some(remote) = self.read_remote_job_output(&request.uri, &context).await {
            return remote.map(Into::into);
        }
        self.read_resource_uri(&request.uri, &context)
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(self.prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.prompt(&request.name).map(Into::into)
    }
}
