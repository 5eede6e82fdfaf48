//! Traces: one span per MCP request, named and attributed as the OpenTelemetry semantic
//! conventions for MCP say, parented by the W3C trace context a client sends in `params._meta`
//! (`traceparent`, `tracestate`; SEP-414), and exported over OTLP/HTTP (protobuf) only when the
//! operator configured where to.
//!
//! - [`Traced`] wraps a session's handler and is a `ServerHandler` itself (what rmcp's
//!   transports serve; its Streamable HTTP service takes nothing else): it hands every method
//!   of the trait to the handler it wraps, each request inside its span. The span is named
//!   `"tools/call read_file"` (`"prompts/get NAME"`, else the method alone) and carries
//!   `mcp.method.name`, `gen_ai.tool.name` and `gen_ai.operation.name = "execute_tool"` for
//!   calls, `gen_ai.prompt.name`, `mcp.resource.uri`, `mcp.session.id` (the session's random
//!   id, as in the audit log; never the HTTP token; none on stateless HTTP, which has no
//!   session), `jsonrpc.request.id`, `mcp.protocol.version`, `network.transport` (`pipe`,
//!   `tcp`) and, when it fails, `error.type` (`tool_error` for an `isError` result, the
//!   JSON-RPC code of an error, `cancelled` for a request dropped unanswered) with an error
//!   status. One wrapper rather than a line in each handler: the handlers (`server.rs`) hold no
//!   tracing code, and every request is traced, initialize and ping included. Notifications
//!   and `subscriptions/listen` (a stream that lasts as long as the session) are handed on
//!   without a span.
//! - A `traceparent` that is not valid W3C trace context is ignored: the span starts a new
//!   trace. It is never an error.
//! - Two spans, each built only when wanted. The exported span is built directly with the
//!   SDK's tracer (no `tracing` span bridged by a layer: the bridge cost about 7 µs of CPU per
//!   request, a tenth of a small call: `git show a29830c:BENCHMARKS.md`, "Issue 12"). The
//!   log span is a `tracing` span with its own target, [`SPAN_TARGET`], outside `toolport`:
//!   logs look as they did (`RUST_LOG=warn,toolport=info,mcp.server=info` shows the requests
//!   in log lines, with a tool's log lines inside them), and by default its callsite is
//!   disabled.
//! - Export ([`export`]): the SDK's batch span processor and the OTLP/HTTP exporter (a
//!   blocking reqwest client, used only on the processor's own thread). It is started only for
//!   `toolport serve` and only when an endpoint is set: otherwise there is no tracer, no HTTP
//!   client and no thread, and nothing is ever sent. Ending a span only queues it (a full
//!   queue drops spans, it never waits), so the collector never slows or fails a call; export
//!   errors are logged on stderr by the SDK; stopping the server sends what is queued, waiting
//!   at most [`FLUSH_TIMEOUT`]. `toolport call` runs a tool without MCP and is not traced.
//!
//! Settings ([`TelemetrySettings`]): the `[telemetry]` section and the standard OpenTelemetry
//! variables, which win over the file (as every variable does, `config/`):
//! - the traces URL: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) >
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended to its path) >
//!   `otlp_traces_endpoint` > `otlp_endpoint` (the same two meanings); none: no export;
//! - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn export off whatever is set;
//! - the `service.name` resource: `OTEL_SERVICE_NAME` > `service.name` in
//!   `OTEL_RESOURCE_ATTRIBUTES` > `service_name` > `toolport`;
//! - `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (a collector's API
//!   key), `OTEL_EXPORTER_OTLP_TIMEOUT` and `OTEL_BSP_*` are read by the SDK itself;
//!   `toolport config` shows the header names, never their values (nor a password in the URL).
//! - OTLP over gRPC or JSON is not built in: `OTEL_EXPORTER_OTLP_PROTOCOL` (or its traces
//!   variant) set to anything but `http/protobuf` is an error, as is an endpoint that is not
//!   an `http`/`https` URL, rather than spans silently going nowhere.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
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
use serde::{Deserialize, Serialize, Serializer};
use tracing::Instrument;
use tracing::field::Empty;
use url::Url;

use super::TOOL_ERROR;
use crate::secret::display_url;
use crate::settings::{Note, SettingError};

/// The target of the requests' log spans: not under `toolport`, so the default log filter
/// (`toolport=info`) leaves them out of the log lines, disabled.
pub(crate) const SPAN_TARGET: &str = "mcp.server";

/// The `tracing` name of a request's log span (static); its `otel.name` field holds the
/// conventions' name, which the exported span has as its name.
const SPAN_NAME: &str = "mcp request";

