//! Seeing and bounding what tools do: the audit log ([`audit`]) and the metrics
//! ([`metrics`]), both fed by one [`Call`] per `tools/call`, which the server opens before
//! anything else and finishes with the outcome (a call dropped before it ends counts as
//! cancelled). What a call did beyond its result (the argv a command ran, whether the user
//! declined) comes from the call's [`CallFacts`], which the executor and the registry fill in.
//! Budgets ([`budget`]) are checked by the server right after the call is opened, so a refused
//! call is recorded like any other.
//! Traces ([`trace`]) wrap every MCP request, not only calls: a span around the session's
//! handler, exported by OTLP when configured.

pub mod audit;
pub mod budget;
pub mod metrics;
pub mod trace;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use toolport_tools::ToolError;
use toolport_tools::host::{CallFacts, json_size};

use audit::{Ending, Outcome, Pending};
use metrics::{InFlight, Metrics};

/// Why a call failed, for the audit log and the metrics.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The error's kind (`not_found`, `unknown_tool` …).
    pub(crate) kind: &'static str,
    /// Its message.
    pub(crate) message: String,
    /// The audit outcome.
    pub(crate) outcome: Outcome,
    /// The OpenTelemetry `error.type`: `tool_error` for an `isError` result, the JSON-RPC
    /// error code for a protocol error.
    pub(crate) error_type: Cow<'static, str>,
}

impl Failure {
    /// The failure of a call whose tool returned `error` (an `isError` result).
    pub(crate) fn tool(error: &ToolError, facts: &CallFacts) -> Self {
        Self {
            kind: error.kind(),
            message: error.to_string(),
            outcome: audit::outcome_of(error, facts),
            error_type: TOOL_ERROR.into(),
        }
    }
}

/// The OpenTelemetry `error.type` of an `isError` result.
pub(crate) const TOOL_ERROR: &str = "tool_error";

/// One `tools/call` being observed: the one guard of a call. Finished, it moves the metrics
/// and writes the audit record; dropped unfinished (the client went away, the server
/// stopped), it records the call as cancelled.
pub(crate) struct Call {
    metrics: Arc<Metrics>,
    _in_flight: InFlight,
    tool: String,
    started: Instant,
    facts: Arc<CallFacts>,
    /// `None` without an audit log.
    audit: Option<Pending>,
    /// Recorded (or skipped): nothing left for `Drop` to do.
    recorded: bool,
}

impl Call {
    /// A call to `tool` starts now.
    pub(crate) fn begin(
        metrics: &Arc<Metrics>,
        audit: Option<Pending>,
        tool: &str,
        facts: Arc<CallFacts>,
    ) -> Self {
        Self {
            metrics: metrics.clone(),
            _in_flight: metrics.call_started(),
            tool: tool.to_owned(),
            started: Instant::now(),
            facts,
            audit,
            recorded: false,
        }
    }

    /// The size of `result` as sent, when the audit log wants it (its `bytes_out`); 0
    /// otherwise, without serializing anything.
    pub(crate) fn size_of(&self, result: &impl serde::Serialize) -> usize {
        if self.audit.is_some() {
            json_size(result).unwrap_or(0)
        } else {
            0
        }
    }

    /// The call ended: `failure` when it did not succeed; `bytes_out` is the size of what was
    /// sent (0 when nobody asked for it).
    pub(crate) fn finish(mut self, failure: Option<Failure>, bytes_out: usize) {
        let (outcome, error, error_type) = match failure {
            Some(f) => (f.outcome, Some((f.kind, f.message)), Some(f.error_type)),
            // A command that ran out of time is a result for execute_command (not an MCP
            // error, so no `error.type`), a timeout in the audit log.
            None if self.facts.command().is_some_and(|c| c.timed_out) => (
                Outcome::Timeout,
                Some((
                    "timeout",
                    "the command was still running at its timeout and was killed".to_owned(),
                )),
                None,
            ),
            None => (Outcome::Ok, None, None),
        };
        self.record(outcome, error, error_type.as_deref(), bytes_out);
    }

    /// The call is not over (the client retries it with the user's answer): record nothing.
    pub(crate) fn skip(mut self) {
        self.recorded = true;
    }

    fn record(
        &mut self,
        outcome: Outcome,
        error: Option<(&'static str, String)>,
        error_type: Option<&str>,
        bytes_out: usize,
    ) {
        let duration = self.started.elapsed();
        self.metrics
            .record_call(&self.tool, outcome.as_str(), error_type, duration);
        self.recorded = true;
        if let Some(audit) = self.audit.take() {
            audit.write(Ending {
                outcome,
                error,
                duration,
                bytes_out,
                command: self.facts.command(),
            });
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.recorded {
            self.record(
                Outcome::Cancelled,
                Some((
                    "cancelled",
                    "the call ended before its result was sent".into(),
                )),
                Some(CANCELLED),
                0,
            );
        }
    }
}

/// The `error.type` of a call that ended without an answer.
const CANCELLED: &str = "cancelled";
