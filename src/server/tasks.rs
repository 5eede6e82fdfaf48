//! MCP tasks (the 2026-07-28 `io.modelcontextprotocol/tasks` extension, SEP-2663) over the
//! work calls leave running ([`BackgroundTable`](toolport_tools::host::BackgroundTable); today
//! `execute_command`'s jobs). A task *is* that work: a tasks-capable client's call that left
//! work running is answered with a task of the same id, `tasks/get` reports where the work
//! stands, `tasks/cancel` ends it. So a task belongs to its caller exactly as the work does (its
//! owner's rule), lives as long as the work (for a job, its retention after the end, or less
//! when the job is evicted to keep at most `exec.max_jobs` finished ones: then `tasks/get` says
//! "unknown task", as for any job that is gone), and stays reachable by the job tools.
//!
//! - `working` while the command runs (`statusMessage`: its latest output line);
//! - `completed` once it ended by itself or at its time limit, with the result a call that
//!   waited would have returned (`return_code`, `timed_out`, `signal`, stdout and stderr …);
//! - `cancelled` once it was killed (tasks/cancel, job_kill, the end of its session);
//! - `failed` only when the result cannot be expressed (a JSON-RPC-level failure);
//! - never `input_required`: `tasks/update` is refused (stdin goes through job_input).
//!
//! Among replicas (`[replicas]`) a task id names the replica that runs its job:
//! `tasks/get` and `tasks/cancel` for another replica's task are forwarded there
//! ([`crate::cluster::jobs`]); a task whose replica is gone is `failed`, its status message
//! saying it is lost (never `working`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorCode, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use toolport_tools::host::split_work_id;

use rmcp::RoleServer;
use rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams};
use rmcp::service::RequestContext;
use toolport_tools::host::{Background, BackgroundState, BackgroundTable, Session};

use super::ToolportServer;
use crate::cluster::jobs::{Answer, Forwarded, NotForwarded};

/// How often a client should poll a working task: the pace at which a waiting call reports
/// progress. A command's state is worth reading about once a second; faster polling only
/// costs requests.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The work behind task `id` of `session`; another session's task, or one that is gone, is
/// "not found" (SEP-2663: an unknown task id is -32602 invalid params).
pub(super) fn lookup(
    work: &BackgroundTable,
    session: &Session,
    id: &str,
) -> Result<Arc<dyn Background>, McpError> {
    work.get(session, id).map_err(|error| {
        McpError::invalid_params(
            format!("unknown task {id:?}: {error} (task ids are the job ids of this session)"),
            None,
        )
    })
}

/// The answer to the call that left `job` running: the task's seed state.
pub(super) fn created(job: &dyn Background) -> CreateTaskResult {
    CreateTaskResult::new(detailed(job).task)
}

/// Where the task stands now, with its result once it has one.
pub(super) fn detailed(job: &dyn Background) -> DetailedTask {
    match job.state() {
        BackgroundState::Running { message } => DetailedTask::new(
            base(job, TaskStatus::Working, message).with_poll_interval_ms(millis(POLL_INTERVAL)),
            TaskPayload::Working,
        ),
        BackgroundState::Ended { output, message } => {
            let payload = match call_result_object(super::tool_result(output)) {
                Ok(result) => TaskPayload::Completed { result },
                Err(error) => TaskPayload::Failed { error },
            };
            DetailedTask::new(base(job, TaskStatus::Completed, message), payload)
        }
        BackgroundState::Killed { message } => DetailedTask::new(
            base(job, TaskStatus::Cancelled, message),
            TaskPayload::Cancelled,
        ),
    }
}

/// The fields every status has. The work is removed its retention after its end at the
/// latest (`exec.job_retention` for a job), so the TTL (from creation) is its run so far plus
/// the retention: the most it is kept once it ended, and growing while it runs (SEP-2663 lets
/// the TTL change). Work dropped earlier (a job evicted because more than `exec.max_jobs`
/// finished) cannot be foreseen here: the TTL is a bound.
fn base(job: &dyn Background, status: TaskStatus, message: String) -> Task {
    let updated = job.ended_at().unwrap_or_else(SystemTime::now);
    let age = updated.duration_since(job.started_at()).unwrap_or_default();
    Task::new(
        job.id().to_owned(),
        status,
        timestamp(job.started_at()),
        timestamp(updated),
    )
    .with_status_message(message)
    .with_ttl_ms(millis(age + job.retention()))
}

/// Where work is when another replica runs it.
pub(super) enum Remote {
    /// The other replica's answer.
    Answer(Answer),
    /// Lost: its replica is gone (the message says so).
    Lost(String),
}

