//! Support shared by the benchmarks: an in-memory MCP session ([`session`]), the one
//! `median` every report uses ([`stats`]), readers of a process's CPU time and memory
//! ([`proc`]), the bench binary's command line ([`args`]), the test suite's config helpers
//! ([`config`]) and [`object`].

// Each bench uses a part of this module; what one leaves unused is not dead.
#![allow(dead_code, unused_imports)]
// Bench set-up, not library code: a failed step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub(crate) mod args;
#[path = "../../tests/it/common/config.rs"]
pub(crate) mod config;
pub(crate) mod proc;
pub(crate) mod session;
pub(crate) mod stats;

pub(crate) use session::{Session, mcp_session};

use serde_json::Value;
use toolport::tool::JsonObject;

/// The map inside a `json!` object, as tool arguments are passed.
pub(crate) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not a JSON object: {other}"),
    }
}
