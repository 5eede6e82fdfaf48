//! Upstreams: other MCP servers whose tools toolport serves beside its own, under one policy.
//! Their tools are [`AiTool`](crate::AiTool)s in the same registry, so listing, the exports,
//! the filters, input validation, confirmation, the audit log, metrics, traces and budgets
//! apply to them unchanged.
//!
//! - [`settings`]: `[[upstreams]]` entries (a stdio command or a Streamable HTTP URL);
//! - [`connect`](mod@connect): starting or reaching one (a command in its own process tree, killed with it);
//! - [`client`]: toolport as its client (progress, questions for the user, list changes);
//! - [`naming`]: the names its tools are served by (prefix modes, collisions);
//! - [`tool`]: one of its tools as an `AiTool`.
//!
//! Each upstream has a supervisor task of its own: it connects (bounded by `start_timeout`),
//! lists the tools, serves them until the connection ends, re-lists them when the upstream
//! says they changed, and after a failure or a crash starts it again with a growing delay.
//! Nothing waits for an upstream: toolport answers `initialize` and `tools/list` with what is
//! ready, and a tool set that changed (an upstream came, went or changed its tools) bumps
//! [`Upstreams::changes`], which the reload loop turns into a new served set and
//! `notifications/tools/list_changed`. A slow or dead upstream only ever delays its own calls.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::Peer;
use serde::Serialize;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::registry::ToolRegistry;
use crate::secret::Secret;

mod client;
mod connect;
mod naming;
mod oauth;
mod oversize;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use oversize::fuzz as fuzz_oversize;
mod settings;
mod tool;

// The login commands and the token folder's variable: the server's (`host`) alone.
#[cfg(feature = "host")]
pub use oauth::login::{Login, logout};
#[cfg(feature = "host")]
pub use oauth::store::TOKEN_DIR_VARIABLE;
pub use settings::UpstreamSettings;
pub(crate) use settings::{FileUpstream, PrefixMode};

use client::{Routes, UpstreamClient};
use connect::{Connection, Failure, connect};
use naming::{Assigned, Offer};
use tool::UpstreamTool;

/// The delay before the first restart of an upstream that failed or exited.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
/// The longest delay between restarts (it doubles from [`BACKOFF_FIRST`]): a server that
/// keeps failing is tried twice a minute, not in a loop.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long a call waits for a tool of an upstream that has just connected to be listed (the
/// served set is being rebuilt: tens of milliseconds).
const RELIST_GRACE: Duration = Duration::from_secs(2);

/// How often a ready upstream is pinged: a server that hangs, or an HTTP endpoint that went
/// away (its client does not end the session on a failed request), is noticed and started
/// again.
const PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a ping may take.
const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection that stayed up this long was healthy: the next failure starts the delays
/// from [`BACKOFF_FIRST`] again.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// What an upstream is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Being started (or reached) and initialized.
    Starting,
    /// Connected; its tools are served.
    Ready,
    /// It failed or exited; it is started again after a delay.
    Retrying,
    /// It authorizes with OAuth and has no usable tokens (never logged into, or its refresh
    /// token was refused): `toolport upstreams login NAME`; it starts again once that is done.
    NeedsLogin,
    /// `enabled = false`.
    Disabled,
    /// Stopped (toolport is stopping, or the upstream was removed from the config).
    Stopped,
}

/// One upstream as `toolport upstreams status` and the `toolport://upstreams` resource show
/// it.
#[derive(Debug, Clone, Serialize)]
pub struct UpstreamStatus {
    /// Its name (the prefix of its tools).
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// What it is doing.
    pub state: State,
    /// How many of its tools are offered (after `allow_tools` / `deny_tools`).
    pub tools: usize,
    /// `oauth` or `client_credentials` when it authorizes with OAuth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<settings::AuthKind>,
    /// Where its OAuth tokens are kept (the system credential store, or a file: its path),
    /// once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_store: Option<String>,
    /// How many times it was started again after a failure.
    pub restarts: u32,
    /// Why it is not ready (the last failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its last stderr lines when it failed (for the operator: left out of what clients see,
    /// [`UpstreamStatus::for_clients`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// When it is tried again (`"2s"`), while retrying.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_in: Option<String>,
}

