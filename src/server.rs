//! The MCP server: an rmcp [`ServerHandler`] whose tools, prompts and instructions all come from
//! the [`ToolRegistry`]. One [`ToolportServer`] serves one connection (session); the registry
//! and the operator's workspace are shared ([`Shared`]).
//!
//! What it adds on top of rmcp:
//! - tools/list and tools/call straight from the registry, with argument validation and panic
//!   containment ([`ToolRegistry::execute`]); tool errors are `isError` results, an unknown tool
//!   is JSON-RPC -32602;
//! - `serverInfo` naming toolport (rmcp would otherwise report itself);
//! - client roots: fetched after `initialize` and on `roots/list_changed`, and used to
//!   *narrow* the operator's roots ([`Workspace::narrow`]);
//! - progress notifications for tools that report progress, when the request has a token;
//! - prompts: `tool_instructions` and one per tool;
//! - `notifications/tools/list_changed` (and `prompts/list_changed`: prompts follow the tools)
//!   when a reload changes the listed tools: pushed to sessions that used `initialize`, and on
//!   `subscriptions/listen` streams for 2026-07-28 clients. Each request reads the registry
//!   once, so a call in flight finishes with the tool it started with;
//! - MCP tasks ([`tasks`]): for a client that declares the tasks extension, a call whose
//!   command became a job is answered with a task (the job), and `tasks/get`/`tasks/cancel`
//!   reach it;
//! - where a session's results carry their payload ([`clients`]: by the client's name, or as
//!   the operator fixed it).

mod clients;
mod tasks;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, InputRequest,
    InputRequests, InputRequiredResult, ListPromptsResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, Prompt, PromptMessage, ProtocolVersion, Role,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams};
use rmcp::model::{CustomRequest, CustomResult};
use rmcp::model::{
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::observe::audit::{AuditLog, Outcome};
use crate::observe::budget::{BudgetSettings, SessionBudget};
use crate::observe::metrics::{self, Metrics, SessionOpen};
use crate::observe::{Call, Failure, TOOL_ERROR};
use crate::registry::{ExecuteError, LiveRegistry};
use crate::tool::{
    ConfirmFallback, Confirmation, Confirmer, ProgressSink, Session, ToolContext, ToolOutput,
};
use crate::tools::PayloadSetting;
use crate::workspace::{Workspace, client_root_path};

/// How long to wait for the client's answer to `roots/list`. A client that declares roots but
/// never answers must not stall tool calls; after this the operator's roots stay in force.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the user has to answer a confirmation dialog. Generous (a human reads the
/// command), but bounded so an abandoned dialog does not hold a call forever.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(600);

/// The key of the confirmation question in a 2026-07-28 `InputRequiredResult`.
const CONFIRM_KEY: &str = "confirm";

/// The failure record of a call to a tool that does not exist (a JSON-RPC error).
fn unknown_tool(error: &McpError) -> Failure {
    Failure {
        kind: "unknown_tool",
        message: error.message.to_string(),
        outcome: Outcome::Error,
        error_type: INVALID_PARAMS_CODE,
    }
}

/// The error kind of a call refused by a budget (`[limits]`).
const OVER_BUDGET: &str = "over_budget";

/// The metrics' tool label for a call to a tool that does not exist.
const UNKNOWN_TOOL_LABEL: &str = "(unknown)";

/// JSON-RPC's "internal error" code as an `error.type`.
const INTERNAL_ERROR_CODE: &str = "-32603";

/// JSON-RPC's "invalid params" code as the `error.type` of an unknown tool.
const INVALID_PARAMS_CODE: &str = "-32602";

/// The name of the prompt that holds every tool's instructions.
pub(crate) const ALL_INSTRUCTIONS_PROMPT: &str = "tool_instructions";

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
    /// The commands that outlived their call: MCP tasks are these jobs.
    pub jobs: crate::tools::exec::JobTable,
    /// Where results' payload goes (`[tools] payload`).
    pub payload: PayloadSetting,
}

