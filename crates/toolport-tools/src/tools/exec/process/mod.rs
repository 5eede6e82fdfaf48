//! Running one command to completion, with the hygiene peers get wrong (see the module docs of
//! [`super`] for the list): its own process tree ([`os::Tree`]: a process group on Unix, a Job
//! Object on Windows), no terminal or console window, stdin from the null device unless given,
//! both pipes drained concurrently into bounded head+tail buffers ([`output`], which keeps what
//! the command wrote), the whole tree terminated on timeout or cancellation, leftovers killed
//! when the leader exits, a drain timeout for grandchildren that keep the pipes open, the tree
//! dying with the server, and the child always reaped. Everything that differs between
//! operating systems is in [`os`]; this file is the same on all of them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::os;
use crate::tool::ProgressSink;

mod output;

pub(crate) use output::{Captured, Which};
use output::{Output, pump};

/// After the command exits, how long to wait for its pipes to close. A grandchild that was
/// put in the background keeps them open; past this the rest of the process group is killed
/// and the output read so far is returned.
pub(crate) const IO_DRAIN_TIMEOUT: Duration = Duration::from_millis(300);

/// How often progress is reported while a command runs (when the client asked for progress).
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// What to run.
pub struct RunSpec {
    /// The program (resolved through `PATH` from `env`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory, as a handle ([`os::cwd_path`] says how the child enters it).
    pub cwd: std::fs::File,
    /// The complete environment.
    pub env: Vec<(String, String)>,
    /// Bytes for stdin; `None` connects stdin to the null device.
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
    let cwd = match os::cwd_path(&spec.cwd) {
        Ok(cwd) => cwd,
        Err(error) => return Err(Box::new(not_started(error))),
    };
    let Some(program) = os::resolve_program(&spec.program, &spec.env, &cwd) else {
        let error = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no executable of that name on PATH",
        );
        return Err(Box::new(not_started(error)));
    };
    let mut cmd = Command::new(program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cwd)
        .stdin(if spec.stdin.is_some() || options.stdin_open {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own tree (process group / Job Object), which dies with the server; if the driving
    // task is dropped (the runtime stopping), the tree's `Drop` kills it.
    let (mut child, tree) = match os::Tree::spawn(&mut cmd) {
        Ok(spawned) => spawned,
        Err(error) => return Err(Box::new(not_started(error))),
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
    tokio::spawn(drive(child, live.clone(), tree, readers));
    Ok(live)
}

/// Drive a started command to its end: it exits (then whatever it left behind is killed),
/// its time limit passes, or it is killed on request. Sets [`Live::end`] once every process
/// of it is gone.
async fn drive(
    mut child: Child,
    live: Arc<Live>,
    tree: os::Tree,
    mut readers: Vec<tokio::task::JoinHandle<()>>,
) {
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
            tree.kill_rest();
            (status, false, false)
        }
        Ended::TimedOut => (tree.terminate(&mut child).await, true, false),
        Ended::Killed => (tree.terminate(&mut child).await, false, true),
    };
    // The leader is reaped (or its wait failed): then what left the tree.
    tree.finish().await;
    // After the tree is dead the pipes close; a reader stuck on a pipe some escaped process
    // still holds is abandoned after the drain timeout.
    drain(&mut readers).await;
    for reader in &readers {
        reader.abort();
    }
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
