//! The audit log: one JSON object per line for every `tools/call`, written when the call ends,
//! whatever its outcome (ok, error, denied, declined, cancelled, timeout), so an operator can
//! answer "what did the agent run?".
//!
//! - Off by default; `[audit] path`, `--audit-log FILE`, `TOOLPORT_AUDIT_LOG`; `-` is stderr.
//!   Never stdout (the protocol channel on stdio).
//! - Redacted before it is written: every value of an `env` argument, every value whose key
//!   looks secret (`token`, `key`, `secret`, `password`, `authorization` …), every string
//!   equal to or containing a configured secret (API keys, the HTTP token), and the userinfo of
//!   every URL anywhere in the record (`https://user:password@host/` is written
//!   `https://***@host/`; the userinfo an argument held is scrubbed wherever else it appears).
//! - The file is created 0600 and appended with one `write` per record; it is rotated by size
//!   (`max_bytes`, keeping `keep` old files: `audit.log.1` is the newest).
//! - Writing never fails or delays a call: records go to a writer thread over a bounded
//!   channel, written in batches (within 10 ms); a write error is logged on stderr at most
//!   once a minute and the record is dropped.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, mpsc};
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::secret::{Secret, hide_userinfo, userinfos};
use crate::settings::{SettingError, check_range};
use crate::tool::{CallFacts, CommandFacts, ToolError};

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[redacted]";

/// Argument and field names whose values are secrets (matched case-insensitively as a part of
/// the name: `api_key`, `githubToken`, `db_password` …).
const SECRET_NAME_PARTS: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "authorization",
    "credential",
    "cookie",
];

/// Arguments whose every value is redacted (keys kept): environment variables carry secrets.
const ENV_ARGUMENTS: &[&str] = &["env"];

/// Default size at which the log is rotated: large enough for days of calls, small enough to
/// open in an editor.
const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Smallest rotation size accepted: a record must fit.
const MIN_MAX_BYTES: u64 = 64 * 1024;
/// Default number of rotated files kept.
const DEFAULT_KEEP: u32 = 5;
/// Most rotated files kept.
const MAX_KEEP: u32 = 100;
/// Shortest secret value scrubbed wherever it appears: shorter ones (`1`, `no`) would garble
/// every record they occur in, and hide nothing.
const MIN_SCRUBBED_CHARS: usize = 4;
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

/// The audit flag.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AuditArgs {
    /// Append a JSON line per tool call to FILE ("-": stderr). Default: off.
    #[arg(
        long = "audit-log",
        value_name = "FILE",
        env = "TOOLPORT_AUDIT_LOG",
        global = true
    )]
    pub(crate) path: Option<PathBuf>,
}

/// The `[audit]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileAudit {
    /// Where the log goes, relative to the config file's folder; `-` is stderr.
    path: Option<PathBuf>,
    /// Rotate when the file would grow past this many bytes.
    max_bytes: Option<u64>,
    /// Rotated files to keep.
    keep: Option<u32>,
}

/// Audit log settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditSettings {
    /// `None`: off. `-`: stderr.
    pub(crate) path: Option<PathBuf>,
    pub(crate) max_bytes: u64,
    pub(crate) keep: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            path: None,
            max_bytes: DEFAULT_MAX_BYTES,
            keep: DEFAULT_KEEP,
        }
    }
}

impl AuditSettings {
    /// Layer the file < environment/flag; relative paths resolve against the config file's
    /// folder (file) or the current directory (flag, environment).
    pub(crate) fn load(
        file: &FileAudit,
        args: &AuditArgs,
        file_dir: &Path,
        cwd: &Path,
    ) -> Result<Self, SettingError> {
        let resolve = |base: &Path, p: &PathBuf| {
            if p.as_os_str() == "-" {
                p.clone()
            } else {
                base.join(p)
            }
        };
        let path = match (&args.path, &file.path) {
            (Some(p), _) => Some(resolve(cwd, p)),
            (None, Some(p)) => Some(resolve(file_dir, p)),
            (None, None) => None,
        }
        .filter(|p| !p.as_os_str().is_empty());
        let max_bytes = file.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        check_range("audit.max_bytes", max_bytes, MIN_MAX_BYTES..=u64::MAX)?;
        let keep = file.keep.unwrap_or(DEFAULT_KEEP);
        check_range("audit.keep", keep, 0..=MAX_KEEP)?;
        Ok(Self {
            path,
            max_bytes,
            keep,
        })
    }
}

