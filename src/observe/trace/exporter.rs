//! The OTLP exporter: the SDK's batch span processor and the OTLP/HTTP (protobuf) exporter,
//! started by [`export`] only when an endpoint is set, and the process-wide tracer the request
//! spans are built with.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::TelemetrySettings;

/// How long stopping the server waits for the last spans to be sent. The last batch usually
/// goes out in milliseconds; an MCP client waits a few seconds after closing stdin before it
/// sends SIGTERM (rmcp's: 3 s), and an unreachable collector must not hold the exit longer.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

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

/// The tracer of the request spans: `None` until [`export`] has started the exporter.
pub(super) fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}
