//! The tool model: the [`AiTool`] trait every tool implements, the [`ToolContext`] a call runs
//! with, and the two things a call can produce ([`ToolOutput`] or [`ToolError`]).
//!
//! A tool is provider-neutral: it describes itself (name, schemas, annotations, instructions)
//! and executes with JSON arguments that the registry has already validated against its input
//! schema. Transports (MCP stdio/HTTP, the `call` subcommand) never talk to a tool directly;
//! they go through [`crate::registry::ToolRegistry::execute`].

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::instructions::{InstructionsFor, render_instructions};
pub(crate) use crate::schema::JsonObject;
use crate::workspace::{PathError, Workspace};

/// MCP tool annotations: hints for the client about what a call does. They are hints, not a
/// security boundary; the client may use them to decide when to ask the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may perform destructive updates (only meaningful when not read-only).
    pub destructive: bool,
    /// Calling it again with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool talks to an open world of external entities (the web), not a closed one.
    pub open_world: bool,
}

impl Default for Annotations {
    /// The MCP defaults: a tool that may write, destructively, is not idempotent, and is open
    /// world. Tools opt into the safer hints explicitly.
    fn default() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

/// What a successful call returns: the structured result (matching the tool's output schema),
/// a text rendering written for a model to read, and the images the result shows.
///
/// Images are their own part, not a field of the structured value or a kind of text: an
/// image is neither the payload a [`Payload`] form moves between the text block and the
/// structured value nor something a JSON field can carry cheaply (a model reading
/// `structuredContent` as JSON would get megabytes of base64 as text). Every protocol this
/// crate exports to has an image block beside text (MCP `image` content, the Anthropic and
/// OpenAI image parts), so a result carries them as such: the structured value describes an
/// image (type, size), [`ToolOutput::images`] holds its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The structured result; `None` only for tools without an output schema.
    pub structured: Option<Value>,
    /// Readable text. Not a JSON dump of `structured`: a model reads this.
    pub text: String,
    /// Images the result shows, after the text (MCP `image` content blocks). Empty for most
    /// tools.
    pub images: Vec<Image>,
    /// The MCP content blocks exactly, when the result came from another MCP server (an
    /// upstream): served as they are, where `text` and `images` are what the other formats
    /// read. `None` for every tool of this crate.
    #[doc(hidden)]
    pub mcp_content: Option<Vec<rmcp::model::ContentBlock>>,
}

impl ToolOutput {
    /// A result with both a structured value and its text rendering.
    pub fn new(structured: Value, text: impl Into<String>) -> Self {
        Self {
            structured: Some(structured),
            text: text.into(),
            images: Vec::new(),
            mcp_content: None,
        }
    }

    /// A result with only text (a tool without an output schema).
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            structured: None,
            text: text.into(),
            images: Vec::new(),
            mcp_content: None,
        }
    }
}

/// An image in a result: its bytes, base64-encoded (the form MCP and the model APIs take),
/// and its MIME type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The image's bytes in standard base64 (with padding).
    pub data: String,
    /// Its MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// Where a result's payload goes: the bulk of it (a file's text, grep's matches, a listing,
/// a command's output) that a tool would otherwise send twice, in the text block and in
/// `structuredContent`. Clients disagree on which of the two their model reads (Claude Code,
/// Codex and VS Code pass the model `structuredContent` alone; Claude Desktop, Zed and others
/// the text alone), so the server picks the form per session from the client's name — both
/// for a client it does not know — or as the operator sets it (`[tools] payload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Payload {
    /// The text block carries the payload; `structuredContent` carries the rest.
    Text,
    /// `structuredContent` carries everything; the text block says what the result is,
    /// without the payload.
    Structured,
    /// Both carry it (the spec's shape: for every client not known to read one of the two,
    /// and for local runs and exports, which read the text and the structured value
    /// separately).
    #[default]
    Both,
}

