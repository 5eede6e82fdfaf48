//! The HTTP transports through the real binary on 127.0.0.1:0: rmcp's Streamable HTTP client
//! (stateful, stateless, 2026-07-28), a small SSE client for the legacy transport, raw
//! requests for each security rule, disconnects and shutdown.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::watch;

use crate::common::*;

pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const ACCEPT: &str = "application/json, text/event-stream";

/// A running `toolport serve --http 127.0.0.1:0`.
pub(crate) struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub(crate) url: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Start the server for `root` with `args` after `serve --http 127.0.0.1:0`; `token` goes in
/// TOOLPORT_TOKEN. Returns once it prints the address it listens on.
pub(crate) async fn start(root: &Path, args: &[&str], token: Option<&str>) -> Server {
    let mut all = vec!["serve", "--http", "127.0.0.1:0"];
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
                    .to_string();
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

fn shells(root: &Path) -> String {
    let path = root.join("shells.toml");
    std::fs::write(&path, "[exec]\nallow_shells = true\n").unwrap();
    path.display().to_string()
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

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

fn authed(builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    builder.header("authorization", format!("Bearer {TOKEN}"))
}

fn post_mcp(server: &Server, body: &str) -> reqwest::RequestBuilder {
    http()
        .post(format!("{}/mcp", server.url))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body.to_string())
}

/// Whether a process exists (and is not a zombie).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// Wait (bounded) until `check` holds: process death is not an event a test can await.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn first_pid(file: &Path) -> Option<i32> {
    std::fs::read_to_string(file)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// `sh -c` that records its pid in `pidfile` and sleeps for five minutes.
fn long_command(pidfile: &Path) -> Value {
    json!({"command": "sh", "args": ["-c", format!("echo $$ > {}; exec sleep 300", pidfile.display())]})
}

fn tools_call(id: u64, name: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
        .to_string()
}

/// Send raw bytes on a fresh connection and read the answer until the server closes it or
/// goes quiet.
async fn raw_http(server: &Server, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.url.trim_start_matches("http://");
    let mut stream = within(tokio::net::TcpStream::connect(addr)).await.unwrap();
    within(stream.write_all(request.as_bytes())).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => answer.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

// ---------------------------------------------------------------- a small SSE client

/// Reads `event:`/`data:` frames from a streaming response.
pub(crate) struct SseReader {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl SseReader {
    fn new(response: reqwest::Response) -> Self {
        Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// The next event with data, as (event name, data); comments (keep-alives) are skipped.
    async fn next(&mut self) -> (String, String) {
        within(async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let frame: String = self.buffer.drain(..end + 2).collect();
                    let mut name = "message".to_string();
                    let mut data = Vec::new();
                    for line in frame.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            name = v.trim().to_string();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
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
async fn open_sse(server: &Server) -> (SseReader, String) {
    let response = within(authed(http().get(format!("{}/sse", server.url))).send())
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
    (reader, format!("{}{endpoint}", server.url))
}

pub(crate) async fn post_message(endpoint: &str, body: &str) -> reqwest::Response {
    within(authed(http().post(endpoint)).body(body.to_string()).send())
        .await
        .unwrap()
}

/// Open and initialize a legacy session.
pub(crate) async fn legacy_session(server: &Server) -> (SseReader, String) {
    let (mut reader, endpoint) = open_sse(server).await;
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

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = tempdir();
    std::fs::write(root.join("hello.txt"), "hi over http\n").unwrap();
    (dir, root)
}

// ---------------------------------------------------------------- transports

#[tokio::test]
async fn streamable_http_stateful_lists_and_calls_tools() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "toolport");
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 5);
    let read = ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
    assert_eq!(read["content"], json!("hi over http\n"));
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn streamable_http_progress_arrives_as_sse() {
    let (_d, root) = workspace();
    let config = shells(&root);
    for mode in [None, Some("--stateless")] {
        let mut args = vec!["--config", config.as_str()];
        args.extend(mode);
        let server = start(&root, &args, Some(TOKEN)).await;
        let test_client = TestClient::default();
        let mut progress = test_client.progress();
        let client = mcp_client(&server, TOKEN, test_client).await;
        let out = ok(&call(
            &client,
            "execute_command",
            json!({"command": "sh", "args": ["-c", "echo step one; sleep 1.5; echo step two"]}),
        )
        .await);
        assert_eq!(out["stdout"], json!("step one\nstep two\n"), "{mode:?}");
        let first = within(progress.recv()).await.unwrap();
        assert!(first.total.is_some(), "{mode:?}: {first:?}");
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn streamable_http_stateless_serves_the_rmcp_client() {
    let (_d, root) = workspace();
    let server = start(&root, &["--stateless"], Some(TOKEN)).await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 5);
    let read = ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
    assert_eq!(read["content"], json!("hi over http\n"));
    // No session was opened: a raw initialize gets no session id back.
    let response = within(authed(post_mcp(&server, INIT)).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn streamable_http_serves_2026_07_28_stateless_requests() {
    let (_d, root) = workspace();
    for args in [&[][..], &["--stateless"][..]] {
        let server = start(&root, args, Some(TOKEN)).await;
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
                .auth_header(TOKEN),
        );
        let client = within(TestClient::default().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ))
        .await
        .unwrap();
        let read = ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
        assert_eq!(read["content"], json!("hi over http\n"), "{args:?}");
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn legacy_sse_flow_answers_on_the_stream() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let (mut reader, endpoint) = legacy_session(&server).await;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let response = post_message(&endpoint, list).await;
    assert_eq!(response.status(), 202);
    let answer = reader.message().await;
    assert_eq!(answer["id"], json!(2));
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 5);
    let read = tools_call(3, "read_file", json!({"path": "hello.txt"}));
    assert_eq!(post_message(&endpoint, &read).await.status(), 202);
    let answer = reader.message().await;
    assert_eq!(
        answer["result"]["structuredContent"]["content"],
        json!("hi over http\n")
    );
    // Not a JSON-RPC message: 400 with the reason.
    let bad = post_message(&endpoint, "not json").await;
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("JSON-RPC"));
    // Closing the stream removes the session.
    drop(reader);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = post_message(&endpoint, list).await.status();
        if status == 404 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session outlived its stream: {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn legacy_sse_sends_keep_alives() {
    let (_d, root) = workspace();
    let config = root.join("keepalive.toml");
    std::fs::write(&config, "[http]\nsse_keep_alive = \"1s\"\n").unwrap();
    let server = start(&root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;
    let (mut reader, endpoint) = legacy_session(&server).await;
    // A comment line (`:`) arrives on the quiet stream within the interval (plus slack). The
    // bound is well under the 15 s default, so an ignored setting fails the test.
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if reader.buffer.lines().any(|l| l.starts_with(':')) {
                break;
            }
            let chunk = reader
                .stream
                .next()
                .await
                .expect("the stream stays open")
                .unwrap();
            reader.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("no keep-alive within 5 s of a 1 s interval");
    // And the session still answers.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert_eq!(post_message(&endpoint, list).await.status(), 202);
    assert_eq!(reader.message().await["id"], json!(2));
}

#[tokio::test]
async fn healthz_needs_no_token_and_says_nothing() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let response = within(http().get(format!("{}/healthz", server.url)).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "ok");
}

// ---------------------------------------------------------------- security, one rule each

/// The three entry points every rule is checked on.
fn entry_points(server: &Server) -> Vec<reqwest::RequestBuilder> {
    vec![
        post_mcp(server, INIT),
        http().get(format!("{}/sse", server.url)),
        http()
            .post(format!("{}/message?sessionId=0", server.url))
            .body(INIT),
    ]
}

#[tokio::test]
async fn a_hostile_host_is_forbidden() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    for request in entry_points(&server) {
        let response = within(authed(request).header("host", "evil.example:80").send())
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        assert!(response.text().await.unwrap().contains("Host"));
    }
    // The operator can allow a name.
    let server = start(&root, &["--allowed-host", "mcp.internal"], Some(TOKEN)).await;
    let response = within(
        authed(post_mcp(&server, INIT))
            .header("host", "mcp.internal:1")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_hostile_origin_is_forbidden() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    for request in entry_points(&server) {
        let response = within(
            authed(request)
                .header("origin", "https://evil.example")
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), 403);
        assert!(response.text().await.unwrap().contains("Origin"));
    }
    // A loopback page is allowed by default.
    let response = within(
        authed(post_mcp(&server, INIT))
            .header("origin", "http://localhost:6274")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
}

async fn assert_unauthorized(server: &Server, authorization: Option<&str>, error: Option<&str>) {
    for request in entry_points(server) {
        let request = match authorization {
            Some(value) => request.header("authorization", value),
            None => request,
        };
        let response = within(request.send()).await.unwrap();
        assert_eq!(response.status(), 401);
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        if let Some(error) = error {
            assert!(challenge.contains(error), "{challenge}");
        }
        let body = response.text().await.unwrap();
        assert!(!body.contains(TOKEN), "the answer leaks the token: {body}");
    }
}

#[tokio::test]
async fn no_token_is_unauthorized() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    assert_unauthorized(&server, None, None).await;
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let wrong = format!("Bearer {}x", &TOKEN[..TOKEN.len() - 1]);
    assert_unauthorized(&server, Some(&wrong), Some("invalid_token")).await;
    assert_unauthorized(&server, Some("Bearer x"), Some("invalid_token")).await;
    // The refusals are logged (stderr is read concurrently: wait for them), without either
    // the expected token or the presented one.
    eventually("the refusals are logged", || {
        server.stderr().contains("refused an HTTP request")
    })
    .await;
    let stderr = server.stderr();
    assert!(!stderr.contains(TOKEN), "the token is logged: {stderr}");
    assert!(
        !stderr.contains(&wrong["Bearer ".len()..]),
        "the presented token is logged: {stderr}"
    );
}

#[tokio::test]
async fn a_wrong_scheme_prefix_is_unauthorized() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    assert_unauthorized(
        &server,
        Some(&format!("Basic {TOKEN}")),
        Some("invalid_request"),
    )
    .await;
    assert_unauthorized(&server, Some(&format!("Token {TOKEN}")), None).await;
    assert_unauthorized(&server, Some(TOKEN), None).await;
    // The scheme itself is case-insensitive.
    let response = within(
        post_mcp(&server, INIT)
            .header("authorization", format!("bearer {TOKEN}"))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let (_reader, endpoint) = legacy_session(&server).await;
    // A declared Content-Length over the cap is refused from the headers alone, before any
    // body is sent (a raw request: an HTTP client would still be writing the body when the
    // server answers and closes).
    for path in [
        "/mcp".to_string(),
        endpoint.trim_start_matches(&server.url).to_string(),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: {ACCEPT}\r\nContent-Length: {}\r\n\r\n",
            5 * 1024 * 1024
        );
        let answer = raw_http(&server, &head).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
        assert!(
            answer.contains("over the limit of 4194304 bytes"),
            "{answer}"
        );
    }
    // Without a Content-Length (chunked), the cap applies while reading. The server answers
    // 413 as soon as the cap is passed and closes the connection, so the client may instead
    // see its upload cut off; either way the body was refused.
    let chunks = futures::stream::iter(
        (0..6).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 1024 * 1024]))),
    );
    let result = within(
        authed(http().post(&endpoint))
            .body(reqwest::Body::wrap_stream(chunks))
            .send(),
    )
    .await;
    match result {
        Ok(response) => assert_eq!(response.status(), 413),
        Err(error) => assert!(error.is_request(), "{error}"),
    }
    // Stateless `/mcp` has no tracker in front of rmcp: rmcp's own cap applies while reading.
    let server = start(&root, &["--stateless"], Some(TOKEN)).await;
    let chunks = futures::stream::iter(
        (0..6).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 1024 * 1024]))),
    );
    let result = within(
        authed(post_mcp(&server, ""))
            .header("mcp-protocol-version", "2025-06-18")
            .body(reqwest::Body::wrap_stream(chunks))
            .send(),
    )
    .await;
    match result {
        Ok(response) => assert_eq!(response.status(), 413),
        Err(error) => assert!(error.is_request(), "{error}"),
    }
}

