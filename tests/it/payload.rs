//! Where a result's payload goes (`[tools] payload`): in both halves for a client the server
//! does not know, once in `structuredContent` for a client whose model reads that alone
//! (Claude Code, Codex, VS Code), once in the text block for one whose model reads the text
//! alone (Claude Desktop, Zed, …), in one form for everyone when the operator fixes it. Every
//! form's structured result validates against the tool's published output schema.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::common::*;

/// The structured result, checked against `tool`'s output schema as `tools/list` publishes it.
async fn valid_structured(client: &Client, tool: &str, result: &CallToolResult) -> Value {
    let tools = within(client.list_all_tools()).await.unwrap();
    let schema = tools
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.output_schema.clone())
        .unwrap_or_else(|| panic!("{tool} publishes no output schema"));
    let schema = Value::Object((*schema).clone());
    let structured = ok(result);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&structured)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}'s structured result does not match its output schema: {errors:?}"
    );
    structured
}

fn file_with_lines(root: &Path) -> String {
    let text: String = (1..=5).map(|i| format!("line {i} of the file\n")).collect();
    fs::write(root.join("notes.txt"), &text).unwrap();
    text
}

#[tokio::test]
async fn an_unknown_client_gets_the_file_in_both_halves() {
    // The Python SDK's clients all send `mcp`, and disagree on which half they read (Pydantic
    // AI takes structuredContent, LangChain the text): only both is right for each of them.
    let (_d, root) = tempdir();
    let text = file_with_lines(&root);
    for name in ["mcp", "toolport-tests", "cursor-vscode"] {
        let client = connect_command(default_form(&root, &[]), named(name)).await;
        let result = call(&client, "read_file", json!({"path": "notes.txt"})).await;
        let structured = valid_structured(&client, "read_file", &result).await;
        assert_eq!(super::common::text(&result), text, "{name}");
        assert_eq!(structured["content"], json!(text), "{name}");
        assert_eq!(structured["total_lines"], json!(5), "{name}");
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn a_client_whose_model_reads_the_text_gets_the_file_once_there() {
    let (_d, root) = tempdir();
    let text = file_with_lines(&root);
    for name in ["claude-ai", "Zed", "continue-client", "Cline", "opencode"] {
        let client = connect_command(default_form(&root, &[]), named(name)).await;
        let result = call(&client, "read_file", json!({"path": "notes.txt"})).await;
        let structured = valid_structured(&client, "read_file", &result).await;
        assert_eq!(super::common::text(&result), text, "{name}");
        assert!(
            structured.get("content").is_none(),
            "{name}: the content is sent twice: {structured}"
        );
        assert!(structured["sha256"].as_str().is_some_and(|s| s.len() == 64));
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn vs_code_gets_the_file_once_in_structured_content() {
    // VS Code drops a text block when structuredContent is there: the payload must be in it.
    let (_d, root) = tempdir();
    let text = file_with_lines(&root);
    for name in ["Visual Studio Code", "Visual Studio Code - Insiders"] {
        let client = connect_command(default_form(&root, &[]), named(name)).await;
        let result = call(&client, "read_file", json!({"path": "notes.txt"})).await;
        let structured = valid_structured(&client, "read_file", &result).await;
        assert_eq!(structured["content"], json!(text), "{name}");
        assert!(
            !super::common::text(&result).contains("line 1 of the file"),
            "{name}: the content is sent twice"
        );
        within(client.cancel()).await.unwrap();
    }
}

/// A file of `size` bytes: lines of printable ASCII (JSON escapes only the line breaks).
fn large_file(root: &Path, size: usize) -> String {
    let line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-+\n";
    let mut text = line.repeat(size / line.len() + 1);
    text.truncate(size - 1);
    text.push('\n');
    fs::write(root.join("large.txt"), &text).unwrap();
    text
}

/// The most a 1 MiB read may cost Claude Code on the wire, as a multiple of the file: the
/// payload once (plus its JSON escaping and the result's metadata), not twice.
const ONE_PAYLOAD_ON_THE_WIRE: f64 = 1.15;

#[tokio::test]
async fn claude_code_gets_a_large_read_once_on_the_wire() {
    let (_d, root) = tempdir();
    let size = 1 << 20;
    let text = large_file(&root, size);
    // Without its result cap, which pages a 1 MiB read for Claude Code (host_fit.rs).
    let mut cmd = default_form(&root, &["--result-cap", "off"]);
    cmd.env("RUST_LOG", "warn");
    let mut raw = Raw::from_command(cmd);
    raw.initialize_as("claude-code").await;
    raw.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"large.txt"}}}"#)
        .await;
    let line = raw.recv_line().await;
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["result"]["structuredContent"]["content"], json!(text));
    let ratio = line.len() as f64 / size as f64;
    assert!(
        ratio <= ONE_PAYLOAD_ON_THE_WIRE,
        "a 1 MiB read is {} bytes on the wire ({ratio:.3}x the file)",
        line.len()
    );
}

