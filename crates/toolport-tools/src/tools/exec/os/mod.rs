//! The per-OS half of the command engine, behind one interface: everything the engine
//! ([`super::process`]) needs from the operating system to start a command, keep its whole
//! process tree under control and read what it wrote. The engine itself (output capture,
//! timeouts, cancellation, jobs) is the same on every system.
//!
//! | | Unix (`unix/`) | Windows (`windows/`) |
//! |---|---|---|
//! | a command's tree | its own process group; on Linux the server is a child subreaper and a scope variable marks every descendant ([`unix::reaper`]) | a Job Object with kill-on-close, the command assigned while still suspended |
//! | timeout / cancel | SIGTERM to the group, a grace, SIGKILL | `TerminateJobObject` (Windows has no SIGTERM for a windowless process: no grace) |
//! | the server dies | the [`unix::watchdog`] process kills every registered group and scope | the kernel closes the Job handles, which kills every job's processes |
//! | no terminal / no window | the server detaches from its controlling terminal once | `CREATE_NO_WINDOW` per command |
//! | program lookup | `PATH` | `PATH` with `PATHEXT` (`npx` → `npx.cmd`; std runs `.bat`/`.cmd` through `cmd.exe` with its quoting, refusing arguments it cannot quote) |
//! | output text | UTF-8 (lossy) | UTF-8, else decoded from the OEM code page |
//!
//! Each OS file provides the same items: [`Tree`] (spawn a command as the root of a tree,
//! terminate it, kill what is left, contain what escaped; dropping it kills everything),
//! [`SHELL_HINT`] and [`CONTAINMENT_HINT`] (what the tool's description says), [`prepare_host`], [`cwd_path`], [`resolve_program`], `resolves_to_batch`, [`FALLBACK_PATH`], [`host_env`],
//! [`signal_name`], [`decode`], [`create_private_dir`], [`create_private_file`], [`read_at`]
//! and [`dispatch_helper`]. What a system cannot do is said in its file, never papered over.

#[cfg(unix)]
pub(crate) mod unix;
#[cfg(unix)]
use unix as imp;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

pub(crate) use imp::{
    CONTAINMENT_HINT, FALLBACK_PATH, SHELL_HINT, Tree, create_private_dir, create_private_file,
    cwd_path, decode, dispatch_helper, host_env, prepare_host, read_at, resolve_program,
    signal_name,
};

/// The private directory of the jobs' output files of the server whose pid is `server`
/// ([`super::jobs`]); the Unix watchdog removes it when that server is gone.
pub(crate) fn job_dir(server: u32) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("toolport-jobs-{server}"))
}

/// Whether running `program` means running a batch file through `cmd.exe`: its name says so
/// (`build.bat`), or, on Windows, it resolves to one (`npx` → `npx.cmd`) through `path` (the
/// call's own `PATH`) or else the server's. The command policy treats such a command as a
/// shell script.
pub(crate) fn runs_through_cmd(program: &str, path: Option<&str>) -> bool {
    is_batch_file(std::ffi::OsStr::new(program)) || imp::resolves_to_batch(program, path)
}

/// Whether a resolved program is a Windows batch file (`.bat`, `.cmd`, in any case), which
/// Windows runs through `cmd.exe`: the command policy treats it as a shell script. A pure
/// rule on the name, so it is tested on every system.
pub(crate) fn is_batch_file(program: &std::ffi::OsStr) -> bool {
    let name = program.to_string_lossy();
    let name = name.rsplit(['/', '\\']).next().unwrap_or(&name);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && (ext.eq_ignore_ascii_case("bat") || ext.eq_ignore_ascii_case("cmd"))
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::is_batch_file;

    #[test]
    fn batch_files_are_known_by_their_extension_in_any_case() {
        for name in [
            "npx.cmd",
            r"C:\Program Files\nodejs\NPX.CMD",
            "build.bat",
            "C:/x/y.Bat",
        ] {
            assert!(is_batch_file(OsStr::new(name)), "{name}");
        }
        for name in ["npx", "cmd", "x.exe", ".cmd", r"C:\cmd.d\tool.exe", "bat"] {
            assert!(!is_batch_file(OsStr::new(name)), "{name}");
        }
    }
}
