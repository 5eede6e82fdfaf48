//! Jobs: commands that outlive the call that started them — started with `background: true`,
//! or still running when the call's `yield_after` passed. The job tools (`job_output`,
//! `job_input`, `job_kill`, `job_list`) reach them by id.
//!
//! - A job belongs to the session that started it ([`Session`]); any other session is told
//!   "not found", whatever the id. A session's jobs are killed when it ends, unless the
//!   operator sets `exec.jobs_survive_session`.
//! - At most `exec.max_jobs` live at once (running, or finished and kept); a finished job is
//!   kept `exec.job_retention` for its output, then removed with its files.
//! - A job holds its `exec.max_concurrent` slot until it ends.
//! - Its full output is in two files (`<id>.stdout`, `<id>.stderr`, 0600) in the server's
//!   private job directory (`$TMPDIR/toolport-jobs-<server pid>`, 0700), besides the head and
//!   tail kept in memory; the watchdog removes the directory when the server is gone.

use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Instant, SystemTime};

use super::process::Live;
use super::settings::ExecSettings;
use crate::tool::{Session, ToolError};

/// One job.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) id: String,
    owner: Arc<str>,
    /// The command as a shell would show it.
    pub(crate) command_line: String,
    /// Where it runs.
    pub(crate) cwd: String,
    /// Its limit, in seconds.
    pub(crate) timeout: u64,
    pub(crate) started_at: SystemTime,
    pub(crate) live: Arc<Live>,
    /// When it ended, once it has (for retention).
    finished: Mutex<Option<Instant>>,
    /// How long it is kept after its end.
    retention: std::time::Duration,
}

impl Job {
    /// Whether it still runs.
    pub(crate) fn running(&self) -> bool {
        self.live.end().is_none()
    }

    /// End it (TERM to its processes, a grace, KILL, the escapees swept) and wait until they
    /// are gone. A job that has ended already is left as it is.
    pub(crate) async fn kill(&self) {
        self.live.kill();
        self.live.ended().await;
    }

    /// When it ended, by the wall clock (`None` while it runs).
    pub(crate) fn ended_at(&self) -> Option<SystemTime> {
        self.live.end().map(|end| self.started_at + end.duration)
    }

    /// How long it is kept after its end (`exec.job_retention`).
    pub(crate) fn retention(&self) -> std::time::Duration {
        self.retention
    }
}

/// The server's jobs.
#[derive(Debug)]
pub(crate) struct Jobs {
    max_jobs: usize,
    retention: std::time::Duration,
    survive_session: bool,
    table: Mutex<BTreeMap<String, Arc<Job>>>,
    next: AtomicU64,
    /// The private directory for output files, made on first need.
    dir: OnceLock<Result<PathBuf, String>>,
}

/// The server's job table as the server itself reaches it (MCP tasks are jobs); opaque
/// outside the crate. The default has no jobs (a server without `execute_command`).
#[derive(Debug, Clone, Default)]
pub struct JobTable(pub(crate) Option<Arc<Jobs>>);

/// What a job is made of, besides its command.
pub(crate) struct NewJob {
    pub(crate) command_line: String,
    pub(crate) cwd: String,
    pub(crate) timeout: u64,
    pub(crate) live: Arc<Live>,
    /// What it holds until it ends (its `max_concurrent` slot, its count in the metrics).
    pub(crate) hold: Box<dyn Send>,
}

impl Jobs {
    pub(crate) fn new(settings: &ExecSettings) -> Self {
        Self {
            max_jobs: settings.max_jobs,
            retention: settings.job_retention,
            survive_session: settings.jobs_survive_session,
            table: Mutex::default(),
            next: AtomicU64::new(1),
            dir: OnceLock::new(),
        }
    }