/// Why a tool call failed. Each message is written for a model to act on: what was wrong and
/// what is allowed. These become `isError: true` results, never JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments are wrong (beyond what the schema can express, or the schema check itself).
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The thing the call refers to does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Policy, confinement or the operating system refused the call.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The tool ran and failed.
    #[error("execution failed: {0}")]
    ExecutionFailed(String),
    /// The call exceeded its time limit.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The client cancelled the call.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// A dependency (e.g. a search provider) is unavailable right now.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The tool ran and reported its failure as a whole result: another MCP server's
    /// `isError` result, its content blocks and `structuredContent` kept, so an MCP client
    /// gets it as that server gave it. The other formats read its text (which is all a
    /// message reworded inside this crate changes).
    #[error("execution failed: {}", .0.text)]
    Reported(Box<ToolOutput>),
}

impl ToolError {
    /// The kind, as a stable snake_case name (audit records, metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments(_) => "invalid_arguments",
            Self::NotFound(_) => "not_found",
            Self::PermissionDenied(_) => "permission_denied",
            Self::ExecutionFailed(_) | Self::Reported(_) => "execution_failed",
            Self::Timeout(_) => "timeout",
            Self::Cancelled(_) => "cancelled",
            Self::Unavailable(_) => "unavailable",
        }
    }

    /// The same kind of error with its message rewritten by `reword` (to add where it
    /// happened, or what became of the work).
    pub(crate) fn reworded(self, reword: impl FnOnce(String) -> String) -> Self {
        match self {
            Self::InvalidArguments(m) => Self::InvalidArguments(reword(m)),
            Self::NotFound(m) => Self::NotFound(reword(m)),
            Self::PermissionDenied(m) => Self::PermissionDenied(reword(m)),
            Self::ExecutionFailed(m) => Self::ExecutionFailed(reword(m)),
            Self::Timeout(m) => Self::Timeout(reword(m)),
            Self::Cancelled(m) => Self::Cancelled(reword(m)),
            Self::Unavailable(m) => Self::Unavailable(reword(m)),
            Self::Reported(mut output) => {
                output.text = reword(std::mem::take(&mut output.text));
                Self::Reported(output)
            }
        }
    }
}

impl From<PathError> for ToolError {
    /// A path error as the tool error of the same kind, with the same message.
    fn from(error: PathError) -> Self {
        let message = error.to_string();
        match error {
            PathError::Empty { .. }
            | PathError::NulByte
            | PathError::IsADirectory { .. }
            | PathError::NotRegular { .. }
            | PathError::NoName { .. }
            | PathError::WindowsSyntax { .. } => Self::InvalidArguments(message),
            PathError::NotFound { .. }
            | PathError::NotADirectory { .. }
            | PathError::ParentMissing { .. } => Self::NotFound(message),
            PathError::OutsideRoots { .. }
            | PathError::GitDir { .. }
            | PathError::HoldsRoot { .. }
            | PathError::DanglingLink { .. }
            | PathError::Escapes { .. }
            | PathError::Secret { .. }
            | PathError::OsDenied { .. }
            | PathError::LinkLoop { .. } => Self::PermissionDenied(message),
            PathError::Io { .. } => Self::ExecutionFailed(message),
        }
    }
}

/// Reports progress of a long-running call. Over MCP this becomes `notifications/progress`
/// when (and only when) the request carried a progress token.
#[async_trait]
pub trait ProgressSink: Send + Sync {
    /// Report `progress` (monotonically increasing) out of an optional `total`, with a message.
    async fn report(&self, progress: f64, total: Option<f64>, message: Option<String>);
}

/// A progress sink that drops every report (no progress token, or a local run).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

#[async_trait]
impl ProgressSink for NoProgress {
    async fn report(&self, _progress: f64, _total: Option<f64>, _message: Option<String>) {}
}

/// The longest search hint listed: a short phrase, not a second description.
pub(crate) const MAX_SEARCH_HINT_CHARS: usize = 120;

/// A tool's default search hint, from what it says about itself: its title (else the first
/// sentence of its description), then its category and tags that the title does not already
/// name, lower case, at most [`MAX_SEARCH_HINT_CHARS`] characters: `read_file` (title "Read
/// file", tags filesystem, read, file, text) gets `read file: filesystem text`.
pub(crate) fn default_search_hint(
    title: Option<&str>,
    description: &str,
    category: Option<&str>,
    tags: &[&str],
) -> Option<String> {
    let base = title
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| first_sentence(description))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let named: Vec<&str> = base.split(' ').collect();
    let mut words: Vec<String> = Vec::new();
    for word in category.into_iter().chain(tags.iter().copied()) {
        let word = word.trim().to_lowercase();
        if !word.is_empty() && !named.contains(&word.as_str()) && !words.contains(&word) {
            words.push(word);
        }
    }
    let hint = match (base.is_empty(), words.is_empty()) {
        (true, true) => return None,
        (true, false) => words.join(" "),
        (false, true) => base,
        (false, false) => format!("{base}: {}", words.join(" ")),
    };
    Some(
        hint.chars()
            .take(MAX_SEARCH_HINT_CHARS)
            .collect::<String>()
            .trim_end()
            .to_owned(),
    )
}

