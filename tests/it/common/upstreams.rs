//! What the upstream tests share (`upstreams.rs`, toolport as the upstream, and
//! `upstream_servers.rs`, the reference servers): a server with an audit log, waiting for an
//! upstream's tools to be listed, finding an upstream's process, and an MCP server over
//! Streamable HTTP whose results have shapes the reference servers do not give on demand.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use tokio::process::Command;

use super::process::children;
use super::{Client, TIMEOUT, TestClient, command, config_file, spawn_server, tool_names, within};

/// How often [`until_listed`] lists again.
const RELIST: Duration = Duration::from_millis(50);

/// A server for `root` with `toml` as its config, auditing to `root/audit.log`: its pid, the
/// client, the log.
pub(crate) async fn audited_server(
    root: &Path,
    toml: &str,
    client: TestClient,
) -> (u32, Client, PathBuf) {
    audited_server_as(command, root, toml, client).await
}

/// [`audited_server`] started by `start`: [`command`], or
/// [`default_form`](super::default_form) for results in the form the client's name picks (as
/// a user's server does) instead of the tests' fixed `both`.
pub(crate) async fn audited_server_as(
    start: fn(&Path, &[&str]) -> Command,
    root: &Path,
    toml: &str,
    client: TestClient,
) -> (u32, Client, PathBuf) {
    let config = config_file(root, toml);
    let log = root.join("audit.log");
    let transport = spawn_server(start(
        root,
        &[
            "--config",
            config.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
    ));
    let pid = transport.id().unwrap();
    let client = within(client.serve(transport)).await.unwrap();
    (pid, client, log)
}

/// Wait until every name in `wanted` is listed (upstreams start in the background); the
/// listing then.
pub(crate) async fn until_listed(client: &Client, wanted: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let names = tool_names(client).await;
        if wanted.iter().all(|w| names.iter().any(|n| n == w)) {
            return names;
        }
        assert!(
            Instant::now() < deadline,
            "not all of {wanted:?} listed: {names:?}"
        );
        tokio::time::sleep(RELIST).await;
    }
}

/// The child of `server` one of whose arguments `matches` (an upstream's process).
pub(crate) fn child_with_arg(server: u32, matches: impl Fn(&str) -> bool) -> Option<i32> {
    children(i32::try_from(server).unwrap())
        .into_iter()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).split('\0').any(&matches))
        })
}

/// An MCP server written for these tests, over Streamable HTTP on loopback, whose two tools
/// answer with the result shapes the reference servers do not give on demand:
/// - `refuse`: an `isError` result with a text block, an image block and `structuredContent`;
/// - `summarise`: a result (with an output schema) whose only text block is a summary, not
///   the JSON of its `structuredContent`;
/// - `flood`: a text of `bytes` bytes (an answer too large for an upstream's
///   `max_message_bytes`).
///
/// Returns its URL; it serves until the test's runtime ends.
pub(crate) async fn shaped_server() -> String {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let service = StreamableHttpService::new(
        || Ok(Shaped),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}/mcp")
}

/// The handler of [`shaped_server`].
#[derive(Clone)]
struct Shaped;

/// A one-pixel PNG, base64.
pub(crate) const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

impl rmcp::ServerHandler for Shaped {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let object =
            |value: serde_json::Value| std::sync::Arc::new(value.as_object().unwrap().clone());
        let empty = object(serde_json::json!({"type": "object"}));
        let mut summarise = rmcp::model::Tool::new("summarise", "Rows, summarised", empty.clone());
        summarise.output_schema = Some(object(serde_json::json!({
            "type": "object",
            "properties": {"rows": {"type": "array", "items": {"type": "integer"}}},
            "required": ["rows"]
        })));
        let flood = object(serde_json::json!({
            "type": "object",
            "properties": {"bytes": {"type": "integer"}},
            "required": ["bytes"]
        }));
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![
            rmcp::model::Tool::new("refuse", "Always refuses", empty),
            summarise,
            rmcp::model::Tool::new("flood", "A text of `bytes` bytes", flood),
        ]))
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        use rmcp::model::{CallToolResult, ContentBlock};
        let result = match request.name.as_ref() {
            "refuse" => {
                let mut result = CallToolResult::error(vec![
                    ContentBlock::text("quota exceeded: try again in 60 s"),
                    ContentBlock::image(PIXEL_PNG, "image/png"),
                ]);
                result.structured_content =
                    Some(serde_json::json!({"code": 429, "retry_after": 60}));
                result
            }
            "flood" => {
                let bytes = request
                    .arguments
                    .as_ref()
                    .and_then(|args| args.get("bytes")?.as_u64())
                    .unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text("x".repeat(bytes as usize))])
            }
            _ => {
                let mut result = CallToolResult::success(vec![ContentBlock::text("3 rows")]);
                result.structured_content = Some(serde_json::json!({"rows": [1, 2, 3]}));
                result
            }
        };
        Ok(result.into())
    }
}
