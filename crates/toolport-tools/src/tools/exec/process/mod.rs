//! Running one command to completion, with the hygiene peers get wrong (see the module docs of
//! [`super`] for the list): its own process group, no controlling terminal, stdin from
//! /dev/null unless given, both pipes drained concurrently into bounded head+tail buffers
//! ([`output`], which keeps what the command wrote), the
//! whole group terminated (TERM, grace, KILL) on timeout or cancellation, leftovers killed when
//! the leader exits, a drain timeout for grandchildren that keep the pipes open, the group
//! registered with the [`watchdog`] (so it dies with the server), and the child always reaped
//! ([`group`]: signalling, terminating and guarding the group).
//!
//! What leaves the group (`setsid`, a double-forking daemon) is found and killed by the
//! [`reaper`] when the command ends.
//!
//! Commands are started with `posix_spawn` (std picks it when there is no `pre_exec` hook and
//! the program needs no `PATH` search): a `vfork`-style clone that copies no page tables, so a
//! spawn costs the same however large the server is. That is why nothing here runs code in the
//! child: the working directory is entered by `posix_spawn` itself, the process group is a
//! spawn attribute, death with the server is the watchdog's job, and "no terminal" is arranged
//! once for the whole server by [`detach_controlling_terminal`] (the crate's one use of
//! `unsafe`: a single `ioctl`).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::reaper::{self, Scope};
use super::watchdog;
use crate::tool::ProgressSink;

mod group;
mod output;

use group::{GroupGuard, contain, signal_group, terminate};
pub(crate) use output::{Captured, Which};
use output::{Output, pump};

/// Used when the server itself has no PATH (and to resolve a program when a command's
/// environment has none).
pub(crate) const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// After the command exits, how long to wait for its pipes to close. A grandchild that was
/// put in the background keeps them open; past this the rest of the process group is killed
/// and the output read so far is returned.
pub(crate) const IO_DRAIN_TIMEOUT: Duration = Duration::from_millis(300);

/// Between SIGTERM and SIGKILL on timeout or cancellation: long enough for a well-behaved
/// program to clean up, short enough that a cancelled call is gone within a second.
pub(crate) const KILL_GRACE: Duration = Duration::from_millis(500);

/// How often progress is reported while a command runs (when the client asked for progress).
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// What to run.
pub struct RunSpec {
    /// The program (resolved through `PATH` from `env`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory, as a handle (entered with `fchdir`, so it cannot be swapped).
    pub cwd: std::fs::File,
    /// The complete environment.
    pub env: Vec<(String, String)>,
    /// Bytes for stdin; `None` connects stdin to /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit.
    pub timeout: Duration,
    /// Bytes kept per stream (half head, half tail).
    pub max_output_bytes: usize,
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// Standard output.
    pub(crate) stdout: Captured,
    /// Standard error.
    pub(crate) stderr: Captured,
    /// The exit status of the leader, once reaped (also after a kill).
    pub status: Option<ExitStatus>,
    /// The command did not start: why.
    pub(crate) spawn_error: Option<std::io::Error>,
    /// Killed because the timeout passed.
    pub(crate) timed_out: bool,
    /// Killed because the call was cancelled.
    pub(crate) cancelled: bool,
    /// Wall-clock time from spawn to the end.
    pub(crate) duration: Duration,
}

/// What ended a command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct End {
    /// The leader's exit status, once reaped.
    pub(crate) status: Option<ExitStatus>,
    /// Killed because its time limit passed.
    pub(crate) timed_out: bool,
    /// Killed on request (the call was cancelled, `job_kill`, the session ended).
    pub(crate) killed: bool,
    /// From spawn to the end.
    pub(crate) duration: Duration,
}

/// A command that has started: its output so far and, once it ended, how. Shared between the
/// task that drives it to its end and whoever waits for it (the call, or the job tools once
/// the call has returned).
#[derive(Debug)]
pub(crate) struct Live {
    /// What it wrote ([`output`]).
    output: Output,
    /// The pipe to its stdin, when it was left open (`job_input`).
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Fires to end it (TERM, grace, KILL of the whole tree).
    kill: CancellationToken,
    /// Bumped on every output chunk and at the end: waiters watch it.
    changes: watch::Sender<u64>,
    end: OnceLock<End>,
    started: Instant,
    timeout: Duration,
}

