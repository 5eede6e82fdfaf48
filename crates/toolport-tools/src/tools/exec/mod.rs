//! `execute_command`: run a program inside the workspace and return its output, structured.
//!
//! No shell is involved unless the program is one (`bash -c …`), so arguments are passed as
//! they are. Around each run ([`process`]):
//! - the command policy ([`policy`]) decides on the real argv: allow, deny (naming the rule),
//!   or ask the human first (through the registry's confirmation step);
//! - the working directory resolves inside the roots and is entered through its handle;
//! - the environment is minimal (PATH, HOME, LANG, TERM=dumb, an operator allowlist) with
//!   non-interactive defaults (no pager, no git prompts, CI=1), so the server's own secrets are
//!   not inherited and nothing waits for a keyboard;
//! - stdin is the null device unless given; the command gets its own process tree (a process
//!   group on Unix, a Job Object on Windows: [`os`]), no terminal or console window, and dies
//!   with the server; on timeout or cancellation the whole tree is terminated;
//! - at most `exec.max_concurrent` commands run at once (others queue; the other tools stay
//!   responsive), and each stream keeps at most `exec.max_output_bytes` (head and tail);
//! - optionally, Landlock confines what the command may write ([`sandbox`]), failing closed:
//!   the roots, the temp dir (also passed as `TMPDIR`) and `/dev/shm` stay writable.
//!
//! All of that is the [`Executor`] ([`runner`]), which plugin tools share: this file only maps
//! the tool's arguments onto the engine's [`CommandRequest`] and renders the result.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::schema::JsonObject;
use crate::settings::{human, human_bytes};
use crate::tool::{Annotations, ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};

mod env;
mod job_tools;
pub(crate) mod jobs;
pub(crate) mod policy;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use policy::fuzz_decide;
pub(crate) mod os;
pub(crate) mod process;
mod request;
mod runner;
pub(crate) mod sandbox;
mod settings;
mod tasks;

pub(crate) use env::check_variable;
pub use env::child_env;
#[cfg(feature = "host")]
pub use job_tools::FORWARDED_TOOLS;
pub(crate) use job_tools::job_tools;
pub use jobs::JobTable;
pub(crate) use request::CommandRequest;
pub(crate) use runner::{ExecResult, Executor};
pub(crate) use settings::ExecArgs;
pub use settings::ExecSettings;
pub(crate) use settings::FileExec;
#[cfg(feature = "host")]
pub use tasks::JobSnapshot;

/// The tool's name.
pub const NAME: &str = "execute_command";

/// The category of `execute_command`.
const CATEGORY: &str = "exec";

/// Process-wide set-up before the server binary runs commands, per OS ([`os`]): on Unix, give
/// up the controlling terminal, become the child subreaper (Linux) and arm the watchdog to run
/// from `exe` (the toolport binary; `/proc/self/exe` in the server), started by the first
/// command; on Windows nothing is needed (each command's Job Object dies with the server).
pub fn prepare_host(exe: &std::ffi::OsStr) {
    os::prepare_host(exe);
}

/// The tool's description, stating the operator's real limits.
fn description(settings: &ExecSettings) -> String {
    let yield_after = settings.yield_after.as_secs();
    let jobs = if yield_after > 0 {
        format!(
            "A command still running after `yield_after` seconds (default {yield_after}, at most {}; 0 waits for the end) becomes a job: the call returns its output so far, a `job_id` and `still_running: true`, and the command goes on; `background: true` returns the `job_id` at once. Follow a job with job_output (`wait` blocks for new output), write to its stdin with job_input (start it with `stdin_open: true`), end it with job_kill, list them with job_list. A job runs until `timeout` (default {}, at most {}).",
            settings.timeout_max.as_secs(),
            human(settings.job_timeout),
            human(settings.job_timeout_max),
        )
    } else {
        format!(
            "`background: true` starts the command as a job and returns its `job_id` at once: follow it with job_output, write to its stdin with job_input (`stdin_open: true`), end it with job_kill. A job runs until `timeout` (default {}, at most {}).",
            human(settings.job_timeout),
            human(settings.job_timeout_max),
        )
    };
    format!(
        "Run a program inside the workspace and return its stdout, stderr and exit code. `command` is the program and `args` its arguments, passed as they are: there is no shell, so pipes, redirects, globs and $VARIABLES are not interpreted unless the command is a shell itself ({shell}), which needs the user's confirmation unless the operator allows shells (so does inline code: python -c, node -e …). `cwd` must be inside the workspace roots (default: the first root). `timeout` is in seconds. Each output stream keeps at most {} (the start and the end); `truncated` says when output was cut. Commands run non-interactively: stdin is empty unless `stdin` is given, there is no terminal, and pagers and git prompts are off. {jobs} {contained} Destructive commands (rm -r, git push --force, sudo …) need the user's confirmation, and the operator's policy may deny commands.",
        human_bytes(settings.max_output_bytes as u64),
        shell = os::SHELL_HINT,
        contained = os::CONTAINMENT_HINT,
    )
}

