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
//!   status. One wrapper rather than a line in each handler: the handlers (`server/`) hold no
//!   tracing code, and every request is traced, initialize and ping included. Notifications
//!   and `subscriptions/listen` (a stream that lasts as long as the session) are handed on
//!   without a span.
//! - A `traceparent` that is not valid W3C trace context is ignored: the span starts a new
//!   trace. It is never an error.
//! - Two spans, each built only when wanted. The exported span is built directly with the
//!   SDK's tracer (no `tracing` span bridged by a layer: the bridge cost about 7 µs of CPU per
//!   request, a tenth of a small call: `git show a29830c:BENCHMARKS.md`, "Issue 12"). The
//!   log span is a `tracing` span with its own target, [`SPAN_TARGET`], outside `toolport`:
//!   logs look as they did (`RUST_LOG=warn,toolport=info,toolport_tools=info,mcp.server=info` shows the requests
//!   in log lines, with a tool's log lines inside them), and by default its callsite is
//!   disabled.
//! - Export ([`export`]): the SDK's batch span processor and the OTLP/HTTP exporter (a
//!   blocking reqwest client, used only on the processor's own thread). It is started only for
//!   `toolport serve` and only when an endpoint is set: otherwise there is no tracer, no HTTP
//!   client and no thread, and nothing is ever sent. Ending a span only queues it (a full
//!   queue drops spans, it never waits), so the collector never slows or fails a call; export
//!   errors are logged on stderr by the SDK; stopping the server sends what is queued, waiting
//!   at most [`FLUSH_TIMEOUT`](exporter::FLUSH_TIMEOUT). `toolport call` runs a tool without
//!   MCP and is not traced.
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
//!
//! One concern per file:
//! - `settings.rs`: [`TelemetrySettings`] and the `[telemetry]` file section, layered under the
//!   variables; the endpoint and header rules that keep credentials out of `toolport config`.
//! - `traced.rs`: [`Traced`], the handler wrapper that opens a span around each request and
//!   names and attributes it by the conventions.
//! - `span.rs`: one request's spans while it runs, and how they end (`error.type`, error status,
//!   `cancelled`).
//! - `parent.rs`: the client's W3C trace context (`traceparent`, `tracestate`) as the parent.
//! - `exporter.rs`: [`export`], the OTLP/HTTP exporter and the process-wide tracer.

mod exporter;
mod parent;
mod settings;
mod span;
mod traced;

pub(crate) use exporter::{Exporter, export};
pub(crate) use parent::traceparent;
pub use settings::TelemetrySettings;
pub(crate) use traced::Traced;

/// The target of the requests' log spans: not under `toolport`, so the default log filter
/// (`toolport=info`) leaves them out of the log lines, disabled.
pub(crate) const SPAN_TARGET: &str = "mcp.server";