impl Live {
    fn bump(&self) {
        self.changes.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// How it ended, once it has.
    pub(crate) fn end(&self) -> Option<End> {
        self.end.get().copied()
    }

    /// Ask for it to end: TERM to the group, [`KILL_GRACE`], then KILL; what escaped the
    /// group is swept. Returns at once; wait with [`Live::ended`].
    pub(crate) fn kill(&self) {
        self.kill.cancel();
    }

    /// Resolves when it has ended (and every process of it is gone).
    pub(crate) async fn ended(&self) -> End {
        let mut changes = self.changes.subscribe();
        loop {
            if let Some(end) = self.end() {
                return end;
            }
            if changes.changed().await.is_err() {
                // The driver is gone without setting an end: only at runtime shutdown.
                return self.end().unwrap_or(End {
                    status: None,
                    timed_out: false,
                    killed: true,
                    duration: self.started.elapsed(),
                });
            }
        }
    }

    /// A receiver that sees every change (output or the end).
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Time since it started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// One progress report for a call waiting on this command: the time so far against its
    /// limit, with the latest output line. Without a progress token the sink is `NoProgress`
    /// and this is a no-op.
    pub(crate) async fn report_progress(&self, progress: &dyn ProgressSink) {
        let elapsed = self.elapsed().as_secs_f64();
        let message = self
            .last_line()
            .unwrap_or_else(|| format!("running for {elapsed:.0} s"));
        progress
            .report(elapsed, Some(self.timeout.as_secs_f64()), Some(message))
            .await;
    }

    /// Write to its stdin; `close` closes it after. Errors say why (no pipe, closed, the
    /// command stopped reading).
    pub(crate) async fn write_stdin(&self, bytes: &[u8], close: bool) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err("its stdin is not open (start it with stdin_open: true to write to it, and it was not closed since)".into());
        };
        if !bytes.is_empty() {
            pipe.write_all(bytes).await.map_err(|e| {
                format!("writing to its stdin failed: {e} (the command stopped reading)")
            })?;
            pipe.flush().await.map_err(|e| e.to_string())?;
        }
        if close {
            *stdin = None;
        }
        Ok(())
    }

    /// The whole run as a result sees it, once it has ended.
    pub(crate) fn outcome(&self, spawn_error: Option<std::io::Error>) -> Outcome {
        let end = self.end();
        Outcome {
            stdout: self.captured(Which::Stdout),
            stderr: self.captured(Which::Stderr),
            status: end.and_then(|e| e.status),
            spawn_error,
            timed_out: end.is_some_and(|e| e.timed_out),
            cancelled: end.is_some_and(|e| e.killed),
            duration: end.map_or_else(|| self.started.elapsed(), |e| e.duration),
        }
    }
}

impl Drop for Live {
    /// The last holder is gone (the job was removed, or the command ended without becoming
    /// one): its output files go too.
    fn drop(&mut self) {
        self.remove_files();
    }
}

