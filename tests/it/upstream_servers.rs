//! The official MCP reference servers behind toolport, servers nobody here wrote:
//! `@modelcontextprotocol/server-everything` (over stdio and Streamable HTTP) and
//! `@modelcontextprotocol/server-filesystem` from npm, and `mcp-server-fetch` from PyPI.
//!
//! They are pinned in `.ci/upstreams/` (package-lock.json, requirements.txt with hashes) and
//! installed there by `.ci/run`, which sets `TOOLPORT_REQUIRE_UPSTREAM_SERVERS=1`: then a
//! missing install fails these tests. Without that variable and without the install (a plain
//! `cargo test` on a fresh checkout) each test says it did not run and passes; install them
//! with `npm ci` in `.ci/upstreams` and `python3 -m venv .ci/upstreams/venv &&
//! .ci/upstreams/venv/bin/pip install --no-deps --require-hashes -r
//! .ci/upstreams/requirements.txt` (node >= 18 on PATH) to run them here.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::process::{alive, children, eventually};
use crate::common::reference::{reference_upstreams, servers, site, upstream};
use crate::common::upstreams::{audited_server, child_with_arg, until_listed};
use crate::common::{
    TestClient, audit_records, call, err, ok, progress_of, start_call, tempdir, text, within,
};

#[tokio::test]
async fn the_reference_servers_share_one_list_with_toolport_and_answer_through_it() {
    let Some(s) = servers() else { return };
    let (_d, root) = tempdir();
    let files = root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("a.txt"), "reference file\n").unwrap();
    let toml = reference_upstreams(&s, &files, "");
    let (_pid, client, log) = audited_server(&root, &toml, TestClient::default()).await;
    let names = until_listed(
        &client,
        &[
            "everything__echo",
            "everything__get-sum",
            "filesystem__read_file",
            "read_text_file",
            "fetch",
        ],
    )
    .await;
    assert!(names.iter().any(|n| n == "read_file"), "toolport's own");
    assert!(
        !names.iter().any(|n| n == "filesystem__read_text_file"),
        "conditional: a name nobody else has is not prefixed: {names:?}"
    );

    let echo = call(
        &client,
        "everything__echo",
        json!({"message": "through toolport"}),
    )
    .await;
    assert_eq!(text(&echo), "Echo: through toolport");
    let sum = call(&client, "everything__get-sum", json!({"a": 2, "b": 3})).await;
    assert!(text(&sum).contains('5'), "{}", text(&sum));
    // Output schema and structuredContent pass through as the server gave them.
    let tools = within(client.list_all_tools()).await.unwrap();
    let structured_tool = tools
        .iter()
        .find(|t| t.name == "everything__get-structured-content")
        .unwrap();
    assert!(structured_tool.output_schema.is_some());
    let weather = ok(&call(
        &client,
        "everything__get-structured-content",
        json!({"location": "New York"}),
    )
    .await);
    assert!(weather.get("temperature").is_some(), "{weather}");
    let read = call(
        &client,
        "read_text_file",
        json!({"path": files.join("a.txt")}),
    )
    .await;
    assert!(text(&read).contains("reference file"), "{read:?}");
    // The upstream's own refusal (outside its allowed folder) is a tool error.
    let outside = err(&call(&client, "read_text_file", json!({"path": "/etc/hostname"})).await);
    assert!(
        outside.contains("denied") || outside.contains("outside"),
        "{outside}"
    );
    let page = site().await;
    let fetched = call(&client, "fetch", json!({"url": page})).await;
    assert!(
        text(&fetched).contains("read this page through toolport"),
        "{fetched:?}"
    );

    eventually("six audit records", || audit_records(&log).len() >= 6).await;
    let upstreams: Vec<Value> = audit_records(&log)
        .iter()
        .map(|r| r["upstream"].clone())
        .collect();
    assert_eq!(
        upstreams,
        [
            "everything",
            "everything",
            "everything",
            "filesystem",
            "filesystem",
            "fetch"
        ]
    );
}

