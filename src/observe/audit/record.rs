//! What the audit log records: how a call ended ([`Outcome`], [`Ending`]) and one record
//! before redaction ([`Record`]).

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};
use toolport_tools::ToolError;
use toolport_tools::host::{CallFacts, CommandFacts};

/// How a call ended, as the audit log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Outcome {
    /// A result that is not an error.
    Ok,
    /// An `isError` result (or a protocol error such as an unknown tool).
    Error,
    /// Refused by policy, confinement or a budget.
    Denied,
    /// The user declined the confirmation.
    Declined,
    /// The client cancelled it, or the server stopped.
    Cancelled,
    /// A time limit ended it.
    Timeout,
}

/// One audit record, before redaction.
#[derive(Debug)]
pub(crate) struct Record<'a> {
    pub(crate) session: &'a str,
    pub(crate) transport: &'a str,
    pub(crate) client: Option<&'a str>,
    /// Who made the call (`sub`, `client_id`): an authenticated HTTP request's principal.
    pub(crate) principal: Option<(&'a str, Option<&'a str>)>,
    pub(crate) tool: &'a str,
    /// The upstream MCP server the tool is served from (`[[upstreams]]`), if any.
    pub(crate) upstream: Option<&'a str>,
    /// The tool the call came through, when it was not called directly: `call_tool` of the
    /// search surface (`tool` is still the tool that ran).
    pub(crate) via: Option<&'a str>,
    pub(crate) args: &'a Map<String, Value>,
    pub(crate) outcome: Outcome,
    /// The error's kind and message, when not ok.
    pub(crate) error: Option<(&'a str, &'a str)>,
    pub(crate) duration: Duration,
    pub(crate) bytes_out: usize,
    /// For commands: argv, exit code, signal.
    pub(crate) command: Option<&'a CommandFacts>,
    /// When the call ended (the record's `ts`).
    pub(crate) at: SystemTime,
}

/// How a call ended, for its record.
pub(crate) struct Ending {
    pub(crate) outcome: Outcome,
    /// The failure's kind and message, when not ok.
    pub(crate) error: Option<(&'static str, String)>,
    pub(crate) duration: Duration,
    pub(crate) bytes_out: usize,
    pub(crate) command: Option<CommandFacts>,
}

impl Outcome {
    /// The name, as in the audit log and the metrics' `outcome` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Denied => "denied",
            Self::Declined => "declined",
            Self::Cancelled => "cancelled",
            Self::Timeout => "timeout",
        }
    }
}

/// The audit outcome of a tool error: a refusal is `denied`, or `declined` when the user said
/// no; cancellation and time limits have their own.
pub(crate) fn outcome_of(error: &ToolError, facts: &CallFacts) -> Outcome {
    match error {
        ToolError::PermissionDenied(_) if facts.declined() => Outcome::Declined,
        ToolError::PermissionDenied(_) => Outcome::Denied,
        ToolError::Cancelled(_) => Outcome::Cancelled,
        ToolError::Timeout(_) => Outcome::Timeout,
        _ => Outcome::Error,
    }
}
