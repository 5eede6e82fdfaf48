//! Behaviour that needs a tool the binary does not ship (one that panics, one that waits for
//! cancellation): the same server and stdio transport code, served in-process over an
//! in-memory pipe to rmcp's client.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::json;
use tokio::sync::mpsc;
use toolport::server::Shared;
use toolport::transport::stdio::StdioTransport;
use toolport_tools::{
    AiTool, ConfirmFallback, JsonObject, ToolContext, ToolError, ToolOutput, ToolRegistry,
    Workspace,
};

use crate::common::*;

struct Panics;

#[async_trait]
impl AiTool for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn description(&self) -> &str {
        "Always panics."
    }
    fn input_schema(&self) -> Arc<JsonObject> {
        Arc::new(json!({"type": "object"}).as_object().cloned().unwrap())
    }
    async fn execute(
        &self,
        _args: JsonObject,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        panic!("deliberate test panic")
    }
}

struct WaitsForCancel(mpsc::UnboundedSender<&'static str>);

#[async_trait]
impl AiTool for WaitsForCancel {
    fn name(&self) -> &str {
        "waits"
    }
    fn description(&self) -> &str {
        "Waits until cancelled."
    }
    fn input_schema(&self) -> Arc<JsonObject> {
        Arc::new(json!({"type": "object"}).as_object().cloned().unwrap())
    }
    async fn execute(&self, _args: JsonObject, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.send("started").unwrap();
        ctx.progress
            .report(1.0, Some(2.0), Some("halfway".into()))
            .await;
        ctx.cancel.cancelled().await;
        self.0.send("cancelled").unwrap();
        Err(ToolError::Cancelled("cancelled".into()))
    }
}

fn serve(
    tools: Vec<Arc<dyn AiTool>>,
) -> (
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<()>,
    tempfile::TempDir,
) {
    let (dir, root) = tempdir();
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    let shared = Arc::new(Shared {
        registry: Arc::new(toolport_tools::host::LiveRegistry::new(registry)),
        workspace: Arc::new(Workspace::new(std::slice::from_ref(&root), &[]).unwrap()),
        confirm_fallback: ConfirmFallback::Deny,
        audit: None,
        metrics: toolport::observe::metrics::Metrics::standalone(),
        budgets: Default::default(),
        jobs: Default::default(),
        payload: Default::default(),
        result_cap: Default::default(),
        surface: Default::default(),
        search_index: Default::default(),
        upstreams: toolport_tools::host::Upstreams::new(root.clone(), false),
        principal_budgets: Arc::default(),
    });
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let task = tokio::spawn(async move {
        toolport::serve(shared, StdioTransport::new(read, write))
            .await
            .unwrap();
    });
    (client_end, task, dir)
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_server_stays_up() {
    let (end, task, _dir) = serve(vec![Arc::new(Panics)]);
    let client = within(TestClient::default().serve(end)).await.unwrap();
    let result = call(&client, "panics", json!({})).await;
    let message = err(&result);
    assert!(
        message.contains("crashed") && message.contains("deliberate test panic"),
        "{message}"
    );
    // Answered, and still serving.
    let again = call(&client, "panics", json!({})).await;
    err(&again);
    assert_eq!(within(client.list_all_tools()).await.unwrap().len(), 1);
    within(client.cancel()).await.unwrap();
    within(task).await.unwrap();
}

#[tokio::test]
async fn cancellation_reaches_the_tool_and_progress_reaches_the_client() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (end, _task, _dir) = serve(vec![Arc::new(WaitsForCancel(tx))]);
    let test_client = TestClient::default();
    let mut progress = test_client.progress();
    let client = within(test_client.serve(end)).await.unwrap();
    // rmcp's client gives every request a progress token of its own.
    let params = CallToolRequestParams::new("waits");
    let handle = within(client.peer().send_cancellable_request(
        ClientRequest::CallToolRequest(CallToolRequest::new(params)),
        PeerRequestOptions::no_options(),
    ))
    .await
    .unwrap();
    let handle_token = handle.progress_token.clone();
    assert_eq!(within(rx.recv()).await, Some("started"));
    within(handle.cancel(Some("test".into()))).await.unwrap();
    assert_eq!(within(rx.recv()).await, Some("cancelled"));
    // The progress notification arrived with the request's token.
    let seen = within(progress.recv()).await.unwrap();
    assert_eq!(seen.progress_token, handle_token);
    assert_eq!(seen.progress, 1.0);
    assert_eq!(seen.message.as_deref(), Some("halfway"));
    within(client.cancel()).await.unwrap();
}
