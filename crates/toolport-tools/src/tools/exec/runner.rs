//! The command runner shared by `execute_command` and plugin tools: one [`Executor`] per
//! server holds the command policy, the concurrency slots and the sandbox, so a plugin can do
//! nothing that `execute_command` with the same argv could not, and both queue for the same
//! `exec.max_concurrent` slots.
//!
//! A call is a pipeline, as codex's exec is: [`Executor::plan`] turns a [`CommandRequest`]
//! (the engine's own input; `execute_command` and plugin tools each build one) into a
//! [`process::RunSpec`] (checks, policy, timeout, environment, working directory, sandbox
//! argv; nothing runs), [`process::run`] runs it, and `Report::finish` turns the outcome into
//! an [`ExecResult`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::Semaphore;

use super::env::child_env;
use super::jobs::{Job, Jobs, NewJob};
use super::os;
use super::policy::{Decision, Place, Policy};
use super::process::{self, Which};
use super::request::CommandRequest;
use super::sandbox::{self, SandboxSpec};
use super::settings::{self, ExecSettings, SandboxKind};
use crate::tool::{CommandFacts, ToolContext, ToolError};
use crate::workspace::PathError;

/// A call's timeout when it gives none: [`settings::DEFAULT_TIMEOUT`], or the operator's
/// maximum when that is lower.
pub(crate) fn default_timeout(settings: &ExecSettings) -> Duration {
    settings::DEFAULT_TIMEOUT.min(settings.timeout_max)
}

/// The structured result of a command (`execute_command`'s output; plugin tools read it).
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct ExecResult {
    /// Standard output (lossy UTF-8; the start and end are kept when it is over the limit).
    pub(crate) stdout: String,
    /// Standard error (same rules), or why the command did not start.
    pub(crate) stderr: String,
    /// The exit code; null when the command did not start or was killed.
    pub(crate) return_code: Option<i32>,
    /// True when the command was killed because the timeout passed.
    pub(crate) timed_out: bool,
    /// True when stdout or stderr was cut to the limit.
    pub(crate) truncated: bool,
    /// Wall-clock time in milliseconds.
    pub(crate) duration_ms: u64,
    /// The signal that ended the command, e.g. "SIGKILL", when one did.
    pub(crate) signal: Option<String>,
    /// Bytes the command wrote to stdout in total.
    pub(crate) stdout_bytes: u64,
    /// Bytes the command wrote to stderr in total.
    pub(crate) stderr_bytes: u64,
    /// The working directory it ran in.
    pub(crate) cwd: String,
    /// The timeout applied, in seconds.
    pub(crate) timeout: u64,
    /// Set when the command became a job (`background`, or still running at `yield_after`):
    /// follow it with job_output, write to it with job_input, end it with job_kill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) job_id: Option<String>,
    /// With `job_id`: true while the job runs (its exit code comes from job_output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) running: Option<bool>,
    /// With `job_id`: true when the call returned before the command ended: it is still
    /// running as that job, so `return_code` is not known yet; follow it with job_output.
    /// (The same as `running`, named so that it cannot be misread.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) still_running: Option<bool>,
    /// With `job_id`: the file holding the job's whole stdout (read_file can page it when it
    /// lies inside a root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stdout_file: Option<String>,
    /// With `job_id`: the file holding the job's whole stderr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stderr_file: Option<String>,
    /// The command line as a shell would show it, for the text rendering.
    #[serde(skip)]
    pub(crate) command_line: String,
}

