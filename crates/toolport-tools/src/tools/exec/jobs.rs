//! Jobs: commands that outlive the call that started them — started with `background: true`,
//! or still running when the call's `yield_after` passed. The job tools (`job_output`,
//! `job_input`, `job_kill`, `job_list`) reach them by id.
//!
//! - A job belongs to the session that started it ([`Session`]); any other session is told
//!   "not found", whatever the id. A session's jobs are killed when it ends, unless the
//!   operator sets `exec.jobs_survive_session`.
//! - At most `exec.max_jobs` run at once, server-wide: a job that would be one more is refused
//!   (a background start) or not made (a call past `yield_after` keeps waiting for its end).
//!   Finished jobs do not count against that: they only hold output.
//! - A finished job is kept `exec.job_retention` for its output, then removed with its files;
//!   and at most `exec.max_jobs` finished jobs are kept (so the table holds at most twice
//!   `exec.max_jobs`, whatever the retention): past that the one that ended first is evicted
//!   early, with its files. Without that bound a client starting short jobs in a loop would
//!   grow the table (and the spill directory) for the whole retention.
//! - Eviction is one step under the table's lock: a lookup sees the whole job or "not found",
//!   never a job without its output. The output files go when the last holder of the job lets
//!   go of it (at once, unless a job tool is reading it that very moment; that read completes).
//! - A job holds its `exec.max_concurrent` slot until it ends.
//! - Its full output is in two files (`<id>.stdout`, `<id>.stderr`, 0600 on Unix) in the
//!   server's private job directory (`$TMPDIR/toolport-jobs-<server pid>`, 0700 on Unix; on
//!   Windows both inherit the user's temp folder's ACL, which is private to the user), besides
//!   the head and tail kept in memory. The server removes the directory when it stops; on Unix
//!   the watchdog also does when the server is killed (on Windows a killed server leaves it
//!   behind, with nothing running).
//! - Among replicas (the server's `[replicas]`, which attaches an [`Elsewhere`]), a job's id
//!   names the replica that runs it (`job_3@r2~1a2b3c4d`); the job tools send a request for
//!   another replica's job there ([`Jobs::elsewhere_for`]). Without one, ids are `job_N`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::process::Live;
use super::settings::ExecSettings;
use crate::background::{Elsewhere, SERVER_SEPARATOR, split_work_id};
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
    /// When it started, by the monotonic clock (which finished job ended first).
    started: Instant,
    pub(crate) live: Arc<Live>,
    /// How long it is kept after its end.
    retention: Duration,
}

impl Job {
    /// The session it belongs to.
    pub(crate) fn owner(&self) -> &Arc<str> {
        &self.owner
    }

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

    /// How long it is kept after its end (`exec.job_retention`), at most: it goes sooner when
    /// more than `exec.max_jobs` finished jobs are kept and it ended first.
    pub(crate) fn retention(&self) -> Duration {
        self.retention
    }

    /// When it ended, by the monotonic clock (`None` while it runs).
    fn ended(&self) -> Option<Instant> {
        self.live.end().map(|end| self.started + end.duration)
    }
}

/// The job table: id to job.
type Table = BTreeMap<String, Arc<Job>>;

