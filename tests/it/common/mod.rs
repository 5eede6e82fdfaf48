//! Shared test helpers: start the real binary as a child process and talk MCP to it through
//! rmcp's client, with every await under a timeout.
//!
//! - this file: the client, connecting, calling a tool, reading results, `pick`, temp dirs;
//! - [`config`]: config files (`config_file`, `ALLOW_SHELLS`);
//! - [`process`]: processes seen through `/proc` (`alive`, `pids`, `eventually`);
//! - [`raw`]: a raw JSON-RPC session over stdio, for wire-level checks;
//! - [`web_fixture`]: a local HTTP server that plays every web search provider.

// Roots are deprecated by SEP-2577, but every current client still uses them.
#![allow(dead_code, deprecated)]

pub(crate) mod config;
pub(crate) mod haproxy;
pub(crate) mod http;
pub(crate) mod process;
pub(crate) mod python;
pub(crate) mod raw;
pub(crate) mod redis;
pub(crate) mod reference;
pub(crate) mod upstreams;
pub(crate) mod web_fixture;

pub(crate) use config::{ALLOW_SHELLS, config_file};
pub(crate) use raw::Raw;

/// The built-in tools a default server lists, in their listing order (the order tools/list,
/// the exports and the prompts keep: written once, here).
pub(crate) const BUILTIN_NAMES: [&str; 21] = [
    "read_file",
    "list_directory",
    "path_info",
    "grep",
    "glob",
    "read_many_files",
    "write_file",
    "edit_file",
    "apply_patch",
    "create_directory",
    "move_path",
    "copy_path",
    "delete_path",
    "undo_last_change",
    "execute_command",
    "job_output",
    "job_input",
    "job_kill",
    "job_list",
    "web_search",
    "fetch_url",
];

/// How many built-in tools a default server lists.
pub(crate) const BUILTIN_TOOLS: usize = BUILTIN_NAMES.len();

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::{assert_eq, assert_ne};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ListRootsResult, ProgressNotificationParam,
    Root,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::process::Command;
use tokio::sync::mpsc;

/// Generous: CI machines are shared and slow; a hang still fails the test.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Await `f`, failing the test if it takes longer than [`TIMEOUT`].
pub(crate) async fn within<F: Future>(f: F) -> F::Output {
    match tokio::time::timeout(TIMEOUT, f).await {
        Ok(out) => out,
        Err(_) => panic!("timed out after {TIMEOUT:?}"),
    }
}

/// The binary under test.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolport")
}

/// A command for the binary serving `root`, isolated from the developer's own config and
/// environment.
pub(crate) fn command(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--root").arg(root).args(args);
    isolate(&mut cmd, root);
    cmd
}

/// The binary serving `root` as a client gets it by default (`TOOLPORT_PAYLOAD` unset: the
/// payload form follows the client's name), with `args`.
pub(crate) fn default_form(root: &Path, args: &[&str]) -> Command {
    let mut cmd = command(root, args);
    cmd.env_remove("TOOLPORT_PAYLOAD");
    cmd
}

/// A command for the binary with exactly `args`, run in `cwd`.
pub(crate) fn bare_command(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    isolate(&mut cmd, cwd);
    cmd
}

/// Remove any TOOLPORT_* settings and point the config and data dirs somewhere empty. Every
/// tool is listed (`TOOLPORT_SURFACE=full`). Results carry their payload in both halves (`TOOLPORT_PAYLOAD=both`, what a client toolport does not
/// know gets by default too), so a test of a tool can read every field of its structured
/// result whatever the client's name; `payload.rs` tests the forms clients get by default.
pub(crate) fn isolate(cmd: &mut Command, dir: &Path) {
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLPORT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("TOOLPORT_PAYLOAD", "both")
        // Every test lists every tool, whatever its client's name and however many tools its
        // upstreams bring; `surface.rs` tests the surfaces clients get.
        .env("TOOLPORT_SURFACE", "full")
        .env("XDG_CONFIG_HOME", dir.join(".no-config"))
        // delete_path's trash (freedesktop: $XDG_DATA_HOME/Trash), never the developer's.
        .env("XDG_DATA_HOME", dir.join(".no-data"))
        .env("RUST_LOG", "warn")
        .current_dir(dir);
}

/// A client that declares the tasks extension (in `initialize`, or on 2026-07-28 in every
/// request's `_meta`).
#[derive(Clone, Default)]
pub(crate) struct TasksClient;

impl ClientHandler for TasksClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("toolport-tests-tasks", "0.0.1"),
        )
    }
}

