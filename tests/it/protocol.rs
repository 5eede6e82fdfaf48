//! The MCP surface of the real binary: initialize, tools/list, prompts, errors, and the stdio
//! wire behaviour (bad lines answered, EOF exits, stdout carries only JSON-RPC).

use std::process::Stdio;

use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::*;

#[tokio::test]
async fn initialize_reports_toolport_and_its_capabilities() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.clone().unwrap();
    assert_eq!(server.name, "toolport");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.prompts.is_some());
    let instructions = info.instructions.clone().unwrap();
    assert!(
        instructions.contains("read_file (Read file)"),
        "{instructions}"
    );
    assert!(
        instructions.contains(&root.display().to_string()),
        "{instructions}"
    );
}

#[tokio::test]
async fn tools_list_matches_the_snapshot() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    insta::assert_json_snapshot!("tools_list", tools);
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_invalid_params_error() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let error = within(client.call_tool(CallToolRequestParams::new("no_such_tool")))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("-32602"), "{error}");
    assert!(
        error.contains("no_such_tool") && error.contains("read_file"),
        "{error}"
    );
    // The session is still usable.
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), BUILTIN_TOOLS);
}

#[tokio::test]
async fn prompts_hold_every_tools_instructions() {
    let (_d, root) = tempdir();
    let client = connect(&root).await;
    let prompts = within(client.list_all_prompts()).await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [&["tool_instructions"][..], &BUILTIN_NAMES[..]].concat()
    );
    let all = within(client.get_prompt(GetPromptRequestParams::new("tool_instructions")))
        .await
        .unwrap();
    let text = all.messages[0].content.as_text().unwrap().text.clone();
    assert_eq!(text.matches("Tool: ").count(), BUILTIN_TOOLS, "{text}");
    for section in [
        "Description:",
        "Purpose:",
        "Parameters:",
        "Expected Output:",
        "Example:",
    ] {
        assert!(text.contains(section), "missing {section}: {text}");
    }
    let one = within(client.get_prompt(GetPromptRequestParams::new("path_info")))
        .await
        .unwrap();
    let text = one.messages[0].content.as_text().unwrap().text.clone();
    assert!(text.starts_with("Tool: path_info\n"), "{text}");
    let error = within(client.get_prompt(GetPromptRequestParams::new("nope")))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown prompt"), "{error}");
}

/// The envelope and code of a JSON-RPC error reply, as one object (the message is left out:
/// its wording is rmcp's).
fn rpc_error(reply: &Value) -> Value {
    json!({"jsonrpc": reply["jsonrpc"], "id": reply["id"], "code": reply["error"]["code"]})
}

#[tokio::test]
async fn a_malformed_line_gets_a_parse_error_and_the_server_keeps_serving() {
    let (_d, root) = tempdir();
    let mut raw = Raw::start(&root);
    raw.send(b"{this is not json").await;
    assert_eq!(
        rpc_error(&raw.recv().await),
        json!({"jsonrpc": "2.0", "id": null, "code": -32700})
    );
    raw.initialize().await;
    raw.send(b"also not json").await;
    assert_eq!(raw.recv().await["error"]["code"], json!(-32700));
    raw.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    let reply = raw.recv().await;
    assert_eq!(reply["id"], json!(1));
    assert_eq!(
        reply["result"]["tools"].as_array().unwrap().len(),
        BUILTIN_TOOLS
    );
}

#[tokio::test]
async fn messages_written_in_pieces_all_arrive_and_are_answered() {
    // Clients write a line in several writes (a formatter writing to an unbuffered pipe);
    // pieces that arrive while the server is busy answering must still make whole messages.
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let mut raw = Raw::start(&root);
    raw.initialize().await;
    for id in 1..=1000 {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"a.txt"}}}}}}"#
        );
        let stdin = raw.stdin.as_mut().unwrap();
        for piece in [&line[..12], &line[12..40], &line[40..]] {
            within(stdin.write_all(piece.as_bytes())).await.unwrap();
            within(stdin.flush()).await.unwrap();
        }
        raw.send(b"").await;
        let reply = raw.recv().await;
        assert_eq!(reply["id"], json!(id), "{reply}");
        assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    }
}