#[tokio::test]
async fn claude_code_gets_the_file_once_in_structured_content() {
    let (_d, root) = tempdir();
    let text = file_with_lines(&root);
    let client = connect_command(default_form(&root, &[]), named("claude-code")).await;
    let result = call(
        &client,
        "read_file",
        json!({"path": "notes.txt", "offset": 2, "limit": 2}),
    )
    .await;
    let structured = valid_structured(&client, "read_file", &result).await;
    let wanted: String = text
        .lines()
        .skip(1)
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(structured["content"], json!(wanted));
    let summary = super::common::text(&result);
    assert!(
        !summary.contains("line 2 of the file"),
        "the content is sent twice: {summary}"
    );
    assert!(
        summary.contains("lines 2-3 of 5") && summary.contains("offset=4"),
        "the text block says where the text stopped and how to go on: {summary}"
    );
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn grep_and_commands_send_their_payload_once() {
    let (_d, root) = tempdir();
    fs::write(root.join("a.txt"), "needle here\nhay\n").unwrap();
    for (name, in_text) in [("Zed", true), ("codex-mcp-client", false)] {
        let client = connect_command(default_form(&root, &[]), named(name)).await;
        let result = call(&client, "grep", json!({"pattern": "needle"})).await;
        let structured = valid_structured(&client, "grep", &result).await;
        let text = super::common::text(&result);
        assert_eq!(text.contains("1:needle here"), in_text, "{name}: {text}");
        assert_eq!(structured.get("matches").is_some(), !in_text, "{name}");
        assert!(
            text.contains("1 matching lines in 1 files"),
            "{name}: {text}"
        );

        let result = call(
            &client,
            "execute_command",
            json!({"command": "printf", "args": ["%s-%s\n", "left", "right"]}),
        )
        .await;
        let structured = valid_structured(&client, "execute_command", &result).await;
        let text = super::common::text(&result);
        assert_eq!(text.contains("left-right"), in_text, "{name}: {text}");
        assert_eq!(structured.get("stdout").is_some(), !in_text, "{name}");
        assert_eq!(structured["return_code"], json!(0), "{name}");
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn the_operator_can_send_both_or_fix_the_form() {
    let (_d, root) = tempdir();
    let text = file_with_lines(&root);
    for (flag, client_name, in_text, in_structured) in [
        ("both", "claude-code", true, true),
        ("structured", "Zed", false, true),
        ("text", "claude-code", true, false),
        ("text", "mcp", true, false),
    ] {
        let client = connect_command(
            default_form(&root, &["--payload", flag]),
            named(client_name),
        )
        .await;
        let result = call(&client, "read_file", json!({"path": "notes.txt"})).await;
        let structured = valid_structured(&client, "read_file", &result).await;
        assert_eq!(
            super::common::text(&result) == text,
            in_text,
            "--payload {flag}"
        );
        assert_eq!(
            structured.get("content") == Some(&json!(text)),
            in_structured,
            "--payload {flag}"
        );
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn a_bad_payload_setting_names_the_allowed_values() {
    let (_d, root) = tempdir();
    let out = within(default_form(&root, &["--payload", "twice", "tools"]).output())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("twice") && stderr.contains("auto") && stderr.contains("structured"),
        "{stderr}"
    );
    let config = root.join("payload.toml");
    fs::write(&config, "[tools]\npayload = \"twice\"\n").unwrap();
    let out =
        within(default_form(&root, &["--config", config.to_str().unwrap(), "tools"]).output())
            .await
            .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("twice") && stderr.contains("auto"),
        "{stderr}"
    );
}
