//! Reaching one upstream: a stdio command started with toolport's own process machinery (its
//! own process group or Job Object, so its whole tree is killed when it is stopped, and by the
//! watchdog when toolport dies however it dies), or a Streamable HTTP endpoint with its own
//! credentials. Either way the result is an initialized MCP client session.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use tokio_util::sync::CancellationToken;

use super::client::UpstreamClient;
use super::oauth::http::OAuthHttp;
use super::oauth::{Authorizer, Refused};
use super::oversize;
use super::settings::{Endpoint, UpstreamSettings};
use crate::tools::exec::{child_env, os};

/// Lines of an upstream's stderr kept to explain why it failed (the rest goes to the debug
/// log): a server that exits says why in its last lines.
const STDERR_TAIL_LINES: usize = 5;
/// How long a stdio upstream whose stdin was closed may take to exit by itself before it is
/// terminated.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// How long the reason an upstream exited may take to arrive: its stderr is read by a task of
/// its own, which may not have read the last lines when the exit is seen.
const STDERR_DRAIN: std::time::Duration = std::time::Duration::from_millis(250);

/// The longest stderr line kept: a server that writes a megabyte without a newline must not
/// fill toolport's memory.
const STDERR_LINE_BYTES: usize = 2048;

/// Why an upstream could not be reached, and what it wrote on stderr last (kept apart: its
/// stderr may hold anything, a connection string, a token, so it goes to toolport's log and
/// `toolport upstreams status`, never to a client).
#[derive(Debug, Default)]
pub(crate) struct Failure {
    pub(crate) why: String,
    pub(crate) stderr: Option<String>,
    /// Only a login helps (an OAuth upstream without usable tokens): not retried until its
    /// stored tokens change.
    pub(crate) needs_login: bool,
}

impl From<String> for Failure {
    fn from(why: String) -> Self {
        Self {
            why,
            stderr: None,
            needs_login: false,
        }
    }
}

impl From<Refused> for Failure {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::NeedsLogin(why) => Self {
                why,
                stderr: None,
                needs_login: true,
            },
            Refused::Failed(why) => why.into(),
        }
    }
}

impl From<&str> for Failure {
    fn from(why: &str) -> Self {
        why.to_owned().into()
    }
}

/// An initialized session with an upstream, and its process when toolport started it.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, UpstreamClient>,
    pub(crate) process: Option<Process>,
    /// For an OAuth upstream: fires when only a new login can help.
    pub(crate) lost: Option<CancellationToken>,
}

/// A started upstream's process tree and its last stderr lines.
pub(crate) struct Process {
    child: Child,
    tree: os::Tree,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The task reading stderr, until it is waited for.
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Process {
    /// Stop it, once its stdin is closed (its session ended): as MCP's stdio shutdown asks,
    /// it gets [`EXIT_GRACE`] to exit by itself (and finish what it does on the way out: flush
    /// its traces, close its files), then TERM to its group (or the Job Object's end), a
    /// grace, KILL; whatever it left behind is killed; reaped.
    pub(crate) async fn stop(mut self) {
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_ok()
        {
            self.tree.kill_rest();
        } else {
            self.tree.terminate(&mut self.child).await;
        }
        self.tree.finish().await;
    }

    /// [`Process::stop`] it, then its last lines on stderr, joined, for the log and
    /// `upstreams status`: read to the end once it is gone (bounded by [`STDERR_DRAIN`]), so
    /// they include a last line without a newline (a prompt waiting for an answer) and what
    /// it wrote as it was stopped.
    pub(crate) async fn stop_keeping_tail(mut self) -> Option<String> {
        let reader = self.reader.take();
        let tail = self.stderr.clone();
        self.stop().await;
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
        }
        tail_of(&tail)
    }
}

/// Why an upstream is not ready when its `start_timeout` passed.
pub(crate) fn start_timed_out(settings: &UpstreamSettings) -> String {
    format!(
        "it did not start and list its tools within {} (its `start_timeout`)",
        crate::settings::human(settings.start_timeout)
    )
}