#[tokio::test]
async fn a_well_formed_object_that_is_not_a_message_gets_invalid_request() {
    let (_d, root) = tempdir();
    let mut raw = Raw::start(&root);
    raw.initialize().await;
    raw.send(br#"{"jsonrpc":"2.0","id":7,"method":5}"#).await;
    assert_eq!(
        rpc_error(&raw.recv().await),
        json!({"jsonrpc": "2.0", "id": 7, "code": -32600})
    );
    raw.send(br#"{"hello":"world"}"#).await;
    assert_eq!(
        rpc_error(&raw.recv().await),
        json!({"jsonrpc": "2.0", "id": null, "code": -32600})
    );
    raw.send(br#"[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]"#)
        .await;
    let reply = raw.recv().await;
    assert_eq!(reply["error"]["code"], json!(-32600));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch")
    );
    raw.send(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)
        .await;
    assert_eq!(raw.recv().await["id"], json!(9));
}

#[tokio::test]
async fn an_unknown_method_gets_method_not_found() {
    let (_d, root) = tempdir();
    let mut raw = Raw::start(&root);
    raw.initialize().await;
    raw.send(br#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#)
        .await;
    assert_eq!(
        rpc_error(&raw.recv().await),
        json!({"jsonrpc": "2.0", "id": 3, "code": -32601})
    );
}

#[tokio::test]
async fn an_mcp_method_with_params_of_the_wrong_shape_gets_invalid_params() {
    let (_d, root) = tempdir();
    let mut raw = Raw::start(&root);
    raw.initialize().await;
    raw.send(
        br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":"x"}}"#,
    )
    .await;
    let reply = raw.recv().await;
    assert_eq!(
        rpc_error(&reply),
        json!({"jsonrpc": "2.0", "id": 4, "code": -32602})
    );
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("`arguments` (an object"), "{message}");
    raw.send(br#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":5}}"#)
        .await;
    assert_eq!(
        rpc_error(&raw.recv().await),
        json!({"jsonrpc": "2.0", "id": 5, "code": -32602})
    );
}

#[tokio::test]
async fn large_lines_are_accepted_and_oversized_lines_answered() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("f.txt"), "ok\n").unwrap();
    let mut raw = Raw::start(&root);
    raw.initialize().await;
    // 20 MiB: over rmcp's own 16 MiB limit, under ours.
    let padding = "x".repeat(20 * 1024 * 1024);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"path_info","arguments":{{"path":"f.txt"}},"_meta":{{"pad":"{padding}"}}}}}}"#
    );
    raw.send(big.as_bytes()).await;
    let reply = raw.recv().await;
    assert_eq!(reply["id"], json!(4));
    assert_eq!(reply["result"]["structuredContent"]["exists"], json!(true));
    // Over 64 MiB: answered, discarded, and the server goes on.
    let huge = vec![b'a'; 64 * 1024 * 1024 + 10];
    raw.send(&huge).await;
    assert_eq!(
        rpc_error(&raw.recv().await),
        json!({"jsonrpc": "2.0", "id": null, "code": -32600})
    );
    raw.send(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
        .await;
    assert_eq!(raw.recv().await["id"], json!(5));
}

#[tokio::test]
async fn stdin_eof_makes_the_server_exit_cleanly() {
    let (_d, root) = tempdir();
    let mut raw = Raw::start(&root);
    raw.initialize().await;
    raw.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    drop(raw.stdin.take());
    // The in-flight reply is still delivered before the exit.
    assert_eq!(raw.recv().await["id"], json!(1));
    let status = within(raw.child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    within(tokio::io::AsyncReadExt::read_to_string(
        &mut raw.stdout,
        &mut rest,
    ))
    .await
    .unwrap();
    assert_eq!(rest, "", "nothing after the last reply");
}

#[tokio::test]
async fn every_protocol_version_can_list_and_call_tools() {
    use rmcp::model::ProtocolVersion;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let (_d, root) = tempdir();
    std::fs::write(root.join("f.txt"), "v\n").unwrap();
    // The stateless 2026-07-28 revision: no initialize, metadata on every request.
    let transport = spawn_server(command(&root, &[]));
    let client = within(().serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    ))
    .await
    .unwrap();
    assert_eq!(
        within(client.list_all_tools()).await.unwrap().len(),
        BUILTIN_TOOLS
    );
    let result = within(
        client.call_tool(
            CallToolRequestParams::new("read_file")
                .with_arguments(json!({"path": "f.txt"}).as_object().cloned().unwrap()),
        ),
    )
    .await
    .unwrap();
    assert_eq!(result.structured_content.unwrap()["content"], json!("v\n"));

    // Every version negotiated with initialize.
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut raw = Raw::start(&root);
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"raw","version":"1"}}}}}}"#
        );
        raw.send(init.as_bytes()).await;
        assert_eq!(
            raw.recv().await["result"]["protocolVersion"],
            json!(version)
        );
        raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"f.txt"}}}"#).await;
        let reply = raw.recv().await;
        assert_eq!(
            reply["result"]["structuredContent"]["content"],
            json!("v\n"),
            "{version}: {reply}"
        );
    }
}

