//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) through the real binary
//! and rmcp's client: a client that declares the extension (in `initialize` on 2025-11-25, or
//! in every request's `_meta` on 2026-07-28) gets a task where others get a job id; `tasks/get`
//! follows it to its result, `tasks/cancel` kills it, and only its own session reaches it.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    DetailedTask, ErrorCode, GetTaskParams, ProtocolVersion, ResultType, TaskPayload, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};

use crate::common::process::{alive, eventually, pids};
use crate::common::*;

const SHELLS: &str = "[exec]\nallow_shells = true\n";

type TasksPeer = RunningService<RoleClient, TasksClient>;

/// The server over stdio, with `initialize` (2025-11-25).
async fn connect_initialize(root: &Path) -> TasksPeer {
    let config = config_file(root, SHELLS);
    let transport = spawn_server(command(root, &["--config", config.to_str().unwrap()]));
    within(TasksClient.serve(transport))
        .await
        .expect("initialize")
}

/// The server over stdio, 2026-07-28: no `initialize`, capabilities in every request.
async fn connect_discover(root: &Path) -> TasksPeer {
    let config = config_file(root, SHELLS);
    let transport = spawn_server(command(root, &["--config", config.to_str().unwrap()]));
    within(TasksClient.serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    ))
    .await
    .expect("discover")
}

fn sh(script: &str, extra: Value) -> Value {
    let mut args = json!({"command": "sh", "args": ["-c", script]});
    if let (Some(a), Value::Object(e)) = (args.as_object_mut(), extra) {
        a.extend(e);
    }
    args
}

