//! [`Traced`]: a session's handler with a span around every request it answers, itself a
//! `ServerHandler` that hands every method of the trait to the handler it wraps.

use std::borrow::Cow;
use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Tracer as _};
#[allow(deprecated)] // logging/setLevel is legacy (SEP-2577), still handed on
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, CallToolResponse, CancelTaskMethod,
    CancelTaskParams, CancelledNotificationParam, CompleteRequestMethod, CompleteRequestParams,
    CompleteResult, ConstString, CustomNotification, CustomRequest, CustomResult,
    DiscoverRequestMethod, DiscoverResult, GetPromptRequestMethod, GetPromptRequestParams,
    GetPromptResponse, GetSkillRequestMethod, GetSkillRequestParams, GetSkillResult, GetTaskMethod,
    GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    InitializeResultMethod, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListSkillsRequestMethod, ListSkillsResult, ListToolsRequestMethod,
    ListToolsResult, PaginatedRequestParams, PingRequestMethod, ProgressNotificationParam,
    ProtocolVersion, ReadResourceDirectoryRequestMethod, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestMethod, SubscribeRequestMethod,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestMethod,
    UnsubscribeRequestParams, UpdateTaskMethod, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tracing::field::Empty;

use super::SPAN_TARGET;
use super::exporter::tracer;
use super::parent::remote_parent;
use super::span::{RequestSpan, Subject, answer, no_error, tool_error};
use crate::identity::Principal;

/// The `tracing` name of a request's log span (static); its `otel.name` field holds the
/// conventions' name, which the exported span has as its name.
const SPAN_NAME: &str = "mcp request";

/// A session's handler with a span around every request it answers: a `ServerHandler` (what
/// rmcp's transports, Streamable HTTP included, serve) that hands every method to the one it
/// wraps, the requests inside their spans.
pub(crate) struct Traced<H> {
    inner: H,
    /// `mcp.session.id`; `None` without a session (stateless HTTP).
    session: Option<Arc<str>>,
    /// `network.transport`.
    network: &'static str,
}

impl<H> Traced<H> {
    /// Wrap `inner`, a session with the random id `session` on `transport` (the audit log's
    /// transport names: `stdio`, `http`, `http-stateless`, `sse`).
    pub(crate) fn new(inner: H, session: Arc<str>, transport: &str) -> Self {
        Self {
            inner,
            session: (transport != "http-stateless").then_some(session),
            network: if transport == "stdio" { "pipe" } else { "tcp" },
        }
    }