#[tokio::test]
async fn progress_cancellation_and_a_crash_of_the_reference_server() {
    let Some(s) = servers() else { return };
    let (_d, root) = tempdir();
    let toml = upstream(
        "everything",
        &s.node,
        &[s.everything.to_str().unwrap(), "stdio"],
        "",
    );
    let test_client = TestClient::default();
    let mut progress = test_client.progress();
    let (server, client, log) = audited_server(&root, &toml, test_client).await;
    until_listed(&client, &["everything__trigger-long-running-operation"]).await;
    let done = call(
        &client,
        "everything__trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
    )
    .await;
    assert!(text(&done).contains("completed"), "{done:?}");
    let first = within(progress.recv()).await.unwrap();
    assert_eq!(first.total, Some(4.0), "{first:?}");

    // Cancelled by the client: toolport tells the upstream and records it.
    let handle = start_call(
        &client,
        "everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 60}),
    )
    .await;
    progress_of(&mut progress, &handle.progress_token).await;
    within(handle.cancel(Some("test".into()))).await.unwrap();
    eventually("the cancellation is audited", || {
        audit_records(&log)
            .iter()
            .any(|r| r["outcome"] == "cancelled")
    })
    .await;

    // Killed mid-call: that call fails clearly, the server is started again.
    let handle = start_call(
        &client,
        "everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 60}),
    )
    .await;
    // Under way on the server (not a late notification of the cancelled call): then killed.
    progress_of(&mut progress, &handle.progress_token).await;
    let node = child_with_arg(server, |arg| arg.contains("server-everything"))
        .expect("the everything server runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(node),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) =
        within(handle.await_response()).await.unwrap()
    else {
        panic!("not a tool result");
    };
    let lost = err(&result);
    assert!(lost.contains("was lost during the call"), "{lost}");
    // Until it is back its tools are not listed (a call says why), or a call fails saying so.
    let params = rmcp::model::CallToolRequestParams::new("everything__echo")
        .with_arguments(json!({"message": "back"}).as_object().cloned().unwrap());
    let deadline = std::time::Instant::now() + crate::common::TIMEOUT;
    loop {
        match within(client.call_tool(params.clone())).await {
            Ok(echo) if text(&echo) == "Echo: back" => break,
            // Listed a moment longer than it runs: a tool error says so.
            Ok(down) => assert!(err(&down).contains("is not connected"), "{down:?}"),
            Err(error) => assert!(
                ["which is not connected", "being listed again"]
                    .iter()
                    .any(|why| error.to_string().contains(why)),
                "{error}"
            ),
        }
        assert!(std::time::Instant::now() < deadline, "never back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_reference_server_over_streamable_http() {
    let Some(s) = servers() else { return };
    let (_d, root) = tempdir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut everything = tokio::process::Command::new(&s.node);
    everything
        .arg(&s.everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let _everything = everything.spawn().unwrap();
    let toml = format!(
        "[[upstreams]]\nname = \"remote\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nallow_tools = [\"echo\"]\nstart_timeout = \"5s\"\n"
    );
    let (_pid, client, log) = audited_server(&root, &toml, TestClient::default()).await;
    // The server may still be starting: toolport retries until it answers.
    until_listed(&client, &["remote__echo"]).await;
    let echo = call(&client, "remote__echo", json!({"message": "over HTTP"})).await;
    assert_eq!(text(&echo), "Echo: over HTTP");
    eventually("the call is audited", || {
        audit_records(&log)
            .iter()
            .any(|r| r["upstream"] == "remote")
    })
    .await;
}

#[tokio::test]
async fn a_declined_call_never_reaches_the_reference_server() {
    let Some(s) = servers() else { return };
    let (_d, root) = tempdir();
    let files = root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let toml = upstream(
        "filesystem",
        &s.node,
        &[s.filesystem.to_str().unwrap(), files.to_str().unwrap()],
        "confirm_tools = [\"write_file\"]\ndeny_tools = [\"move_file\"]",
    );
    let (_pid, client, _log) = audited_server(&root, &toml, TestClient::confirming(false)).await;
    let names = until_listed(&client, &["filesystem__write_file"]).await;
    assert!(
        !names.iter().any(|n| n == "filesystem__move_file"),
        "denied"
    );
    let target = files.join("never.txt");
    let refused = err(&call(
        &client,
        "filesystem__write_file",
        json!({"path": target, "content": "x"}),
    )
    .await);
    assert!(refused.contains("declined"), "{refused}");
    assert!(!target.exists(), "the upstream never got the call");
    // A tool without confirmation reaches it.
    call(
        &client,
        "filesystem__create_directory",
        json!({"path": files.join("made")}),
    )
    .await;
    assert!(files.join("made").is_dir());
}

#[tokio::test]
async fn no_reference_server_survives_toolport_killed_with_sigkill() {
    let Some(s) = servers() else { return };
    let (_d, root) = tempdir();
    let files = root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let toml = reference_upstreams(&s, &files, "");
    let (server, client, _log) = audited_server(&root, &toml, TestClient::default()).await;
    until_listed(&client, &["everything__echo", "read_text_file", "fetch"]).await;
    let mut doomed = Vec::new();
    let mut next = children(server as i32);
    while let Some(pid) = next.pop() {
        next.extend(children(pid));
        doomed.push(pid);
    }
    assert!(
        doomed.len() >= 4,
        "the watchdog and three servers: {doomed:?}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    eventually("every server process is gone", || {
        doomed.iter().all(|&pid| !alive(pid))
    })
    .await;
}