/// Call execute_command once (no MRTR rounds) and expect a task.
async fn start_task(client: &TasksPeer, args: Value) -> CreateTaskResult {
    let params = CallToolRequestParams::new("execute_command")
        .with_arguments(args.as_object().cloned().unwrap());
    match within(client.call_tool_once(params)).await.unwrap() {
        CallToolResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &TasksPeer, id: &str) -> Result<DetailedTask, ServiceError> {
    within(client.peer().get_task(GetTaskParams::new(id)))
        .await
        .map(|r| r.task)
}

/// Poll `tasks/get` at the task's own `pollIntervalMs` until it is terminal (how the
/// extension has clients wait: there are no push notifications).
async fn poll_to_end(client: &TasksPeer, id: &str) -> DetailedTask {
    within(async {
        loop {
            let task = get(client, id).await.unwrap();
            if task.status().is_terminal() {
                return task;
            }
            assert_eq!(task.status(), TaskStatus::Working);
            let every = task
                .task
                .poll_interval_ms
                .expect("a working task says when to poll");
            tokio::time::sleep(Duration::from_millis(every)).await;
        }
    })
    .await
}

fn completed_result(task: DetailedTask) -> CallToolResult {
    match task.payload {
        TaskPayload::Completed { result } => {
            serde_json::from_value(Value::Object(result)).expect("a CallToolResult")
        }
        other => panic!("expected a completed task, got {other:?}"),
    }
}

fn mcp_error(error: ServiceError) -> rmcp::ErrorData {
    match error {
        ServiceError::McpError(e) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

const SLOW_EXIT_3: &str = "echo start; echo warn >&2; sleep 2; echo done; exit 3";

/// The task's final result is what a call that waited would have returned.
async fn check_task_completes(client: &TasksPeer) {
    let created = start_task(client, sh(SLOW_EXIT_3, json!({"yield_after": 1}))).await;
    assert_eq!(created.result_type, ResultType::TASK);
    assert_eq!(created.task.status, TaskStatus::Working);
    assert!(created.task.poll_interval_ms.is_some());
    assert!(created.task.ttl_ms.is_some());
    let id = created.task.task_id.clone();
    assert!(id.starts_with("job_"), "{id}");
    // Working, with a status message (the latest line).
    let working = get(client, &id).await.unwrap();
    if working.status() == TaskStatus::Working {
        assert!(working.task.status_message.is_some());
    }
    let done = poll_to_end(client, &id).await;
    let message = done.task.status_message.clone().unwrap();
    assert!(message.contains("exit code 3"), "{message}");
    let result = completed_result(done);
    assert_ne!(result.is_error, Some(true));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["return_code"], json!(3));
    assert_eq!(structured["stdout"], json!("start\ndone\n"));
    assert_eq!(structured["stderr"], json!("warn\n"));
    assert_eq!(structured["timed_out"], json!(false));
    assert!(structured.get("job_id").is_none(), "{structured}");
    let text = text(&result);
    assert!(
        text.contains("exit code 3") && text.contains("done"),
        "{text}"
    );
    // The job is reachable by the job tools too.
    let params = CallToolRequestParams::new("job_output")
        .with_arguments(json!({"job_id": id}).as_object().cloned().unwrap());
    let output = within(client.call_tool(params)).await.unwrap();
    assert_eq!(output.structured_content.unwrap()["return_code"], json!(3));
}

#[tokio::test]
async fn a_client_declaring_tasks_at_initialize_gets_a_task_followed_to_its_result() {
    let (_d, root) = tempdir();
    let client = connect_initialize(&root).await;
    let info = client.peer_info().unwrap();
    assert!(
        info.capabilities.supports_tasks(),
        "{:?}",
        info.capabilities
    );
    check_task_completes(&client).await;
}

#[tokio::test]
async fn a_client_declaring_tasks_per_request_on_2026_07_28_gets_a_task_too() {
    let (_d, root) = tempdir();
    let client = connect_discover(&root).await;
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    check_task_completes(&client).await;
}

#[tokio::test]
async fn tasks_cancel_kills_the_command_and_the_task_is_cancelled() {
    let (_d, root) = tempdir();
    let client = connect_initialize(&root).await;
    let file = root.join("pid");
    let script = format!("echo $$ > {}; exec sleep 300", file.display());
    // background: true is a task at once.
    let created = start_task(&client, sh(&script, json!({"background": true}))).await;
    let id = created.task.task_id;
    eventually("the command started", || !pids(&file).is_empty()).await;
    let pid = pids(&file)[0];
    assert!(alive(pid));
    assert_eq!(
        get(&client, &id).await.unwrap().status(),
        TaskStatus::Working
    );
    within(client.peer().cancel_task(CancelTaskParams::new(id.clone())))
        .await
        .unwrap();
    // The answer comes once the processes are gone.
    eventually("the command is killed", || !alive(pid)).await;
    let cancelled = get(&client, &id).await.unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    assert!(matches!(cancelled.payload, TaskPayload::Cancelled));
    // Unknown ids: invalid params, naming what exists.
    let error = mcp_error(get(&client, "job_999").await.unwrap_err());
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains("unknown task") && error.message.contains(&id),
        "{}",
        error.message
    );
    // tasks/update: nothing to answer.
    let error = mcp_error(
        within(
            client
                .peer()
                .update_task(rmcp::model::UpdateTaskParams::new(
                    id.clone(),
                    Default::default(),
                )),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("job_input"), "{}", error.message);
}

#[tokio::test]
async fn a_task_killed_at_its_time_limit_completes_with_timed_out() {
    let (_d, root) = tempdir();
    let client = connect_initialize(&root).await;
    let created = start_task(
        &client,
        sh(
            "echo begun; exec sleep 300",
            json!({"yield_after": 1, "timeout": 2}),
        ),
    )
    .await;
    let done = poll_to_end(&client, &created.task.task_id).await;
    let result = completed_result(done);
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["timed_out"], json!(true));
    assert_eq!(structured["return_code"], json!(null));
    assert_eq!(structured["stdout"], json!("begun\n"));
}

#[tokio::test]
async fn a_client_without_the_extension_still_gets_a_job_id() {
    let (_d, root) = tempdir();
    let client = connect_configured(&root, SHELLS, TestClient::default()).await;
    let r = ok(&call(
        &client,
        "execute_command",
        sh("sleep 3", json!({"yield_after": 1})),
    )
    .await);
    let job = r["job_id"].as_str().unwrap();
    assert_eq!(r["running"], json!(true));
    // tasks/* need the extension.
    let error = within(client.peer().get_task(GetTaskParams::new(job)))
        .await
        .unwrap_err();
    assert_eq!(
        mcp_error(error).code,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    ok(&call(&client, "job_kill", json!({"job_id": job})).await);
}

#[tokio::test]
async fn another_session_cannot_get_or_cancel_a_task() {
    let (_d, root) = tempdir();
    let config = config_file(&root, SHELLS);
    let server = crate::common::http::start(
        &root,
        &["--config", config.to_str().unwrap()],
        Some(crate::common::http::TOKEN),
    )
    .await;
    let connect = || async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
                .auth_header(crate::common::http::TOKEN),
        );
        within(TasksClient.serve(transport))
            .await
            .expect("initialize over HTTP")
    };
    let a = connect().await;
    let b = connect().await;
    let file = root.join("pid");
    let script = format!("echo $$ > {}; exec sleep 300", file.display());
    let created = start_task(&a, sh(&script, json!({"background": true}))).await;
    let id = created.task.task_id;
    eventually("the command started", || !pids(&file).is_empty()).await;
    let pid = pids(&file)[0];
    let error = mcp_error(get(&b, &id).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains("it has no jobs"),
        "{}",
        error.message
    );
    let error = mcp_error(
        within(b.peer().cancel_task(CancelTaskParams::new(id.clone())))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    // Still running, still a's.
    assert!(alive(pid));
    assert_eq!(get(&a, &id).await.unwrap().status(), TaskStatus::Working);
    within(a.peer().cancel_task(CancelTaskParams::new(id.clone())))
        .await
        .unwrap();
    eventually("the command is killed", || !alive(pid)).await;
}

/// A finished task does not hold an `exec.max_jobs` place (regression: it did, for its whole
/// retention); past `exec.max_jobs` finished ones, the task that ended first is gone as its
/// job is: `tasks/get` says "unknown task", cleanly, and the kept one still completes.
#[tokio::test]
async fn finished_tasks_leave_room_and_the_oldest_is_evicted_as_its_job() {
    let (_d, root) = tempdir();
    let config = config_file(&root, &format!("{SHELLS}max_jobs = 1\n"));
    let transport = spawn_server(command(&root, &["--config", config.to_str().unwrap()]));
    let client = within(TasksClient.serve(transport)).await.unwrap();
    let mut ids = Vec::new();
    for n in 1..=2 {
        let created = start_task(
            &client,
            sh(&format!("echo {n}"), json!({"background": true})),
        )
        .await;
        let id = created.task.task_id;
        let done = completed_result(poll_to_end(&client, &id).await);
        assert_eq!(ok(&done)["stdout"], json!(format!("{n}\n")));
        ids.push(id);
    }
    let error = mcp_error(get(&client, &ids[0]).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("unknown task"), "{}", error.message);
    assert_eq!(
        get(&client, &ids[1]).await.unwrap().status(),
        TaskStatus::Completed
    );
}
