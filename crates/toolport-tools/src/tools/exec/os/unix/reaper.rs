//! Containment that `setsid` cannot escape: everything a command starts dies with it, also the
//! processes that left its process group (`setsid`, a double-forking daemon).
//!
//! A process group is not a boundary: `setsid` puts a process in a new session and group,
//! where killing the command's group does not reach it. Two facts close the gap without
//! running code in the child (commands are started with `posix_spawn`; see [`crate::tools::exec::process`]):
//! - **The server is a child subreaper** (`PR_SET_CHILD_SUBREAPER`, set once by [`install`]):
//!   a process whose parent dies is reparented to the server instead of init. So whatever
//!   escaped the group ends up as the server's own child once the group is killed (its parent
//!   was in the group) or once its parent exits (a daemon's double fork).
//! - **Every command carries a scope** in its environment, `TOOLPORT_SCOPE=<server pid>:<n>`,
//!   which its descendants inherit. When a command ends, [`sweep`] lists the server's children
//!   (`/proc/self/task/*/children`), kills those of that scope, waits for them (their own
//!   children are reparented to the server in turn) and repeats until none is left. Zombies of
//!   escaped processes that ended on their own are reaped on the way.
//!
//! A child with no scope (one that cleared its environment, `env -i`) cannot be attributed to
//! a command: it is killed by the sweep of the last command running, when nothing else could
//! own it. When the server dies, the [`super::watchdog`] kills every process of its scopes
//! (found in `/proc/*/environ`), wherever they were reparented.
//!
//! **macOS** has no child subreaper and no `/proc`: there the scope is still set, and a sweep
//! instead scans the machine's processes started since the command began for it
//! (`scan_macos.rs`), killing what it finds until none is left; the watchdog does the same for
//! every scope of a dead server. Escaped processes are launchd's children there, and launchd
//! reaps them.
//!
//! What remains outside: processes started through another service (`systemd-run --user`, a
//! D-Bus activated service, `at`, a container runtime): they are children of that service,
//! never of a command, and carry its environment, not the command's.
//!
//! The server's own children that are not commands are never touched: the watchdog is
//! registered as kept, and a child in the server's own process group (commands lead groups of
//! their own; a library user's own child processes do not) is skipped. A command's leader is
//! reaped only by its `tokio::process::Child`: leaders are registered here while they live,
//! under the same lock the sweep holds, so a sweep cannot steal an exit status.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

#[cfg(target_os = "macos")]
use super::scan_macos as scan;

/// The environment variable that marks a command's processes.
pub(crate) const SCOPE_VAR: &str = "TOOLPORT_SCOPE";

/// How long a sweep waits for the processes it killed to die. SIGKILL is not deferrable
/// except in uninterruptible sleep (a stuck NFS read); past this the sweep gives up on them
/// (the next sweep tries again).
const SWEEP_WAIT: Duration = Duration::from_millis(500);

/// Most rounds of kill-and-wait in one sweep: each round reaches one more generation of
/// escaped descendants; a fork bomb must not keep a sweep going forever.
const SWEEP_ROUNDS: usize = 64;

/// The process-wide reaper, once [`install`]ed.
static REAPER: OnceLock<Reaper> = OnceLock::new();

#[derive(Debug)]
struct Reaper {
    /// `<server pid>:`: the start of every scope of this server.
    prefix: String,
    /// The server adopts its descendants' orphans (Linux): sweeps look at its children.
    /// Otherwise (macOS) they scan the machine's processes for the scope.
    adopts_orphans: bool,
    next: AtomicU64,
    children: Mutex<Owned>,
}

/// The server's children a sweep must leave alone.
#[derive(Debug, Default)]
struct Owned {
    /// Command leaders alive: their `tokio::process::Child` reaps them.
    leaders: HashSet<i32>,
    /// Helpers such as the watchdog.
    keep: HashSet<i32>,
}

impl Owned {
    fn contains(&self, pid: i32) -> bool {
        self.leaders.contains(&pid) || self.keep.contains(&pid)
    }
}

