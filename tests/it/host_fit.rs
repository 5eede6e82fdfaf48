//! Results that fit the host: the per-tool `_meta` hints Claude Code reads from `tools/list`
//! (`anthropic/searchHint`, `anthropic/alwaysLoad`, `anthropic/maxResultSizeChars`), and the
//! default pages of read_file, read_many_files, grep and command output, which fit under the
//! result cap of a client with a known one (Claude Code: 500,000 characters of the
//! `structuredContent` it hands its model) and continue with `next_offset` and the like. The
//! operator moves the cap (`--result-cap`) or turns it off.

use std::fs;
use std::path::Path;

use rmcp::model::{CallToolResult, Tool};
use serde_json::{Value, json};

use crate::common::*;

/// Claude Code's cap on a declared tool's result, in characters (`Rpe=500000`).
const CLAUDE_CODE_CAP: usize = 500_000;

/// `read_max_bytes`' default (1 MiB): what read_file returns per call to other clients.
const READ_MAX_BYTES: usize = 1024 * 1024;

/// What `result_chars` adds to a payload limit for the rest of a result.
const ENVELOPE: u64 = 64 * 1024;

/// The tools listed as always loaded by default.
const CORE: [&str; 5] = ["read_file", "grep", "glob", "edit_file", "execute_command"];

/// The listing's `_meta` of `tool`.
fn meta<'a>(tools: &'a [Tool], tool: &str) -> &'a serde_json::Map<String, Value> {
    let entry = tools
        .iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("{tool} is not listed"));
    &entry
        .meta
        .as_ref()
        .unwrap_or_else(|| panic!("{tool} has no _meta"))
        .0
}

/// The tools listed with `anthropic/alwaysLoad: true`.
fn always_loaded(tools: &[Tool]) -> Vec<String> {
    tools
        .iter()
        .filter(|t| {
            t.meta
                .as_ref()
                .and_then(|m| m.0.get("anthropic/alwaysLoad"))
                .is_some()
        })
        .inspect(|t| {
            assert_eq!(
                t.meta.as_ref().unwrap().0["anthropic/alwaysLoad"],
                json!(true),
                "{}",
                t.name
            );
        })
        .map(|t| t.name.to_string())
        .collect()
}

/// The characters of what Claude Code hands its model: `JSON.stringify(structuredContent)`.
fn model_chars(result: &CallToolResult) -> usize {
    let structured = result
        .structured_content
        .as_ref()
        .expect("a structured result");
    serde_json::to_string(structured).unwrap().chars().count()
}