/// How a call ended, as the audit log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Outcome {
    /// A result that is not an error.
    Ok,
    /// An `isError` result (or a protocol error such as an unknown tool).
    Error,
    /// Refused by policy, confinement or a budget.
    Denied,
    /// The user declined the confirmation.
    Declined,
    /// The client cancelled it, or the server stopped.
    Cancelled,
    /// A time limit ended it.
    Timeout,
}

/// One audit record, before redaction.
#[derive(Debug)]
pub(crate) struct Record<'a> {
    pub(crate) session: &'a str,
    pub(crate) transport: &'a str,
    pub(crate) client: Option<&'a str>,
    pub(crate) tool: &'a str,
    pub(crate) args: &'a Map<String, Value>,
    pub(crate) outcome: Outcome,
    /// The error's kind and message, when not ok.
    pub(crate) error: Option<(&'a str, &'a str)>,
    pub(crate) duration: Duration,
    pub(crate) bytes_out: usize,
    /// For commands: argv, exit code, signal.
    pub(crate) command: Option<&'a CommandFacts>,
    /// When the call ended (the record's `ts`).
    pub(crate) at: SystemTime,
}

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

    /// Also redact `secret` from now on (the HTTP token, once the transport knows it).
    pub(crate) fn add_secret(&self, secret: Secret) {
        match self.secrets.write() {
            Ok(mut secrets) => secrets.push(secret),
            Err(poisoned) => poisoned.into_inner().push(secret),
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

/// Who made a call and with what.
struct Started {
    session: Arc<str>,
    transport: &'static str,
    client: Option<String>,
    tool: String,
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
                tool: &call.tool,
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
        session: Arc<str>,
        transport: &'static str,
        client: Option<String>,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Pending {
        Pending {
            log: self.clone(),
            call: Started {
                session,
                transport,
                client,
                tool: tool.to_owned(),
                args: args.clone(),
            },
        }
    }
}

/// How a call ended, for its record.
pub(crate) struct Ending {
    pub(crate) outcome: Outcome,
    /// The failure's kind and message, when not ok.
    pub(crate) error: Option<(&'static str, String)>,
    pub(crate) duration: Duration,
    pub(crate) bytes_out: usize,
    pub(crate) command: Option<CommandFacts>,
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

impl Outcome {
    /// The name, as in the audit log and the metrics' `outcome` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Denied => "denied",
            Self::Declined => "declined",
            Self::Cancelled => "cancelled",
            Self::Timeout => "timeout",
        }
    }
}

/// The audit outcome of a tool error: a refusal is `denied`, or `declined` when the user said
/// no; cancellation and time limits have their own.
pub(crate) fn outcome_of(error: &ToolError, facts: &CallFacts) -> Outcome {
    match error {
        ToolError::PermissionDenied(_) if facts.declined() => Outcome::Declined,
        ToolError::PermissionDenied(_) => Outcome::Denied,
        ToolError::Cancelled(_) => Outcome::Cancelled,
        ToolError::Timeout(_) => Outcome::Timeout,
        _ => Outcome::Error,
    }
}

/// The record as one JSON line, redacted.
fn render(r: &Record<'_>, secrets: &[Secret]) -> String {
    // Values removed from the arguments (by name, or as `env` values) are secrets for this
    // record too: a plugin passes them in its argv, a schema error repeats them.
    let mut removed = Vec::new();
    let args = redact_arguments(r.args, &mut removed);
    // The userinfo of a URL in an argument (`https://user:token@host`) too: a plugin may pass
    // its parts on in its argv, an error may repeat the password alone.
    strings(&args, &mut |text| {
        for userinfo in userinfos(text) {
            removed.push(userinfo.to_owned());
            if let Some((_, password)) = userinfo.split_once(':') {
                removed.push(password.to_owned());
            }
        }
    });
    let mut patterns: Vec<&str> = secrets
        .iter()
        .map(Secret::expose)
        .chain(removed.iter().map(String::as_str))
        .filter(|p| p.chars().count() >= MIN_SCRUBBED_CHARS)
        .collect();
    // Longest first, so a secret containing another is replaced whole.
    patterns.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let scrub = |text: &str| scrub(text, &patterns);
    let args = scrub_strings(args, &scrub);
    let mut object = json!({
        "ts": humantime::format_rfc3339_millis(r.at).to_string(),
        "session": r.session,
        "transport": r.transport,
        "client": r.client.map(scrub),
        "tool": scrub(r.tool),
        "args": args,
        "outcome": r.outcome,
        "duration_ms": u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
        "bytes_out": r.bytes_out,
    });
    if let Some(map) = object.as_object_mut() {
        if let Some((kind, message)) = r.error {
            map.insert(
                "error".into(),
                json!({"kind": kind, "message": scrub(message)}),
            );
        }
        if let Some(command) = r.command {
            map.insert(
                "argv".into(),
                Value::Array(
                    command
                        .argv
                        .iter()
                        .map(|a| Value::String(scrub(a)))
                        .collect(),
                ),
            );
            map.insert("exit_code".into(), json!(command.exit_code));
            map.insert("signal".into(), json!(command.signal));
        }
    }
    let mut line = object.to_string();
    line.push('\n');
    line
}

/// Whether an argument or field name looks like it holds a secret.
fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| lower.contains(part))
}

