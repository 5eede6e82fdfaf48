//! Metrics, with the OpenTelemetry MCP semantic conventions' names where they exist:
//! `mcp.server.operation.duration` (a histogram in seconds, by `mcp.method.name`,
//! `gen_ai.tool.name` and `error.type`), plus toolport's own counters and gauges: calls by tool
//! and outcome, sessions by transport, calls in flight, and commands running.
//!
//! Served as OpenMetrics/Prometheus text at `/metrics` on the HTTP listener (behind the gate),
//! and as the MCP resource `toolport://metrics` (JSON) on every transport. The exposition is
//! the `prometheus-client` crate's; the JSON form is built from it, so both always agree.
//! Prometheus names use `_` for `.` and carry the unit (`…_seconds`, `…_total`).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use serde_json::{Map, Value, json};

/// The URI of the metrics resource.
pub(crate) const RESOURCE_URI: &str = "toolport://metrics";

/// Histogram buckets in seconds: from a cached file read (sub-millisecond) to a long build
/// (minutes), roughly doubling.
const DURATION_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    120.0,
];

type Labels = Vec<(String, String)>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// Every metric toolport keeps. Cheap to update (atomics); rendering walks them.
pub struct Metrics {
    registry: Registry,
    duration: Family<Labels, Histogram, fn() -> Histogram>,
    calls: Family<Labels, Counter>,
    sessions: Family<Labels, Gauge>,
    in_flight: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// The metrics, with the tools' own registered too: `commands_running` (the executor's
    /// gauge) and `web_requests` (`web_search`'s requests by provider and outcome), and with
    /// `[replicas]` the shared store's (`cluster::Cluster::metrics`).
    pub(crate) fn new(
        commands_running: Gauge,
        web_requests: Family<Labels, Counter>,
        shared_store: Option<(Gauge, Family<Labels, Counter>)>,
    ) -> Arc<Self> {
        let mut registry = Registry::default();
        let duration = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "mcp.server.operation.duration: how long the server took to answer an MCP request",
            Unit::Seconds,
            duration.clone(),
        );
        let calls = Family::<Labels, Counter>::default();
        registry.register(
            "toolport_tool_calls",
            "tools/call requests by tool and outcome (ok, error, denied, declined, cancelled, timeout)",
            calls.clone(),
        );
        let sessions = Family::<Labels, Gauge>::default();
        registry.register(
            "toolport_sessions",
            "MCP sessions open, by transport (sessions that used initialize)",
            sessions.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "toolport_calls_in_flight",
            "tools/call requests being handled",
            in_flight.clone(),
        );
        registry.register(
            "toolport_commands_running",
            "commands (execute_command, plugin tools) running now",
            commands_running,
        );
        registry.register(
            "toolport_web_requests",
            "web_search provider requests by provider and outcome (ok, timeout, rate_limited, refused, blocked, empty, network, parse, too_large, status)",
            web_requests,
        );
        if let Some((up, away)) = shared_store {
            registry.register(
                "toolport_shared_store_up",
                "1 while the shared store (Redis, [replicas]) answers, 0 while it is away",
                up,
            );
            registry.register(
                "toolport_shared_store_away_decisions",
                "decisions that needed the shared store while it was away, by outcome (refused, local)",
                away,
            );
        }
        Arc::new(Self {
            registry,
            duration,
            calls,
            sessions,
            in_flight,
        })
    }

    /// Metrics with a commands-running gauge of their own (for a server assembled by hand,
    /// as the in-process tests do; `toolport::build` wires the executor's).
    pub fn standalone() -> Arc<Self> {
        Self::new(Gauge::default(), Family::default(), None)
    }

    /// Record a finished `tools/call`: its duration (with `error_type` when it failed:
    /// `tool_error` for an `isError` result, the JSON-RPC error code otherwise) and its outcome.
    pub(crate) fn record_call(
        &self,
        tool: &str,
        outcome: &str,
        error_type: Option<&str>,
        elapsed: Duration,
    ) {
        let mut labels: Labels = vec![
            ("mcp_method_name".into(), "tools/call".into()),
            ("gen_ai_tool_name".into(), tool.into()),
        ];
        if let Some(error_type) = error_type {
            labels.push(("error_type".into(), error_type.into()));
        }
        self.duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.calls
            .get_or_create(&vec![
                ("tool".into(), tool.into()),
                ("outcome".into(), outcome.into()),
            ])
            .inc();
    }

    /// A call started; the guard marks it finished when dropped.
    pub(crate) fn call_started(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// A session opened on `transport`; the guard marks it closed when dropped.
    pub(crate) fn session_opened(&self, transport: &str) -> SessionOpen {
        let gauge = self
            .sessions
            .get_or_create_owned(&vec![("transport".into(), transport.into())]);
        gauge.inc();
        SessionOpen(gauge)
    }

    /// The OpenMetrics text exposition (what Prometheus scrapes).
    pub(crate) fn render_text(&self) -> String {
        let mut text = String::new();
        if let Err(error) = encode(&mut text, &self.registry) {
            tracing::error!(%error, "cannot encode the metrics");
        }
        text
    }

    /// The same samples as JSON: `{"metrics": [{"name", "labels", "value"}…]}`.
    pub(crate) fn render_json(&self) -> Value {
        let samples: Vec<Value> = self
            .render_text()
            .lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            .filter_map(parse_sample)
            .collect();
        json!({ "metrics": samples })
    }
}