/// A tool's output as a successful `tools/call` result.
fn tool_result(output: ToolOutput) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.text)]);
    result.structured_content = output.structured;
    result
}

/// Where a job's output is offered as a resource: `toolport://jobs/ID/stdout` and `/stderr`.
const JOB_RESOURCE_PREFIX: &str = "toolport://jobs/";

/// Most bytes one `resources/read` of a job's output returns: its start, for a look; the
/// rest is paged with job_output (a resource read has no offsets).
const JOB_RESOURCE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// The resource links to a job's output, added to the results that name a job.
fn job_links(id: &str) -> Vec<ContentBlock> {
    ["stdout", "stderr"]
        .into_iter()
        .map(|stream| {
            ContentBlock::resource_link(
                Resource::new(format!("{JOB_RESOURCE_PREFIX}{id}/{stream}"), format!("{id} {stream}"))
                    .with_description(format!("The whole {stream} of {id} so far (its start, up to 4 MiB; page the rest with job_output)"))
                    .with_mime_type("text/plain"),
            )
        })
        .collect()
}

/// The handler for one MCP session.
#[derive(Clone)]
pub struct ToolportServer {
    shared: Arc<Shared>,
    /// The workspace this session's calls use: the operator's, narrowed by the client's roots.
    workspace: Arc<RwLock<Arc<Workspace>>>,
    /// The first `roots/list` round trip; tool calls wait for it (bounded by [`ROOTS_TIMEOUT`]).
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
            session_id: crate::tool::Session::new_id(),
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
    /// HTTP has no sessions: there jobs belong to the client (its name and version, behind
    /// the one bearer token) and outlive each request, bounded by their own limits.
    fn job_owner(&self, context: &RequestContext<RoleServer>) -> Session {
        if self.transport == "http-stateless" {
            let client = self.client_name(context).unwrap_or_default();
            return Session {
                id: Arc::from(format!("stateless:{client}")),
                ended: CancellationToken::new(),
            };
        }
        Session {
            id: self.session_id.clone(),
            ended: self.session_ended.clone(),
        }
    }

