//! The watchdog: a tiny companion process that kills every running command's process group
//! when the server dies, however it dies (even by SIGKILL, when no code of the server runs).
//!
//! Why a process: commands are started with `posix_spawn` (a `vfork`-style clone that copies no
//! memory, so a spawn costs the same whatever the server's size), and `posix_spawn` has no
//! equivalent of `PR_SET_PDEATHSIG`. Instead, the server starts `toolport __watchdog` once, in
//! its own process group (so a terminal's Ctrl-C does not reach it), and writes one line per
//! event to its stdin: `+PGID` after a command starts, `-PGID` once the command's group is
//! gone. The write end of that pipe exists only in the server (close-on-exec), so when the
//! server exits for any reason the watchdog reads end-of-file, SIGKILLs every group still
//! registered, and exits.
//!
//! It also kills what escaped the groups (`setsid`): every process whose environment carries one
//! of the server's scopes ([`super::reaper`]).
//!
//! The one gap: a server killed in the microseconds between a spawn returning and its `+PGID`
//! line being written leaves that one command running; it still loses its stdout/stderr pipes
//! and stdin, so it cannot talk to anyone.
//!
//! Registration never blocks the server: the pipe is non-blocking, and a watchdog that is gone
//! or stuck turns registration into a logged warning, not a stalled tool call.
//!
//! The server [`arm`]s the watchdog at start and the first command starts it ([`ensure`]), so a
//! session that runs no command never pays for a second process (a spawn of this binary is most
//! of a cold start).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::reaper;

/// The hidden subcommand that runs the watchdog (`toolport __watchdog`); never in --help.
pub(crate) const WATCHDOG_SUBCOMMAND: &str = "__watchdog";

/// The process-wide watchdog, once [`install`]ed.
static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

/// The binary the watchdog runs as, once [`arm`]ed: started by the first command.
static ARMED: OnceLock<std::ffi::OsString> = OnceLock::new();

/// The server's end of a running watchdog.
#[derive(Debug)]
pub(crate) struct Watchdog {
    /// The pipe to the watchdog's stdin; `None` once a write failed (the watchdog is gone).
    pipe: Mutex<Option<ChildStdin>>,
    /// Kept so the watchdog is reaped when the server exits normally (and not left a zombie
    /// while the server runs: it only exits after the server does).
    _child: Child,
}

impl Watchdog {
    /// Start the watchdog by running `exe __watchdog` (normally the toolport binary itself,
    /// `/proc/self/exe`).
    pub(crate) fn spawn(exe: &OsStr) -> std::io::Result<Self> {
        let mut child = Command::new(exe)
            .arg(WATCHDOG_SUBCOMMAND)
            // Its server, by pid: read from its parent when it starts, it would be wrong if the
            // server died before the watchdog got that far (then the parent is init).
            .arg(std::process::id().to_string())
            .stdin(Stdio::piped())
            // Never the server's stdout: on stdio that is the JSON-RPC channel.
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // Its own group: Ctrl-C in a terminal goes to the server's group, and the
            // watchdog must outlive the server to do its job.
            .process_group(0)
            .spawn()?;
        let pipe = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the watchdog's stdin was not piped"))?;
        set_nonblocking(&pipe)?;
        Ok(Self {
            pipe: Mutex::new(Some(pipe)),
            _child: child,
        })
    }

    /// The watchdog's pid (a child of the server the reaper must leave alone).
    pub(crate) fn pid(&self) -> u32 {
        self._child.id()
    }

    fn send(&self, op: char, pgid: Pid) {
        let mut guard = match self.pipe.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let Some(pipe) = guard.as_mut() else { return };
        // One short line is far below PIPE_BUF, so the write is atomic: all or nothing.
        if let Err(error) = pipe.write_all(format!("{op}{}\n", pgid.as_raw()).as_bytes()) {
            tracing::warn!(
                %error,
                "the command watchdog is gone: commands no longer die with a killed server"
            );
            *guard = None;
        }
    }
}

