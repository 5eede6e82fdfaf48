//! The job tools: `job_output`, `job_input`, `job_kill` and `job_list`, for commands that
//! outlived their `execute_command` call ([`super::jobs`]). Each reaches only the caller's own
//! jobs.
//!
//! Among replicas a job's id names the replica that runs it: `job_output`, `job_input` and
//! `job_kill` for another replica's job are sent there whole ([`Elsewhere::forward`], the
//! same arguments, its result read back into this tool's output), and `job_list` adds what
//! the other replicas last reported of the caller's jobs, a job whose replica is gone marked
//! `lost`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::CATEGORY;
use super::jobs::Job;
use super::os::signal_name;
use super::process::{Which, progress_ticker};
use super::runner::Executor;
use crate::background::Elsewhere;
use crate::schema::JsonObject;
use crate::settings::human_bytes;
use crate::tool::{Annotations, ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};

/// The job tools a replica sends to the replica that runs the job (the others may run them
/// for a replica that asks, and nothing else).
pub const FORWARDED_TOOLS: &[&str] = &["job_output", "job_input", "job_kill"];

/// Tags every job tool carries.
const TAGS: &[&str] = &["command", "job", "process", "system"];

/// A job's state, as every job tool reports it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct JobState {
    /// The job.
    pub(crate) job_id: String,
    /// The command line.
    pub(crate) command: String,
    /// Where it runs.
    pub(crate) cwd: String,
    /// Its time limit in seconds.
    pub(crate) timeout: u64,
    /// True while it runs.
    pub(crate) running: bool,
    /// Its exit code, once it ended by itself (null while running, or when killed).
    pub(crate) return_code: Option<i32>,
    /// The signal that ended it, e.g. "SIGTERM", when one did.
    pub(crate) signal: Option<String>,
    /// True when its time limit ended it.
    pub(crate) timed_out: bool,
    /// True when job_kill (or the end of its session) ended it.
    pub(crate) killed: bool,
    /// Milliseconds since it started, or its whole run once ended.
    pub(crate) duration_ms: u64,
    /// Bytes written to stdout so far.
    pub(crate) stdout_bytes: u64,
    /// Bytes written to stderr so far.
    pub(crate) stderr_bytes: u64,
    /// The file holding its whole stdout.
    pub(crate) stdout_file: Option<String>,
    /// The file holding its whole stderr.
    pub(crate) stderr_file: Option<String>,
    /// When the output files stopped short (a full disk, the size cap), why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output_note: Option<String>,
    /// Set when the job is lost: the server (replica) that ran it stopped, so it runs no more
    /// and its output cannot be read; says why, with its last known output sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost: Option<String>,
}

fn state(job: &Job) -> JobState {
    let live = &job.live;
    let end = live.end();
    let (stdout_file, out_note) = live.spill_file(Which::Stdout);
    let (stderr_file, err_note) = live.spill_file(Which::Stderr);
    JobState {
        job_id: job.id.clone(),
        command: job.command_line.clone(),
        cwd: job.cwd.clone(),
        timeout: job.timeout,
        running: end.is_none(),
        return_code: end
            .filter(|e| !e.timed_out && !e.killed)
            .and_then(|e| e.status)
            .and_then(|s| s.code()),
        signal: end.and_then(|e| e.status).and_then(signal_name),
        timed_out: end.is_some_and(|e| e.timed_out),
        killed: end.is_some_and(|e| e.killed),
        duration_ms: u64::try_from(
            end.map_or_else(|| live.elapsed(), |e| e.duration)
                .as_millis(),
        )
        .unwrap_or(u64::MAX),
        stdout_bytes: live.total(Which::Stdout),
        stderr_bytes: live.total(Which::Stderr),
        stdout_file: stdout_file.map(|p| p.display().to_string()),
        stderr_file: stderr_file.map(|p| p.display().to_string()),
        output_note: out_note.or(err_note),
        lost: None,
    }
}

