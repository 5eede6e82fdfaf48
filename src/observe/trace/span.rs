//! One request's spans while it runs ([`RequestSpan`]) and how they end: `error.type` from
//! the answer (the JSON-RPC code of an error, `tool_error` for an `isError` result) or
//! `cancelled` when the request is dropped unanswered.

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, Status};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResponse;
use tracing::Instrument;

use crate::observe::TOOL_ERROR;

/// `error.type` of a request whose future was dropped before it answered (the server stopped,
/// the connection went away); the metrics name a dropped call the same.
const CANCELLED: &str = "cancelled";

/// What a request is about, beyond its method: it names the span.
#[derive(Clone, Copy)]
pub(super) enum Subject<'a> {
    None,
    Tool(&'a str),
    Prompt(&'a str),
    Resource(&'a str),
}

/// The spans of one request: the log one (disabled unless the log filter shows
/// [`SPAN_TARGET`](super::SPAN_TARGET)) and the exported one (when an exporter runs). Dropped
/// unanswered, the request was cancelled; the exported span ends when this is dropped.
pub(super) struct RequestSpan {
    pub(super) log: tracing::Span,
    pub(super) otel: Option<opentelemetry_sdk::trace::Span>,
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
pub(super) async fn answer<T>(
    span: RequestSpan,
    request: impl Future<Output = Result<T, McpError>>,
    error_of: impl FnOnce(&T) -> Option<&'static str>,
) -> Result<T, McpError> {
    if span.is_off() {
        return request.await;
    }
    // The exported span is the current trace context while the request runs: a call to an
    // upstream server passes it on (`traceparent`), so its span continues this trace.
    let context = ending_context(&span);
    let mut ending = Ending {
        span,
        answered: false,
    };
    let instrumented = request.instrument(ending.span.log.clone());
    let result = match context {
        Some(context) => opentelemetry::trace::FutureExt::with_context(instrumented, context).await,
        None => instrumented.await,
    };
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

/// The exported span's context as the current one for the request's future.
fn ending_context(span: &RequestSpan) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::TraceContextExt as _;
    let otel = span.otel.as_ref()?;
    Some(opentelemetry::Context::new().with_remote_span_context(otel.span_context().clone()))
}

/// No `error.type` in an answer (only `tools/call` answers can carry an error).
pub(super) fn no_error<T>(_: &T) -> Option<&'static str> {
    None
}

/// `tool_error` for an `isError` result.
pub(super) fn tool_error(response: &CallToolResponse) -> Option<&'static str> {
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
