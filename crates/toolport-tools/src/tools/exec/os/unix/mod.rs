//! The command engine on Unix (Linux, macOS): a command's tree is its process group, led by
//! the command, from spawn to gone — signalling it, terminating it (TERM, a grace, KILL),
//! sweeping what escaped it ([`reaper`]), and a guard that does all of that when a run is
//! dropped mid-way; every group is registered with the [`watchdog`] meanwhile, so it dies
//! with the server.
//!
//! Commands are started with `posix_spawn` (std picks it when there is no `pre_exec` hook and
//! the program needs no `PATH` search): a `vfork`-style clone that copies no page tables, so a
//! spawn costs the same however large the server is. That is why nothing here runs code in the
//! child: the working directory is entered by `posix_spawn` itself, the process group is a
//! spawn attribute, death with the server is the watchdog's job, and "no terminal" is arranged
//! once for the whole server by [`prepare_host`] (the crate's one use of `unsafe` on Unix: a
//! single `ioctl`).
//!
//! What each system guarantees: on **Linux** what leaves the group (`setsid`, a daemon's double
//! fork) is found by its scope and killed when the command ends (the server is a child
//! subreaper), and by the watchdog when the server dies. **macOS** has no child subreaper and
//! no `/proc`: the group is killed, and what left it is found by scanning the machine's
//! processes for the command's scope (`scan_macos.rs`: built and type-checked, not run here) —
//! except a process that cleared its environment (`env -i`), which survives the command.

#[cfg(any(target_os = "macos", test))]
mod procargs;
pub(crate) mod reaper;
#[cfg(target_os = "macos")]
mod scan_macos;
pub(crate) mod watchdog;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use self::reaper::Scope;

/// Between SIGTERM and SIGKILL on timeout or cancellation: long enough for a well-behaved
/// program to clean up, short enough that a cancelled call is gone within a second.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// How the tool's description says to run a shell command here.
pub(crate) const SHELL_HINT: &str = r#"command "bash", args ["-c", "…"]"#;

/// What the tool's description promises about a command's processes: on Linux everything it
/// starts dies with it (its group, and what left the group, by its scope).
#[cfg(target_os = "linux")]
pub(crate) const CONTAINMENT_HINT: &str = "Everything a command starts is killed when it ends.";
/// macOS: the group, and what left it by its scope, found by scanning (a process that also
/// cleared its environment is not found).
#[cfg(target_os = "macos")]
pub(crate) const CONTAINMENT_HINT: &str = "Everything a command starts is killed when it ends (except a process that both leaves its process group and clears its environment).";
/// Other Unix: only the command's process group is reached: say no more than that.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) const CONTAINMENT_HINT: &str = "Everything in a command's process group is killed when it ends (a process that leaves the group with setsid is not).";

/// Used when the server itself has no PATH (and to resolve a program when a command's
/// environment has none).
pub(crate) const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Process-wide set-up before the server binary runs commands: give up the controlling
/// terminal ([`detach_controlling_terminal`]), become the child subreaper ([`reaper`]) and
/// arm the [`watchdog`] to run from `exe` (the toolport binary; `/proc/self/exe` in the
/// server), started by the first command. Without a watchdog commands still run, but a killed
/// server would leave them running: that is logged as a warning.
pub(crate) fn prepare_host(exe: &OsStr) {
    detach_controlling_terminal();
    reaper::install();
    watchdog::arm(exe);
}

/// Run the Unix helper process `command` names (`__watchdog`), if it is one.
pub(crate) fn dispatch_helper(command: &OsStr, rest: &[OsString]) -> Option<i32> {
    (command == watchdog::WATCHDOG_SUBCOMMAND).then(|| watchdog::run_watchdog(rest.first()))
}

/// A command's process tree: its process group (led by the command) and, on Linux, what
/// escaped it. Dropped mid-run (the call's future dropped: the client went away, the server is
/// stopping), it SIGKILLs the group and sweeps what escaped it ([`reaper`]); either way it
/// tells the watchdog the group is gone.
#[derive(Debug)]
pub(crate) struct Tree {
    /// The group's id (the leader's pid); `None` once released, or when the spawn gave no pid.
    pgid: Option<Pid>,
    /// The leader's pid, registered with the reaper until its `Child` has reaped it.
    leader: Option<u32>,
    /// The marker the reaper finds the command's escaped processes by.
    scope: Option<Scope>,
}