impl UpstreamStatus {
    /// What a client may see (the `toolport://upstreams` resource): without the upstream's
    /// stderr, which may hold secrets.
    #[must_use]
    pub fn for_clients(mut self) -> Self {
        self.stderr = None;
        self
    }
}

/// One configured upstream and its live connection, shared by its supervisor and its tools.
pub(crate) struct Link {
    pub(crate) settings: UpstreamSettings,
    /// The operator's `--read-only`: only tools that declare themselves read-only are served.
    read_only: bool,
    pub(crate) routes: Arc<Routes>,
    live: Mutex<Live>,
    /// Fires to stop the supervisor (and with it the connection and the process).
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
    /// Told the token each connection reads.
    secrets: SecretWatch,
}

/// What changes as the upstream comes and goes.
struct Live {
    state: State,
    peer: Option<Peer<RoleClient>>,
    tools: Vec<rmcp::model::Tool>,
    restarts: u32,
    /// Why it is not ready (shown to clients: never its stderr).
    error: Option<String>,
    /// Its last stderr lines when it failed: for the log and `toolport upstreams status`
    /// only (a server's stderr may hold a connection string or a token).
    stderr: Option<String>,
    retry_at: Option<Instant>,
    /// Its first attempt has ended (ready, or failed).
    tried: bool,
}

impl Link {
    fn new(settings: UpstreamSettings, read_only: bool, secrets: SecretWatch) -> Arc<Self> {
        let state = if settings.enabled {
            State::Starting
        } else {
            State::Disabled
        };
        Arc::new(Self {
            settings,
            read_only,
            routes: Arc::default(),
            live: Mutex::new(Live {
                state,
                peer: None,
                tools: Vec::new(),
                restarts: 0,
                error: None,
                stderr: None,
                retry_at: None,
                tried: false,
            }),
            stop: CancellationToken::new(),
            secrets,
            task: Mutex::new(None),
        })
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live connection, when there is one.
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.live().peer.clone()
    }

    /// Why there is no connection, for a call's error.
    pub(crate) fn why_down(&self) -> String {
        self.live().why_down()
    }

    /// Of the tools it listed, those it serves: allowed and not denied, and under
    /// `--read-only` only those that declare themselves read-only.
    fn served<'a>(&'a self, live: &'a Live) -> impl Iterator<Item = &'a rmcp::model::Tool> {
        live.tools
            .iter()
            .filter(|t| self.settings.serves(&t.name) && (!self.read_only || declares_read_only(t)))
    }

    /// Its served tools, when it is ready.
    fn offered(&self) -> Option<Vec<rmcp::model::Tool>> {
        let live = self.live();
        (live.state == State::Ready).then(|| self.served(&live).cloned().collect())
    }

    /// Whether `name` has this upstream's prefix (`name__…`).
    fn prefixes(&self, name: &str) -> bool {
        name.strip_prefix(self.settings.name.as_str())
            .is_some_and(|rest| rest.starts_with(naming::SEPARATOR))
    }

    /// Whether one of its served tools could be served as `name` (prefixed, or under its own
    /// name), going by what it listed last.
    fn may_serve_as(&self, live: &Live, name: &str) -> bool {
        let upstream = &self.settings.name;
        self.served(live).any(|t| {
            naming::prefixed(upstream, &t.name) == name || naming::servable(&t.name) == name
        })
    }

    fn status(&self) -> UpstreamStatus {
        let live = self.live();
        UpstreamStatus {
            name: self.settings.name.clone(),
            transport: self.settings.transport(),
            state: live.state,
            tools: self.served(&live).count(),
            auth: self.settings.oauth().map(settings::OAuthSettings::kind),
            token_store: self
                .settings
                .oauth()
                .filter(|o| o.kind() == settings::AuthKind::Oauth)
                .and_then(|_| oauth::store::resolved(&self.settings.name)),
            restarts: live.restarts,
            error: live.error.clone().filter(|_| live.state != State::Ready),
            stderr: live.stderr.clone().filter(|_| live.state != State::Ready),
            next_attempt_in: live
                .retry_at
                .filter(|_| live.state == State::Retrying)
                .map(|at| {
                    crate::settings::human(round_ms(at.saturating_duration_since(Instant::now())))
                }),
        }
    }
}

impl Live {
    /// Whether it is in its first start (neither ready nor failed yet).
    fn first_start(&self) -> bool {
        self.state == State::Starting && !self.tried
    }

