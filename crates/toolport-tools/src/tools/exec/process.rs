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
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Bytes a spilling stream keeps in memory before it creates its file: most commands print
/// less, and never touch the disk.
const SPILL_PENDING_BYTES: usize = 64 * 1024;

/// Every byte of a stream, for reading at any offset: in memory while small, then in a file
/// (created 0600 in the server's private job directory).
#[derive(Debug, Default)]
struct Spill {
    /// On for commands that may become jobs; off, nothing is kept beyond head and tail.
    enabled: bool,
    pending: Vec<u8>,
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    /// Where the file is created (`<dir>/<name>`), once it is needed.
    target: Option<PathBuf>,
    /// Bytes in the file (or pending).
    kept: u64,
    /// Most bytes the file takes (`exec.job_output_max_bytes`); past it the bytes are only
    /// counted, so a runaway job cannot fill the disk.
    max: u64,
    /// Why the file stopped short, if it did.
    failed: Option<String>,
}

impl Spill {
    fn push(&mut self, chunk: &[u8]) {
        if !self.enabled || self.failed.is_some() {
            return;
        }
        let room = self.max.saturating_sub(self.kept);
        let chunk = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if chunk.is_empty() {
            self.failed = Some(format!(
                "the output file stops at {} bytes (exec.job_output_max_bytes)",
                self.max
            ));
            return;
        }
        if self.file.is_none() && self.pending.len() + chunk.len() <= SPILL_PENDING_BYTES {
            self.pending.extend_from_slice(chunk);
            self.kept += chunk.len() as u64;
            return;
        }
        if let Err(error) = self.open_file().and_then(|file| file.write_all(chunk)) {
            self.failed = Some(format!("writing the output file failed: {error}"));
            return;
        }
        self.kept += chunk.len() as u64;
    }

    /// The file, created (with the pending bytes) on first need.
    fn open_file(&mut self) -> std::io::Result<&mut std::fs::File> {
        if self.file.is_none() {
            let target = self
                .target
                .clone()
                .ok_or_else(|| std::io::Error::other("no job directory"))?;
            let mut file = std::fs::OpenOptions::new()
                .create_new(true)
                .write(true)
                .read(true)
                .mode(0o600)
                .open(&target)?;
            file.write_all(&self.pending)?;
            self.pending = Vec::new();
            self.path = Some(target);
            self.file = Some(file);
        }
        self.file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the output file is not open"))
    }

    /// Up to `max` bytes from `offset`.
    fn read(&self, offset: u64, max: usize) -> std::io::Result<Vec<u8>> {
        let end = self.kept.min(offset.saturating_add(max as u64));
        if offset >= end {
            return Ok(Vec::new());
        }
        let len = usize::try_from(end - offset).unwrap_or(max);
        match &self.file {
            Some(file) => {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0; len];
                file.read_exact_at(&mut buf, offset)?;
                Ok(buf)
            }
            None => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                Ok(self.pending[start..start + len].to_vec())
            }
        }
    }
}

/// One output stream of a live command.
#[derive(Debug)]
struct Stream {
    /// What a result shows: the first and last bytes.
    kept: HeadTail,
    /// Every byte, when the command may become a job.
    spill: Spill,
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
pub struct Live {
    streams: [Mutex<Stream>; 2],
    last_line: Mutex<LastLine>,
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

/// Which stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Stdout = 0,
    Stderr = 1,
}

/// A slice of a stream read at an offset.
#[derive(Debug)]
pub struct Chunk {
    /// The bytes as text (lossy UTF-8; a character cut by the end of the slice is left for
    /// the next read).
    pub text: String,
    /// The offset after this slice.
    pub next: u64,
}

impl Live {
    fn stream(&self, which: Which) -> std::sync::MutexGuard<'_, Stream> {
        lock(&self.streams[which as usize])
    }

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

    /// The latest complete output line, for progress messages.
    pub(crate) fn last_line(&self) -> Option<String> {
        lock(&self.last_line).line.clone()
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

    /// The stream so far as a result shows it (head and tail).
    pub(crate) fn captured(&self, which: Which) -> Captured {
        self.stream(which).kept.finish()
    }

    /// Bytes written to the stream so far.
    pub(crate) fn total(&self, which: Which) -> u64 {
        self.stream(which).kept.total
    }

    /// Bytes of the stream that can be read back ([`Live::read`]): all of them, unless the
    /// spill file stopped short.
    pub fn readable(&self, which: Which) -> u64 {
        self.stream(which).spill.kept
    }

    /// The stream's spill file, once it exists, and why it stopped short, if it did.
    pub(crate) fn spill_file(&self, which: Which) -> (Option<PathBuf>, Option<String>) {
        let stream = self.stream(which);
        (stream.spill.path.clone(), stream.spill.failed.clone())
    }

    /// Make sure every byte so far is in the spill file (the command is becoming a job:
    /// its output must be readable at any offset and survive in a file).
    pub(crate) fn spill_now(&self) {
        for which in [Which::Stdout, Which::Stderr] {
            let mut stream = self.stream(which);
            if stream.spill.enabled
                && stream.spill.failed.is_none()
                && let Err(error) = stream.spill.open_file()
            {
                stream.spill.failed = Some(format!("creating the output file failed: {error}"));
            }
        }
    }

    /// Up to `max` bytes of a stream from `offset` (offsets count every byte the command
    /// wrote). An offset past what was written reads nothing.
    pub fn read(&self, which: Which, offset: u64, max: usize) -> std::io::Result<Chunk> {
        let bytes = self.stream(which).spill.read(offset, max)?;
        // A multi-byte character cut at the end of the slice waits for the next read.
        let cut = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() && self.end().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        let cut = if cut == 0 && !bytes.is_empty() {
            bytes.len()
        } else {
            cut
        };
        Ok(Chunk {
            text: String::from_utf8_lossy(&bytes[..cut]).into_owned(),
            next: offset + cut as u64,
        })
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

    /// Remove the spill files (the job is gone).
    pub(crate) fn remove_files(&self) {
        for which in [Which::Stdout, Which::Stderr] {
            let mut stream = self.stream(which);
            stream.spill.file = None;
            if let Some(path) = stream.spill.path.take() {
                let _ = std::fs::remove_file(path);
            }
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

async fn pump(mut stream: impl AsyncRead + Unpin, live: Arc<Live>, which: Which) {
    // Reserved, not zeroed: pages are only touched when output arrives, so a quiet command
    // costs no page faults for its buffers.
    let mut chunk = Vec::with_capacity(READ_CHUNK);
    loop {
        chunk.clear();
        match stream.read_buf(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                {
                    let mut s = live.stream(which);
                    s.kept.push(&chunk);
                    s.spill.push(&chunk);
                }
                lock(&live.last_line).push(&chunk);
                live.bump();
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
    let empty = HeadTail::new(0).finish();
    Outcome {
        stdout: empty.clone(),
        stderr: empty,
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
    let stream = |name: &str| Stream {
        kept: HeadTail::new(spec.max_output_bytes),
        spill: Spill {
            enabled: options.spill.is_some(),
            max: options.spill_max_bytes,
            target: options.spill.as_ref().map(|p| {
                let mut path = p.clone().into_os_string();
                path.push(name);
                PathBuf::from(path)
            }),
            ..Spill::default()
        },
    };
    let (changes, _) = watch::channel(0);
    let live = Arc::new(Live {
        streams: [Mutex::new(stream(".stdout")), Mutex::new(stream(".stderr"))],
        last_line: Mutex::new(LastLine::default()),
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
