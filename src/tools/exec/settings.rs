//! `execute_command`'s settings: the `[exec]` section of the config file, the `--sandbox`
//! flag (`TOOLPORT_SANDBOX`), and [`ExecSettings`], what the tool is built with.

use std::time::Duration;

use clap::Args;
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

/// Kernel confinement for executed commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
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
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ExecArgs {
    /// Confine execute_command with a kernel sandbox: "landlock" (Linux) or "none".
    /// With landlock, commands are refused when the kernel cannot enforce it.
    #[arg(long, value_name = "KIND", env = "TOOLPORT_SANDBOX", global = true)]
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
}

/// What `execute_command` is built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecSettings {
    /// Largest timeout a call may ask for; larger requests are refused.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) timeout_max: Duration,
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
    pub(crate) confirm: ConfirmFallback,
    /// Kernel confinement.
    pub(crate) sandbox: SandboxKind,
    /// With a sandbox: whether commands may use the network (TCP).
    pub(crate) sandbox_network: bool,
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
        Ok(Self {
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