/// A test client: declares roots only when given some, and forwards progress notifications
/// to a channel the test can await.
#[derive(Clone)]
pub(crate) struct TestClient {
    pub roots: Option<Arc<Mutex<Vec<String>>>>,
    /// `None`: no elicitation capability. `Some(true)`: accept every confirmation;
    /// `Some(false)`: decline.
    pub elicit: Option<bool>,
    /// The confirmation messages the server asked.
    pub asked: Arc<Mutex<Vec<String>>>,
    roots_asked_tx: mpsc::UnboundedSender<()>,
    roots_asked_rx: Arc<Mutex<Option<mpsc::UnboundedReceiver<()>>>>,
    progress_tx: mpsc::UnboundedSender<ProgressNotificationParam>,
    progress_rx: Arc<Mutex<Option<mpsc::UnboundedReceiver<ProgressNotificationParam>>>>,
    list_changed_tx: mpsc::UnboundedSender<()>,
    list_changed_rx: Arc<Mutex<Option<mpsc::UnboundedReceiver<()>>>>,
    /// The `clientInfo.name` it gives (the server shapes results by it).
    pub name: &'static str,
}

impl Default for TestClient {
    fn default() -> Self {
        let (progress_tx, rx) = mpsc::unbounded_channel();
        let (roots_asked_tx, roots_asked_rx) = mpsc::unbounded_channel();
        let (list_changed_tx, list_changed_rx) = mpsc::unbounded_channel();
        Self {
            list_changed_tx,
            list_changed_rx: Arc::new(Mutex::new(Some(list_changed_rx))),
            roots: None,
            elicit: None,
            asked: Arc::default(),
            roots_asked_tx,
            roots_asked_rx: Arc::new(Mutex::new(Some(roots_asked_rx))),
            progress_tx,
            progress_rx: Arc::new(Mutex::new(Some(rx))),
            name: "toolport-tests",
        }
    }
}

impl TestClient {
    /// A client that declares the roots capability and lists these root URIs.
    pub(crate) fn with_roots(uris: &[String]) -> Self {
        Self {
            roots: Some(Arc::new(Mutex::new(uris.to_vec()))),
            ..Default::default()
        }
    }

    /// A client that supports elicitation and answers every confirmation with `accept`.
    pub(crate) fn confirming(accept: bool) -> Self {
        Self {
            elicit: Some(accept),
            ..Default::default()
        }
    }

    /// One message each time the server asks for roots (can be taken once).
    pub(crate) fn roots_asked(&self) -> mpsc::UnboundedReceiver<()> {
        self.roots_asked_rx
            .lock()
            .unwrap()
            .take()
            .expect("receiver already taken")
    }

    /// Replace the roots this client lists.
    pub(crate) fn set_roots(&self, uris: &[String]) {
        *self
            .roots
            .as_ref()
            .expect("a client with roots")
            .lock()
            .unwrap() = uris.to_vec();
    }

    /// One message per `notifications/tools/list_changed` (can be taken once).
    pub(crate) fn list_changed(&self) -> mpsc::UnboundedReceiver<()> {
        self.list_changed_rx
            .lock()
            .unwrap()
            .take()
            .expect("list_changed receiver already taken")
    }

    /// The progress notifications this client receives (can be taken once).
    pub(crate) fn progress(&self) -> mpsc::UnboundedReceiver<ProgressNotificationParam> {
        self.progress_rx
            .lock()
            .unwrap()
            .take()
            .expect("progress receiver already taken")
    }
}

