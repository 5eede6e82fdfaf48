//! The writer: [`AuditLog`] queues finished calls on a bounded channel to a writer thread,
//! which renders them (redacted) and appends them to stderr or a private file (0600 on Unix,
//! the folder's ACL on Windows: `private_file`) rotated by size, reporting its errors at most
//! once a minute.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, mpsc};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};
use toolport_tools::host::secret::Secret;

use super::private_file::{self, Narrowing};
use super::record::{Ending, Record};
use super::redact::render;
use super::settings::AuditSettings;
use crate::identity::Principal;

/// How often a failing audit log is reported on stderr.
const ERROR_REPORT_INTERVAL: Duration = Duration::from_secs(60);
/// Records queued for the writer at most: a disk that stalls must not grow the server's memory
/// without bound (at ~1 KiB a record, this is tens of MiB). Past it, records are dropped and
/// counted, and the drop is reported like a write error.
const QUEUE_RECORDS: usize = 32 * 1024;
/// How long the writer lets records gather after the first one of a burst before writing
/// them: a record reaches the file at most this late, and a busy server wakes the writer at
/// most this often.
const BATCH_WINDOW: Duration = Duration::from_millis(10);
/// How long the end of a server waits for queued records to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// What the writer thread is sent.
enum Message {
    /// One finished call, rendered (redacted, as JSON) by the writer: off the call's path,
    /// which only moves what it already owns.
    Record(Box<Finished>),
    /// Answer on this channel once everything before it is written.
    Flush(mpsc::Sender<()>),
}

/// The audit log: a writer thread behind a bounded channel.
#[derive(Debug)]
pub struct AuditLog {
    sender: mpsc::SyncSender<Message>,
    /// Records dropped because the queue was full, not yet reported.
    dropped: Arc<AtomicU64>,
    /// Values that must never appear: API keys, the HTTP token (added when it is known).
    /// Shared with the writer, which renders the records.
    secrets: Arc<RwLock<Vec<Secret>>>,
}

impl AuditLog {
    /// Start the log's writer; `None` when auditing is off. `secrets` are redacted wherever
    /// they appear. The file is opened (created 0600) by the writer: a path that cannot be
    /// written is reported on stderr, retried with each record, and never stops the server.
    pub(crate) fn open(settings: &AuditSettings, secrets: Vec<Secret>) -> Option<Arc<Self>> {
        let path = settings.path.clone()?;
        let sink = if path.as_os_str() == "-" {
            Sink::Stderr
        } else {
            Sink::File {
                file: None,
                size: 0,
                path,
                max_bytes: settings.max_bytes,
                keep: settings.keep,
            }
        };
        let (sender, receiver) = mpsc::sync_channel::<Message>(QUEUE_RECORDS);
        let dropped = Arc::new(AtomicU64::new(0));
        let writer_dropped = dropped.clone();
        let secrets = Arc::new(RwLock::new(secrets));
        let writer_secrets = secrets.clone();
        if let Err(error) = std::thread::Builder::new()
            .name("toolport-audit".into())
            .spawn(move || write_loop(sink, &receiver, &writer_dropped, &writer_secrets))
        {
            tracing::error!(%error, "cannot start the audit log writer; calls are not audited");
            return None;
        }
        Some(Arc::new(Self {
            sender,
            dropped,
            secrets,
        }))
    }

    /// Also redact `secret` from now on (the HTTP token, once the transport knows it; an
    /// upstream's, as it is configured or read). One already known is not added again.
    pub(crate) fn add_secret(&self, secret: Secret) {
        let mut secrets = self.secrets.write().unwrap_or_else(PoisonError::into_inner);
        if !secrets.contains(&secret) {
            secrets.push(secret);
        }
    }