fn tail_of(lines: &Mutex<VecDeque<String>>) -> Option<String> {
    let lines = lines.lock().unwrap_or_else(PoisonError::into_inner);
    (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
}

/// Start or reach the upstream and initialize an MCP session with it, by `deadline` (its
/// `start_timeout`). A stdio upstream's process is stopped with its tree if this fails: a
/// handshake that does not end by the deadline keeps the last lines the server wrote on
/// stderr (a server waiting for a prompt or a login says so there), then the process is
/// stopped as any is (stdin closed, TERM, KILL). If this future is dropped, the process is
/// killed at once. An HTTP upstream's token is shown to `secret` as it is read (the audit
/// log scrubs it).
pub(crate) async fn connect(
    settings: &UpstreamSettings,
    client: UpstreamClient,
    default_cwd: &Path,
    secret: &std::sync::Arc<dyn Fn(&str) + Send + Sync>,
    deadline: tokio::time::Instant,
) -> Result<Connection, Failure> {
    match &settings.endpoint {
        Endpoint::Command {
            program,
            args,
            env,
            env_pass,
            cwd,
        } => {
            let mut process = spawn(
                program,
                args,
                env,
                env_pass,
                cwd.as_deref(),
                default_cwd,
                &settings.name,
            )?;
            let (Some(stdout), Some(stdin)) =
                (process.child.stdout.take(), process.child.stdin.take())
            else {
                process.stop().await;
                return Err("its stdin and stdout could not be connected".into());
            };
            // Its answers too large to read fail their calls at once (oversize.rs); rmcp's
            // bound on a line is the one the watch counts against.
            let stdout = oversize::Watched::new(stdout, client.name.clone());
            let transport = AsyncRwTransport::new_client(stdout, stdin)
                .with_max_line_length(oversize::MAX_MESSAGE_BYTES);
            match tokio::time::timeout_at(deadline, client.serve(transport)).await {
                Ok(Ok(service)) => Ok(Connection {
                    service,
                    process: Some(process),
                    lost: None,
                }),
                Err(_) => Err(Failure {
                    why: start_timed_out(settings),
                    stderr: process.stop_keeping_tail().await,
                    needs_login: false,
                }),
                Ok(Err(error)) => {
                    // A server that failed the handshake by exiting says why as it goes.
                    let exited = tokio::time::timeout(STDERR_DRAIN, process.child.wait()).await;
                    let why = match exited {
                        Ok(Ok(status)) => {
                            format!("it exited ({status}) before completing the MCP handshake")
                        }
                        _ => format!("it did not complete the MCP handshake ({error})"),
                    };
                    Err(Failure {
                        why,
                        stderr: process.stop_keeping_tail().await,
                        needs_login: false,
                    })
                }
            }
        }
        Endpoint::Http {
            url,
            token_env,
            token_file,
            headers,
            oauth,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(token) = read_token(token_env.as_deref(), token_file.as_deref())? {
                secret(&token);
                config = config.auth_header(token);
            }
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| format!("header {name:?}: {e}"))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|e| format!("header {name}: {e}"))?;
                custom.insert(name, value);
            }
            let config = config.custom_headers(custom);
            let handshake_failed = |error: rmcp::service::ClientInitializeError| {
                format!(
                    "{} did not complete the MCP handshake ({error})",
                    crate::secret::display_url(url)
                )
            };
            let Some(oauth) = oauth else {
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = tokio::time::timeout_at(deadline, client.serve(transport))
                    .await
                    .map_err(|_| start_timed_out(settings))?
                    .map_err(handshake_failed)?;
                return Ok(Connection {
                    service,
                    process: None,
                    lost: None,
                });
            };
            let told = {
                let secret = secret.clone();
                Box::new(move |token: &str| secret(token))
            };
            let authorizer =
                tokio::time::timeout_at(deadline, Authorizer::open(settings, url, oauth, told))
                    .await
                    .map_err(|_| start_timed_out(settings))??;
            let lost = authorizer.lost().clone();
            let transport =
                StreamableHttpClientTransport::with_client(OAuthHttp::new(authorizer), config);
            let service = tokio::time::timeout_at(deadline, client.serve(transport))
                .await
                .map_err(|_| start_timed_out(settings))?;
            match service {
                Ok(service) => Ok(Connection {
                    service,
                    process: None,
                    lost: Some(lost),
                }),
                Err(_) if lost.is_cancelled() => Err(Failure {
                    why:
                        "its OAuth tokens were refused (the refresh token was rejected or expired)"
                            .into(),
                    stderr: None,
                    needs_login: true,
                }),
                Err(error) => Err(handshake_failed(error).into()),
            }
        }
    }
}