fn render_state(s: &JobState) -> String {
    let status = if let Some(lost) = &s.lost {
        format!("lost ({lost})")
    } else if s.running {
        format!("running for {} s", s.duration_ms / 1000)
    } else if s.timed_out {
        format!("killed at its time limit after {} ms", s.duration_ms)
    } else if s.killed {
        format!("killed after {} ms", s.duration_ms)
    } else if let Some(code) = s.return_code {
        format!("exit code {code} after {} ms", s.duration_ms)
    } else if let Some(signal) = &s.signal {
        format!("ended by {signal} after {} ms", s.duration_ms)
    } else {
        format!("ended after {} ms", s.duration_ms)
    };
    let mut text = format!(
        "{} `{}`: {status}; {} bytes of stdout, {} of stderr",
        s.job_id, s.command, s.stdout_bytes, s.stderr_bytes
    );
    if let Some(note) = &s.output_note {
        text.push_str(&format!(" ({note})"));
    }
    text
}

/// One line on a job: its command, running or how it ended, its output sizes.
pub(super) fn describe(job: &Job) -> String {
    render_state(&state(job))
}

/// A job's state as another replica is told it (its listing's fields).
pub(super) fn state_value(job: &Job) -> serde_json::Value {
    serde_json::to_value(state(job)).unwrap_or_default()
}

/// Send this call to the replica that runs job `id`, when another one does: `None` when the
/// job is this server's (or no other replica exists). The answer is the other replica's
/// result read back into this tool's output, or why it could not be had.
async fn forwarded<P: Serialize, T: DeserializeOwned>(
    tools: &JobTools,
    tool: &str,
    id: &str,
    params: &P,
    ctx: &ToolContext,
) -> Option<Result<T, ToolError>> {
    let (there, elsewhere) = tools.executor.jobs().elsewhere_for(id)?;
    Some(forward(&*elsewhere, &there, tool, params, ctx).await)
}

async fn forward<P: Serialize, T: DeserializeOwned>(
    elsewhere: &dyn Elsewhere,
    there: &str,
    tool: &str,
    params: &P,
    ctx: &ToolContext,
) -> Result<T, ToolError> {
    let args = match serde_json::to_value(params) {
        Ok(serde_json::Value::Object(args)) => args,
        _ => JsonObject::new(),
    };
    let value = elsewhere.forward(there, &ctx.session, tool, args).await?;
    serde_json::from_value(value).map_err(|e| {
        ToolError::ExecutionFailed(format!(
            "replica {there} answered {tool} with a result this replica cannot read ({e}); are both the same toolport version?"
        ))
    })
}

/// The job tools share the executor (its jobs and settings).
pub(crate) struct JobTools {
    executor: Arc<Executor>,
}

/// The job tools over the server's executor.
pub(crate) fn job_tools(executor: &Arc<Executor>) -> (JobOutput, JobInput, JobKill, JobList) {
    let tools = || JobTools {
        executor: executor.clone(),
    };
    (
        JobOutput(tools()),
        JobInput(tools()),
        JobKill(tools()),
        JobList(tools()),
    )
}

const fn read_only() -> Annotations {
    Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    }
}

// ----------------------------------------------------------------------------- job_output

/// `job_output`.
pub(crate) struct JobOutput(JobTools);

/// Arguments of `job_output`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputParams {
    /// The job, from execute_command's `job_id`.
    job_id: String,
    /// Byte offset in stdout to read from (0: the start; pass the previous answer's
    /// `stdout_offset` to get only what is new).
    #[serde(default)]
    stdout_offset: u64,
    /// Byte offset in stderr to read from (as `stdout_offset`).
    #[serde(default)]
    stderr_offset: u64,
    /// Seconds to wait for new output or the end before answering (0: answer at once). The
    /// maximum is the server's.
    #[serde(default)]
    wait: u64,
}

/// What `job_output` returns.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct OutputResult {
    #[serde(flatten)]
    state: JobState,
    /// Stdout from `stdout_offset` on (at most the server's per-call size).
    stdout: String,
    /// Stderr from `stderr_offset` on.
    stderr: String,
    /// Where the next job_output should read stdout from.
    stdout_offset: u64,
    /// Where the next job_output should read stderr from.
    stderr_offset: u64,
    /// True when more output is already there past the offsets (read again at once).
    more: bool,
}