impl Reaper {
    fn owned(&self) -> MutexGuard<'_, Owned> {
        self.children
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Make the server a child subreaper, once. Without it (a kernel that refuses the prctl)
/// commands still run, contained by their process group only, and a warning says so.
pub(crate) fn install() {
    if REAPER.get().is_some() {
        return;
    }
    let adopts_orphans = match become_subreaper() {
        Ok(()) => true,
        // Sweeps scan the machine's processes instead.
        Err(_) if SCANS_FOR_SCOPES => false,
        Err(error) => {
            tracing::warn!(%error, "cannot become a child subreaper: a command's processes that call setsid may outlive it");
            return;
        }
    };
    let _ = REAPER.set(Reaper {
        prefix: prefix_of(std::process::id()),
        adopts_orphans,
        next: AtomicU64::new(1),
        children: Mutex::new(Owned::default()),
    });
}

/// Where there is no subreaper, whether sweeps find a command's processes by scanning the
/// machine's processes for its scope (macOS: `scan_macos.rs`).
const SCANS_FOR_SCOPES: bool = cfg!(target_os = "macos");

/// Adopt the orphans of our descendants (Linux's `PR_SET_CHILD_SUBREAPER`).
#[cfg(target_os = "linux")]
fn become_subreaper() -> Result<(), String> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|error| error.to_string())
}

/// Other systems have no child subreaper (macOS, the BSDs): a command's processes that leave
/// its process group are reparented to init; macOS finds them by scanning, the BSDs do not
/// (docs/platforms.md says so).
#[cfg(not(target_os = "linux"))]
fn become_subreaper() -> Result<(), String> {
    Err(format!("{} has no child subreaper", std::env::consts::OS))
}

/// A child of the server that sweeps must leave alone (the watchdog).
pub(crate) fn keep(pid: u32) {
    if let (Some(reaper), Ok(pid)) = (REAPER.get(), i32::try_from(pid)) {
        reaper.owned().keep.insert(pid);
    }
}

/// The scope of one command: the marker its processes carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scope {
    name: String,
    /// When it was made (before the command's spawn): none of its processes started earlier.
    created: SystemTime,
}

impl Scope {
    /// A new scope; `None` when no reaper is installed (library use, tests in process).
    pub(crate) fn new() -> Option<Self> {
        let reaper = REAPER.get()?;
        let n = reaper.next.fetch_add(1, Ordering::Relaxed);
        Some(Self {
            name: format!("{}{n}", reaper.prefix),
            created: SystemTime::now(),
        })
    }

    /// The environment entry every process of the command carries.
    pub(crate) fn env(&self) -> (String, String) {
        (SCOPE_VAR.to_owned(), self.name.clone())
    }

    /// Whether a process marked `marker` is this command's: the scope itself, or a scope of
    /// a toolport the command runs (an upstream MCP server that is toolport, a nested
    /// `toolport call`), whose own scopes are nested in this one ([`prefix_of`]).
    fn owns(&self, marker: &[u8]) -> bool {
        let name = self.name.as_bytes();
        marker == name || (marker.starts_with(name) && marker.get(name.len()) == Some(&NESTED))
    }
}

/// Spawn a command's leader with `spawn` and register it, under the lock a sweep holds, so no
/// sweep sees the leader unregistered (and reaps it before its `Child` does).
pub(crate) fn spawn_leader<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid_of: impl Fn(&T) -> Option<u32>,
) -> std::io::Result<T> {
    let Some(reaper) = REAPER.get() else {
        return spawn();
    };
    let mut owned = reaper.owned();
    let child = spawn()?;
    if let Some(pid) = pid_of(&child).and_then(|p| i32::try_from(p).ok()) {
        owned.leaders.insert(pid);
    }
    Ok(child)
}

/// The leader `pid` has been reaped by its `Child` (or was killed and left to tokio's orphan
/// reaping): a sweep may treat the pid as any other child.
pub(crate) fn leader_done(pid: u32) {
    if let (Some(reaper), Ok(pid)) = (REAPER.get(), i32::try_from(pid)) {
        reaper.owned().leaders.remove(&pid);
    }
}

/// Whether a sweep for a command whose group was `group` has anything to do: the group still
/// has members (dying), or the server has children that are neither live leaders nor kept.
/// Cheap (one `kill(0)` and the `children` files), so it runs inline; the sweep itself waits
/// for deaths and runs on a blocking thread.
pub(crate) fn needs_sweep(group: Option<Pid>) -> bool {
    let Some(reaper) = REAPER.get() else {
        return false;
    };
    // Without a subreaper nothing cheap tells: the sweep scans (on a blocking thread).
    if !reaper.adopts_orphans || group.is_some_and(group_alive) {
        return true;
    }
    let owned = reaper.owned();
    let own_group = nix::unistd::getpgrp().as_raw();
    children()
        .into_iter()
        .any(|pid| !owned.contains(pid) && group_of(pid).is_some_and(|g| g != own_group))
}