/// Arguments of `execute_command`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The program to run, e.g. "cargo", "git", "ls" or a path. Not a command line: put the
    /// arguments in `args`.
    pub(crate) command: String,
    /// Arguments, one per element, passed to the program as they are (no shell quoting).
    #[serde(default)]
    pub(crate) args: Vec<String>,
    /// Working directory: relative to the first workspace root, or absolute inside a root.
    /// Default: the first root.
    pub(crate) cwd: Option<String>,
    /// Seconds before the command is killed (the default and the maximum are the server's).
    #[schemars(range(min = 1))]
    pub(crate) timeout: Option<u64>,
    /// Text written to the command's standard input (default: none, stdin is empty).
    pub(crate) stdin: Option<String>,
    /// Extra environment variables for the command. Loader and shell-startup variables (LD_*,
    /// DYLD_*, BASH_ENV, ENV …) are refused.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// Start the command and return at once with its `job_id`; follow it with job_output.
    #[serde(default)]
    pub(crate) background: bool,
    /// Seconds to wait before returning a still-running command as a job (with its output so
    /// far and a `job_id`); 0 waits for the end. The default and maximum are the server's.
    pub(crate) yield_after: Option<u64>,
    /// Keep the command's stdin open for job_input (a REPL, a prompt), after `stdin` if given.
    #[serde(default)]
    pub(crate) stdin_open: bool,
}

/// The arguments as the engine's request: the same fields, named for the engine.
impl From<Params> for CommandRequest {
    fn from(p: Params) -> Self {
        Self {
            program: p.command,
            args: p.args,
            cwd: p.cwd,
            env: p.env.unwrap_or_default(),
            stdin: p.stdin,
            stdin_open: p.stdin_open,
            timeout: p.timeout.map(Duration::from_secs),
            background: p.background,
            yield_after: p.yield_after.map(Duration::from_secs),
        }
    }
}

/// The `execute_command` tool: the arguments as a command for the shared [`Executor`].
pub(crate) struct ExecuteCommand {
    executor: Arc<Executor>,
}

impl ExecuteCommand {
    /// The tool over the server's executor.
    pub(crate) fn new(executor: Arc<Executor>) -> Self {
        Self { executor }
    }
}

fn render(r: &ExecResult) -> String {
    let mut text = heading(r);
    for (name, body, total) in [
        ("stdout", &r.stdout, r.stdout_bytes),
        ("stderr", &r.stderr, r.stderr_bytes),
    ] {
        if body.is_empty() {
            continue;
        }
        text.push_str(&format!("--- {name} ({total} bytes) ---\n{body}"));
        if !body.ends_with('\n') {
            text.push('\n');
        }
    }
    if r.stdout.is_empty() && r.stderr.is_empty() {
        text.push_str("(no output)\n");
    }
    text.pop();
    text
}

/// The text beside a structured result that carries the output.
fn summary(r: &ExecResult) -> String {
    let mut text = heading(r);
    if r.stdout.is_empty() && r.stderr.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!(
            "[stdout ({} bytes) and stderr ({} bytes) are in structuredContent.stdout and .stderr]",
            r.stdout_bytes, r.stderr_bytes
        ));
    }
    text
}