    /// Why there is no connection.
    fn why_down(&self) -> String {
        match (self.state, &self.error) {
            (State::Starting, _) => "it is starting".into(),
            (State::Disabled, _) => "it is disabled (enabled = false)".into(),
            (State::NeedsLogin, Some(error)) => error.clone(),
            (_, Some(error)) => error.clone(),
            (State::Stopped, None) => "it was stopped".into(),
            (_, None) => "it is not ready".into(),
        }
    }
}

/// A duration to the millisecond, for display.
fn round_ms(duration: Duration) -> Duration {
    Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// The configured upstreams and their supervisors.
pub struct Upstreams {
    links: Mutex<Vec<Arc<Link>>>,
    /// The operator's `--read-only`: only tools that declare themselves read-only
    /// (`readOnlyHint`) are served.
    read_only: bool,
    /// A stdio upstream's working directory unless it names one: the first root.
    default_cwd: PathBuf,
    /// Bumped whenever the tools on offer may have changed.
    version: Arc<watch::Sender<u64>>,
    /// The last `version` the served set was built from ([`Upstreams::applied`]).
    applied: watch::Sender<u64>,
    /// Who is told the upstreams' secrets ([`Upstreams::on_secret`]).
    secrets: SecretWatch,
}

/// Where the secrets the upstreams hold are told ([`Upstreams::on_secret`]): an entry's
/// ([`UpstreamSettings::secret_values`]) as it is configured, and each bearer token as a
/// connection reads it (a rotated token file is read again at the next connection).
#[derive(Clone, Default)]
struct SecretWatch(Arc<std::sync::OnceLock<SecretSink>>);

/// What [`Upstreams::on_secret`] is given.
type SecretSink = Arc<dyn Fn(Secret) + Send + Sync>;

impl SecretWatch {
    fn tell(&self, value: &str) {
        if let Some(sink) = self.0.get() {
            sink(Secret::new(value));
        }
    }

    /// Tell the secrets `settings` hold.
    fn tell_settings(&self, settings: &UpstreamSettings) {
        for value in settings.secret_values() {
            self.tell(&value);
        }
    }
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstreams")
            .field("count", &self.lock().len())
            .finish_non_exhaustive()
    }
}

/// What [`Upstreams::configure`] changed, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reconfigured {
    /// Started for the first time.
    pub added: Vec<String>,
    /// Stopped and forgotten.
    pub removed: Vec<String>,
    /// Stopped and started again with new settings.
    pub restarted: Vec<String>,
}

impl Upstreams {
    /// No upstreams yet; stdio ones start in `default_cwd` unless they name a folder. With
    /// `read_only` (the operator's `--read-only`), only their tools that declare themselves
    /// read-only are served.
    pub fn new(default_cwd: PathBuf, read_only: bool) -> Arc<Self> {
        Arc::new(Self {
            links: Mutex::new(Vec::new()),
            read_only,
            default_cwd,
            version: Arc::new(watch::channel(0).0),
            applied: watch::channel(0).0,
            secrets: SecretWatch::default(),
        })
    }