impl Tree {
    /// Spawn `cmd` as the leader of a new tree: its own process group, marked with a new
    /// scope, registered with the watchdog (started by the first command).
    pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<(Child, Self)> {
        // The marker the reaper finds every process of this command by, descendants included.
        let scope = Scope::new();
        cmd.envs(scope.as_ref().map(Scope::env))
            // Its own process group, led by the command, so the whole tree can be signalled.
            .process_group(0);
        watchdog::ensure();
        let child = reaper::spawn_leader(|| cmd.spawn(), Child::id)?;
        let leader = child.id();
        let pgid = leader
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        // If the server dies, the watchdog takes the group down; if the tree is dropped (the
        // runtime stopping), `Drop` does.
        if let Some(pgid) = pgid {
            watchdog::register(pgid);
        }
        Ok((
            child,
            Self {
                pgid,
                leader,
                scope,
            },
        ))
    }

    /// Signal the whole process group (its id is the leader's pid, thanks to
    /// `process_group(0)`).
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid
            && let Err(error) = killpg(pgid, signal)
            && error != nix::errno::Errno::ESRCH
        {
            tracing::warn!(%error, ?signal, "could not signal a command's process group");
        }
    }

    /// SIGTERM the group, give it [`KILL_GRACE`], then SIGKILL it; reap the leader.
    pub(crate) async fn terminate(&self, child: &mut Child) -> Option<ExitStatus> {
        self.signal(Signal::SIGTERM);
        let status = match tokio::time::timeout(KILL_GRACE, child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        };
        // Whether or not the leader went, its group may not have: kill what is left.
        self.signal(Signal::SIGKILL);
        match status {
            Some(status) => Some(status),
            None => child.wait().await.ok(),
        }
    }

    /// The leader exited: kill whatever it left behind in its group (background jobs holding
    /// the pipes, or not), so nothing outlives the command.
    pub(crate) fn kill_rest(&self) {
        self.signal(Signal::SIGKILL);
    }

    /// The leader is reaped (or its wait failed) and the group killed: sweep what left the
    /// group (`setsid` children, daemons) — inline when there is nothing to do (the usual
    /// case: one `kill(0)` and the children lists), else on a blocking thread, since the sweep
    /// waits for deaths — then tell the watchdog, and signal nothing more (the id may be
    /// reused once the group is gone).
    pub(crate) async fn finish(mut self) {
        if let Some(leader) = self.leader.take() {
            reaper::leader_done(leader);
        }
        if let Some(scope) = self.scope.take()
            && reaper::needs_sweep(self.pgid)
        {
            let pgid = self.pgid;
            let _ = tokio::task::spawn_blocking(move || reaper::sweep(&scope, pgid)).await;
        }
        if let Some(pgid) = self.pgid.take() {
            watchdog::unregister(pgid);
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            self.signal(Signal::SIGKILL);
            watchdog::unregister(pgid);
        }
        if let Some(leader) = self.leader.take() {
            // Killed by `kill_on_drop`; tokio reaps it later, or the sweep does first.
            reaper::leader_done(leader);
        }
        if let (Some(scope), Ok(runtime)) =
            (self.scope.take(), tokio::runtime::Handle::try_current())
        {
            let pgid = self.pgid;
            runtime.spawn_blocking(move || reaper::sweep(&scope, pgid));
        }
    }
}

