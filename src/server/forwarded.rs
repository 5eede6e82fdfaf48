//! Requests another replica forwarded here (`[replicas]`, [`crate::cluster::jobs`]): a job
//! tool's call or a task's, for a job this replica runs, on behalf of the owner the other
//! replica authenticated (the transport checked the call's signature first).
//!
//! Only the job tools that reach one job ([`FORWARDED_TOOLS`]), `tasks/get` /
//! `tasks/cancel` and the read of a job's output resource are run, and only for a job id that names this replica's start: a forwarded
//! request never travels on. The call is not counted against budgets nor audited here: the
//! replica the client called did both, once. The tool's structured result goes back whole
//! (the first replica renders it for its client).

use std::sync::Arc;

use rmcp::model::GetTaskResult;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolport_tools::host::{FORWARDED_TOOLS, Payload, Session, split_work_id};
use toolport_tools::{ExecuteError, ToolContext, ToolError};

use super::Shared;
use super::{resources, tasks};
use crate::cluster::jobs::{Answer, Forwarded, tool_answer};

/// The answer to `request`, run here as `here` (this replica's name in work ids).
pub(crate) async fn answer(shared: &Arc<Shared>, here: &str, request: Forwarded) -> Answer {
    match request {
        Forwarded::Tool {
            owner,
            tool,
            arguments,
        } => run_tool(shared, here, &owner, &tool, arguments).await,
        Forwarded::TaskGet { owner, task_id } => match not_here(here, &task_id) {
            Some(refusal) => refusal,
            None => match tasks::lookup(&shared.jobs, &owner_session(owner), &task_id) {
                Ok(job) => match serde_json::to_value(GetTaskResult::new(tasks::detailed(&*job))) {
                    Ok(value) => Answer::Result(value),
                    Err(e) => {
                        task_error("internal_error", format!("cannot serialise the task: {e}"))
                    }
                },
                Err(error) => task_error("invalid_params", error.message.to_string()),
            },
        },
        Forwarded::TaskCancel { owner, task_id } => match not_here(here, &task_id) {
            Some(refusal) => refusal,
            None => match tasks::lookup(&shared.jobs, &owner_session(owner), &task_id) {
                Ok(job) => {
                    job.cancel().await;
                    Answer::Result(Value::Null)
                }
                Err(error) => task_error("invalid_params", error.message.to_string()),
            },
        },
        Forwarded::Resource { owner, uri } => {
            let id = resources::job_of(&uri).unwrap_or_default();
            if let Some(refusal) = not_here(here, id) {
                return refusal;
            }
            match resources::job_output_for(&shared.jobs, &owner_session(owner), &uri) {
                Ok(result) => match serde_json::to_value(result) {
                    Ok(value) => Answer::Result(value),
                    Err(e) => task_error(
                        "internal_error",
                        format!("cannot serialise the resource: {e}"),
                    ),
                },
                Err(error) => task_error("resource_not_found", error.message.to_string()),
            }
        }
    }
}

fn task_error(kind: &str, message: String) -> Answer {
    Answer::Error {
        kind: kind.to_owned(),
        message,
    }
}

/// The owner as a job table knows it (its jobs outlive the request, as on stateless HTTP).
fn owner_session(owner: String) -> Session {
    Session {
        id: Arc::from(owner),
        ended: CancellationToken::new(),
    }
}

/// A refusal when work `id` is not this replica's start's (a request must not travel on).
fn not_here(here: &str, id: &str) -> Option<Answer> {
    match split_work_id(id) {
        (_, Some(there)) if there == here => None,
        _ => Some(Answer::Error {
            kind: "invalid_arguments".into(),
            message: format!(
                "{id:?} is not a job of this replica ({here}): a forwarded request is answered only by the replica its id names"
            ),
        }),
    }
}

async fn run_tool(
    shared: &Arc<Shared>,
    here: &str,
    owner: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> Answer {
    if !FORWARDED_TOOLS.contains(&tool) {
        return tool_answer(&ToolError::PermissionDenied(format!(
            "{tool} is not forwarded between replicas (only {})",
            FORWARDED_TOOLS.join(", ")
        )));
    }
    let id = arguments
        .get("job_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(refusal) = not_here(here, id) {
        return refusal;
    }
    let mut ctx = ToolContext::local(shared.workspace.clone(), shared.confirm_fallback);
    ctx.session = owner_session(owner.to_owned());
    // The whole result goes back; the first replica puts the payload where its client reads it.
    ctx.payload = Payload::Structured;
    let registry = shared.registry.load();
    match registry.execute(tool, arguments, &ctx).await {
        Ok(output) => Answer::Result(output.structured.unwrap_or(Value::Null)),
        Err(ExecuteError::Tool(error)) => tool_answer(&error),
        Err(other) => tool_answer(&ToolError::Unavailable(other.to_string())),
    }
}