/// The first sentence of `text` (up to the first `. `, or all of it).
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    text.split_once(". ")
        .map_or(text.trim_end_matches('.'), |(first, _)| first)
}

/// Characters a result's JSON has beyond its payload (paths, counts, offsets, `sha256`, and
/// `read_many_files`' per-file entries, at most 200): generous, as under-stating a result's
/// size makes a client cut it.
const RESULT_ENVELOPE_CHARS: u64 = 64 * 1024;

/// The smallest page a client's result cap makes a tool return: what `read_file`'s own
/// smallest `read_max_bytes` allows (a screenful of text).
const MIN_PAGE_BYTES: u64 = 1024;

/// The most characters JSON makes of one byte of text: newline, tab, `"` and backslash
/// become two characters, and a control character (an ANSI colour's ESC in command output)
/// six (`\u001b`).
const JSON_ESCAPE_WORST: u64 = 6;

/// The most characters a result can have whose payload is at most `payload_bytes` bytes of
/// text: a tool's largest result (`anthropic/maxResultSizeChars` declares it, at most
/// [`CLAUDE_CODE_RESULT_CAP`](crate::definition::CLAUDE_CODE_RESULT_CAP)). A
/// character is never more than its UTF-8 bytes, and JSON escaping makes at most
/// [`JSON_ESCAPE_WORST`] characters of one, so even a page of control characters stays under
/// it (under-stating makes a client cut the result; over-stating costs nothing).
pub(crate) fn result_chars(payload_bytes: u64) -> u64 {
    payload_bytes
        .saturating_mul(JSON_ESCAPE_WORST)
        .saturating_add(RESULT_ENVELOPE_CHARS)
}

/// The most payload bytes whose result fits in `chars` characters: the inverse of
/// [`result_chars`], and never below [`MIN_PAGE_BYTES`].
pub(crate) fn payload_bytes_within(chars: u64) -> u64 {
    (chars.saturating_sub(RESULT_ENVELOPE_CHARS) / JSON_ESCAPE_WORST).max(MIN_PAGE_BYTES)
}

/// The answer to a confirmation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmation {
    /// The user said yes (or the operator allowed unconfirmed calls).
    Accepted,
    /// The user said no, or dismissed the question.
    Declined,
    /// Nobody could be asked: why, and how the operator can allow such calls.
    Unavailable(String),
    /// The question must go back to the client in the response itself (the 2026-07-28
    /// protocol's `InputRequiredResult`); the client retries the call with the answer.
    AskClient,
}

/// Asks the human to confirm a risky call (see [`AiTool::confirmation`]): a command the
/// policy marks, a write under [`Settings::confirm_writes`](crate::Settings::confirm_writes).
/// Set one on a call's context with [`ToolContext::with_confirmer`].
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolport_tools::{Confirmation, Confirmer, Settings, Toolbox};
///
/// /// Says no to everything (a terminal agent would ask y/N here).
/// struct AlwaysNo;
///
/// #[async_trait::async_trait]
/// impl Confirmer for AlwaysNo {
///     async fn confirm(&self, question: &str) -> Confirmation {
///         eprintln!("declining: {question}");
///         Confirmation::Declined
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let root = std::env::temp_dir();
/// let toolbox = Toolbox::new(&Settings::new([&root]).confirm_writes())?;
/// let ctx = toolbox.context().with_confirmer(Arc::new(AlwaysNo));
/// let args = json!({"path": "never-written.txt", "content": "x"});
/// let result = toolbox
///     .registry()
///     .execute("write_file", args.as_object().cloned().unwrap_or_default(), &ctx)
///     .await;
/// assert!(result.unwrap_err().to_string().contains("declined"));
/// assert!(!root.join("never-written.txt").exists());
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Confirmer: Send + Sync {
    /// Ask the user about `description`.
    async fn confirm(&self, description: &str) -> Confirmation;
}

