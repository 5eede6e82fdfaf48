//! Running one command to completion, with the hygiene peers get wrong (see the module docs of
//! [`super`] for the list): its own process group, no controlling terminal, stdin from
//! /dev/null unless given, both pipes drained concurrently into bounded head+tail buffers, the
//! whole group terminated (TERM, grace, KILL) on timeout or cancellation, leftovers killed when
//! the leader exits, a drain timeout for grandchildren that keep the pipes open, the group
//! registered with the [`watchdog`] (so it dies with the server), and the child always reaped.
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

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::reaper::{self, Scope};
use super::watchdog;
use crate::tool::ProgressSink;

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

/// Read buffer per stream.
const READ_CHUNK: usize = 64 * 1024;

/// The longest "latest output line" sent as a progress message.
const PROGRESS_LINE_MAX: usize = 200;

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

/// One captured stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The kept text (lossy UTF-8), with a marker where bytes were cut.
    pub text: String,
    /// Bytes the command wrote to the stream in total.
    pub(crate) total_bytes: u64,
    /// Whether bytes were cut.
    pub(crate) truncated: bool,
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

/// Head + tail buffer: keeps the first and last `cap / 2` bytes of a stream, counts the rest.
/// Memory stays bounded whatever the command writes.
#[derive(Debug)]
struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: u64,
}

impl HeadTail {
    fn new(cap: usize) -> Self {
        let half = cap / 2;
        Self {
            head: Vec::with_capacity(half.min(READ_CHUNK)),
            tail: VecDeque::new(),
            half,
            total: 0,
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.half - self.head.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.half..]);
        } else {
            self.tail.extend(chunk);
            let excess = self.tail.len().saturating_sub(self.half);
            self.tail.drain(..excess);
        }
    }

    fn finish(&self) -> Captured {
        let kept = self.head.len() + self.tail.len();
        let omitted = self.total - kept as u64;
        let mut bytes = self.head.clone();
        if omitted > 0 {
            bytes.extend_from_slice(
                format!("\n[... {omitted} bytes omitted: output over the limit; showing the first and last parts ...]\n").as_bytes(),
            );
        }
        bytes.extend(self.tail.iter());
        Captured {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            total_bytes: self.total,
            truncated: omitted > 0,
        }
    }
}

/// The latest complete, non-empty output line, for progress messages.
#[derive(Debug, Default)]
struct LastLine {
    partial: Vec<u8>,
    line: Option<String>,
}

impl LastLine {
    fn push(&mut self, chunk: &[u8]) {
        for piece in chunk.split_inclusive(|&b| b == b'\n') {
            if self.partial.len() < PROGRESS_LINE_MAX * 4 {
                self.partial.extend_from_slice(piece);
            }
            if piece.ends_with(b"\n") {
                let text = String::from_utf8_lossy(&self.partial);
                let text = text.trim();
                if !text.is_empty() {
                    self.line = Some(text.chars().take(PROGRESS_LINE_MAX).collect());
                }
                self.partial.clear();
            }
        }
    }
}

type Shared<T> = Arc<Mutex<T>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

async fn pump(
    mut stream: impl AsyncRead + Unpin,
    buffer: Shared<HeadTail>,
    last: Shared<LastLine>,
) {
    // Reserved, not zeroed: pages are only touched when output arrives, so a quiet command
    // costs no page faults for its buffers.
    let mut chunk = Vec::with_capacity(READ_CHUNK);
    loop {
        chunk.clear();
        match stream.read_buf(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                lock(&buffer).push(&chunk);
                lock(&last).push(&chunk);
            }
        }
    }
}

/// Signal the whole process group (its id is the leader's pid, thanks to `process_group(0)`).
fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid
        && let Err(error) = killpg(pgid, signal)
        && error != nix::errno::Errno::ESRCH
    {
        tracing::warn!(%error, ?signal, "could not signal a command's process group");
    }
}