#[tokio::test]
async fn an_unknown_session_is_404() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let response = within(
        authed(post_mcp(&server, list))
            .header("mcp-session-id", "no-such-session")
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 404);
    let response = post_message(&format!("{}/message?sessionId=nope", server.url), list).await;
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn a_non_loopback_bind_without_a_token_is_refused() {
    let (_d, root) = workspace();
    for extra in [&[][..], &["--no-auth"][..]] {
        let mut args = vec!["serve", "--http", "0.0.0.0:0"];
        args.extend_from_slice(extra);
        let out = within(command(&root, &args).output()).await.unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("refusing to serve on 0.0.0.0:0 without a bearer token"),
            "{stderr}"
        );
        assert!(
            stderr.contains("TOOLPORT_TOKEN="),
            "a suggested token: {stderr}"
        );
    }
}

#[tokio::test]
async fn without_a_token_one_is_generated_and_printed_and_no_auth_opts_out() {
    let (_d, root) = workspace();
    let server = start(&root, &[], None).await;
    let stderr = server.stderr();
    let token = stderr
        .split("Authorization: Bearer ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no generated token on stderr: {stderr}"))
        .to_string();
    assert_eq!(token.len(), 64, "{token}");
    let client = mcp_client(&server, &token, TestClient::default()).await;
    assert_eq!(within(client.list_all_tools()).await.unwrap().len(), 5);
    within(client.cancel()).await.unwrap();
    let response = within(post_mcp(&server, INIT).send()).await.unwrap();
    assert_eq!(response.status(), 401);

    let server = start(&root, &["--no-auth"], None).await;
    let response = within(post_mcp(&server, INIT).send()).await.unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn the_session_cap_refuses_new_sessions_with_503() {
    let (_d, root) = workspace();
    let config = root.join("cap.toml");
    std::fs::write(&config, "[http]\nmax_sessions = 1\n").unwrap();
    let server = start(&root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    let response = within(authed(post_mcp(&server, INIT)).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let response = within(authed(http().get(format!("{}/sse", server.url))).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    // The existing session still works.
    assert_eq!(within(client.list_all_tools()).await.unwrap().len(), 5);
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn an_idle_session_expires() {
    let (_d, root) = workspace();
    let config = root.join("idle.toml");
    std::fs::write(&config, "[http]\nsession_idle_timeout = \"1s\"\n").unwrap();
    let server = start(&root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;
    let response = within(authed(post_mcp(&server, INIT)).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    drop(response);
    // Every request to a session restarts its idle clock, so the check waits longer than the
    // idle time before each try.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let mut expired = false;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let status = within(
            authed(post_mcp(&server, list))
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", "2025-06-18")
                .send(),
        )
        .await
        .unwrap()
        .status();
        if status == 404 {
            expired = true;
            break;
        }
    }
    assert!(expired, "the idle session did not expire");
    // A legacy session with no client message for the idle time is closed too.
    let (mut reader, endpoint) = open_sse(&server).await;
    within(async { while reader.stream.next().await.is_some_and(|c| c.is_ok()) {} }).await;
    let response = post_message(&endpoint, INIT).await;
    assert_eq!(response.status(), 404);
}

// ---------------------------------------------------------------- disconnects and shutdown

/// Open a raw stateful session and return its id.
async fn raw_session(server: &Server) -> String {
    let response = within(authed(post_mcp(server, INIT)).send()).await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    drop(response);
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = within(
        authed(post_mcp(server, initialized))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 202);
    session
}

#[tokio::test]
async fn a_session_answer_is_one_event_without_a_priming_event() {
    // Dropped calls are cancelled, not resumed, so an answer carries no `retry:` priming
    // event inviting a reconnect: just the message.
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let session = raw_session(&server).await;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let response = within(
        authed(post_mcp(&server, list))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let body = within(response.text()).await.unwrap();
    let data: Vec<&str> = body.lines().filter(|l| l.starts_with("data:")).collect();
    assert_eq!(data.len(), 1, "{body}");
    assert!(data[0].contains("\"read_file\""), "{body}");
    assert!(!body.lines().any(|l| l.starts_with("retry:")), "{body}");
}

#[tokio::test]
async fn a_disconnect_cancels_the_running_command_stateful() {
    let (_d, root) = workspace();
    let config = shells(&root);
    let server = start(&root, &["--config", &config], Some(TOKEN)).await;
    let session = raw_session(&server).await;
    let pidfile = root.join("pid");
    let response = within(
        authed(post_mcp(
            &server,
            &tools_call(7, "execute_command", long_command(&pidfile)),
        ))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    eventually("the command started", || first_pid(&pidfile).is_some()).await;
    let pid = first_pid(&pidfile).unwrap();
    assert!(alive(pid));
    // The client goes away: its response stream (and connection) is dropped.
    drop(response);
    eventually("the command is killed", || !alive(pid)).await;
    // The session itself is still usable.
    let list = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;
    let response = within(
        authed(post_mcp(&server, list))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_disconnect_cancels_the_running_command_stateless() {
    let (_d, root) = workspace();
    let config = shells(&root);
    let server = start(&root, &["--stateless", "--config", &config], Some(TOKEN)).await;
    let pidfile = root.join("pid");
    // Stateless answers are plain JSON, sent only when the call ends: the request is still
    // waiting for its response headers when the client goes away.
    let request = authed(post_mcp(
        &server,
        &tools_call(7, "execute_command", long_command(&pidfile)),
    ))
    .header("mcp-protocol-version", "2025-06-18")
    .send();
    let request = tokio::spawn(request);
    eventually("the command started", || first_pid(&pidfile).is_some()).await;
    let pid = first_pid(&pidfile).unwrap();
    request.abort();
    eventually("the command is killed", || !alive(pid)).await;
}

#[tokio::test]
async fn a_disconnect_cancels_the_running_command_legacy_sse() {
    let (_d, root) = workspace();
    let config = shells(&root);
    let server = start(&root, &["--config", &config], Some(TOKEN)).await;
    let (reader, endpoint) = legacy_session(&server).await;
    let pidfile = root.join("pid");
    let call = tools_call(7, "execute_command", long_command(&pidfile));
    assert_eq!(post_message(&endpoint, &call).await.status(), 202);
    eventually("the command started", || first_pid(&pidfile).is_some()).await;
    let pid = first_pid(&pidfile).unwrap();
    drop(reader);
    eventually("the command is killed", || !alive(pid)).await;
}

#[tokio::test]
async fn sigterm_cancels_calls_kills_commands_and_exits_0() {
    let (_d, root) = workspace();
    let config = shells(&root);
    let mut server = start(&root, &["--config", &config], Some(TOKEN)).await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    let (sse_reader, _endpoint) = legacy_session(&server).await;
    let pidfile = root.join("pid");
    let peer = client.peer().clone();
    let args = long_command(&pidfile);
    let call_task = tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("execute_command")
            .with_arguments(args.as_object().cloned().unwrap());
        let _ = peer.call_tool(params).await;
    });
    eventually("the command started", || first_pid(&pidfile).is_some()).await;
    let pid = first_pid(&pidfile).unwrap();
    let stopped = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = within(server.child.wait()).await.unwrap();
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        stopped.elapsed()
    );
    eventually("the command is killed", || !alive(pid)).await;
    call_task.abort();
    drop(sse_reader);
}

#[tokio::test]
async fn toolport_config_masks_the_token() {
    let (_d, root) = workspace();
    let mut cmd = command(&root, &["--http", "8787", "config"]);
    cmd.env("TOOLPORT_TOKEN", TOKEN);
    let out = within(cmd.output()).await.unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[http]"), "{stdout}");
    assert!(stdout.contains("bind = \"127.0.0.1:8787\""), "{stdout}");
    assert!(stdout.contains("********"), "{stdout}");
    assert!(!stdout.contains(TOKEN), "{stdout}");
}