    /// Queue one finished call for writing. Never blocks on I/O.
    fn record(&self, finished: Finished) {
        // Never wait for the writer: a full queue drops the record (counted and reported).
        // The writer thread ends only with the process; a send error means nothing to do.
        if let Err(mpsc::TrySendError::Full(_)) =
            self.sender.try_send(Message::Record(Box::new(finished)))
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Wait (at most [`FLUSH_TIMEOUT`]) until every record queued so far is written: the
    /// server calls this as it ends, so the last calls' records are not lost with the
    /// process.
    pub(crate) fn flush(&self) {
        let (done, written) = mpsc::channel();
        let deadline = Instant::now() + FLUSH_TIMEOUT;
        // The queue may be full: retry until there is room or time is up.
        let mut message = Message::Flush(done);
        loop {
            match self.sender.try_send(message) {
                Ok(()) => break,
                Err(mpsc::TrySendError::Full(back)) if Instant::now() < deadline => {
                    message = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return,
            }
        }
        if written
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_err()
        {
            tracing::warn!(
                "the audit log writer did not finish in time; the last records may be missing"
            );
        }
    }
}

/// Who made a call and with what, kept until the call ends and its record is written
/// ([`Pending::write`]). The observing [`crate::observe::Call`] decides when and with which
/// outcome (a dropped call is written as `cancelled`).
pub(crate) struct Pending {
    log: Arc<AuditLog>,
    call: Started,
}

/// Who makes a call: the session, its transport, the client's name, and the principal of
/// an authenticated HTTP request.
pub(crate) struct Caller<'a> {
    pub(crate) session: Arc<str>,
    pub(crate) transport: &'static str,
    pub(crate) client: Option<String>,
    pub(crate) principal: Option<&'a Principal>,
    /// The tool the call came through (`call_tool`), when it was not called directly.
    pub(crate) via: Option<&'static str>,
}

/// Who made a call and with what.
struct Started {
    session: Arc<str>,
    transport: &'static str,
    client: Option<String>,
    /// Who (`sub`, `client_id`), for an authenticated HTTP request.
    principal: Option<(String, Option<String>)>,
    tool: String,
    upstream: Option<String>,
    via: Option<&'static str>,
    args: Map<String, Value>,
}

/// A call and how it ended: what the writer renders into a record.
struct Finished {
    call: Started,
    ending: Ending,
    at: SystemTime,
}

impl Finished {
    /// The record, redacted (`secrets` and the values the redaction removed) as one line.
    fn render(&self, secrets: &[Secret]) -> String {
        let Self { call, ending, at } = self;
        render(
            &Record {
                session: &call.session,
                transport: call.transport,
                client: call.client.as_deref(),
                principal: call
                    .principal
                    .as_ref()
                    .map(|(subject, client)| (subject.as_str(), client.as_deref())),
                tool: &call.tool,
                upstream: call.upstream.as_deref(),
                via: call.via,
                args: &call.args,
                outcome: ending.outcome,
                error: ending
                    .error
                    .as_ref()
                    .map(|(kind, message)| (*kind, message.as_str())),
                duration: ending.duration,
                bytes_out: ending.bytes_out,
                command: ending.command.as_ref(),
                at: *at,
            },
            secrets,
        )
    }
}

impl AuditLog {
    /// The call's identity, for the record written when it ends.
    pub(crate) fn begin(
        self: &Arc<Self>,
        caller: Caller<'_>,
        tool: &str,
        upstream: Option<&str>,
        args: &Map<String, Value>,
    ) -> Pending {
        Pending {
            log: self.clone(),
            call: Started {
                session: caller.session,
                transport: caller.transport,
                client: caller.client,
                principal: caller
                    .principal
                    .map(|p| (p.subject.clone(), p.client_id.clone())),
                tool: tool.to_owned(),
                upstream: upstream.map(str::to_owned),
                via: caller.via,
                args: args.clone(),
            },
        }
    }
}

impl Pending {
    /// Queue the call's record (its time is now).
    pub(crate) fn write(self, ending: Ending) {
        self.log.record(Finished {
            call: self.call,
            ending,
            at: SystemTime::now(),
        });
    }
}

/// Where records go.
enum Sink {
    Stderr,
    File {
        /// Opened on the first record (and again after a failure).
        file: Option<File>,
        size: u64,
        path: PathBuf,
        max_bytes: u64,
        keep: u32,
    },
}

/// Open `path` for appending, as private as the OS allows (`private_file`: created 0600 on
/// Unix, an existing file others may read narrowed to 0600; on Windows the folder's ACL).
fn open_append(path: &Path, reporter: &mut Reporter) -> std::io::Result<File> {
    let (file, narrowing) = private_file::open_append(path)?;
    match narrowing {
        Narrowing::Untouched => {}
        Narrowing::Narrowed => {
            tracing::warn!(path = %path.display(), "the audit log could be read by other users; narrowed it to 0600");
        }
        Narrowing::Failed(error) => reporter.report(
            "the audit log can be read by other users and cannot be narrowed to 0600",
            &error,
        ),
    }
    Ok(file)
}

/// Problems of the writer, reported on stderr at most once a minute.
struct Reporter {
    last: Option<Instant>,
    target: String,
}

impl Reporter {
    fn report(&mut self, what: &str, error: &dyn std::fmt::Display) {
        if self
            .last
            .is_none_or(|t| t.elapsed() >= ERROR_REPORT_INTERVAL)
        {
            tracing::error!(%error, path = %self.target, "{what} (reported at most once a minute)");
            self.last = Some(Instant::now());
        }
    }
}

/// The writer thread: one `write` per record, rotation by size, errors reported at most once
/// a minute.
fn write_loop(
    mut sink: Sink,
    messages: &mpsc::Receiver<Message>,
    dropped: &AtomicU64,
    secrets: &RwLock<Vec<Secret>>,
) {
    let mut reporter = Reporter {
        last: None,
        target: match &sink {
            Sink::Stderr => "stderr".to_owned(),
            Sink::File { path, .. } => path.display().to_string(),
        },
    };
    // Blocked in `recv`, the writer is woken by the first record after a quiet spell; it then
    // sleeps for the batch window while the burst's records queue up without waking anyone,
    // and writes them all. One wake-up per window instead of one per call: a thread wake-up
    // costs a busy server more CPU than rendering the record does.
    while let Ok(first) = messages.recv() {
        std::thread::sleep(BATCH_WINDOW);
        for message in std::iter::once(first).chain(messages.try_iter()) {
            let lost = dropped.swap(0, Ordering::Relaxed);
            if lost > 0 {
                reporter.report(
                    "the audit log writer fell behind; records were dropped",
                    &format!("{lost} records dropped"),
                );
            }
            match message {
                Message::Record(finished) => {
                    let line = match secrets.read() {
                        Ok(secrets) => finished.render(&secrets),
                        Err(poisoned) => finished.render(&poisoned.into_inner()),
                    };
                    if let Err(error) = sink.write(line.as_bytes(), &mut reporter) {
                        reporter.report(
                            "cannot write the audit log; records are being dropped",
                            &error,
                        );
                    }
                }
                Message::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    }
}

impl Sink {
    fn write(&mut self, bytes: &[u8], reporter: &mut Reporter) -> std::io::Result<()> {
        match self {
            Self::Stderr => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes)
            }
            Self::File {
                file,
                size,
                path,
                max_bytes,
                keep,
            } => {
                if file.is_none() {
                    let opened = open_append(path, reporter)?;
                    *size = opened.metadata().map(|m| m.len()).unwrap_or(0);
                    *file = Some(opened);
                }
                if *size > 0 && *size + bytes.len() as u64 > *max_bytes {
                    // A rotation that fails (a read-only folder) keeps the record: it is
                    // appended to the current file, past its size, and rotation is tried again
                    // with the next record.
                    if let Err(error) = rotate(path, *keep) {
                        reporter.report(
                            "cannot rotate the audit log; writing on past its max_bytes",
                            &error,
                        );
                    } else {
                        *file = None;
                        let opened = open_append(path, reporter)?;
                        *size = opened.metadata().map(|m| m.len()).unwrap_or(0);
                        *file = Some(opened);
                    }
                }
                let Some(open) = file.as_mut() else {
                    return Err(std::io::Error::other("the audit log is not open"));
                };
                // One write call: with O_APPEND the record lands whole, after the last one.
                if let Err(error) = open.write_all(bytes) {
                    *file = None;
                    return Err(error);
                }
                *size += bytes.len() as u64;
                Ok(())
            }
        }
    }
}

/// `log` → `log.1` → `log.2` …, dropping the oldest beyond `keep` (with `keep` 0 the log is
/// just started afresh).
fn rotate(path: &Path, keep: u32) -> std::io::Result<()> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let from = numbered(n);
        if from.exists() {
            std::fs::rename(&from, numbered(n + 1))?;
        }
    }
    std::fs::rename(path, numbered(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_the_newest_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("audit.log");
        let mut sink = Sink::File {
            file: None,
            size: 0,
            path: path.clone(),
            max_bytes: 10,
            keep: 2,
        };
        let mut reporter = Reporter {
            last: None,
            target: String::new(),
        };
        for line in ["one\n", "two\n", "three\n", "four\n"] {
            sink.write(line.as_bytes(), &mut reporter)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(read(&path), "four\n");
        assert_eq!(read(&dir.path().join("audit.log.1")), "three\n");
        assert_eq!(read(&dir.path().join("audit.log.2")), "one\ntwo\n");
        assert!(!dir.path().join("audit.log.3").exists());
    }

    #[test]
    fn a_rotation_that_fails_keeps_the_records() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("audit.log");
        // `audit.log.1` is a folder with a file in it: the rename onto it fails.
        std::fs::create_dir_all(dir.path().join("audit.log.1/x")).unwrap_or_default();
        let mut sink = Sink::File {
            file: None,
            size: 0,
            path: path.clone(),
            max_bytes: 10,
            keep: 1,
        };
        let mut reporter = Reporter {
            last: None,
            target: String::new(),
        };
        for line in ["one\n", "two\n", "three\n", "four\n"] {
            sink.write(line.as_bytes(), &mut reporter)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_default(),
            "one\ntwo\nthree\nfour\n"
        );
        assert!(reporter.last.is_some(), "the failure was reported");
    }
}