    /// `resources/read` of `toolport://jobs/ID/stdout` (or `/stderr`): the start of a job's
    /// whole output, for the session that owns it.
    fn read_job_output(
        &self,
        uri: &str,
        rest: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        use crate::tools::exec::process::Which;
        let not_found = |why: String| McpError::resource_not_found(why, None);
        let (id, which) = match rest.split_once('/') {
            Some((id, "stdout")) => (id, Which::Stdout),
            Some((id, "stderr")) => (id, Which::Stderr),
            _ => {
                return Err(not_found(format!(
                    "{uri:?} is not a job's output: use {JOB_RESOURCE_PREFIX}JOB_ID/stdout or /stderr"
                )));
            }
        };
        let job = self
            .shared
            .jobs
            .get(&self.job_owner(context), id)
            .map_err(|e| not_found(e.to_string()))?;
        let chunk = job
            .live
            .read(which, 0, JOB_RESOURCE_MAX_BYTES)
            .map_err(|e| {
                McpError::internal_error(format!("cannot read the job's output: {e}"), None)
            })?;
        let mut text = chunk.text;
        let readable = job.live.readable(which);
        if chunk.next < readable {
            text.push_str(&format!(
                "\n[... {} more bytes: read them with job_output from offset {} ...]\n",
                readable - chunk.next,
                chunk.next
            ));
        }
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/plain"),
        ])
        .into())
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

    /// Forward every change of the listed tools to this session's client until the session
    /// ends (sessions opened with `initialize`; 2026-07-28 clients use `listen`).
    fn forward_list_changes(&self, peer: Peer<RoleServer>) {
        let mut changes = self.shared.registry.changes();
        let ended = self.session_ended.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = ended.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                if peer.is_transport_closed() {
                    return;
                }
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%error, "could not send tools/list_changed; the session has ended");
                    return;
                }
                let _ = peer.notify_prompt_list_changed().await;
            }
        });
    }

    /// The workspace this session currently uses.
    pub fn workspace(&self) -> Arc<Workspace> {
        match self.workspace.read() {
            Ok(ws) => ws.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_workspace(&self, ws: Arc<Workspace>) {
        match self.workspace.write() {
            Ok(mut slot) => *slot = ws,
            Err(poisoned) => *poisoned.into_inner() = ws,
        }
    }

    fn client_has_roots(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some())
    }

    /// Ask the client for its roots and narrow this session's workspace to them. A client that
    /// lists no roots (the MCP Inspector CLI does this) leaves the operator's roots in force.
    #[allow(deprecated)] // roots are deprecated by SEP-2577 but every current client uses them
    async fn refresh_roots(&self, peer: &Peer<RoleServer>) {
        if !Self::client_has_roots(peer) {
            return;
        }
        let _refreshing = self.refreshing.lock().await;
        let listed = match tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await {
            Ok(Ok(result)) => result.roots,
            Ok(Err(error)) => {
                tracing::warn!(%error, "roots/list failed; keeping the server's roots");
                return;
            }
            Err(_) => {
                tracing::warn!(
                    "the client did not answer roots/list in time; keeping the server's roots"
                );
                return;
            }
        };
        let operator = &self.shared.workspace;
        if listed.is_empty() {
            self.set_workspace(operator.clone());
            return;
        }
        let paths: Vec<_> = listed
            .iter()
            .filter_map(|root| {
                let path = client_root_path(&root.uri);
                if path.is_none() {
                    tracing::warn!(uri = %root.uri, "ignoring a client root that is not an existing file:// directory");
                }
                path
            })
            .collect();
        let narrowed = operator.narrow(&paths);
        tracing::info!(roots = %narrowed.describe_roots(), "using the client's roots (within the server's)");
        self.set_workspace(Arc::new(narrowed));
    }

    async fn ensure_roots(&self, peer: &Peer<RoleServer>) {
        if Self::client_has_roots(peer) {
            self.initial_roots
                .get_or_init(|| self.refresh_roots(peer))
                .await;
        }
    }

    /// The `instructions` sent at initialize: what is served and where paths may go.
    pub(crate) fn summary(&self) -> String {
        let registry = self.shared.registry.load();
        let tools: Vec<String> = registry
            .all()
            .iter()
            .map(|t| match t.title() {
                Some(title) => format!("{} ({title})", t.name()),
                None => t.name().to_owned(),
            })
            .collect();
        let ws = &self.shared.workspace;
        format!(
            "toolport serves {} tools: {}. File paths must lie inside the workspace roots ({}); relative paths resolve against the first root. Secret files (.env, private keys, .ssh …) are never read. Every tool states its limits in its description; the prompt `{ALL_INSTRUCTIONS_PROMPT}` has detailed usage for all of them.",
            tools.len(),
            tools.join(", "),
            ws.describe_roots()
        )
    }

    fn prompt_text(&self, name: &str) -> Option<String> {
        let registry = self.shared.registry.load();
        if name == ALL_INSTRUCTIONS_PROMPT {
            return Some(registry.instructions());
        }
        registry.get(name).map(|t| t.instructions())
    }
}

/// Progress over MCP: `notifications/progress` with the request's token.
struct McpProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

#[async_trait]
impl ProgressSink for McpProgress {
    async fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(message) = message {
            param = param.with_message(message);
        }
        if let Err(error) = self.peer.notify_progress(param).await {
            tracing::debug!(%error, "could not send a progress notification");
        }
    }
}

/// Confirmation over MCP: `elicitation/create` on the protocol versions with `initialize`, an
/// `InputRequiredResult` round trip on 2026-07-28, and the operator's fallback when the client
/// cannot ask its user.
struct McpConfirmer {
    peer: Peer<RoleServer>,
    /// The request uses the 2026-07-28 protocol (server-to-client requests are forbidden).
    input_required_flow: bool,
    /// The client declared the elicitation capability.
    can_elicit: bool,
    /// The answer to an earlier `InputRequiredResult`, when the client retries with one.
    answer: Option<serde_json::Value>,
    fallback: ConfirmFallback,
}

