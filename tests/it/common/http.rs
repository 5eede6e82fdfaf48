//! Helpers for the HTTP transports: start `toolport serve --http 127.0.0.1:0` and learn its
//! address, rmcp's Streamable HTTP client, raw requests with the token, and a small SSE
//! client for the legacy transport. Used by `http.rs` and `mcp_config.rs`.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::watch;

use super::{Client, TestClient, command, within};

/// The token the tests' servers are given.
pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";
/// A raw `initialize` request.
pub(crate) const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
/// What a Streamable HTTP client accepts.
pub(crate) const ACCEPT: &str = "application/json, text/event-stream";

/// A running `toolport serve --http 127.0.0.1:0`.
pub(crate) struct Server {
    pub(crate) child: Child,
    /// `http://127.0.0.1:PORT`
    pub(crate) url: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    pub(crate) fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Start the server for `root` with `args` after `serve --http 127.0.0.1:0`; `token` goes in
/// TOOLPORT_TOKEN. Returns once it prints the address it listens on.
pub(crate) async fn start(root: &Path, args: &[&str], token: Option<&str>) -> Server {
    start_at(root, "127.0.0.1:0", args, token).await
}

/// [`start`] on `address` (a port chosen beforehand, when others must know it first).
pub(crate) async fn start_at(
    root: &Path,
    address: &str,
    args: &[&str],
    token: Option<&str>,
) -> Server {
    let mut all = vec!["serve", "--http", address];
    all.extend_from_slice(args);
    let mut cmd = command(root, &all);
    if let Some(token) = token {
        cmd.env("TOOLPORT_TOKEN", token);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn toolport");
    let stderr = Arc::new(Mutex::new(String::new()));
    let (tx, mut rx) = watch::channel(None::<String>);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let log = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix("toolport: listening on ") {
                let url = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = tx.send(Some(url));
            }
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let url = within(async {
        loop {
            if let Some(url) = rx.borrow_and_update().clone() {
                return url;
            }
            if rx.changed().await.is_err() {
                panic!(
                    "the server exited before listening: {}",
                    stderr.lock().unwrap()
                );
            }
        }
    })
    .await;
    Server { child, url, stderr }
}

/// rmcp's Streamable HTTP client on `/mcp` with `token`.
pub(crate) async fn mcp_client(server: &Server, token: &str, client: TestClient) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
            .auth_header(token),
    );
    within(client.serve(transport))
        .await
        .expect("initialize over HTTP")
}

/// A 2026-07-28 `tools/call` of `tool` with `args` and request id `id`: no session, the
/// version, client and capabilities in its `_meta`.
pub(crate) fn call_2026(id: u32, tool: &str, args: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": args, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

/// A POST of a 2026-07-28 request to `{url}/mcp` with the token and its routing headers
/// (SEP-2243): `Mcp-Method` and, when given, `Mcp-Name`.
pub(crate) async fn post_2026(
    url: &str,
    body: &str,
    method: &str,
    name: Option<&str>,
) -> reqwest::Response {
    let mut request = authed(http().post(format!("{url}/mcp")))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_owned());
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    within(request.send()).await.unwrap()
}

pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::new()
}

pub(crate) fn authed(builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    builder.header("authorization", format!("Bearer {TOKEN}"))
}

pub(crate) fn post_mcp(server: &Server, body: &str) -> reqwest::RequestBuilder {
    http()
        .post(format!("{}/mcp", server.url))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body.to_owned())
}

/// Reads `event:`/`data:` frames from a streaming response.
pub(crate) struct SseReader {
    pub(crate) stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    pub(crate) buffer: String,
}

impl SseReader {
    fn new(response: reqwest::Response) -> Self {
        Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// The next event with data, as (event name, data); comments (keep-alives) are skipped.
    pub(crate) async fn next(&mut self) -> (String, String) {
        within(async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let frame: String = self.buffer.drain(..end + 2).collect();
                    let mut name = "message".to_owned();
                    let mut data = Vec::new();
                    for line in frame.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            name = v.trim().to_owned();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                        }
                    }
                    if !data.is_empty() {
                        return (name, data.join("\n"));
                    }
                    continue;
                }
                let chunk = self
                    .stream
                    .next()
                    .await
                    .expect("the SSE stream ended")
                    .unwrap();
                self.buffer
                    .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            }
        })
        .await
    }

    /// The next `message` event's JSON.
    pub(crate) async fn message(&mut self) -> Value {
        let (name, data) = self.next().await;
        assert_eq!(name, "message", "{data}");
        serde_json::from_str(&data).unwrap()
    }
}

/// Open a legacy session: returns the reader and the absolute message endpoint.
pub(crate) async fn open_sse(server: &Server) -> (SseReader, String) {
    open_sse_at(&server.url).await
}

/// [`open_sse`] at `url` (a server's, or a load balancer's in front of several).
pub(crate) async fn open_sse_at(url: &str) -> (SseReader, String) {
    let response = within(authed(http().get(format!("{url}/sse"))).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut reader = SseReader::new(response);
    let (name, endpoint) = reader.next().await;
    assert_eq!(name, "endpoint");
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    (reader, format!("{url}{endpoint}"))
}

pub(crate) async fn post_message(endpoint: &str, body: &str) -> reqwest::Response {
    within(authed(http().post(endpoint)).body(body.to_owned()).send())
        .await
        .unwrap()
}

/// Open and initialize a legacy session.
pub(crate) async fn legacy_session(server: &Server) -> (SseReader, String) {
    legacy_session_at(&server.url).await
}

/// [`legacy_session`] at `url`.
pub(crate) async fn legacy_session_at(url: &str) -> (SseReader, String) {
    let (mut reader, endpoint) = open_sse_at(url).await;
    let init = INIT.replace("2025-06-18", "2024-11-05");
    assert_eq!(post_message(&endpoint, &init).await.status(), 202);
    let answer = reader.message().await;
    assert_eq!(answer["id"], json!(1));
    assert_eq!(answer["result"]["protocolVersion"], json!("2024-11-05"));
    assert_eq!(answer["result"]["serverInfo"]["name"], json!("toolport"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post_message(&endpoint, initialized).await.status(), 202);
    (reader, endpoint)
}