/// One sample line of the text exposition, `name{a="x",b="y"} 1.5`, as JSON.
fn parse_sample(line: &str) -> Option<Value> {
    let (head, value) = line.rsplit_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let (name, labels) = match head.split_once('{') {
        Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}')?)?),
        None => (head, Map::new()),
    };
    Some(json!({"name": name, "labels": labels, "value": value}))
}

/// `a="x",b="y\"z"` into a map, undoing the exposition's escapes (`\\`, `\"`, `\n`).
fn parse_labels(text: &str) -> Option<Map<String, Value>> {
    let mut labels = Map::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                other => value.push(other),
            }
        };
        labels.insert(key.trim_start_matches(',').to_owned(), Value::String(value));
        rest = after[end + 1..].trim_start_matches(',');
    }
    Some(labels)
}

/// A call in flight; decrements the gauge when dropped.
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// An open session; decrements its transport's gauge when dropped.
#[derive(Debug)]
pub(crate) struct SessionOpen(Gauge);

impl Drop for SessionOpen {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_move_the_histogram_and_the_counters() {
        let metrics = Metrics::standalone();
        {
            let _flight = metrics.call_started();
            metrics.record_call("read_file", "ok", None, Duration::from_millis(3));
            metrics.record_call(
                "read_file",
                "error",
                Some("tool_error"),
                Duration::from_millis(700),
            );
        }
        let _session = metrics.session_opened("stdio");
        let text = metrics.render_text();
        assert!(
            text.contains("# TYPE mcp_server_operation_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"read_file\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("toolport_tool_calls_total{tool=\"read_file\",outcome=\"error\"} 1"),
            "{text}"
        );
        assert!(text.contains("toolport_calls_in_flight 0"), "{text}");
        assert!(
            text.contains("toolport_sessions{transport=\"stdio\"} 1"),
            "{text}"
        );

        let json = metrics.render_json();
        let calls: Vec<&Value> = json["metrics"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["name"] == json!("toolport_tool_calls_total"))
            .collect();
        assert_eq!(calls.len(), 2, "{json}");
        assert!(calls.iter().any(
            |m| m["labels"] == json!({"tool": "read_file", "outcome": "ok"})
                && m["value"] == json!(1.0)
        ));
    }

    #[test]
    fn label_values_with_escapes_parse_back() {
        let sample = parse_sample(r#"x_total{a="q\"uote",b="back\\slash"} 2"#).unwrap_or_default();
        assert_eq!(
            sample,
            json!({"name": "x_total", "labels": {"a": "q\"uote", "b": "back\\slash"}, "value": 2.0})
        );
    }
}
