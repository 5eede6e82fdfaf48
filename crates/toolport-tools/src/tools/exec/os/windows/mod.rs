//! The command engine on Windows: every command runs in its own kill-on-close Job Object
//! ([`job`]), created suspended and assigned before it runs a single instruction, with no
//! console window (`CREATE_NO_WINDOW`); its output is read as UTF-8 or the console code page
//! ([`text`]).
//!
//! What it guarantees: a command and every process it starts are ended together — at the
//! command's end (what it left running is killed), at its timeout, on cancellation or
//! `job_kill`, when the call is dropped, and when the server exits or is killed (the kernel
//! closes the server's job handles, which ends the jobs' processes). A process cannot leave
//! its job (breakaway is not allowed). There is no graceful stop: Windows has no SIGTERM for
//! a windowless process, so timeout and cancellation end the tree at once. Processes started
//! through another service (the Task Scheduler, a COM server, `sc start`) are that service's,
//! never the command's, and are not ended.
//!
//! Programs are found through `PATH` with `PATHEXT` (`npx` → `npx.cmd`). std runs a `.bat`/
//! `.cmd` through `cmd.exe` with the quoting `cmd` needs, and refuses an argument it cannot
//! quote safely (the call then fails with that error); the command policy treats batch files
//! as shell scripts ([`runs_through_cmd`]).

mod job;
mod text;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use tokio::process::{Child, Command};
use windows_sys::Win32::System::Diagnostics::Debug::{
    SEM_FAILCRITICALERRORS, SEM_NOGPFAULTERRORBOX, SetErrorMode,
};
use windows_sys::Win32::System::Threading::{CREATE_NO_WINDOW, CREATE_SUSPENDED};

use self::job::Job;
pub(crate) use self::text::decode;

/// How the tool's description says to run a shell command here.
pub(crate) const SHELL_HINT: &str =
    r#"command "cmd", args ["/c", "…"], or "powershell", args ["-Command", "…"]"#;

/// What the tool's description promises about a command's processes: its Job Object ends them
/// all.
pub(crate) const CONTAINMENT_HINT: &str = "Everything a command starts is killed when it ends.";

/// Used when the server itself has no PATH (and to resolve a program when a command's
/// environment has none): Windows' own directories, where they are by default.
pub(crate) const FALLBACK_PATH: &str = r"C:\Windows\system32;C:\Windows;C:\Windows\System32\Wbem;C:\Windows\System32\WindowsPowerShell\v1.0";

/// The server's variables every command inherits on Windows (beyond PATH and the operator's
/// allowlist): what Windows programs need to find the system, the user's folders and the
/// machine (`SystemRoot` above all: without it much of Windows fails to load), with TEMP and
/// TMP pointing at the server's temp dir.
const HOST_ENV: &[&str] = &[
    "SystemRoot",
    "SystemDrive",
    "windir",
    "ComSpec",
    "PATHEXT",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "CommonProgramFiles",
    "CommonProgramFiles(x86)",
    "CommonProgramW6432",
    "PUBLIC",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "PROCESSOR_IDENTIFIER",
    "OS",
    "USERNAME",
    "USERDOMAIN",
    "COMPUTERNAME",
];

/// Process-wide set-up before the server binary runs commands: no error dialog boxes for the
/// server or (inherited) its commands — a missing DLL or a crash reports an error instead of
/// waiting for a click nobody will make. Nothing else is needed: each command's Job Object
/// dies with the server, so there is no watchdog process.
pub(crate) fn prepare_host(_exe: &OsStr) {
    // SAFETY: sets this process's error mode flags; no pointers.
    #[allow(unsafe_code)]
    unsafe {
        SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    }
}

/// Windows has no helper processes.
pub(crate) fn dispatch_helper(_command: &OsStr, _rest: &[OsString]) -> Option<i32> {
    None
}

/// A command's process tree: its Job Object. Dropped mid-run (the call's future dropped),
/// it ends every process of the job.
#[derive(Debug)]
pub(crate) struct Tree {
    job: Job,
}

impl Tree {
    /// Spawn `cmd` without a console window, suspended; put it in a new kill-on-close job;
    /// resume it. If it cannot be contained it is killed before it ran, and the error says
    /// why: a command never runs outside its job.
    pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<(Child, Self)> {
        let job = Job::new().map_err(|e| contain_error("create a job object", &e))?;
        cmd.creation_flags(CREATE_NO_WINDOW | CREATE_SUSPENDED);
        let mut child = cmd.spawn()?;
        let contained = match (child.raw_handle(), child.id()) {
            (Some(handle), Some(pid)) => job
                .assign(handle)
                .map_err(|e| contain_error("put the command in its job object", &e))
                .and_then(|()| {
                    job::resume_process(pid)
                        .map_err(|e| contain_error("start the suspended command", &e))
                }),
            _ => Err(std::io::Error::other(
                "the command exited before it could be contained",
            )),
        };
        if let Err(error) = contained {
            job.terminate();
            let _ = child.start_kill();
            return Err(error);
        }
        Ok((child, Self { job }))
    }

