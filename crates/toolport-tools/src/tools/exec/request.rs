//! The command engine's input: what the [`Executor`](super::Executor) runs, where, with what,
//! for how long, and whether the call may hand it over as a job. It is the engine's own type,
//! not any tool's arguments: `execute_command` maps its parameters onto one, a plugin tool
//! builds one from its manifest's templates.

use std::collections::BTreeMap;
use std::time::Duration;

/// One command for the [`Executor`](super::Executor). Nothing in it is trusted: the executor
/// checks the program and arguments, applies the command policy and the server's limits, and
/// resolves `cwd` inside the workspace.
#[derive(Debug, Clone)]
pub(crate) struct CommandRequest {
    /// The program: a name looked up on the command's `PATH`, or a path.
    pub(crate) program: String,
    /// Its arguments, passed as they are (no shell).
    pub(crate) args: Vec<String>,
    /// The working directory: relative to the first workspace root, or absolute inside a
    /// root. `None`: the first root.
    pub(crate) cwd: Option<String>,
    /// Variables added to the minimal environment ([`child_env`](super::child_env) refuses
    /// loader and shell-startup names).
    pub(crate) env: BTreeMap<String, String>,
    /// Text written to its stdin; `None`: stdin is empty (/dev/null).
    pub(crate) stdin: Option<String>,
    /// Keep stdin open (after `stdin`) for `job_input`.
    pub(crate) stdin_open: bool,
    /// The time limit, in whole seconds; `None`: the server's default (a job's default when
    /// the command may become a job). Above the server's maximum it is refused.
    pub(crate) timeout: Option<Duration>,
    /// Start it as a job and return at once.
    pub(crate) background: bool,
    /// How long the call waits before handing a still-running command over as a job, in
    /// whole seconds; zero waits for the end (the command never becomes a job, unless
    /// `background`). `None`: the server's `exec.yield_after`. Above the server's
    /// `exec.timeout_max` it is refused, also with `background`.
    pub(crate) yield_after: Option<Duration>,
}

impl CommandRequest {
    /// The program followed by its arguments.
    pub(crate) fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// The command as a shell would show it (for confirmations and results).
    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|part| {
                if !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
                {
                    part.to_owned()
                } else {
                    format!("'{}'", part.replace('\'', r"'\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}
