//! Jobs as MCP tasks see them. The server answers a tasks-capable client's call that became
//! a job with a task of the same id, and maps `tasks/get` and `tasks/cancel` onto the job
//! (`server/tasks.rs`); this file says where a job stands in `execute_command`'s own terms,
//! so a task's final result is exactly what a call that waited would have returned.

use std::sync::Arc;

use super::jobs::{Job, JobTable};
use super::{job_tools, render, runner};
use crate::tool::{Session, ToolError, ToolOutput};

/// Where a job stands.
pub enum Standing {
    /// It runs; a line saying how far it got (its latest output line, else its state).
    Running { message: String },
    /// It ended by itself or at its time limit: `execute_command`'s result, as a call that
    /// waited for the end would have returned it, and a line saying how it ended.
    Ended { output: ToolOutput, message: String },
    /// It was killed (job_kill, tasks/cancel, the end of its session); how, in a line.
    Killed { message: String },
}

impl JobTable {
    /// The job `id` of `session` (the same rule as the job tools: another session's job is
    /// "not found").
    pub fn get(&self, session: &Session, id: &str) -> Result<Arc<Job>, ToolError> {
        match &self.0 {
            Some(jobs) => jobs.get(session, id),
            None => Err(ToolError::NotFound(format!(
                "no job {id:?}: this server runs no commands"
            ))),
        }
    }
}

/// Where `job` stands now.
pub fn standing(job: &Job) -> Standing {
    if job.running() {
        let message = job
            .live
            .last_line()
            .unwrap_or_else(|| job_tools::describe(job));
        return Standing::Running { message };
    }
    let message = job_tools::describe(job);
    match runner::job_result(job) {
        Some(result) => {
            let text = render(&result);
            let output = match serde_json::to_value(&result) {
                Ok(structured) => ToolOutput::new(structured, text),
                Err(_) => ToolOutput {
                    structured: None,
                    text,
                },
            };
            Standing::Ended { output, message }
        }
        None => Standing::Killed { message },
    }
}