#[tokio::test]
async fn progress_is_sent_only_when_the_request_has_a_token() {
    let (_d, root) = tempdir();
    let config = config_file(&root, ALLOW_SHELLS);
    let mut raw = Raw::start_with(&root, &["--config", config.to_str().unwrap()]);
    raw.initialize().await;
    let call = |id: u32, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"execute_command","arguments":{{"command":"sh","args":["-c","echo working; sleep 1.5; echo done"]}}{meta}}}}}"#
        )
    };
    // No token: the next line is the result itself.
    raw.send(call(1, "").as_bytes()).await;
    let reply = raw.recv().await;
    assert_eq!(reply["id"], json!(1), "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["stdout"],
        json!("working\ndone\n")
    );
    // With a token: progress notifications carrying it come first.
    raw.send(call(2, r#","_meta":{"progressToken":"tok"}"#).as_bytes())
        .await;
    let first = raw.recv().await;
    assert_eq!(first["method"], json!("notifications/progress"), "{first}");
    assert_eq!(first["params"]["progressToken"], json!("tok"));
    let mut last = first;
    while last.get("id").is_none() {
        last = raw.recv().await;
    }
    assert_eq!(last["id"], json!(2));
}

/// The requests of a short session: initialize, initialized, a tools/list and a call.
const SESSION: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"path_info","arguments":{"path":"."}}}"#,
    "\n",
);

/// Check the replies to [`SESSION`], one JSON message per line and nothing else (in any
/// order: requests are served concurrently).
fn assert_session_replies(stdout: &str) {
    let mut replies: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect();
    replies.sort_by_key(|r| r["id"].as_i64());
    let ids: Vec<Value> = replies.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, [json!(0), json!(1), json!(2)], "{stdout}");
    assert_eq!(
        replies[1]["result"]["tools"].as_array().unwrap().len(),
        BUILTIN_TOOLS
    );
    assert_eq!(
        replies[2]["result"]["structuredContent"]["type"],
        json!("directory")
    );
}

#[tokio::test]
async fn stdio_over_a_unix_socket_pair_works_as_node_clients_connect() {
    // Node's child_process gives a child socket pairs, not pipes, for its stdio.
    let (_d, root) = tempdir();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let mut cmd = command(&root, &[]);
    cmd.stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    ours.set_nonblocking(true).unwrap();
    let stream = tokio::net::UnixStream::from_std(ours).unwrap();
    let (read, mut write) = stream.into_split();
    within(write.write_all(SESSION.as_bytes())).await.unwrap();
    let mut lines = BufReader::new(read).lines();
    let mut out = String::new();
    for _ in 0..3 {
        out.push_str(&within(lines.next_line()).await.unwrap().unwrap());
        out.push('\n');
    }
    assert_session_replies(&out);
    // Closing our end is end-of-file for the server: it exits cleanly.
    drop(write);
    drop(lines);
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn stdio_from_and_to_regular_files_works() {
    // `toolport < requests.jsonl > replies.jsonl`: files cannot be polled, so this takes the
    // blocking stdio path.
    let (_d, root) = tempdir();
    let requests = root.join("requests.jsonl");
    let replies = root.join("replies.jsonl");
    std::fs::write(&requests, SESSION).unwrap();
    let mut cmd = command(&root, &[]);
    cmd.stdin(std::fs::File::open(&requests).unwrap())
        .stdout(std::fs::File::create(&replies).unwrap())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let status = within(cmd.status()).await.unwrap();
    assert!(status.success(), "{status:?}");
    assert_session_replies(&std::fs::read_to_string(&replies).unwrap());
}