/// `error.type` of a request whose future was dropped before it answered (the server stopped,
/// the connection went away); the metrics name a dropped call the same.
const CANCELLED: &str = "cancelled";

/// `service.name` when nothing else names the service.
const DEFAULT_SERVICE_NAME: &str = "toolport";

/// The path of the traces signal under an OTLP/HTTP base endpoint (OTLP specification).
const TRACES_PATH: &str = "v1/traces";

/// The one OTLP protocol built in.
const HTTP_PROTOBUF: &str = "http/protobuf";

/// How long stopping the server waits for the last spans to be sent. The last batch usually
/// goes out in milliseconds; an MCP client waits a few seconds after closing stdin before it
/// sends SIGTERM (rmcp's: 3 s), and an unreachable collector must not hold the exit longer.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// The `[telemetry]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTelemetry {
    /// OTLP/HTTP base URL (`http://collector:4318`); spans go to its `/v1/traces`.
    otlp_endpoint: Option<String>,
    /// The full OTLP/HTTP traces URL, used as is.
    otlp_traces_endpoint: Option<String>,
    /// The `service.name` resource.
    service_name: Option<String>,
}

/// Trace export settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TelemetrySettings {
    /// Where spans are sent (OTLP/HTTP, protobuf); `None`: nowhere (the default). One with
    /// userinfo is not printed as a key (a note shows it without).
    #[serde(skip_serializing_if = "not_printed", serialize_with = "serialize_url")]
    pub(crate) otlp_traces_endpoint: Option<Url>,
    /// The `service.name` resource of every span.
    pub(crate) service_name: String,
    /// The names of the headers the exporter adds from the environment (values not kept): a
    /// note in `toolport config`.
    #[serde(skip)]
    pub(crate) otlp_headers: Vec<String>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_traces_endpoint: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            otlp_headers: Vec::new(),
        }
    }
}

/// The endpoint as `[telemetry] otlp_traces_endpoint` takes it (only one without userinfo is
/// printed: see [`not_printed`]).
fn serialize_url<S: Serializer>(url: &Option<Url>, serializer: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(url) => serializer.serialize_str(url.as_str()),
        None => serializer.serialize_none(),
    }
}

/// Whether `toolport config` leaves the endpoint out of its keys: none is set, or it holds
/// userinfo (credentials, never printed; [`TelemetrySettings::notes`] shows it without).
fn not_printed(url: &Option<Url>) -> bool {
    url.as_ref()
        .is_none_or(|url| !url.username().is_empty() || url.password().is_some())
}

impl TelemetrySettings {
    /// What `toolport config` prints as comments: an endpoint with credentials (shown
    /// without them) and the headers added from the environment (names only).
    pub(crate) fn notes(&self) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some(url) = &self.otlp_traces_endpoint
            && not_printed(&self.otlp_traces_endpoint)
        {
            notes.push(Note::new(
                "telemetry.otlp_traces_endpoint",
                format!("{} (it holds credentials: never printed)", display_url(url)),
            ));
        }
        if !self.otlp_headers.is_empty() {
            notes.push(Note::new(
                "telemetry headers",
                format!(
                    "{}, from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (values never printed)",
                    self.otlp_headers.join(", ")
                ),
            ));
        }
        notes
    }

    /// Layer the file < the OpenTelemetry variables (read through `env`), as the module doc
    /// says. An empty variable counts as unset (the OpenTelemetry specification's rule).
    pub(crate) fn load(
        file: &FileTelemetry,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, SettingError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let endpoint = [
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
                false,
            ),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                var("OTEL_EXPORTER_OTLP_ENDPOINT"),
                true,
            ),
            (
                "telemetry.otlp_traces_endpoint",
                file.otlp_traces_endpoint.clone(),
                false,
            ),
            ("telemetry.otlp_endpoint", file.otlp_endpoint.clone(), true),
        ]
        .into_iter()
        .find_map(|(key, value, base)| Some((key, value?, base)))
        .map(|(key, value, base)| traces_url(key, &value, base))
        .transpose()?;
        let disabled =
            var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let exporter_off = match var("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
            None | Some("otlp") => false,
            Some("none") => true,
            Some(other) => {
                return Err(SettingError::new(
                    "OTEL_TRACES_EXPORTER",
                    format!("{other:?} is not built in; toolport exports traces by otlp (or none)"),
                ));
            }
        };
        let otlp_traces_endpoint = endpoint.filter(|_| !disabled && !exporter_off);
        if otlp_traces_endpoint.is_some() {
            for name in [
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ] {
                if let Some(protocol) = var(name).filter(|p| p.trim() != HTTP_PROTOBUF) {
                    return Err(SettingError::new(
                        name,
                        format!(
                            "{protocol:?} is not built in; toolport sends OTLP as {HTTP_PROTOBUF}"
                        ),
                    ));
                }
            }
        }
        let service_name = var("OTEL_SERVICE_NAME")
            .or_else(|| var("OTEL_RESOURCE_ATTRIBUTES").and_then(|a| resource_service_name(&a)))
            .or_else(|| file.service_name.clone().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        // The exporter reads the traces variable if set, else the general one (not both).
        let otlp_headers = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|headers| header_names(&headers))
            .unwrap_or_default();
        Ok(Self {
            otlp_traces_endpoint,
            service_name,
            otlp_headers,
        })
    }
}

