//! MCP tasks (the 2026-07-28 `io.modelcontextprotocol/tasks` extension, SEP-2663) over jobs. A
//! task *is* a job: a tasks-capable client's call that became a job is answered with a task of
//! the same id, `tasks/get` reports where the job stands, `tasks/cancel` kills it. So a task
//! belongs to its caller exactly as the job does (the job table's ownership rule), lives as long
//! as the job (its retention after the end, or less when the job is evicted to keep at most
//! `exec.max_jobs` finished ones: then `tasks/get` says "unknown task", as for any job that is
//! gone), and stays reachable by the job tools.
//!
//! - `working` while the command runs (`statusMessage`: its latest output line);
//! - `completed` once it ended by itself or at its time limit, with the result a call that
//!   waited would have returned (`return_code`, `timed_out`, `signal`, stdout and stderr …);
//! - `cancelled` once it was killed (tasks/cancel, job_kill, the end of its session);
//! - `failed` only when the result cannot be expressed (a JSON-RPC-level failure);
//! - never `input_required`: `tasks/update` is refused (stdin goes through job_input).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, JsonObject, Task, TaskPayload, TaskStatus,
};

use crate::tool::Session;
use crate::tools::exec::jobs::Job;
use crate::tools::exec::{JobTable, Standing, standing};

/// How often a client should poll a working task: the pace at which a waiting call reports
/// progress. A command's state is worth reading about once a second; faster polling only
/// costs requests.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// JSON-RPC's "internal error", for a task whose result cannot be serialised.
const INTERNAL_ERROR: i32 = -32603;

/// The job behind task `id` of `session`; another session's task, or one that is gone, is
/// "not found" (SEP-2663: an unknown task id is -32602 invalid params).
pub(super) fn lookup(jobs: &JobTable, session: &Session, id: &str) -> Result<Arc<Job>, McpError> {
    jobs.get(session, id).map_err(|error| {
        McpError::invalid_params(
            format!("unknown task {id:?}: {error} (task ids are the job ids of this session)"),
            None,
        )
    })
}

/// The answer to the call that made `job`: the task's seed state.
pub(super) fn created(job: &Job) -> CreateTaskResult {
    CreateTaskResult::new(detailed(job).task)
}

/// Where the task stands now, with its result once it has one.
pub(super) fn detailed(job: &Job) -> DetailedTask {
    match standing(job) {
        Standing::Running { message } => DetailedTask::new(
            base(job, TaskStatus::Working, message).with_poll_interval_ms(millis(POLL_INTERVAL)),
            TaskPayload::Working,
        ),
        Standing::Ended { output, message } => {
            let payload = match call_result_object(super::tool_result(output)) {
                Ok(result) => TaskPayload::Completed { result },
                Err(error) => TaskPayload::Failed { error },
            };
            DetailedTask::new(base(job, TaskStatus::Completed, message), payload)
        }
        Standing::Killed { message } => DetailedTask::new(
            base(job, TaskStatus::Cancelled, message),
            TaskPayload::Cancelled,
        ),
    }
}

/// The fields every status has. The job is removed `exec.job_retention` after its end at the
/// latest, so the TTL (from creation) is its run so far plus the retention: the most it is
/// kept once it ended, and growing while it runs (SEP-2663 lets the TTL change). A job evicted
/// earlier (more than `exec.max_jobs` finished) cannot be foreseen here: the TTL is a bound.
fn base(job: &Job, status: TaskStatus, message: String) -> Task {
    let updated = job.ended_at().unwrap_or_else(SystemTime::now);
    let age = updated.duration_since(job.started_at).unwrap_or_default();
    Task::new(
        job.id.clone(),
        status,
        timestamp(job.started_at),
        timestamp(updated),
    )
    .with_status_message(message)
    .with_ttl_ms(millis(age + job.retention()))
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
    error.insert("code".into(), INTERNAL_ERROR.into());
    error.insert("message".into(), message.into());
    error
}
