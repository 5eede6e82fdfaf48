//! `execute_command`'s settings: the `[exec]` section of the config file, the `--sandbox`
//! flag (`TOOLPORT_SANDBOX`), and [`ExecSettings`], what the tool is built with.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::settings::{
    DurationValue, LegacyUnit, SettingError, check_range, duration_setting, serialize_duration,
};
use crate::tool::ConfirmFallback;

/// Default `execute_command` timeout when the call gives none.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default server maximum for a call's timeout: about the ~2 minutes most MCP clients wait for
/// a response before giving up themselves.
const DEFAULT_TIMEOUT_MAX: Duration = Duration::from_secs(120);
/// Highest maximum an operator may configure: past this, clients have long given up.
const MAX_TIMEOUT_MAX: Duration = Duration::from_secs(300);
/// Default bytes kept per output stream (head and tail): enough for a test run's summary and
/// its failures, small enough not to flood a model's context.
const DEFAULT_MAX_OUTPUT_BYTES: usize = 100 * 1024;
/// Smallest `max_output_bytes`: room for at least an error message at each end.
const MIN_MAX_OUTPUT_BYTES: usize = 1024;
/// Largest `max_output_bytes`: the memory one call may hold per stream.
const MAX_MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// Default number of commands that may run at once; further calls queue.
const DEFAULT_MAX_CONCURRENT: usize = 4;
/// Most commands an operator may let run at once: beyond this a burst of calls would exhaust
/// the machine's process table before any policy could help.
const MAX_MAX_CONCURRENT: usize = 256;

/// Default `yield_after`: a call still running after this long returns a job id instead of
/// waiting, so the answer beats the ~60 s after which hosts (claude.ai connectors) give up.
pub(crate) const DEFAULT_YIELD_AFTER: Duration = Duration::from_secs(50);
/// Default limit of a job (a backgrounded or yielded command) without its own `timeout`:
/// a long test suite or build.
const DEFAULT_JOB_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default largest `timeout` a job may ask for.
const DEFAULT_JOB_TIMEOUT_MAX: Duration = Duration::from_secs(2 * 3600);
/// Largest `job_timeout_max` an operator may set: a day; anything longer is a service, not
/// a job.
const MAX_JOB_TIMEOUT_MAX: Duration = Duration::from_secs(24 * 3600);
/// Default most bytes of a job's stream kept in its output file: a long build's log, not a
/// runaway loop filling the disk (16 jobs × 2 streams × this at most).
const DEFAULT_JOB_OUTPUT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Smallest and largest `job_output_max_bytes`.
const JOB_OUTPUT_MAX_BYTES_RANGE: std::ops::RangeInclusive<u64> =
    1024 * 1024..=16 * 1024 * 1024 * 1024;
/// Default number of jobs running at once across the server (and of finished jobs kept for
/// their output, on top of those).
const DEFAULT_MAX_JOBS: usize = 16;
/// Most running jobs an operator may allow: each holds two spill files and a task, and as
/// many finished ones may be kept.
const MAX_MAX_JOBS: usize = 1024;
/// Default time a finished job (and its output files) is kept for `job_output`.
const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(10 * 60);
/// Longest retention: a day.
const MAX_JOB_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// Kernel confinement for executed commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "host", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub(crate) enum SandboxKind {
    /// No kernel confinement (the default): commands can touch anything the server's user can.
    #[default]
    None,
    /// Landlock (Linux 5.13+): writes only inside the roots and the temp dir; refused if the
    /// kernel cannot enforce it.
    Landlock,
}

/// `execute_command`'s flags.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "host", derive(clap::Args))]
pub(crate) struct ExecArgs {
    /// Confine execute_command with a kernel sandbox: "landlock" (Linux) or "none".
    /// With landlock, commands are refused when the kernel cannot enforce it.
    #[cfg_attr(
        feature = "host",
        arg(long, value_name = "KIND", env = "TOOLPORT_SANDBOX", global = true)
    )]
    pub(crate) sandbox: Option<SandboxKind>,
}

/// The `[exec]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileExec {
    timeout_max: Option<DurationValue>,
    max_output_bytes: Option<usize>,
    max_concurrent: Option<usize>,
    env_allowlist: Option<Vec<String>>,
    allow: Option<Vec<String>>,
    deny: Option<Vec<String>>,
    confirm_rules: Option<Vec<String>>,
    allow_shells: Option<bool>,
    confirm: Option<ConfirmFallback>,
    sandbox: Option<SandboxKind>,
    sandbox_network: Option<bool>,
    yield_after: Option<DurationValue>,
    job_timeout: Option<DurationValue>,
    job_timeout_max: Option<DurationValue>,
    max_jobs: Option<usize>,
    job_retention: Option<DurationValue>,
    jobs_survive_session: Option<bool>,
    job_output_max_bytes: Option<u64>,
}