/// SIGTERM the group, give it [`KILL_GRACE`], then SIGKILL it; reap the leader.
async fn terminate(child: &mut Child, pgid: Option<Pid>) -> Option<ExitStatus> {
    signal_group(pgid, Signal::SIGTERM);
    let status = match tokio::time::timeout(KILL_GRACE, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => None,
    };
    // Whether or not the leader went, its group may not have: kill what is left.
    signal_group(pgid, Signal::SIGKILL);
    match status {
        Some(status) => Some(status),
        None => child.wait().await.ok(),
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

/// Owns a command's processes while it runs: dropped mid-run (the call's future dropped: the
/// client went away, the server is stopping), it SIGKILLs the group and sweeps what escaped
/// it ([`reaper`]); either way it tells the watchdog the group is gone.
struct GroupGuard {
    pgid: Option<Pid>,
    /// The leader's pid, registered with the reaper until its `Child` has reaped it.
    leader: Option<u32>,
    scope: Option<Scope>,
}

impl GroupGuard {
    /// The run finished, killed the group and swept: only tell the watchdog, and signal
    /// nothing more (the id may be reused once the group is gone).
    fn release(mut self) {
        if let Some(pgid) = self.pgid.take() {
            watchdog::unregister(pgid);
        }
        self.scope = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            signal_group(Some(pgid), Signal::SIGKILL);
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

/// Kill what escaped the command's (already killed) group and reap it: inline when there is
/// nothing to do (the usual case: one `kill(0)` and the children lists), else on a blocking
/// thread, since the sweep waits for deaths.
async fn contain(scope: Option<&Scope>, pgid: Option<Pid>) {
    let Some(scope) = scope else { return };
    if reaper::needs_sweep(pgid) {
        let scope = scope.clone();
        let _ = tokio::task::spawn_blocking(move || reaper::sweep(&scope, pgid)).await;
    }
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

/// Run a command to its end (or its timeout, or cancellation) and capture its output.
pub async fn run(
    spec: RunSpec,
    cancel: &CancellationToken,
    progress: &dyn ProgressSink,
) -> Outcome {
    let started = Instant::now();
    let stdout_buf = Arc::new(Mutex::new(HeadTail::new(spec.max_output_bytes)));
    let stderr_buf = Arc::new(Mutex::new(HeadTail::new(spec.max_output_bytes)));
    let last_line = Arc::new(Mutex::new(LastLine::default()));

    let finish = |status, spawn_error, timed_out, cancelled| Outcome {
        stdout: lock(&stdout_buf).finish(),
        stderr: lock(&stderr_buf).finish(),
        status,
        spawn_error,
        timed_out,
        cancelled,
        duration: started.elapsed(),
    };

    let cwd = cwd_path(spec.cwd.as_fd());
    let Some(program) = resolve_program(&spec.program, &spec.env, &cwd) else {
        let error = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no executable of that name on PATH",
        );
        return finish(None, Some(error), false, false);
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
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);

    let mut child = match reaper::spawn_leader(|| cmd.spawn(), Child::id) {
        Ok(child) => child,
        Err(error) => return finish(None, Some(error), false, false),
    };
    let leader = child.id();
    let pgid = leader
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    // If the server dies, the watchdog takes the group down; if this future is dropped
    // mid-run (the server stopping), the guard does.
    if let Some(pgid) = pgid {
        watchdog::register(pgid);
    }
    let mut guard = GroupGuard {
        pgid,
        leader,
        scope,
    };

    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), spec.stdin) {
        tokio::spawn(async move {
            // A command that exits without reading all of stdin closes the pipe: not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(pump(
            out,
            stdout_buf.clone(),
            last_line.clone(),
        )));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(
            err,
            stderr_buf.clone(),
            last_line.clone(),
        )));
    }

    let deadline = tokio::time::Instant::now() + spec.timeout;
    let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let timeout_secs = spec.timeout.as_secs_f64();
    enum End {
        Exited(Option<ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let end = loop {
        tokio::select! {
            status = child.wait() => break End::Exited(status.ok()),
            () = tokio::time::sleep_until(deadline) => break End::TimedOut,
            () = cancel.cancelled() => break End::Cancelled,
            _ = ticker.tick() => {
                let elapsed = started.elapsed().as_secs_f64();
                let line = lock(&last_line).line.clone();
                let message = line.unwrap_or_else(|| format!("running for {elapsed:.0} s"));
                // Without a progress token the sink is `NoProgress` and this is a no-op.
                progress.report(elapsed, Some(timeout_secs), Some(message)).await;
            }
        }
    };
    let (status, timed_out, cancelled) = match end {
        End::Exited(status) => {
            // Give the pipes a moment to close, then kill whatever the command left behind
            // (background jobs holding the pipes, or not): nothing outlives the call.
            drain(&mut readers).await;
            signal_group(pgid, Signal::SIGKILL);
            (status, false, false)
        }
        End::TimedOut => (terminate(&mut child, pgid).await, true, false),
        End::Cancelled => (terminate(&mut child, pgid).await, false, true),
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
    finish(status, None, timed_out, cancelled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_and_counts_everything() {
        let mut h = HeadTail::new(8);
        h.push(b"abcdefghijklmnopqrstuvwxyz");
        let c = h.finish();
        assert_eq!(c.total_bytes, 26);
        assert!(c.truncated);
        assert!(
            c.text.starts_with("abcd\n[... 18 bytes omitted"),
            "{}",
            c.text
        );
        assert!(c.text.ends_with("...]\nwxyz"), "{}", c.text);
        let mut small = HeadTail::new(8);
        small.push(b"abc");
        small.push(b"def");
        assert_eq!(
            small.finish(),
            Captured {
                text: "abcdef".into(),
                total_bytes: 6,
                truncated: false
            }
        );
        let mut pieces = HeadTail::new(8);
        for b in b"0123456789" {
            pieces.push(&[*b]);
        }
        let c = pieces.finish();
        assert!(
            c.text.starts_with("0123\n") && c.text.ends_with("\n6789"),
            "{}",
            c.text
        );
    }

    #[test]
    fn last_line_tracks_complete_lines() {
        let mut l = LastLine::default();
        l.push(b"first\nsec");
        assert_eq!(l.line.as_deref(), Some("first"));
        l.push(b"ond\n\n");
        assert_eq!(l.line.as_deref(), Some("second"));
    }
}