/// Give up the server's controlling terminal, if it has one, so that no command it runs can
/// open `/dev/tty` to prompt for a password or read keystrokes (it gets ENXIO instead), and
/// none is stopped by SIGTTIN as a background job of the user's terminal. This is what
/// `setsid` in each child used to provide; doing it once in the server lets commands be
/// spawned without running code in the child. The server stays in its process group and
/// session, so Ctrl-C in that terminal still reaches it. Does nothing for a session leader
/// (there `TIOCNOTTY` would hang up the whole session) or when there is no terminal.
pub(crate) fn detach_controlling_terminal() {
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
fn cwd_path(cwd: BorrowedFd<'_>) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", cwd.as_raw_fd()))
}

/// Resolve a bare program name against the child's `PATH` (relative entries against its
/// working directory), as `execvp` in the child would. std only spawns with `posix_spawn` when
/// the program needs no search under a changed environment, so the search happens here; a
/// name with a `/` is left to the kernel. `None` when no executable of that name is found.
fn resolve_program(program: &OsStr, env: &[(String, String)], cwd: &Path) -> Option<OsString> {
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

/// Wait up to [`IO_DRAIN_TIMEOUT`] for the output readers to reach end-of-file.
async fn drain(readers: &mut [tokio::task::JoinHandle<()>]) {
    let _ = tokio::time::timeout(IO_DRAIN_TIMEOUT, async {
        for reader in readers.iter_mut() {
            // A handle must not be polled again once it has completed.
            if !reader.is_finished() {
                let _ = reader.await;
            }
        }
    })
    .await;
}

/// How to start a command beyond its [`RunSpec`].
#[derive(Debug, Default)]
pub(crate) struct StartOptions {
    /// Keep every byte of output, for a command that may become a job: in memory while
    /// small, then in `<path>.stdout` / `<path>.stderr` (created 0600).
    pub(crate) spill: Option<PathBuf>,
    /// Most bytes each spill file takes.
    pub(crate) spill_max_bytes: u64,
    /// Leave stdin open as a pipe for `job_input` (after the given bytes, if any), instead
    /// of closing it (or /dev/null).
    pub(crate) stdin_open: bool,
}

/// A command that did not start, as an outcome.
fn not_started(error: std::io::Error) -> Outcome {
    Outcome {
        stdout: Captured::default(),
        stderr: Captured::default(),
        status: None,
        spawn_error: Some(error),
        timed_out: false,
        cancelled: false,
        duration: Duration::ZERO,
    }
}

/// Start a command, and the task that drives it to its end (its timeout, or [`Live::kill`]).
/// A command that cannot be started is returned as its outcome.
pub(crate) fn start(spec: RunSpec, options: &StartOptions) -> Result<Arc<Live>, Box<Outcome>> {
    let cwd = cwd_path(spec.cwd.as_fd());
    let Some(program) = resolve_program(&spec.program, &spec.env, &cwd) else {
        let error = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no executable of that name on PATH",
        );
        return Err(Box::new(not_started(error)));
    };
    // The marker the reaper finds every process of this command by, descendants included.
    let scope = Scope::new();
    let mut cmd = Command::new(program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .envs(scope.as_ref().map(Scope::env))
        .current_dir(&cwd)
        // Its own process group, led by the command, so the whole tree can be signalled.
        .process_group(0)
        .stdin(if spec.stdin.is_some() || options.stdin_open {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);

    // The first command starts the watchdog it registers with.
    watchdog::ensure();
    let mut child = match reaper::spawn_leader(|| cmd.spawn(), Child::id) {
        Ok(child) => child,
        Err(error) => return Err(Box::new(not_started(error))),
    };
    let leader = child.id();
    let pgid = leader
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    // If the server dies, the watchdog takes the group down; if the driving task is dropped
    // (the runtime stopping), the guard does.
    if let Some(pgid) = pgid {
        watchdog::register(pgid);
    }
    let guard = GroupGuard {
        pgid,
        leader,
        scope,
    };
    let (changes, _) = watch::channel(0);
    let live = Arc::new(Live {
        output: Output::new(spec.max_output_bytes, options),
        stdin: tokio::sync::Mutex::new(None),
        kill: CancellationToken::new(),
        changes,
        end: OnceLock::new(),
        started: Instant::now(),
        timeout: spec.timeout,
    });

    if let Some(mut pipe) = child.stdin.take() {
        match (spec.stdin, options.stdin_open) {
            (bytes, true) => {
                // Held by the live command for job_input; the given bytes go first.
                let live = live.clone();
                tokio::spawn(async move {
                    *live.stdin.lock().await = Some(pipe);
                    if let Some(bytes) = bytes {
                        let _ = live.write_stdin(&bytes, false).await;
                    }
                });
            }
            (Some(bytes), false) => {
                tokio::spawn(async move {
                    // A command that exits without reading all of stdin closes the pipe:
                    // not an error.
                    let _ = pipe.write_all(&bytes).await;
                });
            }
            (None, false) => {}
        }
    }
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(pump(out, live.clone(), Which::Stdout)));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(err, live.clone(), Which::Stderr)));
    }
    tokio::spawn(drive(child, live.clone(), guard, readers));
    Ok(live)
}