/// The arguments with secrets replaced by [`REDACTED`]; every string removed is pushed to
/// `removed`.
fn redact_arguments(args: &Map<String, Value>, removed: &mut Vec<String>) -> Value {
    Value::Object(
        args.iter()
            .map(|(name, value)| {
                let value = if ENV_ARGUMENTS.contains(&name.as_str()) {
                    redact_all(value, removed)
                } else {
                    redact(name, value, removed)
                };
                (name.clone(), value)
            })
            .collect(),
    )
}

fn redact(name: &str, value: &Value, removed: &mut Vec<String>) -> Value {
    if secret_name(name) {
        return redact_all(value, removed);
    }
    match value {
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact(name, v, removed)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact(k, v, removed)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Every leaf value replaced (keys kept: `env = {"A": "[redacted]"}`), its text remembered.
fn redact_all(value: &Value, removed: &mut Vec<String>) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_all(v, removed)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_all(v, removed)).collect()),
        Value::String(text) => {
            removed.push(text.clone());
            Value::String(REDACTED.into())
        }
        // A number or boolean under a secret-looking name (`max_tokens`) is hidden, but not
        // scrubbed from the rest of the record: `4096` is no secret worth garbling it for.
        _ => Value::String(REDACTED.into()),
    }
}

/// Call `f` with every string inside `value`.
fn strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(text) => f(text),
        Value::Array(items) => items.iter().for_each(|v| strings(v, f)),
        Value::Object(map) => map.values().for_each(|v| strings(v, f)),
        _ => {}
    }
}

/// Every string inside `value` passed through `scrub`.
fn scrub_strings(value: Value, scrub: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(text) => Value::String(scrub(&text)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| scrub_strings(v, scrub)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, scrub_strings(v, scrub)))
                .collect(),
        ),
        other => other,
    }
}