/// Runs commands for every tool that runs one: the policy, the slots and the sandbox.
pub(crate) struct Executor {
    settings: ExecSettings,
    /// Commands that outlived their call.
    jobs: Arc<Jobs>,
    policy: Policy,
    /// The workspace roots as real paths (the policy's rules about paths outside them).
    roots: Vec<PathBuf>,
    slots: Arc<Semaphore>,
    /// Commands running now (a metric; `observe::metrics` registers it).
    running: prometheus_client::metrics::gauge::Gauge,
    /// `None` without a sandbox; `Some(Ok(spec))` when Landlock can enforce it;
    /// `Some(Err(why))` when it was asked for and cannot be (every call is refused).
    sandbox: Option<Result<SandboxSpec, String>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

impl Executor {
    /// Build the tool from its settings: compile the policy, probe the sandbox (which keeps
    /// `roots` writable).
    pub(crate) fn new(settings: &ExecSettings, roots: &[PathBuf]) -> Result<Self, String> {
        let e = settings;
        let policy = Policy::new(&e.allow, &e.deny, &e.confirm_rules, e.allow_shells)
            .map_err(|error| error.to_string())?;
        // Real paths, once: the sandbox keeps them writable, the policy judges paths by them.
        let roots: Vec<PathBuf> = roots
            .iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
            .collect();
        let sandbox = match e.sandbox {
            SandboxKind::None => None,
            SandboxKind::Landlock => {
                let mut writable = roots.clone();
                writable.push(
                    std::fs::canonicalize(std::env::temp_dir())
                        .unwrap_or_else(|_| std::env::temp_dir()),
                );
                // POSIX shared memory (Python's multiprocessing locks, for one) lives here.
                let shm = PathBuf::from("/dev/shm");
                if shm.is_dir() {
                    writable.push(shm);
                }
                let spec = SandboxSpec {
                    writable,
                    readable: Vec::new(),
                    no_network: !e.sandbox_network,
                };
                Some(match sandbox::probe(&spec) {
                    Ok(abi) => {
                        tracing::info!(%abi, "commands run confined by Landlock");
                        Ok(spec)
                    }
                    Err(why) => {
                        tracing::error!(%why, "--sandbox landlock was asked for but cannot be enforced; execute_command will refuse every command");
                        Err(why)
                    }
                })
            }
        };
        Ok(Self {
            settings: settings.clone(),
            jobs: Arc::new(Jobs::new(settings)),
            policy,
            roots,
            slots: Arc::new(Semaphore::new(e.max_concurrent)),
            running: prometheus_client::metrics::gauge::Gauge::default(),
            sandbox,
        })
    }

    /// The gauge of commands running now (shared: it moves as commands start and end).
    pub(crate) fn running(&self) -> prometheus_client::metrics::gauge::Gauge {
        self.running.clone()
    }

    /// The operator's exec settings.
    pub(crate) fn settings(&self) -> &ExecSettings {
        &self.settings
    }

    /// The jobs (for the job tools).
    pub(crate) fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }

    /// The jobs, for the server (MCP tasks).
    pub(crate) fn job_table(&self) -> super::JobTable {
        super::JobTable(Some(self.jobs.clone()))
    }