    fn table(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Job>>> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The directory for output files (created 0700 on first use).
    pub(crate) fn dir(&self) -> Result<PathBuf, ToolError> {
        self.dir
            .get_or_init(|| {
                let dir = super::watchdog::job_dir(std::process::id());
                match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => Ok(dir),
                    // Left by an earlier server with the same pid: start afresh.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let _ = std::fs::remove_dir_all(&dir);
                        std::fs::DirBuilder::new()
                            .mode(0o700)
                            .create(&dir)
                            .map(|()| dir.clone())
                            .map_err(|e| format!("cannot create {}: {e}", dir.display()))
                    }
                    Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
                }
            })
            .clone()
            .map_err(|why| ToolError::Unavailable(format!("jobs cannot keep their output: {why}")))
    }

    /// Remove the job directory with every output file in it (the server is stopping; the
    /// watchdog does the same when the server dies without stopping).
    pub(crate) fn remove_dir(&self) {
        if let Some(Ok(dir)) = self.dir.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// A fresh job id.
    pub(crate) fn next_id(&self) -> String {
        format!("job_{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether another job fits (`exec.max_jobs`).
    pub(crate) fn has_room(&self) -> bool {
        self.table().len() < self.max_jobs
    }

    /// The message for a job that does not fit.
    pub(crate) fn full(&self) -> ToolError {
        ToolError::Unavailable(format!(
            "the server already keeps {} jobs (exec.max_jobs = {}); wait for one to end and its retention to pass, or end one with job_kill",
            self.max_jobs, self.max_jobs
        ))
    }

    /// Register a started command as job `id` of `session`; given back when the table is
    /// full (the caller decides: refuse a background start, keep waiting on a yield). A task
    /// watches it: it releases the slot at the end, kills the job when the session ends
    /// (unless jobs survive sessions), and removes it after the retention.
    pub(crate) fn insert(
        self: &Arc<Self>,
        id: String,
        session: &Session,
        new: NewJob,
    ) -> Result<Arc<Job>, NewJob> {
        let mut table = self.table();
        if table.len() >= self.max_jobs {
            return Err(new);
        }
        let NewJob {
            command_line,
            cwd,
            timeout,
            live,
            hold,
        } = new;
        let job = Arc::new(Job {
            id: id.clone(),
            owner: session.id.clone(),
            command_line,
            cwd,
            timeout,
            started_at: SystemTime::now() - live.elapsed(),
            live,
            finished: Mutex::new(None),
            retention: self.retention,
        });
        table.insert(id, job.clone());
        drop(table);
        let jobs = self.clone();
        let watched = job.clone();
        let session_ended = session.ended.clone();
        let survive = self.survive_session;
        tokio::spawn(async move {
            tokio::select! {
                _ = watched.live.ended() => {}
                () = session_ended.cancelled(), if !survive => {
                    watched.live.kill();
                    watched.live.ended().await;
                }
            }
            drop(hold);
            *watched
                .finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            tokio::time::sleep(jobs.retention).await;
            jobs.remove(&watched.id);
        });
        Ok(job)
    }

    /// Remove a job and its files.
    fn remove(&self, id: &str) {
        if let Some(job) = self.table().remove(id) {
            job.live.remove_files();
        }
    }

    /// The job `id` of `session`, or an error that tells the model what exists.
    pub(crate) fn get(&self, session: &Session, id: &str) -> Result<Arc<Job>, ToolError> {
        let table = self.table();
        match table.get(id) {
            Some(job) if job.owner == session.id => Ok(job.clone()),
            _ => {
                let mine: Vec<&str> = table
                    .values()
                    .filter(|j| j.owner == session.id)
                    .map(|j| j.id.as_str())
                    .collect();
                Err(ToolError::NotFound(format!(
                    "no job {id:?} in this session ({}); job ids come from execute_command results, finished jobs are kept {} after their end",
                    if mine.is_empty() {
                        "it has no jobs".to_owned()
                    } else {
                        format!("its jobs: {}", mine.join(", "))
                    },
                    crate::settings::human(self.retention)
                )))
            }
        }
    }

    /// The jobs of `session`, oldest first.
    pub(crate) fn list(&self, session: &Session) -> Vec<Arc<Job>> {
        let mut jobs: Vec<Arc<Job>> = self
            .table()
            .values()
            .filter(|j| j.owner == session.id)
            .cloned()
            .collect();
        jobs.sort_by_key(|j| j.started_at);
        jobs
    }
}
