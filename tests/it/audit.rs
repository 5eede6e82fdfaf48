//! The audit log through the real binary: one JSON line per `tools/call` for every outcome,
//! redaction, concurrent calls, and a log that cannot be written.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::process::eventually;
use crate::common::*;

/// Wait until the log has `n` records (the writer is a background thread) and return them.
async fn wait_for(log: &Path, n: usize) -> Vec<Value> {
    eventually(&format!("{n} audit records"), || {
        audit_records(log).len() >= n
    })
    .await;
    audit_records(log)
}

/// A server for `root` auditing to `root/audit.log`, with `toml` as its config.
async fn audited(root: &Path, toml: &str, client: TestClient) -> (Client, PathBuf) {
    let log = root.join("audit.log");
    let config = config_file(root, toml);
    let client = connect_with(
        root,
        &[
            "--audit-log",
            log.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        client,
    )
    .await;
    (client, log)
}

#[tokio::test]
async fn every_outcome_is_one_record_with_its_fields() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let toml = "[exec]\ndeny = [\"git push\"]\nallow_shells = true\n";
    let (client, log) = audited(&root, toml, TestClient::confirming(false)).await;

    call(&client, "read_file", json!({"path": "a.txt"})).await;
    call(&client, "read_file", json!({"path": "missing.txt"})).await;
    call(
        &client,
        "execute_command",
        json!({"command": "git", "args": ["push"]}),
    )
    .await;
    call(
        &client,
        "execute_command",
        json!({"command": "rm", "args": ["-r", "a.txt"]}),
    )
    .await;
    call(
        &client,
        "execute_command",
        json!({"command": "sleep", "args": ["5"], "timeout": 1}),
    )
    .await;
    call(&client, "execute_command", json!({"command": "false"})).await;

    let all = wait_for(&log, 6).await;
    let summary: Vec<Value> = all
        .iter()
        .map(|r| pick(r, &["tool", "outcome", "exit_code"]))
        .collect();
    assert_eq!(
        summary,
        vec![
            json!({"tool": "read_file", "outcome": "ok"}),
            json!({"tool": "read_file", "outcome": "error"}),
            json!({"tool": "execute_command", "outcome": "denied", "exit_code": null}),
            json!({"tool": "execute_command", "outcome": "declined"}),
            json!({"tool": "execute_command", "outcome": "timeout", "exit_code": null}),
            json!({"tool": "execute_command", "outcome": "ok", "exit_code": 1}),
        ]
    );
    assert!(all.iter().all(|r| r["transport"] == json!("stdio")));
    let first = &all[0];
    assert_eq!(first["args"], json!({"path": "a.txt"}));
    assert_eq!(first["client"], json!("toolport-tests 0.0.1"));
    assert!(first["bytes_out"].as_u64().unwrap() > 10, "{first}");
    assert!(first["duration_ms"].is_u64());
    assert!(first["ts"].as_str().unwrap().ends_with('Z'));
    let session = first["session"].as_str().unwrap();
    assert!(session.len() >= 8);
    assert!(
        all.iter().all(|r| r["session"] == json!(session)),
        "one session"
    );
    assert_eq!(all[1]["error"]["kind"], json!("not_found"));
    assert_eq!(all[2]["argv"], json!(["git", "push"]));
    assert!(
        all[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("policy denies")
    );
    assert!(root.join("a.txt").exists(), "the declined rm did not run");
    assert_eq!(all[4]["argv"], json!(["sleep", "5"]));
    assert_eq!(all[4]["error"]["kind"], json!("timeout"));
    assert_eq!(all[5]["argv"], json!(["false"]));

    // A cancelled call is recorded as cancelled.
    let handle = start_long_command(&client, &root.join("pid")).await;
    within(handle.cancel(Some("test".into()))).await.unwrap();
    let all = wait_for(&log, 7).await;
    assert_eq!(all[6]["outcome"], json!("cancelled"), "{}", all[6]);
    assert_eq!(
        all[6]["argv"][0],
        json!("sh"),
        "the killed command is named"
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the audit log is private");
    }
}

#[tokio::test]
async fn secrets_never_reach_the_audit_log() {
    let (_d, root) = tempdir();
    let (client, log) = audited(&root, "", TestClient::default()).await;
    call(
        &client,
        "execute_command",
        json!({"command": "echo", "args": ["hi"], "env": {"DB_PASSWORD": "hunter2-planted"}}),
    )
    .await;
    // An argument named like a secret (refused by the schema, audited all the same).
    call(
        &client,
        "read_file",
        json!({"path": "x", "api_key": "sk-planted-key"}),
    )
    .await;
    let all = wait_for(&log, 2).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("hunter2-planted"), "{text}");
    assert!(!text.contains("sk-planted-key"), "{text}");
    assert_eq!(all[0]["args"]["env"], json!({"DB_PASSWORD": "[redacted]"}));
    assert_eq!(all[1]["args"]["api_key"], json!("[redacted]"));
}