fn group_alive(group: Pid) -> bool {
    killpg(group, None).is_ok()
}

/// After a command's process group was SIGKILLed: wait for the group to be gone, and kill
/// every process of `scope` that escaped it and is now the server's child, with the
/// generations below it, reaping them (and any zombie of an escaped process). Blocking: it
/// waits for deaths, at most [`SWEEP_WAIT`] in all.
pub(crate) fn sweep(scope: &Scope, group: Option<Pid>) {
    let Some(reaper) = REAPER.get() else { return };
    if !reaper.adopts_orphans {
        sweep_scanning(scope, group);
        return;
    }
    kill_rounds(
        group,
        || {
            let mut killed = Vec::new();
            let owned = reaper.owned();
            // Unmarked children belong to no known command: the last command's sweep takes
            // them, when no other command is running.
            let nobody_else = owned.leaders.is_empty();
            let own_group = nix::unistd::getpgrp().as_raw();
            for pid in children() {
                // Commands lead groups of their own; a child in the server's own group was
                // started by something else in this process (a library user's own child
                // process) and is none of the sweep's business.
                if owned.contains(pid) || group_of(pid).is_none_or(|g| g == own_group) {
                    continue;
                }
                match scope_of(pid) {
                    Found::Zombie => reap(pid),
                    Found::Scope(s) if scope.owns(s.as_bytes()) => killed.push(pid),
                    Found::None if nobody_else => killed.push(pid),
                    Found::Scope(_) | Found::None | Found::Gone => {}
                }
            }
            for pid in &killed {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
            killed
        },
        // Each killed one's children are reparented to the server before it becomes a
        // zombie: reaping it means the next round sees them.
        |killed, deadline| {
            for pid in killed {
                wait_dead(pid, deadline);
            }
        },
    );
}

/// The rounds of kill-and-wait every sweep runs, at most [`SWEEP_ROUNDS`] and [`SWEEP_WAIT`]:
/// `round` kills what it finds now and returns it, `settle` waits for those to die (each round
/// reaches one more generation of escaped descendants). Ends once a round finds nothing and
/// `group` is gone; past the deadline, with a warning (the next command's end retries).
fn kill_rounds(
    group: Option<Pid>,
    mut round: impl FnMut() -> Vec<i32>,
    mut settle: impl FnMut(Vec<i32>, Instant),
) {
    let deadline = Instant::now() + SWEEP_WAIT;
    for _ in 0..SWEEP_ROUNDS {
        // Read before the round: a member that dies after this line has reparented its
        // children by the time the round looks, or the next round sees them.
        let members_left = group.is_some_and(group_alive);
        let killed = round();
        if killed.is_empty() && !members_left {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(
                "processes a command left behind did not die in time; the next command's end retries"
            );
            return;
        }
        settle(killed, deadline);
        if members_left {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// [`sweep`] without a subreaper (macOS): kill every process of the machine that carries
/// `scope` (started since the scope was made), round after round until none is left and the
/// group is gone, at most [`SWEEP_WAIT`]. Killed processes are not the server's children: their
/// parents (or launchd) reap them.
#[cfg(target_os = "macos")]
fn sweep_scanning(scope: &Scope, group: Option<Pid>) {
    /// Slack for the clock between the scope's creation and the processes' start times.
    const CLOCK_SLACK: Duration = Duration::from_secs(1);
    let since = scope.created - CLOCK_SLACK;
    kill_rounds(
        group,
        || {
            let found = scoped_processes(Some(since), |s| scope.owns(s));
            for pid in &found {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
            found
        },
        // Not the server's children: nothing to reap, only a moment for them to die.
        |_, _| std::thread::sleep(Duration::from_millis(1)),
    );
}

/// The machine's processes (macOS: by scanning, [`scan`]) whose scope `wanted` accepts;
/// with `since`, only those started since then (their environment is read, one call each,
/// only for those).
#[cfg(target_os = "macos")]
fn scoped_processes(since: Option<SystemTime>, wanted: impl Fn(&[u8]) -> bool) -> Vec<i32> {
    scan::all_pids()
        .into_iter()
        .filter(|pid| since.is_none_or(|since| scan::start_time(*pid).is_some_and(|t| t >= since)))
        .filter(|pid| scan::env_var(*pid, SCOPE_VAR).is_some_and(|s| wanted(&s)))
        .collect()
}

/// Only macOS sweeps by scanning ([`SCANS_FOR_SCOPES`]).
#[cfg(not(target_os = "macos"))]
fn sweep_scanning(_scope: &Scope, _group: Option<Pid>) {}

/// What `/proc/PID/environ` says about a child.
enum Found {
    /// Its scope.
    Scope(String),
    /// It has none.
    None,
    /// It has exited (a zombie has no environment to read).
    Zombie,
    /// It is gone.
    Gone,
}

fn scope_of(pid: i32) -> Found {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(environ) if environ.is_empty() => {
            if is_zombie(pid) {
                Found::Zombie
            } else {
                Found::None
            }
        }
        Ok(environ) => environ
            .split(|b| *b == 0)
            .find_map(|entry| {
                entry
                    .strip_prefix(SCOPE_VAR.as_bytes())
                    .and_then(|rest| rest.strip_prefix(b"="))
            })
            .map_or(Found::None, |scope| {
                Found::Scope(String::from_utf8_lossy(scope).into_owned())
            }),
        Err(_) if is_zombie(pid) => Found::Zombie,
        Err(_) => Found::Gone,
    }
}

/// The state and process group of `pid`, from `/proc/PID/stat`.
fn stat_of(pid: i32) -> Option<(String, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: fields follow the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_owned();
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

fn is_zombie(pid: i32) -> bool {
    stat_of(pid).is_some_and(|(state, _)| state == "Z")
}

/// The process group of `pid`; `None` when it is gone.
fn group_of(pid: i32) -> Option<i32> {
    stat_of(pid).map(|(_, pgrp)| pgrp)
}

/// Reap a zombie child without blocking.
fn reap(pid: i32) {
    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
}

/// Wait until the killed child `pid` has died and reap it, until `deadline`.
fn wait_dead(pid: i32, deadline: Instant) {
    loop {
        match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            _ => return,
        }
    }
}

/// The server's children: every thread's `/proc/self/task/TID/children` (a child belongs to
/// the thread that forked it, and reparented orphans to one of the subreaper's threads).
fn children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// What separates a command's scope from the scopes of a toolport it runs.
const NESTED: u8 = b'/';

/// The scope prefix of the server whose pid is `server` (the server's own, and its
/// watchdog's, which inherits its environment): `<pid>:`, or inside a command of another
/// toolport (this server is its upstream, say) `<that command's scope>/<pid>:`, so that
/// toolport's sweeps and watchdog reach this server's commands too.
pub(crate) fn prefix_of(server: u32) -> String {
    match std::env::var(SCOPE_VAR) {
        Ok(outer) if !outer.is_empty() => format!("{outer}{}{server}:", char::from(NESTED)),
        _ => format!("{server}:"),
    }
}

/// Every process on the machine (readable by this user) whose scope starts with `prefix`:
/// what the watchdog kills when the server is gone. macOS: by scanning ([`scan`]).
#[cfg(target_os = "macos")]
pub(crate) fn processes_with_scope(prefix: &str) -> Vec<i32> {
    scoped_processes(None, |s| s.starts_with(prefix.as_bytes()))
}

/// Every process on the machine (readable by this user) whose scope starts with `prefix`:
/// what the watchdog kills when the server is gone. From `/proc` (empty where there is none).
#[cfg(not(target_os = "macos"))]
pub(crate) fn processes_with_scope(prefix: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| u32::try_from(*pid).ok() != Some(own))
        .filter(|pid| matches!(scope_of(*pid), Found::Scope(s) if s.starts_with(prefix)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_owns_itself_and_the_scopes_nested_in_it() {
        let scope = Scope {
            name: "100:3".into(),
            created: SystemTime::now(),
        };
        assert!(scope.owns(b"100:3"));
        assert!(scope.owns(b"100:3/200:1"), "a toolport it runs");
        assert!(scope.owns(b"100:3/200:1/300:7"));
        assert!(!scope.owns(b"100:31"), "another command of the same server");
        assert!(!scope.owns(b"100:31/200:1"));
        assert!(!scope.owns(b"100:"));
    }
}