/// A lost task, as `tasks/get` reports it: `failed`, saying why.
fn lost_task(id: &str, message: &str) -> GetTaskResult {
    let now = timestamp(SystemTime::now());
    let mut error = JsonObject::new();
    error.insert("code".into(), ErrorCode::INTERNAL_ERROR.0.into());
    error.insert("message".into(), message.into());
    GetTaskResult::new(DetailedTask::new(
        Task::new(id.to_owned(), TaskStatus::Failed, now.clone(), now)
            .with_status_message(message.to_owned()),
        TaskPayload::Failed { error },
    ))
}

/// The JSON-RPC error of another replica's task-level refusal.
fn remote_error(kind: &str, message: String) -> McpError {
    if kind == "invalid_params" {
        McpError::invalid_params(message, None)
    } else {
        McpError::internal_error(message, None)
    }
}

impl ToolportServer {
    /// When work `id` (a job, a task) is another replica's: send `request` there. `None`: it
    /// is this server's (or there are no replicas).
    pub(super) async fn forward_work(
        &self,
        id: &str,
        request: impl FnOnce(String) -> Forwarded,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<Remote, McpError>> {
        let cluster = self.shared.principal_budgets.cluster()?;
        let there = split_work_id(id).1?;
        if there == cluster.work_name() {
            return None;
        }
        let owner = self.job_owner(context).id.to_string();
        Some(
            match cluster
                .forward(there, id, &request(owner), Duration::ZERO)
                .await
            {
                Ok(answer) => Ok(Remote::Answer(answer)),
                Err(NotForwarded::Lost(message)) => Ok(Remote::Lost(message)),
                Err(NotForwarded::Refused(message)) => Err(McpError::internal_error(message, None)),
            },
        )
    }

    /// The task `id` of the session `context` belongs to.
    fn task(
        &self,
        context: &RequestContext<RoleServer>,
        id: &str,
    ) -> Result<Arc<dyn Background>, McpError> {
        lookup(&self.shared.jobs, &self.job_owner(context), id)
    }

    /// `tasks/get`: where the work stands, with its result once it ended.
    pub(super) async fn task_status(
        &self,
        request: &GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let id = &request.task_id;
        let forwarded = |owner| Forwarded::TaskGet {
            owner,
            task_id: id.clone(),
        };
        if let Some(remote) = self.forward_work(id, forwarded, context).await {
            return match remote? {
                Remote::Answer(Answer::Result(value)) => {
                    serde_json::from_value(value).map_err(|e| {
                        McpError::internal_error(
                            format!("replica's answer for task {id} cannot be read ({e})"),
                            None,
                        )
                    })
                }
                Remote::Answer(Answer::Error { kind, message }) => {
                    Err(remote_error(&kind, message))
                }
                Remote::Lost(message) => Ok(lost_task(id, &message)),
            };
        }
        let job = self.task(context, &request.task_id)?;
        Ok(GetTaskResult::new(detailed(&*job)))
    }

    /// `tasks/update`: toolport's tasks never ask for input, so there is nothing to answer (a
    /// command's stdin is written with job_input).
    pub(super) fn task_update(
        &self,
        request: &UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let job = self.task(context, &request.task_id)?;
        Err(McpError::invalid_params(
            format!(
                "task {} has no outstanding input requests (toolport's tasks never ask for input); to write to the command's stdin, start it with stdin_open: true and use job_input",
                job.id()
            ),
            None,
        ))
    }

    /// `tasks/cancel`: end the work (for a job: TERM, a grace, KILL, escapees swept) and
    /// answer once it is gone; `tasks/get` then says `cancelled`. A task that has ended already
    /// is left as it is.
    pub(super) async fn task_cancel(
        &self,
        request: &CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let id = &request.task_id;
        let forwarded = |owner| Forwarded::TaskCancel {
            owner,
            task_id: id.clone(),
        };
        if let Some(remote) = self.forward_work(id, forwarded, context).await {
            return match remote? {
                Remote::Answer(Answer::Result(_)) => Ok(()),
                Remote::Answer(Answer::Error { kind, message }) => {
                    Err(remote_error(&kind, message))
                }
                Remote::Lost(message) => Err(McpError::invalid_params(
                    format!("task {id} cannot be cancelled: {message}"),
                    None,
                )),
            };
        }
        let job = self.task(context, &request.task_id)?;
        job.cancel().await;
        Ok(())
    }
}

/// ISO 8601 (RFC 3339, UTC, milliseconds).
fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A `CallToolResult` as the JSON object a completed task carries; a JSON-RPC error object
/// when it cannot be serialised.
fn call_result_object(result: CallToolResult) -> Result<JsonObject, JsonObject> {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(object)) => Ok(object),
        Ok(_) => Err(internal_error("the result is not a JSON object".into())),
        Err(error) => Err(internal_error(format!(
            "cannot serialise the result: {error}"
        ))),
    }
}

fn internal_error(message: String) -> JsonObject {
    let mut error = JsonObject::new();
    // JSON-RPC's "internal error": the result cannot be serialised.
    error.insert("code".into(), ErrorCode::INTERNAL_ERROR.0.into());
    error.insert("message".into(), message.into());
    error
}