/// The server's jobs.
#[derive(Debug)]
pub(crate) struct Jobs {
    /// Jobs running at once, at most; also the most finished ones kept.
    max_jobs: usize,
    retention: Duration,
    survive_session: bool,
    table: Mutex<Table>,
    next: AtomicU64,
    /// The private directory for output files, made on first need.
    dir: OnceLock<Result<PathBuf, String>>,
    /// The other replicas, when this server is one of them.
    elsewhere: OnceLock<Arc<dyn Elsewhere>>,
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
            elsewhere: OnceLock::new(),
        }
    }

    /// Make this server one of several replicas: job ids name it from now on, and requests for
    /// another replica's job go through `elsewhere`. Once, before the first job (a second
    /// call is ignored).
    pub(crate) fn attach(&self, elsewhere: Arc<dyn Elsewhere>) {
        let _ = self.elsewhere.set(elsewhere);
    }

    /// Where job `id` runs when another replica runs it: that replica's name and the way
    /// there. `None`: here (or nowhere: the lookup says "not found").
    pub(crate) fn elsewhere_for(&self, id: &str) -> Option<(String, Arc<dyn Elsewhere>)> {
        let elsewhere = self.elsewhere.get()?;
        match split_work_id(id) {
            (_, Some(server)) if server != elsewhere.here() => {
                Some((server.to_owned(), elsewhere.clone()))
            }
            _ => None,
        }
    }

    /// The other replicas, when this server is one.
    pub(crate) fn elsewhere(&self) -> Option<&Arc<dyn Elsewhere>> {
        self.elsewhere.get()
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Evict finished jobs past `exec.max_jobs`, the one that ended first first. Every reader
    /// of the table calls this under the lock ([`Jobs::with_table`]), so none sees more
    /// finished jobs than are kept (a job counts as finished the moment it ends, before its
    /// watcher runs). The evicted jobs are handed back, to be dropped after the lock.
    #[must_use = "drop the evicted jobs after releasing the lock"]
    fn evict(&self, table: &mut Table) -> Vec<Arc<Job>> {
        let mut finished: Vec<(Instant, &str)> = table
            .values()
            .filter_map(|job| Some((job.ended()?, job.id.as_str())))
            .collect();
        let Some(excess) = finished.len().checked_sub(self.max_jobs) else {
            return Vec::new();
        };
        finished.sort_unstable();
        let oldest: Vec<String> = finished[..excess]
            .iter()
            .map(|(_, id)| (*id).to_owned())
            .collect();
        oldest.iter().filter_map(|id| table.remove(id)).collect()
    }

    /// `f` on the table, with finished jobs past the cap evicted first (every reader goes
    /// through here); the evicted jobs are dropped after the lock, since the last drop of a
    /// job removes its output files.
    fn with_table<R>(&self, f: impl FnOnce(&mut Table) -> R) -> R {
        let mut table = self.table();
        let evicted = self.evict(&mut table);
        let result = f(&mut table);
        drop(table);
        drop(evicted);
        result
    }

    /// Jobs running now.
    fn running(table: &Table) -> usize {
        table.values().filter(|job| job.running()).count()
    }

    /// The directory for output files (created 0700 on first use).
    pub(crate) fn dir(&self) -> Result<PathBuf, ToolError> {
        self.dir
            .get_or_init(|| {
                let dir = super::os::job_dir(std::process::id());
                match super::os::create_private_dir(&dir) {
                    Ok(()) => Ok(dir),
                    // Left by an earlier server with the same pid: start afresh.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let _ = std::fs::remove_dir_all(&dir);
                        super::os::create_private_dir(&dir)
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
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        match self.elsewhere.get() {
            Some(elsewhere) => format!("job_{n}{SERVER_SEPARATOR}{}", elsewhere.here()),
            None => format!("job_{n}"),
        }
    }

    /// Whether another job may run (`exec.max_jobs` bounds running jobs only).
    pub(crate) fn has_room(&self) -> bool {
        Self::running(&self.table()) < self.max_jobs
    }

    /// The message for a job that does not fit: every slot is held by a running job.
    pub(crate) fn full(&self) -> ToolError {
        ToolError::Unavailable(format!(
            "{} jobs are running (exec.max_jobs = {}); wait for one to end or end one with job_kill",
            self.max_jobs, self.max_jobs
        ))
    }

    /// Register a started command as job `id` of `session`; given back when `exec.max_jobs`
    /// jobs run already (the caller decides: refuse a background start, keep waiting on a
    /// yield). A task watches it: it releases the slot at the end, kills the job when the
    /// session ends (unless jobs survive sessions), evicts finished jobs past the cap, and
    /// removes it after the retention.
    pub(crate) fn insert(
        self: &Arc<Self>,
        id: String,
        session: &Session,
        new: NewJob,
    ) -> Result<Arc<Job>, NewJob> {
        let (job, hold) = self.with_table(|table| {
            if Self::running(table) >= self.max_jobs {
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
                started: Instant::now() - live.elapsed(),
                live,
                retention: self.retention,
            });
            table.insert(id, job.clone());
            Ok((job, hold))
        })?;
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
            // Only the id from here on: a job evicted early must not be held (with its
            // files) until its retention would have passed.
            let id = watched.id.clone();
            drop(watched);
            jobs.trim();
            tokio::time::sleep(jobs.retention).await;
            jobs.remove(&id);
        });
        Ok(job)
    }

    /// Evict finished jobs past the cap now (a job has ended), so their files go without
    /// waiting for the next lookup.
    fn trim(&self) {
        self.with_table(|_| ());
    }

    /// Remove a job (its retention passed; evicted already is fine). Its files go with the
    /// last holder of it ([`Live`]'s drop), after the lock.
    fn remove(&self, id: &str) {
        let mut table = self.table();
        let removed = table.remove(id);
        drop(table);
        drop(removed);
    }

    /// The job `id` of `session`, or an error that tells the model what exists.
    pub(crate) fn get(&self, session: &Session, id: &str) -> Result<Arc<Job>, ToolError> {
        self.with_table(|table| self.find(table, session, id))
    }

    /// [`Jobs::get`]'s lookup, in a table already trimmed.
    fn find(&self, table: &Table, session: &Session, id: &str) -> Result<Arc<Job>, ToolError> {
        match table.get(id) {
            Some(job) if job.owner == session.id => Ok(job.clone()),
            _ => {
                let mine: Vec<&str> = table
                    .values()
                    .filter(|j| j.owner == session.id)
                    .map(|j| j.id.as_str())
                    .collect();
                Err(ToolError::NotFound(format!(
                    "no job {id:?} in this session ({}); job ids come from execute_command results, finished jobs are kept {} after their end, and at most {} of them server-wide (exec.max_jobs; the one that ended first goes first)",
                    if mine.is_empty() {
                        "it has no jobs".to_owned()
                    } else {
                        format!("its jobs: {}", mine.join(", "))
                    },
                    crate::settings::human(self.retention),
                    self.max_jobs
                )))
            }
        }
    }

    /// Every job, oldest first (what this replica tells the others).
    pub(crate) fn all(&self) -> Vec<Arc<Job>> {
        let mut jobs: Vec<Arc<Job>> = self.with_table(|table| table.values().cloned().collect());
        jobs.sort_by_key(|j| j.started);
        jobs
    }

    /// The jobs of `session`, oldest first.
    pub(crate) fn list(&self, session: &Session) -> Vec<Arc<Job>> {
        let mut jobs: Vec<Arc<Job>> = self.with_table(|table| {
            table
                .values()
                .filter(|j| j.owner == session.id)
                .cloned()
                .collect()
        });
        jobs.sort_by_key(|j| j.started);
        jobs
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::tools::exec::process::{self, RunSpec, StartOptions, Which};

    /// Longest a test waits for a command that prints one line.
    const TEST_WAIT: Duration = Duration::from_secs(10);

    /// A background job of `session` that runs `echo text`, registered and run to its end.
    async fn finished(jobs: &Arc<Jobs>, session: &Session, text: &str) -> Arc<Job> {
        let id = jobs.next_id();
        let spec = RunSpec {
            program: "echo".into(),
            args: vec![text.into()],
            cwd: std::fs::File::open("/").unwrap(),
            env: vec![("PATH".into(), crate::tools::exec::os::FALLBACK_PATH.into())],
            stdin: None,
            timeout: TEST_WAIT,
            max_output_bytes: 1024,
        };
        let options = StartOptions {
            spill: Some(jobs.dir().unwrap().join(&id)),
            spill_max_bytes: 1024 * 1024,
            stdin_open: false,
        };
        let live = process::start(spec, &options).unwrap();
        live.spill_now();
        let new = NewJob {
            command_line: format!("echo {text}"),
            cwd: "/".into(),
            timeout: TEST_WAIT.as_secs(),
            live: live.clone(),
            hold: Box::new(()),
        };
        let Ok(job) = jobs.insert(id, session, new) else {
            panic!("no room for a job of `echo {text}`");
        };
        tokio::time::timeout(TEST_WAIT, live.ended()).await.unwrap();
        job
    }

    /// Another replica, for the id rules: it forwards nothing.
    #[derive(Debug)]
    struct Replica(&'static str);

    #[async_trait::async_trait]
    impl Elsewhere for Replica {
        fn here(&self) -> &str {
            self.0
        }

        async fn forward(
            &self,
            _there: &str,
            _owner: &Session,
            _tool: &str,
            _args: serde_json::Map<String, serde_json::Value>,
        ) -> Result<serde_json::Value, ToolError> {
            Err(ToolError::Unavailable("not in this test".into()))
        }

        async fn listed_elsewhere(
            &self,
            _owner: &Session,
        ) -> Result<Vec<serde_json::Value>, String> {
            Ok(Vec::new())
        }
    }

    /// Alone, ids are `job_N` and every id is looked up here; among replicas they name this
    /// replica's start, and only another replica's id goes elsewhere.
    #[test]
    fn job_ids_name_their_replica_only_among_replicas() {
        let alone = Jobs::new(&ExecSettings::default());
        assert_eq!(alone.next_id(), "job_1");
        assert!(alone.elsewhere_for("job_1@r2~bb").is_none());
        let replica = Jobs::new(&ExecSettings::default());
        replica.attach(Arc::new(Replica("r1~aa")));
        assert_eq!(replica.next_id(), "job_1@r1~aa");
        assert!(replica.elsewhere_for("job_1@r1~aa").is_none());
        assert!(replica.elsewhere_for("job_1").is_none());
        let (there, _) = replica.elsewhere_for("job_7@r2~bb").unwrap();
        assert_eq!(there, "r2~bb");
        // An earlier start of this replica is another server too (its jobs are lost).
        let (there, _) = replica.elsewhere_for("job_7@r1~00").unwrap();
        assert_eq!(there, "r1~00");
    }

    /// Eviction is never seen half-done: a job evicted while a job tool holds it stays whole
    /// for that holder (its output reads back in full), a new lookup says "not found", and its
    /// files go when the holder lets go.
    #[tokio::test]
    async fn an_evicted_job_is_whole_for_its_holder_and_gone_for_a_lookup() {
        let jobs = Arc::new(Jobs::new(&ExecSettings {
            max_jobs: 1,
            ..ExecSettings::default()
        }));
        let session = Session::local();
        let first = finished(&jobs, &session, "one").await;
        let file = first.live.spill_file(Which::Stdout).0.unwrap();
        // Held, as job_output holds it between its lookup and its read.
        let held = jobs.get(&session, &first.id).unwrap();
        drop(first);
        // A second finished job: one finished is kept, so the first is evicted.
        let second = finished(&jobs, &session, "two").await;
        let listed: Vec<String> = jobs.list(&session).iter().map(|j| j.id.clone()).collect();
        assert_eq!(listed, std::slice::from_ref(&second.id));
        let gone = jobs.get(&session, &held.id).unwrap_err().to_string();
        assert!(gone.contains("no job \"job_1\""), "{gone}");
        assert_eq!(
            held.live.read(Which::Stdout, 0, 1024).unwrap().text,
            "one\n"
        );
        assert!(file.exists(), "the holder's files went from under it");
        drop(held);
        assert!(!file.exists(), "the evicted job's file is left");
        jobs.remove_dir();
    }
}