/// The bearer token of an HTTP upstream, read now (so a rotated file is picked up at the
/// next connection): from the variable or the file, trimmed.
fn read_token(env: Option<&str>, file: Option<&Path>) -> Result<Option<String>, String> {
    let token = match (env, file) {
        (Some(name), _) => Some(
            std::env::var(name)
                .map_err(|_| format!("its token variable {name} is not set (token_env)"))?,
        ),
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read its token file {} ({e})", path.display()))?,
        ),
        (None, None) => None,
    };
    match token.map(|t| t.trim().to_owned()) {
        Some(token) if token.is_empty() => {
            Err("its token (token_env or token_file) is empty".into())
        }
        other => Ok(other),
    }
}

/// Start a stdio upstream: the minimal environment plus its own variables, in its own
/// process tree, stdin and stdout piped for MCP, stderr read line by line into the debug log.
fn spawn(
    program: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    env_pass: &[String],
    cwd: Option<&Path>,
    default_cwd: &Path,
    name: &str,
) -> Result<Process, String> {
    let env = child_env(env_pass, Some(env)).map_err(|e| e.to_string())?;
    let cwd = cwd.unwrap_or(default_cwd);
    let resolved = os::resolve_program(OsStr::new(program), &env, cwd)
        .ok_or_else(|| format!("its command {program:?} was not found on PATH"))?;
    let mut cmd = Command::new(resolved);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let (mut child, tree) = os::Tree::spawn(&mut cmd)
        .map_err(|e| format!("its command {program:?} could not be started ({e})"))?;
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    let reader = child
        .stderr
        .take()
        .map(|pipe| tokio::spawn(read_stderr(pipe, name.to_owned(), stderr.clone())));
    Ok(Process {
        child,
        tree,
        stderr,
        reader,
    })
}

/// Read into `buf` up to a newline, at most [`STDERR_LINE_BYTES`]; `false` at the end.
async fn read_piece(reader: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>) -> bool {
    buf.clear();
    matches!(
        reader.take(STDERR_LINE_BYTES as u64).read_until(b'\n', buf).await,
        Ok(n) if n > 0
    )
}

/// Read an upstream's stderr until it closes: each line to the debug log, the last few kept.
async fn read_stderr(
    pipe: impl AsyncRead + Unpin,
    name: String,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        if !read_piece(&mut reader, &mut line).await {
            return;
        }
        if line.len() == STDERR_LINE_BYTES && line.last() != Some(&b'\n') {
            // The rest of an overlong line is skipped, a bounded piece at a time.
            let mut rest = Vec::with_capacity(STDERR_LINE_BYTES);
            while read_piece(&mut reader, &mut rest).await && rest.last() != Some(&b'\n') {}
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if text.is_empty() {
            continue;
        }
        tracing::debug!(upstream = %name, "stderr: {text}");
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_keeps_the_last_lines_each_cut_to_its_bound() {
        let mut input = vec![b'x'; STDERR_LINE_BYTES * 3];
        input.extend_from_slice(b"\n");
        for n in 0..STDERR_TAIL_LINES + 2 {
            input.extend_from_slice(format!("line {n}\n").as_bytes());
        }
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        read_stderr(&input[..], "test".into(), tail.clone()).await;
        let kept: Vec<String> = tail.lock().unwrap().iter().cloned().collect();
        let expected: Vec<String> = (2..STDERR_TAIL_LINES + 2)
            .map(|n| format!("line {n}"))
            .collect();
        assert_eq!(kept, expected);

        let long = vec![b'y'; STDERR_LINE_BYTES * 3];
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        read_stderr(
            [&long[..], b"\nafter\n"].concat().as_slice(),
            "test".into(),
            tail.clone(),
        )
        .await;
        let kept: Vec<String> = tail.lock().unwrap().iter().cloned().collect();
        assert_eq!(kept.len(), 2, "the long line once (cut), then the next");
        assert_eq!(kept[0].len(), STDERR_LINE_BYTES);
        assert_eq!(kept[1], "after");
    }
}