    /// What to ask the user before running `request`, when the policy wants confirmation.
    pub(crate) fn confirmation(&self, request: &CommandRequest) -> Option<String> {
        // The working directory as the policy sees it: relative ones are under the first root
        // (where the call runs them); a cwd that escapes is refused when the call runs.
        let root = self.roots.first().map_or(Path::new(""), PathBuf::as_path);
        let cwd = root.join(request.cwd.as_deref().unwrap_or(""));
        let place = Place {
            cwd: &cwd,
            roots: &self.roots,
            path: request
                .env
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("PATH"))
                .map(|(_, value)| value.as_str()),
        };
        match self
            .policy
            .decide(&request.program, &request.args, Some(&place))
        {
            Decision::Confirm { reason } => Some(format!(
                "Run `{}` in {}: {reason}",
                request.command_line(),
                request.cwd.as_deref().unwrap_or("the workspace root")
            )),
            Decision::Allow | Decision::Deny { .. } => None,
        }
    }

    /// Run a command: plan it, wait for a free slot (a cancelled call leaves the queue), run
    /// it with its process group, and report what it did.
    pub(crate) async fn run(
        &self,
        request: CommandRequest,
        ctx: &ToolContext,
    ) -> Result<ExecResult, ToolError> {
        let argv = request.argv();
        // Recorded first, so a call dropped while the command runs still names it.
        ctx.facts.set_command(CommandFacts {
            argv: argv.clone(),
            ..CommandFacts::default()
        });
        let result = self.run_planned(request, ctx).await;
        if let Some(job) = result.as_ref().ok().and_then(|r| r.job_id.clone()) {
            ctx.facts.set_job(job);
        }
        ctx.facts.set_command(CommandFacts {
            argv,
            exit_code: result.as_ref().ok().and_then(|r| r.return_code),
            signal: result.as_ref().ok().and_then(|r| r.signal.clone()),
            timed_out: result.as_ref().is_ok_and(|r| r.timed_out),
        });
        result
    }

    async fn run_planned(
        &self,
        request: CommandRequest,
        ctx: &ToolContext,
    ) -> Result<ExecResult, ToolError> {
        let background = request.background;
        let stdin_open = request.stdin_open;
        let plan = match self.plan(request, &ctx.workspace)? {
            Planned::Run(plan) => plan,
            Planned::NoSuchCwd(result) => return Ok(result),
        };
        if background && !self.jobs.has_room() {
            return Err(self.jobs.full());
        }
        let slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot.map_err(|_| ToolError::Unavailable("the server is shutting down".into()))?,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled("cancelled while waiting for a free command slot".into())),
        };
        let Plan {
            mut spec,
            report,
            yield_after,
        } = plan;
        // Both streams' kept output in a result that fits the client's result cap.
        let both = u64::try_from(spec.max_output_bytes.saturating_mul(2)).unwrap_or(u64::MAX);
        spec.max_output_bytes =
            usize::try_from(ctx.page_bytes(both) / 2).unwrap_or(spec.max_output_bytes);
        let running = Running::start(&self.running);
        if !background && yield_after.is_none() {
            let outcome = process::run(spec, &ctx.cancel, ctx.progress.as_ref()).await;
            return report.finish(outcome);
        }
        // It may become a job: keep every byte of its output.
        let id = self.jobs.next_id();
        let options = process::StartOptions {
            spill: Some(self.jobs.dir()?.join(&id)),
            spill_max_bytes: self.settings.job_output_max_bytes,
            stdin_open,
        };
        let live = match process::start(spec, &options) {
            Ok(live) => live,
            Err(outcome) => return report.finish(*outcome),
        };
        let mut new = NewJob {
            command_line: report.command_line.clone(),
            cwd: report.cwd.clone(),
            timeout: report.timeout,
            live: live.clone(),
            hold: Box::new((slot, running)),
        };
        if background {
            live.spill_now();
            return match self.jobs.insert(id, &ctx.session, new) {
                Ok(job) => Ok(report.job(&job)),
                Err(_) => {
                    live.kill();
                    Err(self.jobs.full())
                }
            };
        }
        let guard = process::KillOnDrop::new(&live);
        let until = yield_after.map(|after| tokio::time::Instant::now() + after);
        let mut until = until;
        loop {
            match process::wait(&live, &ctx.cancel, ctx.progress.as_ref(), until).await {
                process::Waited::Ended => {
                    guard.disarm();
                    drop(new);
                    return report.finish(live.outcome(None));
                }
                process::Waited::StillRunning => {
                    live.spill_now();
                    match self.jobs.insert(id.clone(), &ctx.session, new) {
                        Ok(job) => {
                            guard.disarm();
                            return Ok(report.job(&job));
                        }
                        // The job table is full: keep waiting for the end, as without jobs.
                        Err(back) => {
                            new = back;
                            until = None;
                        }
                    }
                }
            }
        }
    }
}

/// One command counted as running until this is dropped (also when the call is dropped).
struct Running(prometheus_client::metrics::gauge::Gauge);

