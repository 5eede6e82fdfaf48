//! Where a result's payload goes (`[tools] payload`): once, in the text block for a client the
//! server does not know, in `structuredContent` for Claude Code, Codex and opencode (whose
//! model reads that alone), in both when the operator says so. Every form's structured result
//! validates against the tool's published output schema.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::common::*;

/// The binary serving `root` with the default payload form (`TOOLPORT_PAYLOAD` unset) and
/// `args`.
fn default_form(root: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = command(root, args);
    cmd.env_remove("TOOLPORT_PAYLOAD");
    cmd
}

/// A client giving `name` as its `clientInfo.name`.
fn named(name: &'static str) -> TestClient {
    let mut client = TestClient::default();
    client.name = name;
    client
}

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
async fn an_unknown_client_gets_the_file_once_in_the_text_block() {
    let (_d, root) = tempdir();
    let text = file_with_lines(&root);
    let client = connect_command(default_form(&root, &[]), TestClient::default()).await;
    let result = call(&client, "read_file", json!({"path": "notes.txt"})).await;
    let structured = valid_structured(&client, "read_file", &result).await;
    assert_eq!(super::common::text(&result), text);
    assert!(
        structured.get("content").is_none(),
        "the content is sent twice: {structured}"
    );
    assert_eq!(structured["total_lines"], json!(5));
    assert!(structured["sha256"].as_str().is_some_and(|s| s.len() == 64));
    within(client.cancel()).await.unwrap();
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
    for (name, in_text) in [("toolport-tests", true), ("codex-mcp-client", false)] {
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
        ("both", "toolport-tests", true, true),
        ("structured", "toolport-tests", false, true),
        ("text", "claude-code", true, false),
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