    /// End the whole tree at once (Windows has no graceful stop for a windowless process) and
    /// reap the leader.
    pub(crate) async fn terminate(&self, child: &mut Child) -> Option<ExitStatus> {
        self.job.terminate();
        child.wait().await.ok()
    }

    /// The leader exited: end whatever it left running in its job.
    pub(crate) fn kill_rest(&self) {
        self.job.terminate();
    }

    /// Nothing escapes a job: closing its handle (when `self` goes) is all that is left.
    #[allow(clippy::unused_async)]
    pub(crate) async fn finish(self) {}
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Also what closing the handle does (kill-on-close); explicit, so the processes are
        // gone before `drop` returns rather than when the last handle closes.
        self.job.terminate();
    }
}

/// Why a command could not be contained, as a spawn error.
fn contain_error(what: &str, error: &std::io::Error) -> std::io::Error {
    std::io::Error::other(format!(
        "could not {what} ({error}); the command was not run, since it could not be contained"
    ))
}

/// Where the child starts: the real path of the working directory's handle
/// (`GetFinalPathNameByHandleW`), read just before the spawn and given as a plain path
/// (`C:\…`, not `\\?\C:\…`, which `cmd.exe` and many programs refuse) when that names the
/// same directory. Windows enters it by name: a directory renamed in between would redirect
/// the command (a window of microseconds, and an open handle to the directory makes renaming
/// it fail in the meantime).
pub(crate) fn cwd_path(cwd: &std::fs::File) -> std::io::Result<PathBuf> {
    let path = crate::workspace::handle_path(cwd).ok_or_else(|| {
        std::io::Error::other("the working directory's path cannot be read from its handle")
    })?;
    Ok(dunce::simplified(&path).to_path_buf())
}

/// Resolve a bare program name against the child's `PATH`, trying each `PATHEXT` extension
/// (`npx` → `npx.cmd`); a name with a directory part (`\`, `/` or a drive) is left as it is.
/// `None` when no executable of that name is found.
pub(crate) fn resolve_program(
    program: &OsStr,
    env: &[(String, String)],
    cwd: &Path,
) -> Option<OsString> {
    if program
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b'/' | b'\\' | b':'))
    {
        return Some(program.to_owned());
    }
    let path = env
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("PATH"))
        .map_or(FALLBACK_PATH, |(_, value)| value.as_str());
    which::which_in(program, Some(path), cwd)
        .ok()
        .map(PathBuf::into_os_string)
}

/// Whether `program` resolves (through `path`, the call's own `PATH`, or else the server's,
/// with `PATHEXT`) to a batch file: `npx` that is `npx.cmd` runs through `cmd.exe`. Relative
/// entries are skipped (the command's own lookup uses absolute ones).
pub(crate) fn resolves_to_batch(program: &str, path: Option<&str>) -> bool {
    let found = match path {
        Some(path) => which::which_in_global(program, Some(path))
            .ok()
            .and_then(|mut found| found.next()),
        None => which::which(program).ok(),
    };
    found.is_some_and(|found| super::is_batch_file(found.as_os_str()))
}

/// The server's variables from [`HOST_ENV`], TEMP/TMP, and `PYTHONUTF8=1` (Python writes
/// UTF-8 to pipes instead of the ANSI code page).
pub(crate) fn host_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = HOST_ENV
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), std::env::var(name).ok()?)))
        .collect();
    let temp = std::env::temp_dir().display().to_string();
    env.push(("TEMP".into(), temp.clone()));
    env.push(("TMP".into(), temp));
    env.push(("PYTHONUTF8".into(), "1".into()));
    env
}

/// Windows ends processes with exit codes, not signals.
pub(crate) fn signal_name(_status: ExitStatus) -> Option<String> {
    None
}

/// Create the directory. Windows has no mode bits: it inherits the ACL of its parent (the
/// user's temp folder, private to the user).
pub(crate) fn create_private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir(path)
}

/// Create a new file (never an existing one), open to append and read; its ACL is inherited
/// from the (private) directory it is in. Append mode: every write goes to the end whatever
/// the cursor, which [`read_at`] moves.
pub(crate) fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .read(true)
        .open(path)
}

/// Fill `buf` from `file` at `offset`. Windows' positioned read (`seek_read`) also moves the
/// file's cursor; the output files are opened to append ([`create_private_file`]), so their
/// writes do not depend on it.
pub(crate) fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.seek_read(&mut buf[done..], offset + done as u64)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => done += n,
        }
    }
    Ok(())
}
