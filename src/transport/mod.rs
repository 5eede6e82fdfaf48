//! Transports: how MCP messages reach the [`crate::server::ToolportServer`].
//!
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout (the default);
//! - [`http`]: the HTTP server, its security gate and its settings, carrying Streamable HTTP
//!   at `/mcp` and legacy HTTP+SSE at `/sse` + `/message`.
//!
//! Every session, whatever carries it, ends the same way: [`serve_until_stopped`].

pub(crate) mod http;
pub mod stdio;

// The fuzz target `http_gate`'s doors (fuzz/; `fuzzing` feature only).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use http::{gate::fuzz_origin_rule, settings::fuzz_gate_check};

use rmcp::service::{QuitReason, RunningService};
use rmcp::{RoleServer, Service};

/// Run a served session (a [`crate::server::ToolportServer`], traced) until the client leaves
/// or `stop` resolves; on `stop`, cancel the session (every call in flight is cancelled, so
/// running commands are killed with their process groups) and wait for it to wind down. The
/// one "serve until stopped" loop of stdio, the in-process server and each legacy SSE session.
pub(crate) async fn serve_until_stopped<S: Service<RoleServer>>(
    running: RunningService<RoleServer, S>,
    stop: impl Future<Output = ()>,
) -> Result<QuitReason, tokio::task::JoinError> {
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        result = &mut waiting => result,
        () = stop => {
            cancel.cancel();
            waiting.await
        }
    }
}