/// The traces URL from `value` (of setting `key`): as is, or with `/v1/traces` appended to its
/// path when it is a base endpoint. Only `http` and `https` URLs are accepted.
fn traces_url(key: &'static str, value: &str, base: bool) -> Result<Url, SettingError> {
    let mut url = Url::parse(value.trim())
        .map_err(|e| SettingError::new(key, format!("{value:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(SettingError::new(
            key,
            format!("{value:?} is not an http:// or https:// URL (OTLP is sent over HTTP)"),
        ));
    }
    if base {
        let path = url.path();
        let joined = if path.ends_with('/') {
            format!("{path}{TRACES_PATH}")
        } else {
            format!("{path}/{TRACES_PATH}")
        };
        url.set_path(&joined);
    }
    Ok(url)
}

/// `service.name` from `OTEL_RESOURCE_ATTRIBUTES` (`key=value` pairs, comma-separated,
/// values percent-encoded).
fn resource_service_name(attributes: &str) -> Option<String> {
    attributes.split(',').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key.trim() == "service.name")
            .then(|| percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy())
            .filter(|v| !v.is_empty())
            .map(Cow::into_owned)
    })
}

/// The names in an `OTEL_EXPORTER_OTLP_HEADERS` value (`name=value,…`), lowercased.
fn header_names(headers: &str) -> Vec<String> {
    headers
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, _)| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

/// The span exporter, while it runs: [`Exporter::shutdown`] sends what is queued.
#[derive(Debug)]
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Send the queued spans and stop, waiting at most [`FLUSH_TIMEOUT`].
    pub(crate) fn shutdown(self) {
        if let Err(error) = self.provider.shutdown_with_timeout(FLUSH_TIMEOUT) {
            tracing::warn!(%error, "could not send the last spans to the OTLP endpoint");
        }
    }
}

/// Why the exporter could not be built.
pub(crate) type ExportError = opentelemetry_otlp::ExporterBuildError;