/// The command, where it ran and how it ended (or the job it became), one line each.
fn heading(r: &ExecResult) -> String {
    let mut text = format!("$ {}\n(in {})\n", r.command_line, r.cwd);
    let outcome = if r.timed_out {
        format!("killed after the {} s timeout", r.timeout)
    } else if let Some(code) = r.return_code {
        format!("exit code {code}")
    } else if let Some(signal) = &r.signal {
        format!("ended by {signal}")
    } else {
        "did not start".to_owned()
    };
    if let Some(job) = &r.job_id {
        let files = match (&r.stdout_file, &r.stderr_file) {
            (Some(out), Some(err)) => format!("; the whole output goes to {out} and {err}"),
            _ => String::new(),
        };
        let (state, kill) = if r.still_running == Some(true) {
            (
                format!("still running as {job}; follow it with job_output"),
                "; end it with job_kill",
            )
        } else {
            // It ended between becoming a job and this answer: its end is the job's.
            (
                format!("ended as {job} before this answer; read its exit code with job_output"),
                "",
            )
        };
        text.push_str(&format!(
            "{state} (after {} ms{files})\ncontinue with job_output {{\"job_id\": \"{job}\", \"stdout_offset\": {}, \"stderr_offset\": {}, \"wait\": 30}}{kill}\n",
            r.duration_ms, r.stdout_bytes, r.stderr_bytes
        ));
    } else {
        text.push_str(&format!("{outcome} after {} ms\n", r.duration_ms));
    }
    if r.timed_out {
        text.push_str(&format!(
            "note: the command was still running after {} s and was killed with its child processes\n",
            r.timeout
        ));
    }
    text
}

#[async_trait]
impl TypedTool for ExecuteCommand {
    type Params = Params;
    type Output = ExecResult;
    const ASKS_CONFIRMATION: bool = true;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME,
            title: "Execute command",
            description: description(self.executor.settings()),
            purpose: "Build, test, lint or inspect the project: run a program (cargo, npm, git, ls, grep …) with its arguments as a list. Set cwd to run inside a subfolder, and a larger timeout for long builds. For pipes or redirects, use command \"bash\" with args [\"-c\", \"…\"] (the user may be asked to confirm). Read return_code, stdout and stderr; when truncated is true, rerun with narrower output (e.g. filter with grep) rather than asking for all of it.",
            example: json!({"command": "cargo", "args": ["test", "--quiet"], "cwd": "crates/core", "timeout": 120}),
            category: CATEGORY,
            tags: &["command", "shell", "execute", "process", "system"],
            annotations: Annotations {
                read_only: false,
                destructive: true,
                idempotent: false,
                open_world: false,
            },
        }
    }

    /// The timeout's default and maximum are the operator's.
    fn adjust_input_schema(&self, schema: &mut JsonObject) {
        if let Some(timeout) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("timeout"))
            .and_then(serde_json::Value::as_object_mut)
        {
            let settings = self.executor.settings();
            // Without yielding, a call's default and maximum are `exec.timeout`'s; a command
            // that may become a job (the default when yield_after is on) has a job's.
            let (default, max) = if settings.yield_after.is_zero() {
                (runner::default_timeout(settings), settings.job_timeout_max)
            } else {
                (settings.job_timeout, settings.job_timeout_max)
            };
            timeout.insert("default".into(), json!(default.as_secs()));
            timeout.insert("maximum".into(), json!(max.as_secs()));
        }
        if let Some(yield_after) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("yield_after"))
            .and_then(serde_json::Value::as_object_mut)
        {
            let settings = self.executor.settings();
            yield_after.insert("default".into(), json!(settings.yield_after.as_secs()));
            yield_after.insert("maximum".into(), json!(settings.timeout_max.as_secs()));
        }
    }

    fn confirmation(&self, p: &Params, _workspace: &crate::workspace::Workspace) -> Option<String> {
        self.executor.confirmation(&p.clone().into())
    }

    fn render(&self, output: &ExecResult) -> String {
        render(output)
    }

    const PAYLOAD: &'static [&'static str] = &["stdout", "stderr"];

    fn summary(&self, output: &ExecResult) -> String {
        summary(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ExecResult, ToolError> {
        self.executor.run(p.into(), ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_result(still_running: bool) -> ExecResult {
        ExecResult {
            command_line: "make".into(),
            cwd: "/w".into(),
            job_id: Some("job_7".into()),
            running: Some(still_running),
            still_running: Some(still_running),
            ..ExecResult::default()
        }
    }

    /// Both texts a model may read (the rendered payload, and the summary beside structured
    /// content) say plainly whether the command goes on as a job.
    #[test]
    fn a_job_result_says_whether_the_command_still_runs_in_both_texts() {
        for text in [render(&job_result(true)), summary(&job_result(true))] {
            assert!(
                text.contains("still running as job_7; follow it with job_output")
                    && text.contains("end it with job_kill"),
                "{text}"
            );
        }
        // Ended between becoming a job and the answer: no "still running" to mislead.
        for text in [render(&job_result(false)), summary(&job_result(false))] {
            assert!(
                text.contains("ended as job_7 before this answer")
                    && !text.contains("still running"),
                "{text}"
            );
        }
    }
}