    /// Tell `sink` every secret the upstreams hold, from now on: the secret-looking `env`
    /// values and headers of each entry configured (those already configured at once), and
    /// each HTTP upstream's bearer token as it is read. The server's audit log scrubs them
    /// wherever they would appear. Only the first sink counts.
    pub fn on_secret(&self, sink: impl Fn(Secret) + Send + Sync + 'static) {
        if self.secrets.0.set(Arc::new(sink)).is_ok() {
            for link in self.lock().iter() {
                self.secrets.tell_settings(&link.settings);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Link>>> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serve these upstreams from now on: start the new ones (in the background, on the
    /// current runtime), stop the removed ones, restart the changed ones; leave the others
    /// running as they are.
    pub fn configure(&self, wanted: Vec<UpstreamSettings>) -> Reconfigured {
        let mut changes = Reconfigured::default();
        let mut links = self.lock();
        let mut next = Vec::with_capacity(wanted.len());
        for settings in wanted {
            match links.iter().find(|l| l.settings.name == settings.name) {
                Some(link) if link.settings == settings => next.push(link.clone()),
                found => {
                    // A changed entry's old supervisor is stopped (below) and waited for by
                    // the new one.
                    let predecessor = found.and_then(|old| {
                        old.stop.cancel();
                        old.task
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .take()
                    });
                    if found.is_some() {
                        changes.restarted.push(settings.name.clone());
                    } else {
                        changes.added.push(settings.name.clone());
                    }
                    self.secrets.tell_settings(&settings);
                    let link = Link::new(settings, self.read_only, self.secrets.clone());
                    self.start(&link, predecessor);
                    next.push(link);
                }
            }
        }
        for old in links.iter() {
            if !next.iter().any(|l| Arc::ptr_eq(l, old)) {
                if !changes.restarted.contains(&old.settings.name) {
                    changes.removed.push(old.settings.name.clone());
                }
                old.stop.cancel();
                old.live().peer = None;
            }
        }
        *links = next;
        drop(links);
        self.bump();
        changes
    }

    /// Start `link`'s supervisor, unless it is disabled, after `predecessor` has ended.
    fn start(&self, link: &Arc<Link>, predecessor: Option<JoinHandle<()>>) {
        if !link.settings.enabled {
            return;
        }
        let task = tokio::spawn(supervise(
            link.clone(),
            self.version.clone(),
            self.default_cwd.clone(),
            predecessor,
        ));
        *link.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
    }

    fn bump(&self) {
        bump(&self.version);
    }

    /// A receiver that sees every change of the tools on offer.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Whether no upstream is configured.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// For a call of a tool that is not served: when `name` has the prefix of an upstream that
    /// is not ready, that this is why (its tools come back when it does); when that upstream
    /// has just connected and has the tool, that it is being listed.
    pub fn unknown_hint(&self, name: &str) -> Option<String> {
        let links = self.lock();
        let link = links.iter().find(|link| link.prefixes(name))?;
        let upstream = &link.settings.name;
        let live = link.live();
        if live.state != State::Ready {
            return Some(format!(
                "{name:?} looks like a tool of the MCP server {upstream:?}, which is not connected: {}. Its tools are listed again when it is back (toolport restarts it by itself)",
                live.why_down()
            ));
        }
        link.may_serve_as(&live, name).then(|| {
                format!(
                    "the MCP server {upstream:?} has just connected and its tools are being listed again; call {name:?} again in a moment"
                )
            })
    }

    /// The current version of the tools on offer: what a rebuild of the served set started
    /// now takes in (give it to [`Upstreams::applied`] when it is served).
    pub fn version(&self) -> u64 {
        *self.version.borrow()
    }

    /// The served set now holds what the upstreams offered at `version`.
    pub fn applied(&self, version: u64) {
        self.applied.send_if_modified(|current| {
            let newer = version > *current;
            if newer {
                *current = version;
            }
            newer
        });
    }

    /// For a `tools/list`: wait until every upstream in its first start with a `list_wait`
    /// has started or failed and the served set holds its tools — at most the longest such
    /// `list_wait` (none: at once).
    pub async fn listing_ready(&self) {
        let wait = self
            .lock()
            .iter()
            .filter(|link| link.live().first_start())
            .map(|link| link.settings.list_wait)
            .max()
            .unwrap_or_default();
        if wait.is_zero() {
            return;
        }
        let _ = tokio::time::timeout(wait, async {
            self.settled().await;
            let target = self.version();
            let mut applied = self.applied.subscribe();
            while *applied.borrow_and_update() < target {
                if applied.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    /// How long a call of `name`, a tool not served (yet), may wait for it: an upstream that
    /// may serve it (its prefix, or a mode without one) is in its first start (up to its
    /// `start_timeout`), or has just connected and offers it (its listing is being rebuilt).
    /// `None`: nothing is coming; the call is answered at once. So a client that calls right
    /// after connecting (a one-shot command line, a script) reaches a tool that is on its way.
    pub fn pending_for(&self, name: &str) -> Option<Duration> {
        self.lock()
            .iter()
            .filter_map(|link| {
                if !link.prefixes(name) && link.settings.prefix == PrefixMode::Always {
                    return None;
                }
                let live = link.live();
                if live.first_start() {
                    Some(link.settings.start_timeout)
                } else {
                    (live.state == State::Ready && link.may_serve_as(&live, name))
                        .then_some(RELIST_GRACE)
                }
            })
            .max()
    }

    /// Every upstream's state, in configured order.
    pub fn status(&self) -> Vec<UpstreamStatus> {
        self.lock().iter().map(|link| link.status()).collect()
    }

    /// Resolves once every enabled upstream's first start has ended, ready or failed (each
    /// is bounded by its `start_timeout`, plus the few seconds a failed start takes to stop
    /// its process): for the one-shot commands, which list or call tools once.
    pub async fn settled(&self) {
        let mut changes = self.changes();
        loop {
            let pending = self.lock().iter().any(|link| link.live().first_start());
            if !pending || changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Stop every upstream and wait until their processes are gone.
    pub async fn shutdown(&self) {
        let links: Vec<Arc<Link>> = self.lock().drain(..).collect();
        let mut tasks = Vec::new();
        for link in &links {
            link.stop.cancel();
            if let Some(task) = link
                .task
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                tasks.push(task);
            }
        }
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Register every ready upstream's served tools into `all` (which holds the built-in and
    /// plugin tools), named by each upstream's prefix mode. Returns what was skipped and why.
    pub(crate) fn register(&self, all: &mut ToolRegistry) -> Vec<String> {
        let ready: Vec<(Arc<Link>, Vec<rmcp::model::Tool>)> = self
            .lock()
            .iter()
            .filter_map(|link| link.offered().map(|tools| (link.clone(), tools)))
            .collect();
        let taken: HashSet<String> = all.names().into_iter().map(str::to_owned).collect();
        let offers: Vec<Offer<'_>> = ready
            .iter()
            .map(|(link, tools)| Offer {
                upstream: &link.settings.name,
                prefix: link.settings.prefix,
                tools: tools.iter().map(|t| t.name.as_ref()).collect(),
            })
            .collect();
        let assigned = naming::assign(&taken, &offers);
        let mut skipped = Vec::new();
        for ((link, tools), names) in ready.iter().zip(assigned) {
            for (tool, name) in tools.iter().zip(names) {
                match name {
                    Assigned::Served(name) => {
                        let own = tool.name.to_string();
                        let served = UpstreamTool::new(name, link.clone(), tool.clone());
                        if let Err(error) = all.register(Arc::new(served)) {
                            skipped.push(format!(
                                "not serving tool {own:?} of upstream {}: {error}",
                                link.settings.name
                            ));
                        }
                    }
                    Assigned::Skipped(why) => skipped.push(why),
                }
            }
        }
        skipped
    }
}

/// Whether an upstream tool says it does not modify its environment (`readOnlyHint`): under
/// `--read-only` only such tools are served. A hint, as the server gives it; a tool without
/// it counts as one that writes.
fn declares_read_only(tool: &rmcp::model::Tool) -> bool {
    tool.annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false)
}

fn bump(version: &watch::Sender<u64>) {
    version.send_modify(|v| *v = v.wrapping_add(1));
}

/// How one attempt to serve an upstream ended.
enum Ended {
    /// Told to stop.
    Stopped,
    /// It failed to start or its connection ended: why (and its stderr), and how long it had
    /// been up.
    Failed { failure: Failure, up: Duration },
}

/// One upstream's life: connect, serve, and after a failure start again with a growing
/// delay, until told to stop. `predecessor` is the supervisor of the entry this one replaces
/// (its settings changed): it is waited for first, so the two never run at once (a server
/// holding a lock file, a database or a port would fail its first start).
async fn supervise(
    link: Arc<Link>,
    version: Arc<watch::Sender<u64>>,
    cwd: PathBuf,
    predecessor: Option<JoinHandle<()>>,
) {
    if let Some(predecessor) = predecessor {
        let _ = predecessor.await;
    }
    let mut delay = BACKOFF_FIRST;
    loop {
        {
            let mut live = link.live();
            live.state = State::Starting;
            live.retry_at = None;
        }
        bump(&version);
        // The tokens a login upstream starts with: a login made after this point is noticed
        // by the wait below, however soon after it comes.
        let stored = oauth::stored(&link.settings).await;
        match attempt(&link, &version, &cwd).await {
            Ended::Stopped => break,
            Ended::Failed { failure, .. } if failure.needs_login => {
                let why = oauth::needs_login_text(&link.settings.name, &failure.why);
                tracing::warn!(upstream = %link.settings.name, "upstream MCP server needs a login: {why}");
                {
                    let mut live = link.live();
                    live.state = State::NeedsLogin;
                    live.peer = None;
                    live.tools.clear();
                    live.error = Some(why);
                    live.stderr = None;
                    live.tried = true;
                }
                bump(&version);
                if !wait_for_login(&link, stored).await {
                    break;
                }
                delay = BACKOFF_FIRST;
            }
            Ended::Failed { failure, up } => {
                if up >= STABLE_AFTER {
                    delay = BACKOFF_FIRST;
                }
                tracing::warn!(
                    upstream = %link.settings.name,
                    retry_in = %crate::settings::human(delay),
                    stderr = failure.stderr.as_deref().unwrap_or(""),
                    "upstream MCP server unavailable: {}",
                    failure.why
                );
                {
                    let mut live = link.live();
                    live.state = State::Retrying;
                    live.peer = None;
                    live.tools.clear();
                    live.error = Some(failure.why);
                    live.stderr = failure.stderr;
                    live.retry_at = Some(Instant::now() + delay);
                    live.tried = true;
                }
                bump(&version);
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = link.stop.cancelled() => break,
                }
                delay = (delay * 2).min(BACKOFF_MAX);
                link.live().restarts += 1;
            }
        }
    }
    {
        let mut live = link.live();
        live.state = State::Stopped;
        live.peer = None;
        live.tools.clear();
        live.error = None;
        live.retry_at = None;
    }
    bump(&version);
}

/// Wait until upstream `link`'s stored tokens differ from `before` (a login was made), polling
/// every [`oauth::LOGIN_POLL`]; `false` when told to stop first.
async fn wait_for_login(link: &Link, before: Option<[u8; 32]>) -> bool {
    loop {
        tokio::select! {
            () = tokio::time::sleep(oauth::LOGIN_POLL) => {}
            () = link.stop.cancelled() => return false,
        }
        let now = oauth::stored(&link.settings).await;
        if now.is_some() && now != before {
            tracing::info!(upstream = %link.settings.name, "new OAuth tokens stored; connecting");
            return true;
        }
    }
}

/// Connect once and serve until the connection ends, the upstream stops answering pings, or
/// the supervisor is told to stop.
async fn attempt(
    link: &Arc<Link>,
    version: &Arc<watch::Sender<u64>>,
    cwd: &std::path::Path,
) -> Ended {
    let settings = &link.settings;
    let tools_changed = Arc::new(Notify::new());
    let client = UpstreamClient {
        name: Arc::from(settings.name.as_str()),
        routes: link.routes.clone(),
        tools_changed: tools_changed.clone(),
    };
    // Started and listed within `start_timeout`; each step stops what it started when it
    // fails, keeping the server's last stderr lines.
    let deadline = Instant::now() + settings.start_timeout;
    let start = async {
        let secret: Arc<dyn Fn(&str) + Send + Sync> = {
            let secrets = link.secrets.clone();
            Arc::new(move |token: &str| secrets.tell(token))
        };
        let connection = connect(settings, client, cwd, &secret, deadline).await?;
        let listed =
            tokio::time::timeout_at(deadline, connection.service.peer().list_all_tools()).await;
        let why = match listed {
            Ok(Ok(tools)) => return Ok((connection, tools)),
            Ok(Err(error)) => format!("it did not list its tools ({error})"),
            Err(_) => connect::start_timed_out(settings),
        };
        let stderr = stop_connection(connection).await;
        Err(Failure {
            why,
            stderr,
            needs_login: false,
        })
    };
    let started = tokio::select! {
        started = start => started,
        () = link.stop.cancelled() => return Ended::Stopped,
    };
    let (connection, tools) = match started {
        Ok(started) => started,
        Err(failure) => {
            return Ended::Failed {
                failure,
                up: Duration::ZERO,
            };
        }
    };
    let up_since = Instant::now();
    let Connection {
        service,
        process,
        lost,
    } = connection;
    let lost = lost.unwrap_or_default();
    let peer = service.peer().clone();
    tracing::info!(upstream = %settings.name, tools = tools.len(), "upstream MCP server ready");
    {
        let mut live = link.live();
        live.state = State::Ready;
        live.peer = Some(peer.clone());
        live.tools = tools;
        live.error = None;
        live.stderr = None;
        live.tried = true;
    }
    bump(version);
    let mut stop_service = Some(service.cancellation_token());
    let waiting = service.waiting();
    tokio::pin!(waiting);
    // The upstream's own tools/list_changed: listed again on a task of its own, so a server
    // that stalls its listing never holds up a stop.
    let mut relist: Option<JoinHandle<()>> = None;
    let mut pings = tokio::time::interval_at(Instant::now() + PING_INTERVAL, PING_INTERVAL);
    let ended = loop {
        tokio::select! {
            quit = &mut waiting => {
                tracing::debug!(upstream = %settings.name, ?quit, "upstream connection ended");
                break Some("its connection ended (the server exited or closed it)".to_owned());
            }
            () = tools_changed.notified() => {
                if relist.as_ref().is_none_or(JoinHandle::is_finished) {
                    relist = Some(tokio::spawn(list_again(link.clone(), peer.clone(), version.clone())));
                }
            }
            _ = pings.tick() => {
                // A server that stopped answering (hung, or an HTTP endpoint gone: the HTTP
                // client does not end the session on a failed request) is started again.
                if let Err(why) = ping(&peer).await {
                    if let Some(token) = stop_service.take() {
                        token.cancel();
                    }
                    let _ = (&mut waiting).await;
                    break Some(why);
                }
            }
            () = lost.cancelled() => {
                // Its tokens were refused and cannot be renewed: only a login helps.
                if let Some(token) = stop_service.take() {
                    token.cancel();
                }
                let _ = (&mut waiting).await;
                break Some("its OAuth tokens were refused (the refresh token was rejected or expired)".to_owned());
            }
            () = link.stop.cancelled() => {
                if let Some(token) = stop_service.take() {
                        token.cancel();
                    }
                let _ = (&mut waiting).await;
                break None;
            }
        }
    };
    if let Some(task) = relist {
        task.abort();
    }
    {
        let mut live = link.live();
        live.state = if ended.is_some() {
            State::Retrying
        } else {
            State::Stopped
        };
        live.peer = None;
        live.tools.clear();
        live.error = ended
            .as_ref()
            .map(|_| "its connection ended; it is being restarted".to_owned());
    }
    bump(version);
    let stderr = match process {
        Some(process) => process.stop_keeping_tail().await,
        None => None,
    };
    match ended {
        None => Ended::Stopped,
        Some(why) => Ended::Failed {
            failure: Failure {
                why,
                stderr,
                needs_login: lost.is_cancelled(),
            },
            up: up_since.elapsed(),
        },
    }
}

/// Answer a `ping` within [`PING_TIMEOUT`], or say why not.
async fn ping(peer: &Peer<RoleClient>) -> Result<(), String> {
    let request = rmcp::model::ClientRequest::PingRequest(Default::default());
    let answered = tokio::time::timeout(PING_TIMEOUT, async {
        peer.send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await?
            .await_response()
            .await
    })
    .await;
    match answered {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(format!("it did not answer a ping ({error})")),
        Err(_) => Err(format!(
            "it did not answer a ping within {}",
            crate::settings::human(PING_TIMEOUT)
        )),
    }
}

/// List the upstream's tools again (it said they changed) and offer the new list.
async fn list_again(link: Arc<Link>, peer: Peer<RoleClient>, version: Arc<watch::Sender<u64>>) {
    let name = &link.settings.name;
    match tokio::time::timeout(link.settings.start_timeout, peer.list_all_tools()).await {
        Ok(Ok(tools)) => {
            tracing::info!(upstream = %name, tools = tools.len(), "upstream tools changed");
            let mut live = link.live();
            if live.state == State::Ready {
                live.tools = tools;
            }
            drop(live);
            bump(&version);
        }
        Ok(Err(error)) => {
            tracing::warn!(upstream = %name, %error, "could not list the upstream's changed tools; keeping the ones listed before");
        }
        Err(_) => {
            tracing::warn!(upstream = %name, "listing the upstream's changed tools timed out; keeping the ones listed before");
        }
    }
}

/// Close a connection that will not be used, and stop its process: its last stderr lines.
async fn stop_connection(connection: Connection) -> Option<String> {
    let Connection {
        service, process, ..
    } = connection;
    let _ = service.cancel().await;
    match process {
        Some(process) => process.stop_keeping_tail().await,
        None => None,
    }
}