/// The tracer of the request spans, once [`export`] has started the exporter. Process-wide,
/// like the `tracing` subscriber the log lines go through: one exporter serves every session.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Start exporting request spans to the configured endpoint; `None` when no endpoint is set
/// (then nothing is built: no HTTP client, no thread). The returned [`Exporter`] must be shut
/// down at exit. Called once, before any session starts; a second call is ignored.
pub(crate) fn export(settings: &TelemetrySettings) -> Result<Option<Exporter>, ExportError> {
    let Some(endpoint) = &settings.otlp_traces_endpoint else {
        return Ok(None);
    };
    if TRACER.get().is_some() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint.as_str())
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(settings.service_name.clone())
                .build(),
        )
        .build();
    let scope = opentelemetry::InstrumentationScope::builder(env!("CARGO_PKG_NAME"))
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let _ = TRACER.set(provider.tracer_with_scope(scope));
    Ok(Some(Exporter { provider }))
}

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
            "error.type" = Empty,
        );
        let tracer = TRACER.get();
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
        if !log.is_disabled() {
            log.record("otel.name", name.as_str());
            if let Some((key, value)) = attribute {
                log.record(key, value);
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
const ATTRIBUTES: usize = 8;

/// What a request is about, beyond its method: it names the span.
#[derive(Clone, Copy)]
enum Subject<'a> {
    None,
    Tool(&'a str),
    Prompt(&'a str),
    Resource(&'a str),
}

/// The spans of one request: the log one (disabled unless the log filter shows
/// [`SPAN_TARGET`]) and the exported one (when an exporter runs). Dropped unanswered, the
/// request was cancelled; the exported span ends when this is dropped.
struct RequestSpan {
    log: tracing::Span,
    otel: Option<opentelemetry_sdk::trace::Span>,
}

impl RequestSpan {
    /// Whether neither span records anything.
    fn is_off(&self) -> bool {
        self.otel.is_none() && self.log.is_disabled()
    }

    /// Mark the request as failed with `error_type`.
    fn failed(&mut self, error_type: &str) {
        self.log.record("error.type", error_type);
        if let Some(span) = &mut self.otel {
            span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            span.set_status(Status::error(""));
        }
    }
}

/// Run `request` inside `span` and mark the span with how it ended: `error.type` is the
/// JSON-RPC code of an error, or what `error_of` finds in an answer (an `isError` result).
async fn answer<T>(
    span: RequestSpan,
    request: impl Future<Output = Result<T, McpError>>,
    error_of: impl FnOnce(&T) -> Option<&'static str>,
) -> Result<T, McpError> {
    if span.is_off() {
        return request.await;
    }
    let mut ending = Ending {
        span,
        answered: false,
    };
    let result = request.instrument(ending.span.log.clone()).await;
    ending.answered = true;
    match &result {
        Err(error) => ending.span.failed(&error.code.0.to_string()),
        Ok(answer) => {
            if let Some(error_type) = error_of(answer) {
                ending.span.failed(error_type);
            }
        }
    }
    result
}

/// No `error.type` in an answer (only `tools/call` answers can carry an error).
fn no_error<T>(_: &T) -> Option<&'static str> {
    None
}

/// `tool_error` for an `isError` result.
fn tool_error(response: &CallToolResponse) -> Option<&'static str> {
    match response {
        CallToolResponse::Complete(result) if result.is_error == Some(true) => Some(TOOL_ERROR),
        _ => None,
    }
}

/// A request's spans while it runs; dropped unanswered, the request was cancelled.
struct Ending {
    span: RequestSpan,
    answered: bool,
}

impl Drop for Ending {
    fn drop(&mut self) {
        if !self.answered {
            self.span.failed(CANCELLED);
        }
    }
}

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

/// The client's trace context as a parent, when `traceparent` is valid W3C trace context;
/// `None` (the span starts a trace of its own) otherwise.
fn remote_parent(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
) -> Option<opentelemetry::Context> {
    let carrier = Carrier {
        traceparent: traceparent?,
        tracestate,
    };
    let parent = well_formed(carrier.traceparent)
        .then(|| {
            TraceContextPropagator::new()
                .extract_with_context(&opentelemetry::Context::new(), &carrier)
        })
        .filter(|parent| parent.span().span_context().is_valid());
    if parent.is_none() {
        tracing::debug!(
            traceparent = carrier.traceparent,
            "ignoring an invalid traceparent"
        );
    }
    parent
}

/// The widths of a `traceparent`'s first four fields (version, trace id, parent id, flags):
/// the W3C rule the propagator does not check (it would read a short trace id as a valid,
/// different one).
const TRACEPARENT_WIDTHS: [usize; 4] = [2, 32, 16, 2];

/// Whether `traceparent` has the W3C shape; the propagator checks the rest (hex, lowercase,
/// version, ids not all zero).
fn well_formed(traceparent: &str) -> bool {
    let fields: Vec<&str> = traceparent.trim().split('-').collect();
    fields.len() >= TRACEPARENT_WIDTHS.len()
        && fields
            .iter()
            .zip(TRACEPARENT_WIDTHS)
            .all(|(field, width)| field.len() == width)
}

/// The two W3C trace-context fields of a request's `_meta`, as the propagator reads them.
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys = vec!["traceparent"];
        if self.tracestate.is_some() {
            keys.push("tracestate");
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_valid_traceparent_is_the_parent() {
        let parent = remote_parent(Some(TRACEPARENT), Some("vendor=abc")).expect("a parent");
        let span = parent.span();
        let context = span.span_context();
        assert_eq!(
            (
                context.trace_id().to_string(),
                context.span_id().to_string(),
                context.is_remote(),
                context.is_sampled(),
                context.trace_state().header(),
            ),
            (
                "0af7651916cd43dd8448eb211c80319c".to_owned(),
                "b7ad6b7169203331".to_owned(),
                true,
                true,
                "vendor=abc".to_owned(),
            )
        );
    }

    #[test]
    fn an_invalid_or_missing_traceparent_starts_a_new_trace() {
        for bad in [
            "",
            "garbage",
            // All-zero trace id and span id are invalid by the W3C rules.
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            // Version ff is forbidden; a short trace id.
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd-b7ad6b7169203331-01",
        ] {
            assert!(remote_parent(Some(bad), None).is_none(), "{bad:?}");
        }
        assert!(remote_parent(None, Some("vendor=abc")).is_none());
    }

    /// A file section, variables, and what they should give.
    type Case<'a, T> = (&'a str, &'a [(&'a str, &'a str)], T);

    fn load(file: &str, env: &[(&str, &str)]) -> Result<TelemetrySettings, SettingError> {
        let file: FileTelemetry = toml::from_str(file).unwrap();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TelemetrySettings::load(&file, |k| env.get(k).cloned())
    }

    fn endpoint(settings: &TelemetrySettings) -> Option<&str> {
        settings.otlp_traces_endpoint.as_ref().map(Url::as_str)
    }

    #[test]
    fn off_unless_an_endpoint_is_set() {
        let settings = load("", &[("OTEL_SERVICE_NAME", "svc")]).unwrap();
        assert_eq!(endpoint(&settings), None);
        assert_eq!(settings.service_name, "svc");
        assert_eq!(load("", &[]).unwrap(), TelemetrySettings::default());
    }

    #[test]
    fn endpoints_follow_the_otlp_rules_and_variables_win_over_the_file() {
        let cases: &[Case<Option<&str>>] = &[
            (
                "otlp_endpoint = \"http://c:4318\"",
                &[],
                Some("http://c:4318/v1/traces"),
            ),
            (
                "otlp_endpoint = \"http://c:4318/base/\"",
                &[],
                Some("http://c:4318/base/v1/traces"),
            ),
            (
                "otlp_traces_endpoint = \"http://c/t\"\notlp_endpoint = \"http://d\"",
                &[],
                Some("http://c/t"),
            ),
            (
                "otlp_traces_endpoint = \"http://c/t\"",
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e:4318/p")],
                Some("http://e:4318/p/v1/traces"),
            ),
            (
                "",
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t/x"),
                ],
                Some("https://t/x"),
            ),
            ("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")], None),
            (
                "otlp_endpoint = \"http://c\"",
                &[("OTEL_SDK_DISABLED", "TRUE")],
                None,
            ),
            (
                "otlp_endpoint = \"http://c\"",
                &[("OTEL_SDK_DISABLED", "false")],
                Some("http://c/v1/traces"),
            ),
            (
                "otlp_endpoint = \"http://c\"",
                &[("OTEL_TRACES_EXPORTER", "none")],
                None,
            ),
            (
                "otlp_endpoint = \"http://c\"",
                &[
                    ("OTEL_TRACES_EXPORTER", "otlp"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ],
                Some("http://c/v1/traces"),
            ),
        ];
        for (file, env, expected) in cases {
            assert_eq!(
                endpoint(&load(file, env).unwrap()),
                *expected,
                "{file} {env:?}"
            );
        }
    }

    #[test]
    fn what_cannot_work_is_an_error_naming_the_setting() {
        let cases: &[Case<&str>] = &[
            (
                "otlp_endpoint = \"collector:4317\"",
                &[],
                "telemetry.otlp_endpoint",
            ),
            (
                "",
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                "",
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ],
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                "",
                &[("OTEL_TRACES_EXPORTER", "zipkin")],
                "OTEL_TRACES_EXPORTER",
            ),
        ];
        for (file, env, key) in cases {
            assert_eq!(load(file, env).unwrap_err().key, *key, "{file} {env:?}");
        }
        // gRPC named while nothing is exported is no error: the variable may be meant for
        // another program.
        assert!(load("", &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).is_ok());
    }

    #[test]
    fn service_name_layers_and_secrets_never_print() {
        let file = "service_name = \"from-file\"\notlp_endpoint = \"https://user:s3cret@c\"";
        assert_eq!(load(file, &[]).unwrap().service_name, "from-file");
        let attributes = [(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=prod,service.name=from%20attrs",
        )];
        assert_eq!(load(file, &attributes).unwrap().service_name, "from attrs");
        let both = [attributes[0], ("OTEL_SERVICE_NAME", "from-var")];
        assert_eq!(load(file, &both).unwrap().service_name, "from-var");

        let settings = load(
            file,
            &[(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20hunter2,x-tenant=t1",
            )],
        )
        .unwrap();
        let shown = toml::to_string(&settings).unwrap();
        assert_eq!(shown, "service_name = \"from-file\"\n");
        assert_eq!(
            settings.notes(),
            [
                Note::new(
                    "telemetry.otlp_traces_endpoint",
                    "https://***@c/v1/traces (it holds credentials: never printed)"
                ),
                Note::new(
                    "telemetry headers",
                    "authorization, x-tenant, from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS (values never printed)"
                )
            ]
        );
        assert_eq!(endpoint(&settings), Some("https://user:s3cret@c/v1/traces"));
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<FileTelemetry>("endpoint = \"http://c\"").is_err());
    }
}