/// What `execute_command` is built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecSettings {
    /// Largest timeout a call may ask for; larger requests are refused.
    #[serde(serialize_with = "serialize_duration")]
    pub timeout_max: Duration,
    /// Bytes kept per output stream (head + tail).
    pub(crate) max_output_bytes: usize,
    /// Commands that may run at once.
    pub(crate) max_concurrent: usize,
    /// Names of server environment variables passed through to commands (beyond PATH, HOME,
    /// LANG).
    pub(crate) env_allowlist: Vec<String>,
    /// Policy: only commands matching these rules may run (empty: no allowlist).
    pub(crate) allow: Vec<String>,
    /// Policy: commands matching these rules never run.
    pub(crate) deny: Vec<String>,
    /// Policy: extra rules needing confirmation, on top of the built-in set.
    pub(crate) confirm_rules: Vec<String>,
    /// Shells running a command string (`bash -c`) run without confirmation.
    pub(crate) allow_shells: bool,
    /// What to do when confirmation is needed but nobody can be asked.
    pub confirm: ConfirmFallback,
    /// Kernel confinement.
    pub(crate) sandbox: SandboxKind,
    /// With a sandbox: whether commands may use the network (TCP).
    pub(crate) sandbox_network: bool,
    /// A call still running after this long returns a job id (zero: never).
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) yield_after: Duration,
    /// A job's limit when the call gives no `timeout`.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) job_timeout: Duration,
    /// Largest `timeout` a job may ask for.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) job_timeout_max: Duration,
    /// Jobs running at once, at most; also the most finished jobs kept (past that, the one
    /// that ended first is removed early).
    pub(crate) max_jobs: usize,
    /// How long a finished job is kept (at most: see `max_jobs`).
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) job_retention: Duration,
    /// A session's jobs keep running after the session ends.
    pub(crate) jobs_survive_session: bool,
    /// Most bytes of each stream a job keeps in its output file.
    pub(crate) job_output_max_bytes: u64,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            timeout_max: DEFAULT_TIMEOUT_MAX,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            env_allowlist: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            confirm_rules: Vec::new(),
            allow_shells: false,
            confirm: ConfirmFallback::Deny,
            sandbox: SandboxKind::None,
            sandbox_network: true,
            yield_after: DEFAULT_YIELD_AFTER,
            job_timeout: DEFAULT_JOB_TIMEOUT,
            job_timeout_max: DEFAULT_JOB_TIMEOUT_MAX,
            max_jobs: DEFAULT_MAX_JOBS,
            job_retention: DEFAULT_JOB_RETENTION,
            jobs_survive_session: false,
            job_output_max_bytes: DEFAULT_JOB_OUTPUT_MAX_BYTES,
        }
    }
}

impl ExecSettings {
    /// Layer the file < flags/environment over the defaults, and validate.
    pub(crate) fn load(file: FileExec, args: &ExecArgs) -> Result<Self, SettingError> {
        let defaults = Self::default();
        let timeout_max = duration_setting(
            "exec.timeout_max",
            file.timeout_max.as_ref(),
            Some(LegacyUnit::Secs),
            defaults.timeout_max,
            Duration::from_secs(1)..=MAX_TIMEOUT_MAX,
        )?;
        if timeout_max.subsec_nanos() != 0 {
            return Err(SettingError::new(
                "exec.timeout_max",
                "give whole seconds, like \"90s\" or \"2m\"",
            ));
        }
        let whole = |key: &'static str, d: Duration| {
            if d.subsec_nanos() == 0 {
                Ok(d)
            } else {
                Err(SettingError::new(
                    key,
                    "give whole seconds, like \"90s\" or \"2m\"",
                ))
            }
        };
        // At most the longest a call may block: a yield later than that would never come.
        let yield_after = whole(
            "exec.yield_after",
            duration_setting(
                "exec.yield_after",
                file.yield_after.as_ref(),
                Some(LegacyUnit::Secs),
                defaults.yield_after.min(timeout_max),
                Duration::ZERO..=timeout_max,
            )?,
        )?;
        let job_timeout_max = whole(
            "exec.job_timeout_max",
            duration_setting(
                "exec.job_timeout_max",
                file.job_timeout_max.as_ref(),
                Some(LegacyUnit::Secs),
                defaults.job_timeout_max,
                Duration::from_secs(1)..=MAX_JOB_TIMEOUT_MAX,
            )?,
        )?;
        let job_timeout = whole(
            "exec.job_timeout",
            duration_setting(
                "exec.job_timeout",
                file.job_timeout.as_ref(),
                Some(LegacyUnit::Secs),
                defaults.job_timeout.min(job_timeout_max),
                Duration::from_secs(1)..=job_timeout_max,
            )?,
        )?;
        let job_retention = duration_setting(
            "exec.job_retention",
            file.job_retention.as_ref(),
            Some(LegacyUnit::Secs),
            defaults.job_retention,
            Duration::from_secs(1)..=MAX_JOB_RETENTION,
        )?;
        Ok(Self {
            yield_after,
            job_timeout,
            job_timeout_max,
            job_retention,
            max_jobs: check_range(
                "exec.max_jobs",
                file.max_jobs.unwrap_or(defaults.max_jobs),
                1..=MAX_MAX_JOBS,
            )?,
            jobs_survive_session: file
                .jobs_survive_session
                .unwrap_or(defaults.jobs_survive_session),
            job_output_max_bytes: check_range(
                "exec.job_output_max_bytes",
                file.job_output_max_bytes
                    .unwrap_or(defaults.job_output_max_bytes),
                JOB_OUTPUT_MAX_BYTES_RANGE,
            )?,
            timeout_max,
            max_output_bytes: check_range(
                "exec.max_output_bytes",
                file.max_output_bytes.unwrap_or(defaults.max_output_bytes),
                MIN_MAX_OUTPUT_BYTES..=MAX_MAX_OUTPUT_BYTES,
            )?,
            max_concurrent: check_range(
                "exec.max_concurrent",
                file.max_concurrent.unwrap_or(defaults.max_concurrent),
                1..=MAX_MAX_CONCURRENT,
            )?,
            env_allowlist: file.env_allowlist.unwrap_or_default(),
            allow: file.allow.unwrap_or_default(),
            deny: file.deny.unwrap_or_default(),
            confirm_rules: file.confirm_rules.unwrap_or_default(),
            allow_shells: file.allow_shells.unwrap_or(defaults.allow_shells),
            confirm: file.confirm.unwrap_or(defaults.confirm),
            sandbox: args.sandbox.or(file.sandbox).unwrap_or(defaults.sandbox),
            sandbox_network: file.sandbox_network.unwrap_or(defaults.sandbox_network),
        })
    }
}