/// Drive a started command to its end: it exits (then whatever it left behind is killed),
/// its time limit passes, or it is killed on request. Sets [`Live::end`] once every process
/// of it is gone.
async fn drive(
    mut child: Child,
    live: Arc<Live>,
    mut guard: GroupGuard,
    mut readers: Vec<tokio::task::JoinHandle<()>>,
) {
    let pgid = guard.pgid;
    let deadline = tokio::time::Instant::from_std(live.started + live.timeout);
    enum Ended {
        Exited(Option<ExitStatus>),
        TimedOut,
        Killed,
    }
    let ended = tokio::select! {
        status = child.wait() => Ended::Exited(status.ok()),
        () = tokio::time::sleep_until(deadline) => Ended::TimedOut,
        () = live.kill.cancelled() => Ended::Killed,
    };
    let (status, timed_out, killed) = match ended {
        Ended::Exited(status) => {
            // Give the pipes a moment to close, then kill whatever the command left behind
            // (background jobs holding the pipes, or not): nothing outlives the command.
            drain(&mut readers).await;
            signal_group(pgid, Signal::SIGKILL);
            (status, false, false)
        }
        Ended::TimedOut => (terminate(&mut child, pgid).await, true, false),
        Ended::Killed => (terminate(&mut child, pgid).await, false, true),
    };
    // The leader is reaped (or its wait failed): the sweep may see its pid reused.
    if let Some(leader) = guard.leader.take() {
        reaper::leader_done(leader);
    }
    // Then what left the group: `setsid` children, daemons.
    contain(guard.scope.as_ref(), pgid).await;
    // After the group is dead the pipes close; a reader stuck on a pipe some escaped process
    // still holds is abandoned after the drain timeout.
    drain(&mut readers).await;
    for reader in &readers {
        reader.abort();
    }
    guard.release();
    *live.stdin.lock().await = None;
    let _ = live.end.set(End {
        status,
        timed_out,
        killed,
        duration: live.started.elapsed(),
    });
    live.bump();
}

/// Ends a command when dropped, unless disarmed: a call waiting for its command that is
/// dropped (the client went away) must not leave it running.
pub(crate) struct KillOnDrop(Option<Arc<Live>>);

impl KillOnDrop {
    /// Guard `live`.
    pub(crate) fn new(live: &Arc<Live>) -> Self {
        Self(Some(live.clone()))
    }

    /// The command outlives the call now (it became a job).
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(live) = self.0.take() {
            live.kill();
        }
    }
}

/// Why [`wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The command ended (also after `cancel` fired: it was killed).
    Ended,
    /// `until` came first; the command still runs.
    StillRunning,
}

/// Wait for a command to end, at most until `until`, reporting progress every
/// [`PROGRESS_INTERVAL`] (the latest output line). When `cancel` fires the command is killed
/// and waited for.
pub(crate) async fn wait(
    live: &Live,
    cancel: &CancellationToken,
    progress: &dyn ProgressSink,
    until: Option<tokio::time::Instant>,
) -> Waited {
    let mut changes = live.changes();
    let mut ticker = progress_ticker();
    let until = until.map_or_else(
        || futures::future::Either::Left(std::future::pending::<()>()),
        |t| futures::future::Either::Right(tokio::time::sleep_until(t)),
    );
    tokio::pin!(until);
    loop {
        if live.end().is_some() {
            return Waited::Ended;
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return Waited::Ended },
            () = &mut until => return Waited::StillRunning,
            () = cancel.cancelled() => {
                live.kill();
                live.ended().await;
                return Waited::Ended;
            }
            _ = ticker.tick() => live.report_progress(progress).await,
        }
    }
}

/// The ticker of a waiting call's progress reports: every [`PROGRESS_INTERVAL`], the first
/// one interval from now.
pub(crate) fn progress_ticker() -> tokio::time::Interval {
    let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.reset();
    ticker
}

/// Run a command to its end (or its timeout, or cancellation) and capture its output.
pub async fn run(
    spec: RunSpec,
    cancel: &CancellationToken,
    progress: &dyn ProgressSink,
) -> Outcome {
    let live = match start(spec, &StartOptions::default()) {
        Ok(live) => live,
        Err(outcome) => return *outcome,
    };
    let guard = KillOnDrop::new(&live);
    wait(&live, cancel, progress, None).await;
    guard.disarm();
    live.outcome(None)
}
