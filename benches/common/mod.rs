//! Support shared by the benchmarks: an in-memory MCP session ([`session`]), the one
//! `median` every report uses ([`stats`]), readers of a process's CPU time and memory
//! ([`proc`]), the bench binary's command line ([`args`]), the test suite's config helpers
//! ([`config`]), a raw JSON-RPC client on a server's stdio pipes ([`stdio`]), a server over
//! HTTP and rmcp's client for it ([`http`]) and [`object`].

// Each bench uses a part of this module; what one leaves unused is not dead.
#![allow(dead_code, unused_imports)]
// Bench set-up, not library code: a failed step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub(crate) mod args;
#[path = "../../tests/it/common/config.rs"]
pub(crate) mod config;
pub(crate) mod http;
pub(crate) mod proc;
pub(crate) mod session;
pub(crate) mod stats;
pub(crate) mod stdio;

pub(crate) use session::{Session, mcp_session};

use serde_json::Value;
use toolport_tools::JsonObject;

/// The map inside a `json!` object, as tool arguments are passed.
pub(crate) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not a JSON object: {other}"),
    }
}

/// The binary under test: `TOOLPORT_BIN`, else the one cargo built for this bench.
pub(crate) fn toolport_bin() -> std::path::PathBuf {
    std::env::var_os("TOOLPORT_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_toolport")))
}

/// As the server binary does before it runs commands: no controlling terminal, and the
/// watchdog every spawned command registers with (so its cost is part of the measurement).
pub(crate) fn prepare_commands() {
    toolport_tools::host::exec::prepare_host(toolport_bin().as_os_str());
    assert!(
        toolport_tools::host::exec::watchdog::installed(),
        "the watchdog was not armed"
    );
}

/// Criterion as every bench here uses it: 1 s warm-up, 3 s, 50 samples, then the command
/// line's own settings.
pub(crate) fn criterion() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args()
}