#[async_trait]
impl TypedTool for JobOutput {
    type Params = OutputParams;
    type Output = OutputResult;

    fn spec(&self) -> ToolSpec {
        let settings = self.0.executor.settings();
        ToolSpec {
            name: "job_output",
            title: "Job output",
            description: format!(
                "Read a job's output (a command started by execute_command with background: true, or still running at its yield_after) from byte offsets, and its state: running, or its exit code, signal and duration. `wait` (seconds, at most {}) waits for new output or the end first, so a job can be followed without busy polling. Each call returns at most {} per stream; pass back `stdout_offset`/`stderr_offset` to continue. The whole output is also in the files named by `stdout_file`/`stderr_file`.",
                settings.timeout_max.as_secs(),
                human_bytes(settings.max_output_bytes as u64)
            ),
            purpose: "Follow a long build, test run or server started with execute_command: call it with the job_id and wait: 30 until running is false, passing back the offsets each time.",
            example: json!({"job_id": "job_1", "stdout_offset": 0, "stderr_offset": 0, "wait": 30}),
            category: CATEGORY,
            tags: TAGS,
            annotations: read_only(),
        }
    }

    /// `wait`'s maximum is the operator's.
    fn adjust_input_schema(&self, schema: &mut JsonObject) {
        if let Some(wait) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("wait"))
            .and_then(serde_json::Value::as_object_mut)
        {
            wait.insert(
                "maximum".into(),
                json!(self.0.executor.settings().timeout_max.as_secs()),
            );
        }
    }

    async fn run(&self, p: OutputParams, ctx: &ToolContext) -> Result<OutputResult, ToolError> {
        let executor = &self.0.executor;
        let settings = executor.settings();
        let cap = settings.timeout_max.as_secs();
        if p.wait > cap {
            return Err(ToolError::InvalidArguments(format!(
                "wait {} is above the server's maximum of {cap} seconds; give at most {cap} and call again",
                p.wait
            )));
        }
        if let Some(answer) = forwarded(&self.0, "job_output", &p.job_id, &p, ctx).await {
            return answer;
        }
        let job = executor.jobs().get(&ctx.session, &p.job_id)?;
        // The answer links the job's output resources, as execute_command's did.
        ctx.facts.set_job_shown(job.id.clone());
        let live = &job.live;
        for (name, offset, which) in [
            ("stdout_offset", p.stdout_offset, Which::Stdout),
            ("stderr_offset", p.stderr_offset, Which::Stderr),
        ] {
            let total = live.total(which);
            if offset > total {
                return Err(ToolError::InvalidArguments(format!(
                    "{name} {offset} is past the end: the job has written {total} bytes there so far; give 0..={total}"
                )));
            }
        }
        if p.wait > 0 {
            wait_for_news(
                &job,
                p.stdout_offset,
                p.stderr_offset,
                Duration::from_secs(p.wait),
                ctx,
            )
            .await?;
        }
        let max = settings.max_output_bytes;
        let read = |which, offset| {
            live.read(which, offset, max).map_err(|e| {
                ToolError::ExecutionFailed(format!("cannot read the job's output file: {e}"))
            })
        };
        let out = read(Which::Stdout, p.stdout_offset)?;
        let err = read(Which::Stderr, p.stderr_offset)?;
        let state = state(&job);
        let more =
            out.next < live.readable(Which::Stdout) || err.next < live.readable(Which::Stderr);
        Ok(OutputResult {
            state,
            stdout: out.text,
            stderr: err.text,
            stdout_offset: out.next,
            stderr_offset: err.next,
            more,
        })
    }

    fn render(&self, r: &OutputResult) -> String {
        let mut text = render_state(&r.state);
        for (name, body) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            if !body.is_empty() {
                text.push_str(&format!("\n--- {name} ---\n{body}"));
                if !body.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        if r.stdout.is_empty() && r.stderr.is_empty() {
            text.push_str("\n(no new output)");
        }
        text.push_str(&next_offsets(r));
        text
    }

    const PAYLOAD: &'static [&'static str] = &["stdout", "stderr"];

    fn summary(&self, r: &OutputResult) -> String {
        let mut text = render_state(&r.state);
        if r.stdout.is_empty() && r.stderr.is_empty() {
            text.push_str("\n(no new output)");
        } else {
            text.push_str(&format!(
                "\n[{} bytes of stdout and {} of stderr are in structuredContent.stdout and .stderr]",
                r.stdout.len(),
                r.stderr.len()
            ));
        }
        text.push_str(&next_offsets(r));
        text
    }
}

