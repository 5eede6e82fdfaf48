//! The sandbox where there is no Landlock (every OS but Linux): `--sandbox landlock` is refused
//! at start-up with this reason, and a shim started anyway refuses to run the command (exit
//! 125), so a command never runs unconfined when confinement was asked for.

use super::SandboxSpec;

/// Why there is no sandbox here.
fn reason() -> String {
    format!(
        "the Landlock sandbox exists only on Linux, and this is {}: run without --sandbox \
         (sandbox = \"none\"), and rely on the command policy and the workspace roots",
        std::env::consts::OS
    )
}

/// [`super::probe`] without Landlock: always the reason.
pub(super) fn probe(_spec: &SandboxSpec) -> Result<String, String> {
    Err(reason())
}

/// [`super::run_shim`]'s confinement without Landlock: always the reason.
pub(super) fn confine(_spec: &SandboxSpec) -> Result<(), String> {
    Err(reason())
}

/// [`super::run_shim`]'s `execve` without Landlock: never reached ([`confine`] refused first).
pub(super) fn exec(_program: &std::ffi::OsStr, _args: &[std::ffi::OsString]) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Unsupported, reason())
}