/// What happens to a call that needs the user's confirmation when nobody can be asked (the
/// client has no elicitation support, or there is no client, as with `toolport call`). The
/// operator sets it with `[exec] confirm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmFallback {
    /// Refuse the call, explaining how to allow it (the default).
    #[default]
    Deny,
    /// Run it without asking: for headless use where the operator accepts the risk.
    Allow,
}

impl ConfirmFallback {
    /// The answer when nobody can be asked (`reason` says why), per this fallback.
    pub fn answer(self, reason: &str, description: &str) -> Confirmation {
        match self {
            Self::Allow => {
                tracing::info!(
                    call = description,
                    "running without confirmation (exec.confirm = \"allow\")"
                );
                Confirmation::Accepted
            }
            Self::Deny => Confirmation::Unavailable(format!(
                "this call needs the user's confirmation ({description}), but {reason}. The operator can allow such calls without asking by setting `confirm = \"allow\"` in the [exec] section of the config file"
            )),
        }
    }
}

/// A confirmer for contexts with nobody to ask. What happens then is the operator's choice
/// (`exec.confirm`): refuse with an explanation (the default), or run without asking.
#[derive(Debug, Clone)]
pub(crate) struct NoConfirmer {
    /// Why nobody can be asked here, shown to the model.
    pub(crate) reason: String,
    /// The operator's choice for this case.
    pub(crate) fallback: ConfirmFallback,
}

#[async_trait]
impl Confirmer for NoConfirmer {
    async fn confirm(&self, description: &str) -> Confirmation {
        self.fallback.answer(&self.reason, description)
    }
}

/// A confirmer that accepts everything: for an operator who said so explicitly
/// (`toolport call --yes`).
#[derive(Debug, Default, Clone, Copy)]
pub struct AlwaysConfirm;

#[async_trait]
impl Confirmer for AlwaysConfirm {
    async fn confirm(&self, _description: &str) -> Confirmation {
        Confirmation::Accepted
    }
}

/// Puts an upstream MCP server's question for the user (an elicitation it sends in the middle
/// of a call) to the client of the call it belongs to. The server sets one on a call's
/// context when its client can answer such questions.
#[doc(hidden)]
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Ask the call's client; `Err` says why it could not be asked.
    async fn elicit(
        &self,
        request: rmcp::model::ElicitRequestParams,
    ) -> Result<rmcp::model::ElicitResult, String>;
}

/// What a command did, recorded by the executor for the audit log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandFacts {
    /// The program and its arguments as the policy saw them (not the sandbox shim).
    pub argv: Vec<String>,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, by name (`SIGKILL`), when one did.
    pub signal: Option<String>,
    /// Whether it was killed at its timeout.
    pub timed_out: bool,
}

/// Facts about one call that its result does not carry, for the audit log.
#[derive(Debug, Default)]
pub struct CallFacts {
    command: std::sync::Mutex<Option<CommandFacts>>,
    declined: std::sync::atomic::AtomicBool,
    /// The background work the call left running or reports on, by id.
    job: std::sync::Mutex<Option<CallJob>>,
}

impl CallFacts {
    /// The command the call ran (the last one, if it ran several).
    pub(crate) fn set_command(&self, facts: CommandFacts) {
        match self.command.lock() {
            Ok(mut slot) => *slot = Some(facts),
            Err(poisoned) => *poisoned.into_inner() = Some(facts),
        }
    }