/// Where the next call reads from.
fn next_offsets(r: &OutputResult) -> String {
    format!(
        "\nnext: stdout_offset {}, stderr_offset {}{}",
        r.stdout_offset,
        r.stderr_offset,
        if r.more {
            " (more output is waiting: call again)"
        } else {
            ""
        }
    )
}

/// Wait until the job has output past the offsets, ends, or `wait` passes, reporting progress
/// each second (the latest output line).
async fn wait_for_news(
    job: &Job,
    stdout_offset: u64,
    stderr_offset: u64,
    wait: Duration,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    let live = &job.live;
    let mut changes = live.changes();
    let deadline = tokio::time::Instant::now() + wait;
    let mut ticker = progress_ticker();
    loop {
        if live.end().is_some()
            || live.total(Which::Stdout) > stdout_offset
            || live.total(Which::Stderr) > stderr_offset
        {
            return Ok(());
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return Ok(()) },
            () = tokio::time::sleep_until(deadline) => return Ok(()),
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled("cancelled while waiting for the job's output (the job goes on)".into())),
            _ = ticker.tick() => live.report_progress(ctx.progress.as_ref()).await,
        }
    }
}

// ----------------------------------------------------------------------------- job_input

/// `job_input`.
pub(crate) struct JobInput(JobTools);

/// Arguments of `job_input`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputParams {
    /// The job, from execute_command's `job_id` (started with stdin_open: true).
    job_id: String,
    /// Text written to the job's stdin as it is (add "\n" to end a line).
    #[serde(default)]
    text: String,
    /// Close stdin after the text (end of input: the program sees EOF).
    #[serde(default)]
    close: bool,
}

/// What `job_input` returns.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct InputResult {
    #[serde(flatten)]
    state: JobState,
    /// Bytes written.
    written: u64,
    /// True when stdin was closed.
    closed: bool,
}

#[async_trait]
impl TypedTool for JobInput {
    type Params = InputParams;
    type Output = InputResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "job_input",
            title: "Job input",
            description: "Write text to the stdin of a running job that was started with execute_command's stdin_open: true (a REPL, a prompt, a program reading commands); `close: true` then closes stdin so the program sees end of input. Read the answer with job_output.".into(),
            purpose: "Drive an interactive program: start it with execute_command {background: true, stdin_open: true}, send a line with job_input, read the reply with job_output {wait: 5}.",
            example: json!({"job_id": "job_1", "text": "print(6 * 7)\n"}),
            category: CATEGORY,
            tags: TAGS,
            annotations: Annotations {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            },
        }
    }

    async fn run(&self, p: InputParams, ctx: &ToolContext) -> Result<InputResult, ToolError> {
        if p.text.is_empty() && !p.close {
            return Err(ToolError::InvalidArguments(
                "nothing to do: give `text` to write, or close: true to end the input".into(),
            ));
        }
        if let Some(answer) = forwarded(&self.0, "job_input", &p.job_id, &p, ctx).await {
            return answer;
        }
        let job = self.0.executor.jobs().get(&ctx.session, &p.job_id)?;
        if !job.running() {
            return Err(ToolError::InvalidArguments(format!(
                "{} has ended ({}); it reads no more input",
                job.id,
                render_state(&state(&job))
            )));
        }
        job.live
            .write_stdin(p.text.as_bytes(), p.close)
            .await
            .map_err(|why| ToolError::InvalidArguments(format!("{}: {why}", job.id)))?;
        Ok(InputResult {
            state: state(&job),
            written: p.text.len() as u64,
            closed: p.close,
        })
    }

    fn render(&self, r: &InputResult) -> String {
        format!(
            "wrote {} bytes{}\n{}",
            r.written,
            if r.closed { " and closed stdin" } else { "" },
            render_state(&r.state)
        )
    }
}

