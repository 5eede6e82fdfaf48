//! Call budgets (`[limits]`) and the HTTP request rate through the real binary: each limit
//! trips at its value with a message naming it, a refused call is audited as `denied`, the
//! per-minute limit recovers, and HTTP answers 429 with `Retry-After`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::http::{TOKEN, authed, http, start};
use crate::common::process::eventually;
use crate::common::*;

/// A server for `root` with `toml` as its config, auditing to `root/audit.log`.
async fn limited(root: &Path, toml: &str) -> Client {
    let config = config_file(root, toml);
    let log = root.join("audit.log");
    connect_with(
        root,
        &[
            "--config",
            config.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        TestClient::default(),
    )
    .await
}

#[tokio::test]
async fn the_session_budget_trips_at_its_value_and_is_audited_as_denied() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let client = limited(&root, "[limits]\nmax_calls_per_session = 3\n").await;
    for _ in 0..3 {
        ok(&call(&client, "read_file", json!({"path": "a.txt"})).await);
    }
    let message = err(&call(&client, "list_directory", json!({})).await);
    assert!(
        message.contains("budget of 3 tool calls") && message.contains("max_calls_per_session = 3"),
        "{message}"
    );
    eventually("4 audit records", || {
        audit_records(&root.join("audit.log")).len() >= 4
    })
    .await;
    let last = &audit_records(&root.join("audit.log"))[3];
    assert_eq!(last["outcome"], json!("denied"), "{last}");
    assert_eq!(last["error"]["kind"], json!("over_budget"));
    assert_eq!(last["tool"], json!("list_directory"));

    // A new session has its own budget.
    let again = limited(&root, "[limits]\nmax_calls_per_session = 3\n").await;
    ok(&call(&again, "read_file", json!({"path": "a.txt"})).await);
}

#[tokio::test]
async fn a_tools_rate_trips_for_that_tool_only_and_recovers() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    // Sixty a minute: a burst of sixty, then one more each second.
    let client = limited(
        &root,
        "[limits.tools.read_file]\nmax_calls_per_minute = 60\n",
    )
    .await;
    let mut refused = None;
    // Up to far past the burst: calls made slower than one a second would never trip it.
    for _ in 0..1000 {
        let result = call(&client, "read_file", json!({"path": "a.txt"})).await;
        if result.is_error == Some(true) {
            refused = Some(text(&result));
            break;
        }
    }
    let message = refused.expect("the 61st call within a minute is refused");
    assert!(
        message.contains("limits.tools.read_file.max_calls_per_minute = 60"),
        "{message}"
    );
    // Other tools are not limited.
    ok(&call(&client, "list_directory", json!({})).await);
    // The message says when to retry; after that the call goes through.
    let seconds: f64 = message
        .split("retry in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no retry time in {message:?}"));
    assert!(seconds > 0.0 && seconds <= 1.0, "{message}");
    // Waiting out a rate limit is the behaviour under test, not synchronisation.
    tokio::time::sleep(Duration::from_secs_f64(seconds + 0.05)).await;
    ok(&call(&client, "read_file", json!({"path": "a.txt"})).await);
}

#[tokio::test]
async fn concurrent_calls_past_the_limit_are_refused_until_one_ends() {
    let (_d, root) = tempdir();
    let client = limited(
        &root,
        "[exec]\nallow_shells = true\n[limits]\nmax_concurrent_calls_per_session = 1\n",
    )
    .await;
    let handle = start_long_command(&client, &root.join("pid")).await;
    let message = err(&call(&client, "list_directory", json!({})).await);
    assert!(
        message.contains("already has 1 tool calls running")
            && message.contains("max_concurrent_calls_per_session = 1"),
        "{message}"
    );
    within(handle.cancel(Some("test".into()))).await.unwrap();
    // The cancelled call gives its place back once the server has dropped it.
    within(async {
        while call(&client, "list_directory", json!({})).await.is_error == Some(true) {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test]
async fn limits_for_a_tool_that_is_not_served_are_warned_about() {
    let (_d, root) = tempdir();
    let config = config_file(
        &root,
        "[limits.tools.read_fiel]\nmax_calls_per_session = 1\n",
    );
    let output = within(command(&root, &["--config", config.to_str().unwrap(), "tools"]).output())
        .await
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[limits.tools.read_fiel] names a tool that is not served"),
        "{stderr}"
    );
}

#[tokio::test]
async fn http_clients_over_their_request_rate_get_429_with_retry_after() {
    let (_d, root) = tempdir();
    let config = config_file(&root, "[http]\nmax_requests_per_minute = 3\n");
    let server = start(&root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;
    let metrics = format!("{}/metrics", server.url);
    for _ in 0..3 {
        let response = within(authed(http().get(&metrics)).send()).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let response = within(authed(http().get(&metrics)).send()).await.unwrap();
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&retry), "Retry-After: {retry}");
    let body: Value = within(response.json()).await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("3 requests per minute")),
        "{body}"
    );
    // The health check stays outside the gate.
    let health = within(http().get(format!("{}/healthz", server.url)).send())
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}