impl ClientHandler for TestClient {
    #[allow(deprecated)]
    fn get_info(&self) -> ClientConfig {
        let mut caps = if self.roots.is_some() {
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build()
        } else {
            ClientCapabilities::default()
        };
        if self.elicit.is_some() {
            caps.elicitation = Some(Default::default());
        }
        ClientConfig::new(caps, Implementation::new(self.name, "0.0.1"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let _ = self.roots_asked_tx.send(());
        let uris = self
            .roots
            .as_ref()
            .map(|r| r.lock().unwrap().clone())
            .unwrap_or_default();
        Ok(ListRootsResult::new(
            uris.into_iter().map(Root::new).collect(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        Ok(match self.elicit {
            Some(true) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::json!({"confirm": true})),
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed_tx.send(());
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress_tx.send(params);
    }
}

pub(crate) type Client = RunningService<RoleClient, TestClient>;

/// A client giving `name` as its `clientInfo.name`.
pub(crate) fn named(name: &'static str) -> TestClient {
    TestClient {
        name,
        ..TestClient::default()
    }
}

/// Start the binary serving `root` and connect a default client.
pub(crate) async fn connect(root: &Path) -> Client {
    connect_with(root, &[], TestClient::default()).await
}

/// Start the binary with extra arguments and connect `client`.
pub(crate) async fn connect_with(root: &Path, args: &[&str], client: TestClient) -> Client {
    connect_command(command(root, args), client).await
}

/// Start the binary serving `root` with `toml` as its config file (written into `root`) and
/// connect `client`.
pub(crate) async fn connect_configured(root: &Path, toml: &str, client: TestClient) -> Client {
    let config = config_file(root, toml);
    connect_with(root, &["--config", config.to_str().unwrap()], client).await
}

/// Start a prepared command and connect `client`.
pub(crate) async fn connect_command(cmd: Command, client: TestClient) -> Client {
    within(client.serve(spawn_server(cmd)))
        .await
        .expect("initialize")
}

/// Spawn a prepared command as an MCP server over its stdin and stdout, with its log
/// (stderr) discarded; `id()` gives its pid. Dropping the transport kills it, and closing
/// its stdin ends it anyway.
pub(crate) fn spawn_server(cmd: Command) -> TokioChildProcess {
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolport");
    transport
}

/// Call a tool and return the result (tool errors are results too).
/// A server over stdio for `root` with `toml` as its config, and its pid (to signal it).
pub(crate) async fn connect_with_pid(root: &Path, toml: &str) -> (u32, Client) {
    let config = config_file(root, toml);
    let transport = spawn_server(command(root, &["--config", config.to_str().unwrap()]));
    let pid = transport.id().unwrap();
    let client = within(TestClient::default().serve(transport))
        .await
        .unwrap();
    (pid, client)
}

pub(crate) async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let args = args
        .as_object()
        .cloned()
        .expect("arguments must be an object");
    within(client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)))
        .await
        .expect("tools/call answered")
}

/// The text of a result's first content block.
pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// Assert a successful result and return its structured content.
pub(crate) fn ok(result: &CallToolResult) -> Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "expected success, got: {}",
        text(result)
    );
    result
        .structured_content
        .clone()
        .expect("structured content")
}

/// Assert an error result and return its message.
pub(crate) fn err(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected an error, got: {result:?}"
    );
    assert!(result.structured_content.is_none());
    text(result)
}

/// A temp dir whose path is canonical (so expected absolute paths compare equal).
pub(crate) fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

/// The sha256 of `bytes` in lowercase hex, as the tools report it.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `file://` URL of an absolute path, as a client lists it in its roots.
pub(crate) fn file_url(path: &Path) -> String {
    url::Url::from_file_path(path)
        .unwrap_or_else(|()| panic!("not an absolute path: {}", path.display()))
        .to_string()
}

/// The object of just these `keys` of `value`, to compare the fields of a result that matter
/// as one object. A key that `value` lacks is left out, so the comparison shows it missing.
pub(crate) fn pick(value: &Value, keys: &[&str]) -> Value {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("not a JSON object: {value}"));
    let picked: Map<String, Value> = keys
        .iter()
        .filter_map(|&key| Some((key.to_owned(), object.get(key)?.clone())))
        .collect();
    Value::Object(picked)
}

/// The audit records written to `log` so far.
pub(crate) fn audit_records(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The names of the tools a server lists, in order.
pub(crate) async fn tool_names(client: &Client) -> Vec<String> {
    within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// Send a `tools/call` without waiting for its answer: the handle cancels it.
/// The next progress notification of the request whose token is `token`: those of earlier
/// requests still on their way (a cancelled call's) are skipped.
pub(crate) async fn progress_of(
    progress: &mut mpsc::UnboundedReceiver<ProgressNotificationParam>,
    token: &rmcp::model::ProgressToken,
) -> ProgressNotificationParam {
    within(async {
        loop {
            let seen = progress
                .recv()
                .await
                .expect("the client is still connected");
            if &seen.progress_token == token {
                return seen;
            }
        }
    })
    .await
}

pub(crate) async fn start_call(
    client: &Client,
    tool: &'static str,
    args: Value,
) -> rmcp::service::RequestHandle<RoleClient> {
    let params = CallToolRequestParams::new(tool)
        .with_arguments(args.as_object().cloned().expect("an object"));
    within(client.peer().send_cancellable_request(
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
        rmcp::service::PeerRequestOptions::no_options(),
    ))
    .await
    .expect("the request is sent")
}

/// Start `sh -c` that records its pid in `pidfile` and sleeps for five minutes, as a
/// cancellable `tools/call` of execute_command (the server must allow shells); returns once
/// the command runs.
pub(crate) async fn start_long_command(
    client: &Client,
    pidfile: &Path,
) -> rmcp::service::RequestHandle<RoleClient> {
    start_long_command_of(client, "execute_command", pidfile).await
}

/// [`start_long_command`] through `tool` (an upstream's execute_command).
pub(crate) async fn start_long_command_of(
    client: &Client,
    tool: &'static str,
    pidfile: &Path,
) -> rmcp::service::RequestHandle<RoleClient> {
    let script = format!("echo $$ > {}; exec sleep 300", pidfile.display());
    let handle = start_call(
        client,
        tool,
        serde_json::json!({"command": "sh", "args": ["-c", script]}),
    )
    .await;
    process::eventually("the command started", || !process::pids(pidfile).is_empty()).await;
    handle
}
