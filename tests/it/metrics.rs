//! Metrics through the real binary: the `toolport://metrics` resource over stdio and
//! `/metrics` over HTTP (behind the token) move with calls.

use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use crate::common::http::{TOKEN, authed, http, mcp_client, start};
use crate::common::*;

/// The metrics resource, parsed.
async fn read_metrics(client: &Client) -> Value {
    let result = within(client.read_resource(ReadResourceRequestParams::new("toolport://metrics")))
        .await
        .unwrap();
    match &result.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => serde_json::from_str(text).unwrap(),
        other => panic!("not text: {other:?}"),
    }
}

/// The value of the sample `name` with exactly `labels`, if any.
fn sample(metrics: &Value, name: &str, labels: &Value) -> Option<f64> {
    metrics["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == json!(name) && &m["labels"] == labels)
        .and_then(|m| m["value"].as_f64())
}

#[tokio::test]
async fn the_metrics_resource_moves_with_calls_over_stdio() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let client = connect(&root).await;
    let resources = within(client.list_all_resources()).await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "toolport://metrics"));

    let before = read_metrics(&client).await;
    assert_eq!(
        sample(
            &before,
            "toolport_tool_calls_total",
            &json!({"tool": "read_file", "outcome": "ok"})
        ),
        None
    );
    assert_eq!(
        sample(&before, "toolport_sessions", &json!({"transport": "stdio"})),
        Some(1.0)
    );
    call(&client, "read_file", json!({"path": "a.txt"})).await;
    call(&client, "read_file", json!({"path": "a.txt"})).await;
    call(&client, "read_file", json!({"path": "missing.txt"})).await;
    // A call to a tool that does not exist: a protocol error, counted under one label.
    let unknown = within(
        client.call_tool(
            rmcp::model::CallToolRequestParams::new("no_such_tool_x1")
                .with_arguments(Default::default()),
        ),
    )
    .await;
    assert!(unknown.is_err());

    let after = read_metrics(&client).await;
    assert_eq!(
        sample(
            &after,
            "toolport_tool_calls_total",
            &json!({"tool": "read_file", "outcome": "ok"})
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &after,
            "toolport_tool_calls_total",
            &json!({"tool": "read_file", "outcome": "error"})
        ),
        Some(1.0)
    );
    let ok_labels = json!({"mcp_method_name": "tools/call", "gen_ai_tool_name": "read_file"});
    assert_eq!(
        sample(
            &after,
            "mcp_server_operation_duration_seconds_count",
            &ok_labels
        ),
        Some(2.0)
    );
    let mut bucket = ok_labels.as_object().unwrap().clone();
    bucket.insert("le".into(), json!("+Inf"));
    assert_eq!(
        sample(
            &after,
            "mcp_server_operation_duration_seconds_bucket",
            &Value::Object(bucket)
        ),
        Some(2.0)
    );
    let error_labels = json!({"mcp_method_name": "tools/call", "gen_ai_tool_name": "read_file", "error_type": "tool_error"});
    assert_eq!(
        sample(
            &after,
            "mcp_server_operation_duration_seconds_count",
            &error_labels
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &after,
            "toolport_tool_calls_total",
            &json!({"tool": "(unknown)", "outcome": "error"})
        ),
        Some(1.0)
    );
    // Its duration carries the JSON-RPC code as its error type.
    assert_eq!(
        sample(
            &after,
            "mcp_server_operation_duration_seconds_count",
            &json!({"mcp_method_name": "tools/call", "gen_ai_tool_name": "(unknown)", "error_type": "-32602"})
        ),
        Some(1.0)
    );
    assert!(!after.to_string().contains("no_such_tool_x1"));
    assert_eq!(
        sample(&after, "toolport_calls_in_flight", &json!({})),
        Some(0.0)
    );
    assert_eq!(
        sample(&after, "toolport_commands_running", &json!({})),
        Some(0.0)
    );
}

#[tokio::test]
async fn slash_metrics_needs_the_token_and_counts_calls() {
    let (_d, root) = tempdir();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let server = start(&root, &[], Some(TOKEN)).await;
    let url = format!("{}/metrics", server.url);
    let refused = within(http().get(&url).send()).await.unwrap();
    assert_eq!(refused.status(), 401);

    let client = mcp_client(&server, TOKEN, TestClient::default()).await;
    call(&client, "read_file", json!({"path": "a.txt"})).await;
    let response = within(authed(http().get(&url)).send()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = within(response.text()).await.unwrap();
    assert!(
        text.contains("toolport_tool_calls_total{tool=\"read_file\",outcome=\"ok\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("toolport_sessions{transport=\"http\"} 1"),
        "{text}"
    );
    assert!(text.contains("# TYPE mcp_server_operation_duration_seconds histogram"));
}
