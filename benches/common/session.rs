//! An MCP session with the real `ToolportServer` over an in-memory pipe, served by toolport's
//! own stdio transport and driven by rmcp's client.

use std::sync::Arc;

use rmcp::service::{QuitReason, RunningService};
use rmcp::{RoleClient, ServiceExt};
use toolport::server::{Shared, ToolportServer};
use toolport::transport::stdio::StdioTransport;

/// A connected client and the task serving it.
pub(crate) type Session = (
    RunningService<RoleClient, ()>,
    tokio::task::JoinHandle<Result<QuitReason, tokio::task::JoinError>>,
);

/// Start a server for `shared` on `rt` and connect an rmcp client to it.
pub(crate) fn mcp_session(rt: &tokio::runtime::Runtime, shared: &Arc<Shared>) -> Session {
    rt.block_on(async {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let transport = StdioTransport::new(server_read, server_write);
        let handler = ToolportServer::new(shared.clone());
        // Serve in its own task: `serve` waits for the client's `initialize`.
        let server = tokio::spawn(async move {
            let running = handler.serve(transport).await.expect("server");
            running.waiting().await
        });
        let client = ().serve((client_read, client_write)).await.expect("client");
        (client, server)
    })
}