    /// The command the call ran, if any.
    pub fn command(&self) -> Option<CommandFacts> {
        match self.command.lock() {
            Ok(slot) => slot.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The user declined the call's confirmation.
    pub(crate) fn set_declined(&self) {
        self.declined
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the user declined the call's confirmation.
    pub fn declined(&self) -> bool {
        self.declined.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The call left work running ([`crate::background`]): its command became a job
    /// (`background`, or still running at `yield_after`).
    pub(crate) fn set_job(&self, id: String) {
        self.put_job(CallJob::Started(id));
    }

    /// The call's result reports on work started earlier (job_output).
    pub(crate) fn set_job_shown(&self, id: String) {
        self.put_job(CallJob::Shown(id));
    }

    fn put_job(&self, job: CallJob) {
        match self.job.lock() {
            Ok(mut slot) => *slot = Some(job),
            Err(poisoned) => *poisoned.into_inner() = Some(job),
        }
    }

    /// The background work the call left running or reports on, if any.
    pub fn job(&self) -> Option<CallJob> {
        match self.job.lock() {
            Ok(slot) => slot.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// The background work ([`crate::background`]) a call's result is about, by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallJob {
    /// The call left it running: for a client that takes tasks, the call is answered with
    /// it as a task.
    Started(String),
    /// The call reports on work started earlier: its output is linked, it is no task.
    Shown(String),
}

impl CallJob {
    /// The work's id.
    pub fn id(&self) -> &str {
        match self {
            Self::Started(id) | Self::Shown(id) => id,
        }
    }
}

/// Everything a call runs with. Cheap to clone (all `Arc`s).
#[derive(Clone)]
pub struct ToolContext {
    /// Fires when the client cancels the request or the server shuts down.
    pub cancel: CancellationToken,
    /// Where progress goes.
    pub progress: Arc<dyn ProgressSink>,
    /// The roots this call may touch (the operator's, possibly narrowed by the client's).
    pub workspace: Arc<Workspace>,
    /// Who confirms risky calls ([`ToolContext::with_confirmer`]).
    #[doc(hidden)]
    pub confirmer: Arc<dyn Confirmer>,
    /// What the call did beyond its result, for the audit log.
    #[doc(hidden)]
    pub facts: Arc<CallFacts>,
    /// The session the call belongs to (jobs it starts are that session's).
    #[doc(hidden)]
    pub session: Session,
    /// Where the result's payload goes (the session's client decides, see [`Payload`]).
    #[doc(hidden)]
    pub payload: Payload,
    /// The most characters of one result the session's client keeps (its result cap), when
    /// it has a known one or the operator set one: a tool's default page then fits under it
    /// ([`ToolContext::page_bytes`]). `None`: the tools' own limits alone.
    #[doc(hidden)]
    pub result_cap: Option<u64>,
    /// Who answers an upstream server's questions during this call (the client, when it
    /// can); `None`: they are refused with the reason.
    #[doc(hidden)]
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// The W3C `traceparent` of this call's span (or the client's), passed on to an upstream
    /// server so its span continues the trace.
    #[doc(hidden)]
    pub traceparent: Option<String>,
}

/// Who a call belongs to: a job belongs to the session that started it, and is killed when
/// that session ends (unless the operator keeps jobs).
#[derive(Debug, Clone)]
pub struct Session {
    /// Stable for the session, random (never the HTTP token).
    pub id: Arc<str>,
    /// Fires when the session ends.
    pub ended: CancellationToken,
}

/// Random bytes in a session id (hex): unique enough to tell sessions apart.
const SESSION_ID_BYTES: usize = 8;

impl Session {
    /// A session of its own (a local run, a test).
    pub(crate) fn local() -> Self {
        Self {
            id: Self::new_id(),
            ended: CancellationToken::new(),
        }
    }

    /// A new random session id (for the audit log, traces and job ownership; never the HTTP
    /// token).
    pub fn new_id() -> Arc<str> {
        Arc::from(
            crate::secret::random_token(SESSION_ID_BYTES).unwrap_or_else(|_| "unknown".to_owned()),
        )
    }
}

impl ToolContext {
    /// A context for a local run: no progress, nobody to confirm (the operator's
    /// `exec.confirm`, `fallback`, decides), a fresh cancellation token.
    pub fn local(workspace: Arc<Workspace>, fallback: ConfirmFallback) -> Self {
        Self {
            cancel: CancellationToken::new(),
            progress: Arc::new(NoProgress),
            confirmer: Arc::new(NoConfirmer {
                reason: "there is no user to ask in this context (pass --yes to `toolport call` to confirm)".into(),
                fallback,
            }),
            workspace,
            facts: Arc::default(),
            session: Session::local(),
            payload: Payload::Both,
            result_cap: None,
            elicitor: None,
            traceparent: None,
        }
    }

    /// How many bytes of payload this call's default page holds: the tool's own `limit`, or
    /// less when the client's result cap ([`ToolContext::result_cap`]) would not keep a result
    /// that large. The result says where to go on (`next_offset` and the like) as with any
    /// page.
    pub(crate) fn page_bytes(&self, limit: u64) -> u64 {
        self.result_cap
            .map_or(limit, |cap| limit.min(payload_bytes_within(cap)))
    }
}

impl ToolContext {
    /// Ask `confirmer` before a risky call runs (a command the policy marks, a write under
    /// `confirm_writes`); its [`Confirmation::Declined`] reaches the model as a refusal.
    #[must_use]
    pub fn with_confirmer(mut self, confirmer: Arc<dyn Confirmer>) -> Self {
        self.confirmer = confirmer;
        self
    }

    /// Send the call's progress reports to `progress`.
    #[must_use]
    pub fn with_progress(mut self, progress: Arc<dyn ProgressSink>) -> Self {
        self.progress = progress;
        self
    }

    /// Cancel the call when `cancel` fires (a running command is killed with its process
    /// group).
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

/// One tool. Object safe: the registry holds `Arc<dyn AiTool>`. For a tool whose schema is
/// known at compile time, [`TypedTool`](crate::TypedTool) is shorter; implement this for one
/// built from data at run time.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolport_tools::{AiTool, JsonObject, Settings, ToolContext, ToolError, ToolOutput, Toolbox};
///
/// /// Says hello to whoever it is told.
/// struct Hello {
///     schema: Arc<JsonObject>,
/// }
///
/// #[async_trait::async_trait]
/// impl AiTool for Hello {
///     fn name(&self) -> &str {
///         "hello"
///     }
///     fn description(&self) -> &str {
///         "Greet someone by name."
///     }
///     fn input_schema(&self) -> Arc<JsonObject> {
///         self.schema.clone()
///     }
///     async fn execute(&self, args: JsonObject, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         let name = args["name"].as_str().unwrap_or("world");
///         Ok(ToolOutput::new(json!({"greeting": format!("hello, {name}")}), format!("hello, {name}")))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
/// let hello = Hello { schema: Arc::new(schema.as_object().cloned().unwrap_or_default()) };
/// let mut toolbox = Toolbox::new(&Settings::new([std::env::temp_dir()]).read_only())?;
/// toolbox.add(Arc::new(hello))?;
/// let args = json!({"name": "Ada"}).as_object().cloned().unwrap_or_default();
/// let output = toolbox.registry().execute("hello", args, &toolbox.context()).await?;
/// assert_eq!(output.text, "hello, Ada");
/// // The schema is checked before the tool runs: the model reads what was wrong.
/// let error = toolbox.registry().execute("hello", JsonObject::new(), &toolbox.context()).await;
/// assert!(error.unwrap_err().to_string().contains("\"name\" is a required property"));
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait AiTool: Send + Sync + 'static {
    /// Unique name, `[A-Za-z0-9_-]{1,64}`: valid for MCP, OpenAI/OpenRouter, Anthropic and Ollama.
    fn name(&self) -> &str;

    /// A short human-readable title.
    fn title(&self) -> Option<&str> {
        None
    }

    /// What the tool does, stating its limits and defaults plainly.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments; `type: "object"` at the top. Shared, not copied: the
    /// registry's definition and the MCP listing hold the same schema.
    fn input_schema(&self) -> Arc<JsonObject>;

    /// JSON Schema of the structured result, if the tool returns one.
    fn output_schema(&self) -> Option<Arc<JsonObject>> {
        None
    }

    /// A category for filtering (exact match), e.g. `"filesystem"`.
    fn category(&self) -> Option<&str> {
        None
    }

    /// Tags for filtering (a filter matches tools that have all requested tags).
    fn tags(&self) -> Vec<&str> {
        Vec::new()
    }

    /// MCP behaviour hints.
    fn annotations(&self) -> Annotations {
        Annotations::default()
    }

    /// A short phrase a client's tool search matches on (Claude Code's
    /// `anthropic/searchHint`). The default derives it from the title (else the description's
    /// first sentence), the category and the tags.
    fn search_hint(&self) -> Option<String> {
        default_search_hint(
            self.title(),
            self.description(),
            self.category(),
            &self.tags(),
        )
    }

    /// The most characters one result of this tool can have, from its size limits (Claude
    /// Code's `anthropic/maxResultSizeChars`); `None` (the default) when no byte limit bounds
    /// it.
    fn max_result_chars(&self) -> Option<u64> {
        None
    }

    /// Prompt text teaching a model to use the tool, in the recommended shape (Tool,
    /// Description, Purpose, Parameters, Expected Output, Example). The default generates it
    /// from the name, description and schemas.
    fn instructions(&self) -> String {
        render_instructions(InstructionsFor {
            name: self.name(),
            description: self.description(),
            purpose: None,
            input_schema: &self.input_schema(),
            output_schema: self.output_schema().as_deref(),
            example: None,
        })
    }

    #[doc(hidden)]
    /// Whether the registry may build this tool's definition and listing on first use (a
    /// `tools/list`, a call, an export) instead of at registration. Only for a tool whose input
    /// schema is an object schema by construction (the typed tools: their schemas are derived
    /// on first use, which keeps them out of a cold start); for any other tool the registry
    /// checks the definition when the tool is registered and refuses an invalid one there.
    fn describe_on_first_use(&self) -> bool {
        false
    }

    #[doc(hidden)]
    /// The input schema already compiled, for a tool that compiled it to check itself (a
    /// plugin manifest does, when it loads): the registry then does not compile it again.
    /// `None` (the default): the registry compiles [`AiTool::input_schema`].
    fn compiled_input_schema(&self) -> Option<jsonschema::Validator> {
        None
    }

    #[doc(hidden)]
    /// The MCP server this tool is served from (an `[[upstreams]]` entry's name), for the
    /// audit log; `None` (the default) for a tool of toolport's own.
    fn upstream(&self) -> Option<&str> {
        None
    }

    #[doc(hidden)]
    /// Whether this tool runs a program a plugin manifest declares (its category and hints
    /// are the manifest's word, so a server classing tools by what they can do must not
    /// take them for a built-in's); `false` (the default) for every other tool.
    fn plugin(&self) -> bool {
        false
    }

    /// A human-readable description of this call if it is risky enough to need the user's
    /// confirmation first; `None` (the default) runs it without asking. `workspace` is the
    /// call's (a plugin resolves its path parameters to decide on the final argv).
    fn confirmation(&self, _args: &JsonObject, _workspace: &Workspace) -> Option<String> {
        None
    }

    /// For the fuzz target `tool_arguments` (fuzz/; `fuzzing` feature only): whether
    /// `args`, already valid for the input schema, parse into the tool's own parameter type
    /// as a call would parse them. `None` (the default): the tool has no such type.
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    fn parse_arguments(&self, _args: &JsonObject) -> Option<Result<(), ToolError>> {
        None
    }

    /// Run the call. `args` has already been validated against [`AiTool::input_schema`].
    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_under_a_cap_makes_a_result_under_it() {
        for cap in [100_000, 500_000, 1_000_000, 10_000_000] {
            let page = payload_bytes_within(cap);
            assert!(result_chars(page) <= cap, "{cap}: {page}");
            assert!(
                result_chars(page + 1) > cap,
                "{cap}: the page is the largest that fits"
            );
        }
        assert_eq!(payload_bytes_within(0), MIN_PAGE_BYTES);
    }

    #[test]
    fn the_default_search_hint_is_the_title_and_the_tags_it_does_not_name() {
        assert_eq!(
            default_search_hint(
                Some("Read file"),
                "Read a text file.",
                Some("filesystem"),
                &["filesystem", "read", "file", "text"]
            )
            .as_deref(),
            Some("read file: filesystem text")
        );
        // No title (a plugin): the description's first sentence.
        assert_eq!(
            default_search_hint(None, "Count  lines\nof code. Fast.", None, &["Metrics"])
                .as_deref(),
            Some("count lines of code: metrics")
        );
        assert_eq!(default_search_hint(None, " ", None, &[]), None);
        let long = "word ".repeat(100);
        let hint = default_search_hint(Some(&long), "", None, &[]).unwrap();
        assert!(hint.chars().count() <= MAX_SEARCH_HINT_CHARS, "{hint}");
        assert!(!hint.ends_with(' '));
    }
}