fn confirm_params(description: &str) -> Result<ElicitRequestParams, &'static str> {
    let schema = ElicitationSchema::builder()
        .required_bool_property(CONFIRM_KEY, |b| {
            b.title("Run it")
                .description("Check to allow this call; leave unchecked or decline to refuse it")
        })
        .build()?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "An AI agent wants to run a risky tool call through toolport. Allow it?\n\n{description}"
        ),
        requested_schema: schema,
    })
}

/// Whether an elicitation result says yes: accepted, with `confirm: true`.
fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|c| c.get(CONFIRM_KEY))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

#[async_trait]
impl Confirmer for McpConfirmer {
    async fn confirm(&self, description: &str) -> Confirmation {
        if self.input_required_flow {
            return match &self.answer {
                Some(answer) => match serde_json::from_value::<ElicitResult>(answer.clone()) {
                    Ok(result) if accepted(&result) => Confirmation::Accepted,
                    _ => Confirmation::Declined,
                },
                None if self.can_elicit => Confirmation::AskClient,
                None => self
                    .fallback
                    .answer("the client does not support elicitation", description),
            };
        }
        if !self.can_elicit {
            return self.fallback.answer(
                "the client does not support elicitation, so toolport cannot ask the user",
                description,
            );
        }
        let params = match confirm_params(description) {
            Ok(params) => params,
            Err(error) => {
                return Confirmation::Unavailable(format!(
                    "cannot build the confirmation question: {error}"
                ));
            }
        };
        match self
            .peer
            .create_elicitation_with_timeout(params, Some(CONFIRM_TIMEOUT))
            .await
        {
            Ok(result) if accepted(&result) => Confirmation::Accepted,
            Ok(_) => Confirmation::Declined,
            Err(error) => Confirmation::Unavailable(format!(
                "asking the user for confirmation failed ({error}); the call was not run"
            )),
        }
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
        let mut changes = self.shared.registry.changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => if changed.is_err() { return Ok(()) },
            }
            context
                .sink()
                .notify_tool_list_changed()
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let _ = context.sink().notify_prompt_list_changed().await;
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.refresh_roots(&context.peer).await;
        // The fresh list counts as the first one if no call has fetched roots yet.
        let _ = self.initial_roots.set(());
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.count_stdio_session();
        Ok(ListToolsResult::with_all_items(
            self.shared.registry.load().mcp_tools(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.registry.load().mcp_tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.count_stdio_session();
        let name = request.name.to_string();
        // One snapshot for the whole call: a reload meanwhile does not change the tool.
        let registry = self.shared.registry.load();
        let facts: Arc<crate::tool::CallFacts> = Arc::default();
        let audit = self.shared.audit.as_ref().map(|log| {
            log.begin(
                self.session_id.clone(),
                self.transport,
                self.client_name(&context),
                &name,
                request.arguments.as_ref().unwrap_or(&Default::default()),
            )
        });
        let known = registry.get(&name).is_some();
        // Metrics label an unknown tool with one name: a client calling random names must
        // not create a label set per name.
        let label = if known {
            name.as_str()
        } else {
            UNKNOWN_TOOL_LABEL
        };
        let call = Call::begin(&self.shared.metrics, audit, label, facts.clone());
        // Checked before waiting for the client's roots: an unknown tool is answered at once.
        if !known {
            let error = McpError::invalid_params(registry.unknown(&name).to_string(), None);
            call.finish(Some(unknown_tool(&error)), 0);
            return Err(error);
        }
        // Before anything runs: a call over its session's budget is refused, not queued.
        let permit = match self.budget.admit(&name) {
            Ok(permit) => permit,
            Err(denial) => {
                let result = CallToolResult::error(vec![ContentBlock::text(denial.to_string())]);
                let failure = Failure {
                    kind: OVER_BUDGET,
                    message: denial.to_string(),
                    outcome: Outcome::Denied,
                    error_type: TOOL_ERROR,
                };
                let size = call.size_of(&result);
                call.finish(Some(failure), size);
                return Ok(result.into());
            }
        };
        self.ensure_roots(&context.peer).await;
        drop(self.refreshing.lock().await);
        let progress: Arc<dyn ProgressSink> = match context.meta.get_progress_token() {
            Some(token) => Arc::new(McpProgress {
                peer: context.peer.clone(),
                token,
            }),
            None => Arc::new(crate::tool::NoProgress),
        };
        let ctx = ToolContext {
            cancel: context.ct.clone(),
            progress,
            workspace: self.workspace(),
            confirmer: Arc::new(McpConfirmer {
                peer: context.peer.clone(),
                input_required_flow: context
                    .protocol_version()
                    .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28),
                can_elicit: context
                    .client_capabilities()
                    .is_some_and(|caps| caps.elicitation.is_some()),
                answer: request
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get(CONFIRM_KEY))
                    .cloned(),
                fallback: self.shared.confirm_fallback,
            }),
            facts: facts.clone(),
            session: self.job_owner(&context),
            payload: clients::payload_for(
                self.shared.payload,
                self.client_info(&context).as_ref().map(|i| i.name.as_str()),
            ),
        };
        let args = request.arguments.clone().unwrap_or_default();
        let mut failure = None;
        let result = match registry.execute(&name, args, &ctx).await {
            Ok(output) => tool_result(output),
            Err(ExecuteError::Tool(error)) => {
                failure = Some(Failure::tool(&error, &facts));
                CallToolResult::error(vec![ContentBlock::text(error.to_string())])
            }
            Err(unknown @ ExecuteError::UnknownTool { .. }) => {
                let error = McpError::invalid_params(unknown.to_string(), None);
                call.finish(Some(unknown_tool(&error)), 0);
                return Err(error);
            }
            Err(ExecuteError::ConfirmationRequired { description }) => {
                let params = match confirm_params(&description) {
                    Ok(params) => params,
                    Err(e) => {
                        let error = McpError::internal_error(e.to_owned(), None);
                        call.finish(
                            Some(Failure {
                                kind: "internal_error",
                                message: error.message.to_string(),
                                outcome: Outcome::Error,
                                error_type: INTERNAL_ERROR_CODE,
                            }),
                            0,
                        );
                        return Err(error);
                    }
                };
                let mut requests = InputRequests::new();
                requests.insert(
                    CONFIRM_KEY.to_owned(),
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                );
                // No request state: the retry carries the whole call again plus the answer,
                // and nothing the client sends back is trusted beyond that answer. The retry
                // is what gets recorded, and what counts against the budget.
                permit.refund();
                call.skip();
                return Ok(InputRequiredResult::new(Some(requests), None).into());
            }
        };
        // A client that takes tasks gets the job its command became as a task (SEP-2663: only
        // when this request declared the extension, in `initialize` or in its `_meta`). The
        // task's result is execute_command's, so only its calls become tasks (plugin tools
        // never yield).
        let task = (failure.is_none()
            && name == crate::tools::exec::NAME
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks()))
        .then(|| facts.job())
        .flatten()
        .and_then(|id| self.shared.jobs.get(&ctx.session, &id).ok());
        let mut result = result;
        // A job's whole output, as resources the client can read (`toolport://jobs/…`).
        if task.is_none()
            && failure.is_none()
            && let Some(id) = facts.job()
        {
            result.content.extend(job_links(&id));
        }
        drop(permit);
        let size = call.size_of(&result);
        call.finish(failure, size);
        match task {
            Some(job) => Ok(CallToolResponse::Task(tasks::created(&job))),
            None => Ok(result.into()),
        }
    }

    /// SEP-2663 `tasks/get`: where the job stands, with its result once it ended.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let job = tasks::lookup(
            &self.shared.jobs,
            &self.job_owner(&context),
            &request.task_id,
        )?;
        Ok(GetTaskResult::new(tasks::detailed(&job)))
    }

    /// SEP-2663 `tasks/update`: toolport's tasks never ask for input, so there is nothing to
    /// answer (a command's stdin is written with job_input).
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let job = tasks::lookup(
            &self.shared.jobs,
            &self.job_owner(&context),
            &request.task_id,
        )?;
        Err(McpError::invalid_params(
            format!(
                "task {} has no outstanding input requests (toolport's tasks never ask for input); to write to the command's stdin, start it with stdin_open: true and use job_input",
                job.id
            ),
            None,
        ))
    }

    /// SEP-2663 `tasks/cancel`: kill the job (TERM, a grace, KILL, escapees swept) and answer
    /// once its processes are gone; `tasks/get` then says `cancelled`. A task that has ended
    /// already is left as it is.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let job = tasks::lookup(
            &self.shared.jobs,
            &self.job_owner(&context),
            &request.task_id,
        )?;
        job.kill().await;
        Ok(())
    }

    /// rmcp hands over as "custom" every request it could not read, including an MCP method
    /// whose params do not have the shape MCP defines (`"arguments": "x"` in a `tools/call`).
    /// Those get Invalid params (-32602) saying what is wrong, not Method not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method.as_str();
        if let Some(shape) = params_shape(method) {
            return Err(McpError::invalid_params(
                format!("invalid params for {method}: {shape}"),
                None,
            ));
        }
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
            None,
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(metrics::RESOURCE_URI, "metrics")
                .with_title("toolport metrics")
                .with_description(
                    "Calls by tool and outcome, call durations, sessions, calls in flight and commands running, as JSON (the same samples as /metrics over HTTP)",
                )
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if let Some(rest) = request.uri.strip_prefix(JOB_RESOURCE_PREFIX) {
            return self.read_job_output(&request.uri, rest, &context);
        }
        if request.uri != metrics::RESOURCE_URI {
            return Err(McpError::resource_not_found(
                format!(
                    "unknown resource {:?}; the resources are {} and a job's output, {JOB_RESOURCE_PREFIX}JOB_ID/stdout or /stderr",
                    request.uri,
                    metrics::RESOURCE_URI
                ),
                None,
            ));
        }
        let json = self.shared.metrics.render_json();
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, metrics::RESOURCE_URI).with_mime_type("application/json"),
        ])
        .into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut prompts = vec![Prompt::new(
            ALL_INSTRUCTIONS_PROMPT,
            Some("Instructions for using every tool this server offers (for a system prompt)"),
            None,
        )];
        for tool in self.shared.registry.load().all() {
            if tool.name() != ALL_INSTRUCTIONS_PROMPT {
                prompts.push(Prompt::new(
                    tool.name(),
                    Some(format!("Instructions for using the {} tool", tool.name())),
                    None,
                ));
            }
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let text = self.prompt_text(&request.name).ok_or_else(|| {
            McpError::invalid_params(
                format!(
                    "unknown prompt {:?}; available prompts: {ALL_INSTRUCTIONS_PROMPT}, {}",
                    request.name,
                    self.shared.registry.load().names().join(", ")
                ),
                None,
            )
        })?;
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(format!("Instructions: {}", request.name))
                .into(),
        )
    }
}

/// The params an MCP request method takes, in words, for the methods whose params can be
/// wrong (`None`: not an MCP method this server knows).
fn params_shape(method: &str) -> Option<&'static str> {
    Some(match method {
        "tools/call" => {
            "params must be an object with `name` (a string) and, optionally, `arguments` (an object of the tool's parameters, e.g. {\"path\": \"README.md\"}) and `_meta`"
        }
        "prompts/get" => {
            "params must be an object with `name` (a string) and, optionally, `arguments` (an object of strings)"
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            "params must be an object with `uri` (a string)"
        }
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            "params, when given, must be an object (with an optional `cursor` string)"
        }
        "initialize" => {
            "params must be an object with `protocolVersion`, `capabilities` and `clientInfo` ({name, version})"
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            "params must be an object with `taskId` (a string)"
        }
        "completion/complete" => {
            "params must be an object with `ref` and `argument` ({name, value})"
        }
        "logging/setLevel" => {
            "params must be an object with `level` (debug, info, warning, error …)"
        }
        "ping" => "params, when given, must be an object",
        _ => return None,
    })
}