#[tokio::test]
async fn the_http_token_never_reaches_the_audit_log() {
    use crate::common::http::{TOKEN, mcp_client, start};
    let (_d, root) = tempdir();
    let log = root.join("audit.log");
    let server = start(&root, &["--audit-log", log.to_str().unwrap()], Some(TOKEN)).await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    let result = call(
        &client,
        "execute_command",
        json!({"command": "echo", "args": [format!("token={TOKEN}")]}),
    )
    .await;
    assert_eq!(ok(&result)["stdout"], json!(format!("token={TOKEN}\n")));
    let all = wait_for(&log, 1).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(TOKEN), "{text}");
    assert_eq!(all[0]["transport"], json!("http"));
    assert_eq!(all[0]["argv"], json!(["echo", "token=[redacted]"]));
}

#[tokio::test]
async fn concurrent_calls_give_whole_lines() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "x".repeat(3000)).unwrap();
    let (client, log) = audited(&root, "", TestClient::default()).await;
    let client = std::sync::Arc::new(client);
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                call(
                    &client,
                    "read_file",
                    json!({"path": "a.txt", "tail": i % 3 + 1}),
                )
                .await
            })
        })
        .collect();
    for c in calls {
        within(c).await.unwrap();
    }
    let all = wait_for(&log, 100).await;
    assert_eq!(all.len(), 100);
    let failed: Vec<&Value> = all.iter().filter(|r| r["outcome"] != json!("ok")).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

#[tokio::test]
async fn an_unwritable_audit_log_does_not_fail_calls() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let log = root.join("no-such-folder").join("audit.log");
    let client = connect_with(
        &root,
        &["--audit-log", log.to_str().unwrap()],
        TestClient::default(),
    )
    .await;
    for _ in 0..3 {
        let result = call(&client, "read_file", json!({"path": "a.txt"})).await;
        assert_eq!(ok(&result)["content"], json!("hello\n"));
    }
    assert!(!log.exists());
}

#[tokio::test]
async fn a_secret_argument_is_scrubbed_from_a_plugins_argv_and_errors() {
    let (_d, root) = tempdir();
    let plugins = root.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(
        plugins.join("login.toml"),
        r#"
[[tools]]
name = "login"
description = "Pretend to log in."
input_schema = { type = "object", properties = { api_token = { type = "string", pattern = "^tok_" } }, required = ["api_token"] }
[tools.run]
command = "echo"
args = ["--token", "{api_token}"]
"#,
    )
    .unwrap();
    let log = root.join("audit.log");
    let client = connect_with(
        &root,
        &[
            "--audit-log",
            log.to_str().unwrap(),
            "--plugins",
            plugins.to_str().unwrap(),
        ],
        TestClient::default(),
    )
    .await;
    call(&client, "login", json!({"api_token": "tok_SECRET1"})).await;
    // A value the schema refuses is repeated in the schema's message: scrubbed too.
    call(&client, "login", json!({"api_token": "sk-SECRET2"})).await;
    let all = wait_for(&log, 2).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("SECRET1") && !text.contains("SECRET2"),
        "{text}"
    );
    assert_eq!(all[0]["argv"], json!(["echo", "--token", "[redacted]"]));
    assert_eq!(all[1]["outcome"], json!("error"));
}

#[tokio::test]
async fn stateless_http_records_its_transport_and_never_a_placeholder_client() {
    use crate::common::http::{TOKEN, mcp_client, start};
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let log = root.join("audit.log");
    let server = start(
        &root,
        &["--stateless", "--audit-log", log.to_str().unwrap()],
        Some(TOKEN),
    )
    .await;
    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    call(&client, "read_file", json!({"path": "a.txt"})).await;
    let all = wait_for(&log, 1).await;
    assert_eq!(all[0]["transport"], json!("http-stateless"));
    assert_ne!(all[0]["client"], json!("rmcp 3.9.0"), "{}", all[0]);
}

#[tokio::test]
async fn toolport_call_is_audited_and_written_before_it_exits() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let log = root.join("audit.log");
    // An existing log others could read is narrowed to 0600.
    std::fs::write(&log, "").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let output = within(
        command(
            &root,
            &[
                "--audit-log",
                log.to_str().unwrap(),
                "call",
                "read_file",
                "--args",
                r#"{"path": "a.txt"}"#,
            ],
        )
        .output(),
    )
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    // Read at once: the record must be on disk when the process has exited.
    let all = audit_records(&log);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        pick(&all[0], &["tool", "transport", "outcome", "args"]),
        json!({"tool": "read_file", "transport": "cli", "outcome": "ok", "args": {"path": "a.txt"}})
    );
    assert!(all[0]["bytes_out"].as_u64().unwrap() > 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the audit log was narrowed");
    }
}
