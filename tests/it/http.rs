//! The HTTP transports through the real binary on 127.0.0.1:0, end to end: rmcp's Streamable
//! HTTP client (stateful, stateless, 2026-07-28), the legacy SSE transport, the session cap
//! and idle expiry, token generation and logging, disconnects and shutdown. Each rule of the
//! security gate alone (Host, Origin, token, declared body size, `/healthz`) is tested in
//! process, in `src/transport/http/tests.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use crate::common::config::{ALLOW_SHELLS, config_file};
use crate::common::http::*;
use crate::common::process::{alive, eventually, pids};
use crate::common::*;

/// A config file that lets `sh -c` run without confirmation.
fn shells(root: &Path) -> String {
    config_file(root, ALLOW_SHELLS).display().to_string()
}

fn first_pid(file: &Path) -> Option<i32> {
    pids(file).first().copied()
}

/// `sh -c` that records its pid in `pidfile` and sleeps for five minutes.
fn long_command(pidfile: &Path) -> Value {
    json!({"command": "sh", "args": ["-c", format!("echo $$ > {}; exec sleep 300", pidfile.display())]})
}

fn tools_call(id: u64, name: &str, args: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
        .to_string()
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
    assert_eq!(tools.len(), BUILTIN_TOOLS);
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
    assert_eq!(tools.len(), BUILTIN_TOOLS);
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

/// An L7 load balancer routes a 2026-07-28 request on its `Mcp-Method` / `Mcp-Name` headers
/// (SEP-2243) without reading the body; the server checks they say what the body says, so a
/// request cannot be routed as one call and run as another (rmcp's check, kept on).
#[tokio::test]
async fn mcp_method_and_name_headers_are_accepted_and_must_match_the_body() {
    let (_d, root) = workspace();
    for args in [&[][..], &["--stateless"][..]] {
        let server = start(&root, args, Some(TOKEN)).await;
        let call = call_2026(1, "read_file", &json!({"path": "hello.txt"}));
        let response = post_2026(&server.url, &call, "tools/call", Some("read_file")).await;
        assert_eq!(response.status(), 200, "{args:?}");
        let answer = within(response.text()).await.unwrap();
        assert!(answer.contains("hi over http"), "{answer}");
        for (method, name, reason) in [
            ("tools/call", Some("write_file"), "Mcp-Name"),
            ("tools/list", Some("read_file"), "Mcp-Method"),
            ("tools/call", None, "missing required Mcp-Name"),
        ] {
            let response = post_2026(&server.url, &call, method, name).await;
            assert_eq!(response.status(), 400, "{method} {name:?}");
            let body: Value = within(response.json()).await.unwrap();
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(reason), "{reason} in {body}");
        }
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
    assert_eq!(
        answer["result"]["tools"].as_array().unwrap().len(),
        BUILTIN_TOOLS
    );
    let read = tools_call(3, "read_file", &json!({"path": "hello.txt"}));
    assert_eq!(post_message(&endpoint, &read).await.status(), 202);
    let answer = reader.message().await;
    assert_eq!(
        answer["result"]["structuredContent"]["content"],
        json!("hi over http\n")
    );
    // Not a JSON-RPC message: 400 with the reason, as a JSON-RPC parse error.
    let bad = post_message(&endpoint, "not json").await;
    assert_eq!(bad.status(), 400);
    let error: Value = within(bad.json()).await.unwrap();
    assert_eq!(error["error"]["code"], json!(-32700), "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("JSON-RPC")),
        "{error}"
    );
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

// ---------------------------------------------------------------- security, end to end

#[tokio::test]
async fn an_allowed_host_flag_reaches_the_gate() {
    let (_d, root) = workspace();
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
async fn refusals_are_logged_without_tokens() {
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let wrong = format!("Bearer {}x", &TOKEN[..TOKEN.len() - 1]);
    let response = within(
        post_mcp(&server, INIT)
            .header("authorization", &wrong)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 401);
    // The refusal is logged (stderr is read concurrently: wait for it), without either the
    // expected token or the presented one.
    eventually("the refusal is logged", || {
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

/// Over a raw connection: a request's head and as much of its body as given, then the
/// response head, lower-cased.
async fn raw_request(server: &Server, head: &str, body: &str) -> (tokio::net::TcpStream, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = server.url.trim_start_matches("http://").to_owned();
    let mut stream = within(tokio::net::TcpStream::connect(&address))
        .await
        .unwrap();
    let request = format!("{head}\r\nHost: {address}\r\n\r\n{body}");
    within(stream.write_all(request.as_bytes())).await.unwrap();
    let mut response = Vec::new();
    let mut byte = [0u8; 1];
    while !response.ends_with(b"\r\n\r\n") {
        let n = within(stream.read(&mut byte)).await.unwrap();
        assert!(
            n == 1,
            "the connection closed before the response head: {response:?}"
        );
        response.push(byte[0]);
    }
    (stream, String::from_utf8_lossy(&response).to_lowercase())
}

#[tokio::test]
async fn a_refusal_that_leaves_a_body_unread_closes_the_connection() {
    // The server does not read the body of a request it refuses, so it cannot reuse the
    // connection: the refusal says `Connection: close`, or a client that sends its next
    // request on it (the Python SDK after an OAuth challenge) sees the connection drop.
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let (mut stream, head) = raw_request(
        &server,
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 64",
        "{\"jsonrpc\":\"2.0\"",
    )
    .await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    // And the server does close it (after the refusal's body).
    let mut rest = Vec::new();
    within(tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut rest))
        .await
        .unwrap();
    // A refused request without a body keeps its connection.
    let (_stream, head) = raw_request(
        &server,
        "GET /mcp HTTP/1.1\r\nAccept: text/event-stream",
        "",
    )
    .await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
}

#[tokio::test]
async fn a_streamed_body_over_the_cap_is_refused() {
    // Without a Content-Length (chunked), the cap applies while reading: by the body reader on
    // /message, by rmcp on stateless /mcp (no tracker in front of it). A declared length over
    // the cap is refused by the gate from the headers alone (tested in process). The server
    // answers 413 as soon as the cap is passed and closes the connection, so the client may
    // instead see its upload cut off; either way the body was refused.
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let (_reader, endpoint) = legacy_session(&server).await;
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
        .to_owned();
    assert_eq!(token.len(), 64, "{token}");
    let client = mcp_client(&server, &token, TestClient::default()).await;
    assert_eq!(
        within(client.list_all_tools()).await.unwrap().len(),
        BUILTIN_TOOLS
    );
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
    assert_eq!(
        within(client.list_all_tools()).await.unwrap().len(),
        BUILTIN_TOOLS
    );
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
        .to_owned();
    drop(response);
    // Every request to a session restarts its idle clock, so the check waits longer than the
    // idle time before each try.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let mut expired = false;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let status = within(on_session(&server, &session, list).send())
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

/// A POST of `body` to `/mcp` on `session` (with the token and the protocol version).
fn on_session(server: &Server, session: &str, body: &str) -> reqwest::RequestBuilder {
    authed(post_mcp(server, body))
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
}

/// Open a raw stateful session and return its id.
async fn raw_session(server: &Server) -> String {
    let response = within(authed(post_mcp(server, INIT)).send()).await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    drop(response);
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = within(on_session(server, &session, initialized).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    session
}

#[tokio::test]
async fn delete_ends_a_session_with_204_as_the_python_sdk_expects() {
    // The Python SDK logs "Session termination failed: 202" for anything but 200 or 204.
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let session = raw_session(&server).await;
    let response = within(
        authed(http().delete(format!("{}/mcp", server.url)))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(within(response.bytes()).await.unwrap().len(), 0);
    // The session is gone: a request on it finds nothing.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let response = within(on_session(&server, &session, list).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn a_session_answer_is_one_event_without_a_priming_event() {
    // Dropped calls are cancelled, not resumed, so an answer carries no `retry:` priming
    // event inviting a reconnect: just the message.
    let (_d, root) = workspace();
    let server = start(&root, &[], Some(TOKEN)).await;
    let session = raw_session(&server).await;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let response = within(on_session(&server, &session, list).send())
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
            &tools_call(7, "execute_command", &long_command(&pidfile)),
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
    let response = within(on_session(&server, &session, list).send())
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
        &tools_call(7, "execute_command", &long_command(&pidfile)),
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
    let call = tools_call(7, "execute_command", &long_command(&pidfile));
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
    assert!(
        stdout.contains("#   http.bind: 127.0.0.1:8787, from --http / TOOLPORT_HTTP"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "#   http.token: set from --token / TOOLPORT_TOKEN (a secret: never printed)"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains(TOKEN), "{stdout}");
}
