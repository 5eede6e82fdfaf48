//! Jobs as background work ([`crate::background`]): the server answers a tasks-capable
//! client's call that became a job with a task of the same id, maps `tasks/get` and
//! `tasks/cancel` onto the job and offers its output as resources, all through the
//! [`Background`] hook; this file says where a job stands in `execute_command`'s own terms,
//! so a task's final result is exactly what a call that waited would have returned.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::jobs::{Job, JobTable};
use super::process::Which;
use super::{job_tools, render, runner};
use crate::background::{
    Background, BackgroundState, BackgroundWork, Elsewhere, OutputStart, OutputStream,
};
use crate::tool::{Session, ToolError, ToolOutput};

/// One job as this replica tells the others (the server's `[replicas]`): whose it is and its
/// state as `job_list` shows it.
#[derive(Debug, Clone)]
pub struct JobSnapshot {
    /// Its id (naming this replica).
    pub id: String,
    /// The session (owner) it belongs to.
    pub owner: Arc<str>,
    /// Whether it still runs.
    pub running: bool,
    /// Its state: the fields of a `job_list` entry.
    pub state: serde_json::Value,
}

impl JobTable {
    /// Make this server one of several replicas ([`Elsewhere`]): job ids name it, and the
    /// job tools send requests for other replicas' jobs there. Call it before serving.
    pub fn attach(&self, elsewhere: Arc<dyn Elsewhere>) {
        if let Some(jobs) = &self.0 {
            jobs.attach(elsewhere);
        }
    }

    /// Every job and its state now, oldest first: what this replica tells the others.
    pub fn snapshot(&self) -> Vec<JobSnapshot> {
        let Some(jobs) = &self.0 else {
            return Vec::new();
        };
        jobs.all()
            .iter()
            .map(|job| JobSnapshot {
                id: job.id.clone(),
                owner: job.owner().clone(),
                running: job.running(),
                state: job_tools::state_value(job),
            })
            .collect()
    }
}

impl BackgroundWork for JobTable {
    /// The job `id` of `owner` (the same rule as the job tools: another session's job is
    /// "not found").
    fn get(&self, owner: &Session, id: &str) -> Result<Arc<dyn Background>, ToolError> {
        match &self.0 {
            Some(jobs) => Ok(jobs.get(owner, id)?),
            None => Err(crate::background::no_work(id)),
        }
    }

    /// The jobs end with the server; their output files go with it.
    fn remove_files(&self) {
        if let Some(jobs) = &self.0 {
            jobs.remove_dir();
        }
    }
}

#[async_trait]
impl Background for Job {
    fn id(&self) -> &str {
        &self.id
    }

    fn state(&self) -> BackgroundState {
        standing(self)
    }

    fn started_at(&self) -> SystemTime {
        self.started_at
    }

    fn ended_at(&self) -> Option<SystemTime> {
        Job::ended_at(self)
    }

    fn retention(&self) -> Duration {
        Job::retention(self)
    }

    async fn cancel(&self) {
        self.kill().await;
    }

    fn read_output(&self, stream: OutputStream, max: usize) -> std::io::Result<OutputStart> {
        let which = match stream {
            OutputStream::Stdout => Which::Stdout,
            OutputStream::Stderr => Which::Stderr,
        };
        let chunk = self.live.read(which, 0, max)?;
        Ok(OutputStart {
            text: chunk.text,
            next: chunk.next,
            readable: self.live.readable(which),
        })
    }
}

/// Where `job` stands now: running (its latest output line, else its state), ended by itself
/// or at its time limit (`execute_command`'s result, as a call that waited for the end would
/// have returned it), or killed (job_kill, tasks/cancel, the end of its session).
fn standing(job: &Job) -> BackgroundState {
    if job.running() {
        let message = job
            .live
            .last_line()
            .unwrap_or_else(|| job_tools::describe(job));
        return BackgroundState::Running { message };
    }
    let message = job_tools::describe(job);
    match runner::job_result(job) {
        Some(result) => {
            let text = render(&result);
            let output = match serde_json::to_value(&result) {
                Ok(structured) => ToolOutput::new(structured, text),
                Err(_) => ToolOutput::text(text),
            };
            BackgroundState::Ended { output, message }
        }
        None => BackgroundState::Killed { message },
    }
}