    /// The spans of one request, named and attributed by the conventions: the exported one
    /// (parented by the request's trace context when it carries a valid one) when an exporter
    /// runs, and the log one when the log filter shows [`SPAN_TARGET`]. Neither (the default)
    /// costs next to nothing.
    fn span(
        &self,
        method: &str,
        subject: Subject<'_>,
        context: &RequestContext<RoleServer>,
    ) -> RequestSpan {
        let log = tracing::info_span!(
            target: SPAN_TARGET,
            parent: None,
            SPAN_NAME,
            "otel.name" = Empty,
            "mcp.method.name" = method,
            "gen_ai.tool.name" = Empty,
            "gen_ai.prompt.name" = Empty,
            "mcp.resource.uri" = Empty,
            "mcp.session.id" = self.session.as_deref(),
            "jsonrpc.request.id" = %context.id,
            "enduser.id" = Empty,
            "oauth.client_id" = Empty,
            "error.type" = Empty,
        );
        let tracer = tracer();
        if log.is_disabled() && tracer.is_none() {
            return RequestSpan { log, otel: None };
        }
        let (name, attribute) = match subject {
            Subject::Tool(tool) => (format!("{method} {tool}"), Some(("gen_ai.tool.name", tool))),
            Subject::Prompt(prompt) => (
                format!("{method} {prompt}"),
                Some(("gen_ai.prompt.name", prompt)),
            ),
            Subject::Resource(uri) => (method.to_owned(), Some(("mcp.resource.uri", uri))),
            Subject::None => (method.to_owned(), None),
        };
        // Who made the request (an authenticated HTTP request's principal): on the span, as
        // the conventions' `enduser.id`, never as a metric label.
        let principal = Principal::of(context);
        let principal = principal
            .as_deref()
            .map(|p| (p.subject.as_str(), p.client_id.as_deref()));
        if !log.is_disabled() {
            log.record("otel.name", name.as_str());
            if let Some((key, value)) = attribute {
                log.record(key, value);
            }
            if let Some((subject, client)) = principal {
                log.record("enduser.id", subject);
                if let Some(client) = client {
                    log.record("oauth.client_id", client);
                }
            }
        }
        let otel = tracer.map(|tracer| {
            let mut attributes = Vec::with_capacity(ATTRIBUTES);
            attributes.extend([
                KeyValue::new("mcp.method.name", method.to_owned()),
                KeyValue::new("jsonrpc.request.id", context.id.to_string()),
                KeyValue::new("network.transport", self.network),
            ]);
            if let Some((key, value)) = attribute {
                attributes.push(KeyValue::new(key, value.to_owned()));
            }
            if matches!(subject, Subject::Tool(_)) {
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            if let Some(session) = &self.session {
                attributes.push(KeyValue::new("mcp.session.id", session.to_string()));
            }
            if let Some((subject, client)) = principal {
                attributes.push(KeyValue::new("enduser.id", subject.to_owned()));
                if let Some(client) = client {
                    attributes.push(KeyValue::new("oauth.client_id", client.to_owned()));
                }
            }
            if let Some(version) = context.protocol_version() {
                attributes.push(KeyValue::new(
                    "mcp.protocol.version",
                    version.as_str().to_owned(),
                ));
            }
            let meta = &context.meta;
            let parent =
                remote_parent(meta.get_traceparent(), meta.get_tracestate()).unwrap_or_default();
            tracer
                .span_builder(name)
                .with_kind(SpanKind::Server)
                .with_attributes(attributes)
                .start_with_context(tracer, &parent)
        });
        RequestSpan { log, otel }
    }
}

/// The most attributes a request span carries (room reserved up front).
const ATTRIBUTES: usize = 10;
/// Requests answered inside their spans: `name(params…) -> answer, method constant`, then,
/// for a request about something (a tool, a prompt, a resource), `, subject, error_of`.
macro_rules! traced_requests {
    (@or $given:expr, $default:expr) => { $given };
    (@or , $default:expr) => { $default };
    ($(
        $method:ident($($param:ident: $ty:ty),*) -> $out:ty, $name:ty
        $(, $subject:expr, $error_of:expr)?;
    )*) => {$(
        async fn $method(
            &self,
            $($param: $ty,)*
            context: RequestContext<RoleServer>,
        ) -> Result<$out, McpError> {
            let subject = traced_requests!(@or $($subject)?, Subject::None);
            let span = self.span(<$name as ConstString>::VALUE, subject, &context);
            let error_of = traced_requests!(@or $($error_of)?, no_error);
            answer(span, self.inner.$method($($param,)* context), error_of).await
        }
    )*};
}

/// Methods handed on as they are (no request of their own, or a stream: `listen`).
macro_rules! forwarded {
    ($(fn $method:ident($($param:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        fn $method(&self, $($param: $ty),*) -> $out {
            self.inner.$method($($param),*)
        }
    )*};
    ($(async fn $method:ident($($param:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        async fn $method(&self, $($param: $ty),*) -> $out {
            self.inner.$method($($param),*).await
        }
    )*};
}

// Every method of the trait is here, so whatever the wrapped handler overrides still counts
// (rmcp is pinned; a new method in an upgrade must be added here too).
#[allow(deprecated)] // resources/subscribe and logging/setLevel: legacy, still handed on
impl<H: ServerHandler> ServerHandler for Traced<H> {
    traced_requests! {
        call_tool(request: CallToolRequestParams) -> CallToolResponse, CallToolRequestMethod,
            Subject::Tool(&request.name), tool_error;
        get_prompt(request: GetPromptRequestParams) -> GetPromptResponse, GetPromptRequestMethod,
            Subject::Prompt(&request.name), no_error;
        read_resource(request: ReadResourceRequestParams) -> ReadResourceResponse,
            ReadResourceRequestMethod, Subject::Resource(&request.uri), no_error;
        ping() -> (), PingRequestMethod;
        initialize(request: InitializeRequestParams) -> InitializeResult, InitializeResultMethod;
        discover() -> DiscoverResult, DiscoverRequestMethod;
        complete(request: CompleteRequestParams) -> CompleteResult, CompleteRequestMethod;
        set_level(request: SetLevelRequestParams) -> (), SetLevelRequestMethod;
        list_prompts(request: Option<PaginatedRequestParams>) -> ListPromptsResult,
            ListPromptsRequestMethod;
        list_resources(request: Option<PaginatedRequestParams>) -> ListResourcesResult,
            ListResourcesRequestMethod;
        list_resource_templates(request: Option<PaginatedRequestParams>)
            -> ListResourceTemplatesResult, ListResourceTemplatesRequestMethod;
        subscribe(request: SubscribeRequestParams) -> (), SubscribeRequestMethod;
        unsubscribe(request: UnsubscribeRequestParams) -> (), UnsubscribeRequestMethod;
        list_tools(request: Option<PaginatedRequestParams>) -> ListToolsResult,
            ListToolsRequestMethod;
        get_task(request: GetTaskParams) -> GetTaskResult, GetTaskMethod;
        update_task(request: UpdateTaskParams) -> (), UpdateTaskMethod;
        cancel_task(request: CancelTaskParams) -> (), CancelTaskMethod;
        list_skills(request: Option<PaginatedRequestParams>) -> ListSkillsResult,
            ListSkillsRequestMethod;
        get_skill(request: GetSkillRequestParams) -> GetSkillResult, GetSkillRequestMethod;
        read_resource_directory(request: ReadResourceDirectoryRequestParams)
            -> ReadResourceDirectoryResult, ReadResourceDirectoryRequestMethod;
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // A custom method's name is the client's choice: it names the span as it is.
        let method = request.method.clone();
        let span = self.span(&method, Subject::None, &context);
        answer(
            span,
            self.inner.on_custom_request(request, context),
            no_error,
        )
        .await
    }

    forwarded! {
        fn negotiate_initialize(request: &InitializeRequestParams) -> Result<InitializeResult, McpError>;
        fn supported_protocol_versions() -> Cow<'static, [ProtocolVersion]>;
        fn accepted_subscription_filter(requested: &SubscriptionFilter) -> Option<SubscriptionFilter>;
        fn get_tool(name: &str) -> Option<Tool>;
        fn get_info() -> ServerConfig;
    }

    forwarded! {
        async fn listen(context: SubscriptionContext) -> Result<(), McpError>;
        async fn on_cancelled(notification: CancelledNotificationParam, context: NotificationContext<RoleServer>) -> ();
        async fn on_progress(notification: ProgressNotificationParam, context: NotificationContext<RoleServer>) -> ();
        async fn on_initialized(context: NotificationContext<RoleServer>) -> ();
        async fn on_roots_list_changed(context: NotificationContext<RoleServer>) -> ();
        async fn on_custom_notification(notification: CustomNotification, context: NotificationContext<RoleServer>) -> ();
    }
}