impl Running {
    fn start(gauge: &prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// What [`Executor::plan`] decided for a call.
enum Planned {
    /// Run this.
    Run(Plan),
    /// The working directory does not exist: a result (exit code null, the reason on stderr),
    /// not an error, as a shell would report it.
    NoSuchCwd(ExecResult),
}

/// A call made concrete: what to spawn, and what the result will report about it.
struct Plan {
    spec: process::RunSpec,
    report: Report,
    /// When to return the still-running command as a job; `None`: wait for its end.
    yield_after: Option<Duration>,
}

/// The parts of a result known before the command runs.
struct Report {
    command: String,
    command_line: String,
    cwd: String,
    timeout: u64,
    /// The command's `PATH`, named when the program is not found.
    path: String,
}

impl Executor {
    /// Everything before the spawn, with no side effect but opening the working directory:
    /// argument checks, the policy's decision, the timeout, the environment, the working
    /// directory (through the workspace), and the argv (through the sandbox shim when one is
    /// configured).
    fn plan(
        &self,
        request: CommandRequest,
        workspace: &crate::workspace::Workspace,
    ) -> Result<Planned, ToolError> {
        if request.program.is_empty()
            || request.program.contains('\0')
            || request.args.iter().any(|a| a.contains('\0'))
        {
            return Err(ToolError::InvalidArguments(
                "command must be a non-empty program name, and neither it nor args may contain NUL bytes".into(),
            ));
        }
        if let Decision::Deny { rule, reason } =
            self.policy.decide(&request.program, &request.args, None)
        {
            return Err(ToolError::PermissionDenied(format!(
                "the command policy denies this command ({rule}): {reason}"
            )));
        }
        let sandbox = match &self.sandbox {
            None => None,
            Some(Ok(spec)) => Some(spec),
            Some(Err(why)) => {
                return Err(ToolError::Unavailable(format!(
                    "commands are refused: the operator asked for a Landlock sandbox, but it cannot be enforced here ({why}). Nothing runs unconfined; the operator can start toolport with --sandbox none to run commands without it"
                )));
            }
        };
        let yield_cap = self.settings.timeout_max.as_secs();
        let yield_after = request
            .yield_after
            .map_or(self.settings.yield_after.as_secs(), |after| after.as_secs());
        if yield_after > yield_cap {
            return Err(ToolError::InvalidArguments(format!(
                "yield_after {yield_after} is above the server's maximum of {yield_cap} seconds (the longest a call may wait); give at most {yield_cap}, or background: true"
            )));
        }
        // A command that may become a job has a job's limits.
        let may_be_job = request.background || yield_after > 0;
        let (default, max) = if may_be_job {
            (self.settings.job_timeout, self.settings.job_timeout_max)
        } else {
            (default_timeout(&self.settings), self.settings.timeout_max)
        };
        let max = max.as_secs();
        let timeout = request.timeout.map_or(default.as_secs(), |t| t.as_secs());
        if timeout > max {
            // The schema's `maximum` says so and the registry checks it first; this keeps the
            // rule true for any other caller.
            return Err(ToolError::InvalidArguments(format!(
                "timeout {timeout} is above the server's maximum of {max} seconds; give at most {max}{}",
                if may_be_job {
                    ""
                } else {
                    " (a command that may become a job, with yield_after > 0 or background: true, may run up to exec.job_timeout_max)"
                }
            )));
        }
        let env = child_env(&self.settings.env_allowlist, Some(&request.env))?;
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let command_line = request.command_line();
        let cwd_arg = request.cwd.as_deref().unwrap_or(".");
        let (cwd_dir, cwd) = match workspace.open_dir(cwd_arg) {
            Ok((dir, target)) => (dir, target.display().display().to_string()),
            Err(error @ (PathError::NotFound { .. } | PathError::NotADirectory { .. })) => {
                return Ok(Planned::NoSuchCwd(ExecResult {
                    stderr: format!(
                        "toolport: the working directory {cwd_arg} does not exist: {error}"
                    ),
                    cwd: cwd_arg.to_owned(),
                    timeout,
                    command_line,
                    ..ExecResult::default()
                }));
            }
            Err(other) => return Err(other.into()),
        };
        let args: Vec<OsString> = request.args.iter().map(OsString::from).collect();
        let (program, args) = match sandbox {
            Some(spec) => {
                let (exe, argv) = sandbox::shim_command(spec, request.program.as_ref(), &args)
                    .map_err(|e| {
                        ToolError::ExecutionFailed(format!("cannot start the sandbox: {e}"))
                    })?;
                (exe.into_os_string(), argv)
            }
            None => (OsString::from(&request.program), args),
        };
        Ok(Planned::Run(Plan {
            spec: process::RunSpec {
                program,
                args,
                cwd: cwd_dir.into_std_file(),
                env,
                stdin: request.stdin.map(String::into_bytes),
                timeout: Duration::from_secs(timeout),
                max_output_bytes: self.settings.max_output_bytes,
            },
            report: Report {
                command: request.program,
                command_line,
                cwd,
                timeout,
                path,
            },
            yield_after: (!request.background && yield_after > 0)
                .then(|| Duration::from_secs(yield_after)),
        }))
    }
}

/// What `execute_command` would have returned for `job` had its call waited for the end:
/// `None` while it runs, and when it was killed (job_kill, tasks/cancel, the end of its
/// session), which a waiting call reports as cancelled, not as a result.
pub(super) fn job_result(job: &Job) -> Option<ExecResult> {
    job.live.end()?;
    let report = Report {
        command: job.command_line.clone(),
        command_line: job.command_line.clone(),
        cwd: job.cwd.clone(),
        timeout: job.timeout,
        // Only named when the program did not start, and a job's program did.
        path: String::new(),
    };
    report.finish(job.live.outcome(None)).ok()
}

impl Report {
    /// The result of a command that became a job: its output so far, its id and files.
    fn job(&self, job: &Job) -> ExecResult {
        let live = &job.live;
        // Read once, before the output: a job that ends meanwhile is reported running with
        // what it had written by then, never ended without its last output.
        let running = job.running();
        let stdout = live.captured(Which::Stdout);
        let stderr = live.captured(Which::Stderr);
        let file = |which| {
            live.spill_file(which)
                .0
                .map(|path| path.display().to_string())
        };
        ExecResult {
            truncated: stdout.truncated || stderr.truncated,
            stdout_bytes: stdout.total_bytes,
            stderr_bytes: stderr.total_bytes,
            stdout: stdout.text,
            stderr: stderr.text,
            duration_ms: u64::try_from(live.elapsed().as_millis()).unwrap_or(u64::MAX),
            cwd: self.cwd.clone(),
            timeout: self.timeout,
            job_id: Some(job.id.clone()),
            running: Some(running),
            still_running: Some(running),
            stdout_file: file(Which::Stdout),
            stderr_file: file(Which::Stderr),
            command_line: self.command_line.clone(),
            ..ExecResult::default()
        }
    }

    /// The result of a run: what the process did, in the tool's terms.
    fn finish(self, outcome: process::Outcome) -> Result<ExecResult, ToolError> {
        if outcome.cancelled {
            return Err(ToolError::Cancelled(format!(
                "`{}` was cancelled and its processes killed",
                self.command_line
            )));
        }
        let mut stderr = outcome.stderr;
        if let Some(error) = &outcome.spawn_error {
            let why = match error.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "command not found: {} (it is not a path to a program, and no program of that name is on PATH={})",
                    self.command, self.path
                ),
                std::io::ErrorKind::PermissionDenied => {
                    format!("{} is not executable (permission denied)", self.command)
                }
                _ => format!("{} could not be started: {error}", self.command),
            };
            stderr.text = format!("toolport: {why}");
        }
        Ok(ExecResult {
            return_code: if outcome.timed_out {
                None
            } else {
                outcome.status.and_then(|s| s.code())
            },
            truncated: outcome.stdout.truncated || stderr.truncated,
            stdout: outcome.stdout.text,
            stdout_bytes: outcome.stdout.total_bytes,
            stderr_bytes: stderr.total_bytes,
            stderr: stderr.text,
            timed_out: outcome.timed_out,
            duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            signal: outcome.status.and_then(os::signal_name),
            cwd: self.cwd,
            timeout: self.timeout,
            command_line: self.command_line,
            ..ExecResult::default()
        })
    }
}