/// Give up the server's controlling terminal, if it has one, so that no command it runs can
/// open `/dev/tty` to prompt for a password or read keystrokes (it gets ENXIO instead), and
/// none is stopped by SIGTTIN as a background job of the user's terminal. This is what
/// `setsid` in each child used to provide; doing it once in the server lets commands be
/// spawned without running code in the child. The server stays in its process group and
/// session, so Ctrl-C in that terminal still reaches it. Does nothing for a session leader
/// (there `TIOCNOTTY` would hang up the whole session) or when there is no terminal.
fn detach_controlling_terminal() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    if nix::unistd::getsid(None).ok() == Some(Pid::this()) {
        return;
    }
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open("/dev/tty")
    else {
        // ENXIO: no controlling terminal, the usual case under an MCP client.
        return;
    };
    // SAFETY: TIOCNOTTY takes no argument and only changes this process's terminal
    // association; `tty` is an open descriptor for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCNOTTY) };
    if rc != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not detach from the controlling terminal: commands may be able to prompt on it"
        );
    }
}

/// Where the child starts: the working directory's handle, named through `/proc/self/fd`.
/// `posix_spawn` enters it in the child (`posix_spawn_file_actions_addchdir_np`), where the
/// magic link still names the directory that was opened and checked, so a path swapped in the
/// meantime cannot redirect the command.
#[cfg(target_os = "linux")]
pub(crate) fn cwd_path(cwd: &std::fs::File) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    Ok(PathBuf::from(format!("/proc/self/fd/{}", cwd.as_raw_fd())))
}

/// Where the child starts: the real path of the working directory's handle (`F_GETPATH`),
/// read just before the spawn. Without `/proc` the child enters it by name: a directory
/// renamed or swapped for a symlink in between would redirect the command (a window of
/// microseconds, and only for someone who can already write inside the roots).
#[cfg(not(target_os = "linux"))]
pub(crate) fn cwd_path(cwd: &std::fs::File) -> std::io::Result<PathBuf> {
    crate::workspace::handle_path(cwd).ok_or_else(|| {
        std::io::Error::other("the working directory's path cannot be read from its handle")
    })
}

/// Resolve a bare program name against the child's `PATH` (relative entries against its
/// working directory), as `execvp` in the child would. std only spawns with `posix_spawn` when
/// the program needs no search under a changed environment, so the search happens here; a
/// name with a `/` is left to the kernel. `None` when no executable of that name is found.
pub(crate) fn resolve_program(
    program: &OsStr,
    env: &[(String, String)],
    cwd: &Path,
) -> Option<OsString> {
    if program.as_encoded_bytes().contains(&b'/') {
        return Some(program.to_owned());
    }
    let path = env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map_or(FALLBACK_PATH, |(_, value)| value.as_str());
    which::which_in(program, Some(path), cwd)
        .ok()
        .map(PathBuf::into_os_string)
}

/// No Unix program runs through `cmd.exe`.
pub(crate) fn resolves_to_batch(_program: &str, _path: Option<&str>) -> bool {
    false
}

/// The variables every command inherits from the server on Unix (beyond PATH and the
/// operator's allowlist): HOME, LANG (UTF-8 by default) and TMPDIR (the server's temp dir:
/// with a sandbox it is the one writable place outside the roots).
pub(crate) fn host_env() -> Vec<(String, String)> {
    let mut env = Vec::new();
    if let Ok(home) = std::env::var("HOME") {
        env.push(("HOME".into(), home));
    }
    env.push((
        "LANG".into(),
        std::env::var("LANG").unwrap_or_else(|_| "C.UTF-8".into()),
    ));
    env.push(("TMPDIR".into(), std::env::temp_dir().display().to_string()));
    env
}

/// The signal that ended a process, by name (`SIGKILL`), if a signal did.
pub(crate) fn signal_name(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    let number = status.signal()?;
    Some(
        Signal::try_from(number)
            .map(|s| s.as_str().to_owned())
            .unwrap_or_else(|_| format!("signal {number}")),
    )
}

/// A command's output as text: UTF-8, invalid bytes replaced.
pub(crate) fn decode(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Create a directory only the server's user can enter (0700).
pub(crate) fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// Create a new file (never an existing one) only the server's user can read (0600), open
/// to write and read.
pub(crate) fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .read(true)
        .mode(0o600)
        .open(path)
}

/// Fill `buf` from `file` at `offset`, without moving a shared cursor.
pub(crate) fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}
