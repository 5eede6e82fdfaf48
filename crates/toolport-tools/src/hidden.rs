//! The hidden helper commands: toolport re-executes itself as a helper process in two places,
//! and those processes must decide what they are **before** anything else happens (no
//! argument parsing, no logging, no async runtime, no threads), as codex's `arg0` does:
//! - `toolport __sandbox-exec … -- PROGRAM ARGS`: confine a command with Landlock, then exec
//!   it ([`crate::tools::exec::sandbox`]);
//! - `toolport __watchdog` (Unix): the companion process that kills running commands' process
//!   groups when the server dies ([`crate::tools::exec::os::unix::watchdog`]; Windows needs
//!   none: a command's Job Object dies with the server).
//!
//! Neither is shown in `--help`.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::tools::exec::{os, sandbox};

/// Exit status when a helper's own status does not fit a process exit code.
const UNREPRESENTABLE_STATUS: u8 = 125;

/// Run the hidden helper that `argv` names, if any, and return its exit status; `None` when
/// this is an ordinary `toolport` invocation. A program that runs commands under the Landlock
/// sandbox calls it first in `main` (the sandbox re-executes the current program):
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
///     if let Some(code) = toolport_tools::dispatch_helper(&argv) {
///         return code;
///     }
///     // … the program itself
///     std::process::ExitCode::SUCCESS
/// }
/// ```
pub fn dispatch(argv: &[OsString]) -> Option<ExitCode> {
    let command = argv.get(1)?;
    let code = if command == sandbox::SHIM_SUBCOMMAND {
        sandbox::run_shim(argv.get(2..).unwrap_or_default())
    } else {
        os::dispatch_helper(command, argv.get(2..).unwrap_or_default())?
    };
    Some(ExitCode::from(
        u8::try_from(code).unwrap_or(UNREPRESENTABLE_STATUS),
    ))
}