/// `text` with the userinfo of every URL in it hidden ([`hide_userinfo`]) and every pattern
/// replaced by [`REDACTED`].
fn scrub(text: &str, patterns: &[&str]) -> String {
    crate::secret::replace_all(&hide_userinfo(text), patterns.iter().copied(), REDACTED)
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

/// Open `path` for appending, creating it 0600. An existing file that others may read is
/// narrowed to 0600: the log holds what the agent ran.
fn open_append(path: &Path, reporter: &mut Reporter) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        let mode = file.metadata()?.permissions().mode();
        if mode & 0o077 != 0 {
            if let Err(error) = file.set_permissions(std::fs::Permissions::from_mode(0o600)) {
                reporter.report(
                    "the audit log can be read by other users and cannot be narrowed to 0600",
                    &error,
                );
            } else {
                tracing::warn!(path = %path.display(), "the audit log could be read by other users; narrowed it to 0600");
            }
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        let _ = reporter;
        options.open(path)
    }
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

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn secrets_are_redacted_by_name_by_env_and_by_value() {
        let a = args(json!({
            "command": "curl",
            "args": ["-H", "Authorization: Bearer tok-123456789", "--pass", "pw-planted"],
            "env": {"GITHUB_TOKEN": "ghp_x", "LANG": "C"},
            "api_key": "k",
            "options": {"password": "pw-planted", "user": "me"},
            "keys": null,
        }));
        let line = render(
            &Record {
                session: "s",
                transport: "stdio",
                client: None,
                tool: "t",
                args: &a,
                outcome: Outcome::Error,
                error: Some((
                    "invalid_arguments",
                    "`password`: \"pw-planted\" is too short",
                )),
                duration: Duration::ZERO,
                bytes_out: 0,
                command: Some(&CommandFacts {
                    argv: vec!["curl".into(), "--pass".into(), "pw-planted".into()],
                    ..CommandFacts::default()
                }),
                at: SystemTime::now(),
            },
            &[Secret::new("tok-123456789")],
        );
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            v["args"],
            json!({
                "command": "curl",
                "args": ["-H", "Authorization: Bearer [redacted]", "--pass", "[redacted]"],
                "env": {"GITHUB_TOKEN": "[redacted]", "LANG": "[redacted]"},
                "api_key": "[redacted]",
                "options": {"password": "[redacted]", "user": "me"},
                "keys": null,
            })
        );
        assert_eq!(
            v["argv"],
            json!(["curl", "--pass", "[redacted]"]),
            "removed values are scrubbed from argv"
        );
        assert!(!line.contains("pw-planted"), "{line}");
        assert!(!line.contains("tok-123456789"), "{line}");
    }

    /// A URL's userinfo is a secret wherever the URL is: hidden in the URL (`***@`), and its
    /// parts scrubbed where a command passes them on alone.
    #[test]
    fn the_userinfo_of_urls_is_redacted() {
        let a = args(json!({
            "url": "http://alice:s3cretpw@10.0.0.1/admin",
            "args": ["clone", "https://ghp_tokenplanted@github.com/o/r.git"],
        }));
        let line = render(
            &Record {
                session: "s",
                transport: "stdio",
                client: None,
                tool: "t",
                args: &a,
                outcome: Outcome::Denied,
                error: Some(("permission_denied", "wrong password s3cretpw")),
                duration: Duration::ZERO,
                bytes_out: 0,
                command: Some(&CommandFacts {
                    argv: vec!["curl".into(), "-u".into(), "alice:s3cretpw".into()],
                    ..CommandFacts::default()
                }),
                at: SystemTime::now(),
            },
            &[],
        );
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            v["args"],
            json!({
                "url": "http://***@10.0.0.1/admin",
                "args": ["clone", "https://***@github.com/o/r.git"],
            })
        );
        assert_eq!(v["argv"], json!(["curl", "-u", "[redacted]"]));
        assert_eq!(v["error"]["message"], json!("wrong password [redacted]"));
        for planted in ["s3cretpw", "alice", "ghp_tokenplanted"] {
            assert!(!line.contains(planted), "{planted}: {line}");
        }
    }

    #[test]
    fn a_record_is_one_json_line_with_the_fields() {
        let a = args(json!({"path": "x"}));
        let line = render(
            &Record {
                session: "s1",
                transport: "stdio",
                client: Some("client 1.0"),
                tool: "execute_command",
                args: &a,
                outcome: Outcome::Error,
                error: Some(("execution_failed", "boom")),
                duration: Duration::from_millis(12),
                bytes_out: 99,
                command: Some(&CommandFacts {
                    argv: vec!["false".into()],
                    exit_code: Some(1),
                    signal: None,
                    timed_out: false,
                }),
                at: SystemTime::now(),
            },
            &[],
        );
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(v["outcome"], json!("error"));
        assert_eq!(
            v["error"],
            json!({"kind": "execution_failed", "message": "boom"})
        );
        assert_eq!(v["argv"], json!(["false"]));
        assert_eq!(v["exit_code"], json!(1));
        assert_eq!(v["duration_ms"], json!(12));
        assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')));
    }

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
