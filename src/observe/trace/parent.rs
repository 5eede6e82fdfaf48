//! The client's W3C trace context (`traceparent`, `tracestate` in a request's `_meta`;
//! SEP-414) as the parent of a request's span: a `traceparent` that is not valid trace context
//! is ignored (the span starts a new trace), never an error.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// The client's trace context as a parent, when `traceparent` is valid W3C trace context;
/// `None` (the span starts a trace of its own) otherwise.
pub(super) fn remote_parent(
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

/// The `traceparent` an upstream call carries: the current request span's (when spans are
/// exported, the upstream's span is its child), else the client's own (`client`, passed on as
/// it came, so the upstream continues the client's trace when toolport exports none).
pub(crate) fn traceparent(client: Option<&str>) -> Option<String> {
    let context = opentelemetry::Context::current();
    let span = context.span();
    let current = span.span_context();
    if current.is_valid() {
        return Some(format!(
            "00-{}-{}-{:02x}",
            current.trace_id(),
            current.span_id(),
            current.trace_flags().to_u8()
        ));
    }
    client.filter(|tp| well_formed(tp)).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