#[tokio::test]
async fn every_tool_is_listed_with_a_search_hint_and_the_paged_ones_with_their_largest_result() {
    let (_d, root) = tempdir();
    let client = connect_with(&root, &["--read-max-bytes", "4096"], TestClient::default()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    for tool in &tools {
        let hint = meta(&tools, &tool.name)["anthropic/searchHint"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no search hint", tool.name));
        assert!(
            !hint.trim().is_empty() && hint.chars().count() <= 120,
            "{}: {hint:?}",
            tool.name
        );
    }
    assert_eq!(
        meta(&tools, "read_file")["anthropic/searchHint"],
        json!("read file: filesystem text image")
    );
    // The byte limits that bound a result, as characters: six times the payload (JSON's
    // `\u001b` for a control character, the worst escaping) and the envelope, never more than
    // Claude Code keeps. read_file, read_many_files and grep follow read_max_bytes; a
    // command's two streams max_output_bytes (100 KiB) each, past the cap.
    for tool in ["read_file", "read_many_files", "grep"] {
        assert_eq!(
            meta(&tools, tool)["anthropic/maxResultSizeChars"],
            json!(6 * 4096 + ENVELOPE),
            "{tool}"
        );
    }
    assert_eq!(
        meta(&tools, "execute_command")["anthropic/maxResultSizeChars"],
        json!(CLAUDE_CODE_CAP)
    );
    // A tool no byte limit bounds declares nothing (Claude Code's own cap applies).
    assert!(!meta(&tools, "list_directory").contains_key("anthropic/maxResultSizeChars"));
    let mut loaded = always_loaded(&tools);
    loaded.sort();
    let mut core = CORE.to_vec();
    core.sort_unstable();
    assert_eq!(loaded, core);
    within(client.cancel()).await.unwrap();
}

/// Issue 40: the default limits (1 MiB for read_file, read_many_files and grep, 100 KiB per
/// stream for a command) were declared as 6,356,992 and 1,294,336 characters, more than Claude
/// Code keeps (`min(value, 500000)`): the declaration is capped at what it honours, and a
/// Claude Code page fits under what is declared.
#[tokio::test]
async fn the_declared_largest_result_is_what_claude_code_keeps() {
    let (_d, root) = tempdir();
    big_file(&root, "big.txt", 40_000);
    let client = connect_command(default_form(&root, &[]), named("claude-code")).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    for tool in ["read_file", "read_many_files", "grep", "execute_command"] {
        assert_eq!(
            meta(&tools, tool)["anthropic/maxResultSizeChars"],
            json!(CLAUDE_CODE_CAP),
            "{tool}"
        );
    }
    let result = call(&client, "read_file", json!({"path": "big.txt"})).await;
    assert!(model_chars(&result) <= CLAUDE_CODE_CAP);
    // The page is the most that fits at the worst escaping (six characters a byte) with the
    // envelope.
    let page = ok(&result)["content"].as_str().unwrap().len() as u64;
    assert!(page <= (CLAUDE_CODE_CAP as u64 - ENVELOPE) / 6, "{page}");
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn the_operator_names_the_always_loaded_tools() {
    let (_d, root) = tempdir();
    let client = connect_with(
        &root,
        &["--always-load", "list_directory,read_file"],
        TestClient::default(),
    )
    .await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(always_loaded(&tools), ["read_file", "list_directory"]);
    within(client.cancel()).await.unwrap();

    let client = connect_configured(
        &root,
        "[tools]\nalways_load = [\"glob\"]\n",
        TestClient::default(),
    )
    .await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(always_loaded(&tools), ["glob"]);
    within(client.cancel()).await.unwrap();

    let client =
        connect_configured(&root, "[tools]\nalways_load = []\n", TestClient::default()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert!(always_loaded(&tools).is_empty());
    within(client.cancel()).await.unwrap();

    // A default core tool that is not served (read-only: no edit_file) is simply not listed.
    let client = connect_configured(&root, "[fs]\nwrite = \"off\"\n", TestClient::default()).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(
        always_loaded(&tools),
        ["read_file", "grep", "glob", "execute_command"]
    );
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn an_unknown_always_loaded_tool_is_refused_naming_the_known_ones() {
    let (_d, root) = tempdir();
    let out = within(command(&root, &["--always-load", "read_fiel", "tools"]).output())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("\"read_fiel\"")
            && stderr.contains("tools.always_load")
            && stderr.contains("read_file, "),
        "{stderr}"
    );
}

/// A text file of `lines` numbered lines of 35 bytes (40,000: 1.4 MB, larger than a default
/// page), with characters JSON escapes (a quote, a backslash, a tab).
fn big_file(root: &Path, name: &str, lines: usize) -> String {
    let text: String = (1..=lines)
        .map(|i| format!("line {i:07} \"quoted\" \\ \tpadding..\n"))
        .collect();
    fs::write(root.join(name), &text).unwrap();
    text
}

#[tokio::test]
async fn claude_codes_default_read_fits_its_cap_and_goes_on_with_next_offset() {
    let (_d, root) = tempdir();
    let text = big_file(&root, "big.txt", 40_000);
    assert!(text.len() > READ_MAX_BYTES);
    let client = connect_command(default_form(&root, &[]), named("claude-code")).await;
    let mut content = String::new();
    let mut offset: Option<u64> = None;
    let mut calls = 0;
    loop {
        let mut args = json!({"path": "big.txt"});
        if let Some(offset) = offset {
            args["offset"] = json!(offset);
        }
        let result = call(&client, "read_file", args).await;
        let chars = model_chars(&result);
        assert!(chars <= CLAUDE_CODE_CAP, "page {calls}: {chars} characters");
        let out = ok(&result);
        content.push_str(out["content"].as_str().unwrap());
        calls += 1;
        match out["next_offset"].as_u64() {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    assert_eq!(content, text, "the pages make up the file");
    assert!(calls >= 4, "{calls} pages");
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn another_client_gets_the_operators_full_page() {
    let (_d, root) = tempdir();
    big_file(&root, "big.txt", 40_000);
    for (client, args) in [
        ("mcp", &[][..]),
        ("codex-mcp-client", &[][..]),
        // The operator turns the cap off for Claude Code too.
        ("claude-code", &["--result-cap", "off"][..]),
    ] {
        let client = connect_command(default_form(&root, args), named(client)).await;
        let out = ok(&call(&client, "read_file", json!({"path": "big.txt"})).await);
        let page = out["content"].as_str().unwrap().len();
        assert!(
            page > READ_MAX_BYTES - 100 && page <= READ_MAX_BYTES,
            "{args:?}: {page}"
        );
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn the_operators_cap_holds_for_every_client() {
    let (_d, root) = tempdir();
    big_file(&root, "big.txt", 40_000);
    let client = connect_command(
        default_form(&root, &["--result-cap", "200000"]),
        named("toolport-tests"),
    )
    .await;
    let result = call(&client, "read_file", json!({"path": "big.txt"})).await;
    // This client gets the payload twice (text and structured): each half fits.
    assert!(model_chars(&result) <= 200_000, "{}", model_chars(&result));
    assert!(ok(&result)["next_offset"].as_u64().is_some());
    within(client.cancel()).await.unwrap();

    let out = within(command(&root, &["--result-cap", "9", "tools"]).output())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("tools.result_cap"), "{stderr}");
}

#[tokio::test]
async fn claude_codes_default_grep_and_read_many_fit_its_cap() {
    let (_d, root) = tempdir();
    big_file(&root, "a.txt", 20_000);
    big_file(&root, "b.txt", 20_000);
    let client = connect_command(default_form(&root, &[]), named("claude-code")).await;

    let result = call(
        &client,
        "grep",
        json!({"pattern": "quoted", "max_results": 100_000}),
    )
    .await;
    assert!(
        model_chars(&result) <= CLAUDE_CODE_CAP,
        "{}",
        model_chars(&result)
    );
    assert_eq!(ok(&result)["truncated"], json!(true));

    let result = call(
        &client,
        "read_many_files",
        json!({"paths": ["a.txt", "b.txt"], "max_bytes_per_file": READ_MAX_BYTES}),
    )
    .await;
    assert!(
        model_chars(&result) <= CLAUDE_CODE_CAP,
        "{}",
        model_chars(&result)
    );
    assert_eq!(ok(&result)["truncated"], json!(true));
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn claude_codes_command_output_fits_its_cap_when_the_operator_keeps_more() {
    let (_d, root) = tempdir();
    let toml = format!("{ALLOW_SHELLS}max_output_bytes = 1048576\n");
    let config = config_file(&root, &toml);
    let args = ["--config", config.to_str().unwrap()];
    let run = json!({"command": "sh", "args": ["-c", "head -c 3000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2"]});
    let client = connect_command(default_form(&root, &args), named("claude-code")).await;
    let result = call(&client, "execute_command", run.clone()).await;
    assert!(
        model_chars(&result) <= CLAUDE_CODE_CAP,
        "{}",
        model_chars(&result)
    );
    let out = ok(&result);
    assert_eq!(out["truncated"], json!(true));
    assert_eq!(out["stdout_bytes"], json!(3_000_000));
    within(client.cancel()).await.unwrap();

    // Another client keeps what the operator set: 1 MiB per stream.
    let client = connect_command(default_form(&root, &args), named("mcp")).await;
    let out = ok(&call(&client, "execute_command", run).await);
    assert!(out["stdout"].as_str().unwrap().len() > 1_000_000);
    within(client.cancel()).await.unwrap();
}