fn set_nonblocking(pipe: &ChildStdin) -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(pipe, FcntlArg::F_GETFL)?);
    fcntl(pipe, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

/// Make `watchdog` the one commands register with. When one was installed already the new
/// one is dropped (its pipe closes, so its process exits).
pub(crate) fn install(watchdog: Watchdog) {
    // A child of the server that the reaper's sweeps must leave alone.
    reaper::keep(watchdog.pid());
    let _ = WATCHDOG.set(watchdog);
}

/// Start the watchdog by running `exe __watchdog` when the first command needs it ([`ensure`]).
pub(crate) fn arm(exe: &OsStr) {
    let _ = ARMED.set(exe.to_owned());
}

/// Start the armed watchdog if it is not running yet: called before every command's spawn.
/// Without one armed (in-process library use) nothing happens. A watchdog that cannot start is
/// reported once; commands then run contained by their process group and the reaper only.
pub(crate) fn ensure() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    let Some(exe) = ARMED.get() else { return };
    STARTED.call_once(|| match Watchdog::spawn(exe) {
        Ok(dog) => install(dog),
        Err(error) => tracing::warn!(
            %error,
            "could not start the command watchdog: commands will not die with a killed server"
        ),
    });
}

/// Whether a watchdog is installed or armed to start with the first command (in the server
/// binary it is; in-process library use, such as benchmarks, may run without one).
pub fn installed() -> bool {
    WATCHDOG.get().is_some() || ARMED.get().is_some()
}

/// Tell the watchdog a command's process group exists (call right after the spawn).
pub(crate) fn register(pgid: Pid) {
    if let Some(watchdog) = WATCHDOG.get() {
        watchdog.send('+', pgid);
    }
}

/// Tell the watchdog a command's process group is gone (after its final SIGKILL), so the id
/// is never signalled once the kernel may reuse it.
pub(crate) fn unregister(pgid: Pid) {
    if let Some(watchdog) = WATCHDOG.get() {
        watchdog.send('-', pgid);
    }
}

/// The watchdog process itself (`toolport __watchdog SERVER_PID`): track `+PGID`/`-PGID` lines from
/// stdin; at end-of-file (the server is gone) SIGKILL every group still registered. Returns
/// the exit code.
pub(crate) fn run_watchdog(server: Option<&std::ffi::OsString>) -> i32 {
    // The server's pid, as it passed it (an older server passes nothing: then the parent,
    // read at once).
    let server = server
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or_else(std::os::unix::process::parent_id);
    let mut groups: HashSet<i32> = HashSet::new();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        apply(&mut groups, &line);
    }
    for pgid in groups {
        // ESRCH (the group already ended) is the common, harmless case.
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    // The jobs' output files go with them (first: the scan below reads every process).
    let _ = std::fs::remove_dir_all(super::super::job_dir(server));
    kill_scopes(server);
    0
}

/// Most passes over `/proc` for the server's scopes: a process forking while a pass runs is
/// caught by the next; a fork bomb must not keep the watchdog alive.
const SCOPE_PASSES: usize = 16;

/// SIGKILL every process that carries a scope of the server `server` (see
/// [`super::reaper`]): what escaped the commands' groups, wherever it was reparented when the
/// server died.
fn kill_scopes(server: u32) {
    let prefix = reaper::prefix_of(server);
    for _ in 0..SCOPE_PASSES {
        let found = reaper::processes_with_scope(&prefix);
        if found.is_empty() {
            return;
        }
        for pid in found {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Apply one protocol line to the set of live groups; malformed lines are ignored.
fn apply(groups: &mut HashSet<i32>, line: &str) {
    let (op, rest) = line.split_at(line.len().min(1));
    // Only real process groups: pgid 0 or 1 (or negative) would signal far too much.
    let Some(pgid) = rest.parse::<i32>().ok().filter(|p| *p > 1) else {
        return;
    };
    match op {
        "+" => {
            groups.insert(pgid);
        }
        "-" => {
            groups.remove(&pgid);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_tracks_groups_and_ignores_junk() {
        let mut groups = HashSet::new();
        for line in [
            "+100", "+200", "-100", "+0", "+1", "+-5", "x300", "", "+", "+abc",
        ] {
            apply(&mut groups, line);
        }
        assert_eq!(groups, HashSet::from([200]));
    }
}