// ----------------------------------------------------------------------------- job_kill

/// `job_kill`.
pub(crate) struct JobKill(JobTools);

/// Arguments of `job_kill`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KillParams {
    /// The job to end.
    job_id: String,
}

#[async_trait]
impl TypedTool for JobKill {
    type Params = KillParams;
    type Output = JobState;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "job_kill",
            title: "Kill job",
            description: "End a running job and every process it started (SIGTERM, a short grace, then SIGKILL, including processes that left its process group), and return its final state. Its output stays readable with job_output until the job is removed. A job that has already ended is left as it is.".into(),
            purpose: "Stop a dev server, a watcher or a stuck build that was started with execute_command.",
            example: json!({"job_id": "job_1"}),
            category: CATEGORY,
            tags: TAGS,
            annotations: Annotations {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: false,
            },
        }
    }

    async fn run(&self, p: KillParams, ctx: &ToolContext) -> Result<JobState, ToolError> {
        if let Some(answer) = forwarded(&self.0, "job_kill", &p.job_id, &p, ctx).await {
            return answer;
        }
        let job = self.0.executor.jobs().get(&ctx.session, &p.job_id)?;
        job.live.kill();
        job.live.ended().await;
        Ok(state(&job))
    }

    fn render(&self, r: &JobState) -> String {
        render_state(r)
    }
}

// ----------------------------------------------------------------------------- job_list

/// `job_list`.
pub(crate) struct JobList(JobTools);

/// Arguments of `job_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {}

/// What `job_list` returns.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ListResult {
    /// This session's jobs, oldest first (among replicas: this replica's, then the other
    /// replicas' as they last reported them, a job whose replica is gone marked `lost`).
    jobs: Vec<JobState>,
    /// When the other replicas' jobs could not be listed, why (this replica's are listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

#[async_trait]
impl TypedTool for JobList {
    type Params = ListParams;
    type Output = ListResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "job_list",
            title: "List jobs",
            description: format!(
                "List this session's jobs (commands started by execute_command that outlived their call): command, running or how it ended, age and output sizes. Finished jobs are kept {} after their end, and at most {} of them server-wide (the one that ended first goes first).",
                crate::settings::human(self.0.executor.settings().job_retention),
                self.0.executor.settings().max_jobs
            ),
            purpose: "See what is still running before starting another long command, or find a job_id again.",
            example: json!({}),
            category: CATEGORY,
            tags: TAGS,
            annotations: read_only(),
        }
    }

    async fn run(&self, _p: ListParams, ctx: &ToolContext) -> Result<ListResult, ToolError> {
        let jobs = self.0.executor.jobs();
        let mut listed: Vec<JobState> = jobs.list(&ctx.session).iter().map(|j| state(j)).collect();
        let mut note = None;
        if let Some(elsewhere) = jobs.elsewhere() {
            match elsewhere.listed_elsewhere(&ctx.session).await {
                Ok(others) => listed.extend(
                    others
                        .into_iter()
                        .filter_map(|value| serde_json::from_value::<JobState>(value).ok()),
                ),
                Err(why) => {
                    note = Some(format!(
                        "only this replica's jobs are listed: the other replicas' cannot be read now ({why})"
                    ));
                }
            }
        }
        Ok(ListResult { jobs: listed, note })
    }

    fn render(&self, r: &ListResult) -> String {
        let mut lines: Vec<String> = r.jobs.iter().map(render_state).collect();
        if lines.is_empty() {
            lines.push("no jobs in this session".into());
        }
        lines.extend(r.note.clone());
        lines.join("\n")
    }
}
