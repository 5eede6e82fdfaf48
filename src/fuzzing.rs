//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`, off by default;
//! FUZZING.md says how to run them).
//!
//! The code worth fuzzing (the stdio framing, argument validation, plugin manifests and argv
//! templates, the DuckDuckGo page parser, the command policy, path confinement, the HTTP
//! gate) is crate-private, and stays so: `unreachable_pub` keeps the public surface to what
//! `main`, the tests and the benches use. This module is the one exception, compiled only with
//! the feature: thin `pub` wrappers, one group per target, that call the real functions and
//! hand back plain data (strings, JSON values, std files) so the targets can check their
//! properties without reaching into the crate's types. Nothing in the crate uses this module;
//! it adds no behaviour, only access.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use futures::FutureExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::Transport;
use serde_json::{Map, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::config::Config;
use crate::plugins::manifest::{self, Limits};
use crate::plugins::template::{self, ExpandError};
use crate::registry::ToolRegistry;
use crate::schema::JsonObject;
use crate::secret::Secret;
use crate::tools::exec::policy::{self, Decision};
use crate::tools::web::duckduckgo::DuckDuckGo;
use crate::tools::web::provider::{Query, SearchProvider};
use crate::transport::http::gate::{Gate, OriginRule};
use crate::transport::http::settings::HttpSettings;
use crate::transport::stdio::StdioTransport;
use crate::typed::TypedTool;
use crate::workspace::{DEFAULT_SECRET_PATTERNS, Workspace};

// ---------------------------------------------------------------------------------------------
// 1. stdio framing

/// What the stdio transport made of an input: the messages it handed to rmcp (as JSON) and
/// the bytes it wrote to stdout (its own error replies; nothing else writes in this harness).
#[derive(Debug, Default)]
pub struct StdioRun {
    /// Each message `receive` returned, in order.
    pub received: Vec<Value>,
    /// Everything written to the output.
    pub written: Vec<u8>,
}

/// The message a line is, as the transport would parse it (`None`: not a valid message).
pub fn stdio_message(line: &[u8]) -> Option<Value> {
    serde_json::from_slice::<ClientJsonRpcMessage>(line)
        .ok()
        .and_then(|message| serde_json::to_value(message).ok())
}

/// An output that appends to a shared buffer.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Ok(mut out) = self.0.lock() {
            out.extend_from_slice(buf);
        }
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

thread_local! {
    static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok();
}

/// Feed `pieces` to a [`StdioTransport`] one after the other. After each piece, `receive` is
/// polled until it has nothing complete to return, and then dropped while it waits for more,
/// as rmcp's `select!` drops it (so a line split across pieces crosses such a drop). After the
/// last piece the input ends and what remains is drained.
pub fn stdio_feed(pieces: &[&[u8]]) -> StdioRun {
    RUNTIME.with(|runtime| {
        let Some(runtime) = runtime else {
            panic!("no tokio runtime for the stdio harness");
        };
        runtime.block_on(async {
            let sink = Sink::default();
            let total: usize = pieces.iter().map(|p| p.len()).sum();
            let (mut client, server) = tokio::io::duplex(total + 1);
            let mut transport = StdioTransport::new(server, sink.clone());
            let mut received = Vec::new();
            let mut keep = |message: ClientJsonRpcMessage| {
                received.push(serde_json::to_value(message).unwrap_or(Value::Null));
            };
            for piece in pieces {
                if client.write_all(piece).await.is_err() {
                    break;
                }
                while let Some(Some(message)) = transport.receive().now_or_never() {
                    keep(message);
                    // Let the writer task drain the replies queued so far.
                    tokio::task::yield_now().await;
                }
                tokio::task::yield_now().await;
            }
            drop(client);
            while let Some(message) = transport.receive().await {
                keep(message);
            }
            let _ = transport.close().await;
            let written = sink.0.lock().map(|out| out.clone()).unwrap_or_default();
            StdioRun { received, written }
        })
    })
}

// ---------------------------------------------------------------------------------------------
// 2. argument validation against the built-in tools' schemas

type ParamsCheck = Box<dyn Fn(&JsonObject) -> Result<(), String>>;

/// Every built-in tool of a default configuration, registered as `assemble` registers them
/// (compiled validators), with a check that arguments parse into each tool's params type.
pub struct ToolSchemas {
    registry: ToolRegistry,
    params: Vec<(&'static str, ParamsCheck)>,
}

fn params_check<T: TypedTool>(tool: &T) -> (&'static str, ParamsCheck) {
    let name = tool.spec().name;
    (
        name,
        Box::new(move |args: &JsonObject| {
            crate::typed::parse_params::<T::Params>(name, args.clone())
                .map(drop)
                .map_err(|e| e.to_string())
        }),
    )
}

impl ToolSchemas {
    /// The built-in tools of `Config::default()` with `root` as the only root (write tools
    /// on). Panics if they cannot be built (a harness setup failure, not a finding).
    pub fn new(root: &Path) -> Self {
        let config = Config {
            roots: vec![root.to_path_buf()],
            ..Config::default()
        };
        let settings = config.builtin_settings();
        let builtins = match crate::tools::builtin_tools(config.builtin_settings()) {
            Ok(builtins) => builtins,
            Err(error) => panic!("the built-in tools cannot be built: {error}"),
        };
        let mut registry = ToolRegistry::new();
        for tool in builtins.tools {
            if let Err(error) = registry.register(tool) {
                panic!("a built-in tool does not register: {error}");
            }
        }
        use crate::tools::{exec, fs, web};
        let (job_output, job_input, job_kill, job_list) = exec::job_tools(&builtins.executor);
        let params = vec![
            params_check(&fs::ReadFile::new(settings.fs)),
            params_check(&fs::ListDirectory::new(settings.fs)),
            params_check(&fs::PathInfo),
            params_check(&fs::Grep::new(settings.fs)),
            params_check(&fs::Glob::new(settings.fs)),
            params_check(&fs::ReadManyFiles::new(fs::ReadFile::new(settings.fs))),
            params_check(&fs::WriteFile::new(*settings.write)),
            params_check(&fs::EditFile::new(*settings.write)),
            params_check(&fs::CreateDirectory::new(*settings.write)),
            params_check(&fs::MovePath::new(*settings.write)),
            params_check(&exec::ExecuteCommand::new(builtins.executor.clone())),
            params_check(&job_output),
            params_check(&job_input),
            params_check(&job_kill),
            params_check(&job_list),
            params_check(&web::WebSearch::new(settings.web, builtins.web_requests)),
            params_check(&web::FetchUrl::new(&settings.web.fetch)),
        ];
        Self { registry, params }
    }

    /// The registered tools' names, in listing order.
    pub fn names(&self) -> Vec<String> {
        self.registry
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// The tool's input schema, as served.
    pub fn input_schema(&self, name: &str) -> Option<Value> {
        self.registry
            .definition(name)
            .map(|d| Value::Object(JsonObject::clone(&d.input_schema)))
    }

    /// The registry's argument check ([`ToolRegistry::validate`]): `Err` with the message the
    /// model would get.
    pub fn validate(&self, name: &str, args: &Map<String, Value>) -> Result<(), String> {
        self.registry
            .validate(name, args)
            .map_err(|e| e.to_string())
    }

    /// Whether `args` parse into the tool's params type, as the tool does after validation
    /// (the tool's own parse; `None`: no such built-in tool).
    pub fn parse_params(
        &self,
        name: &str,
        args: &Map<String, Value>,
    ) -> Option<Result<(), String>> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, check)| check(args))
    }
}

// ---------------------------------------------------------------------------------------------
// 3. plugin manifests and argv templates

/// A plugin tool loaded from a manifest: what the argv depends on.
pub struct PluginTool {
    /// The tool's name.
    pub name: String,
    /// `run.command` (checked, `./` resolved).
    pub command: String,
    run: manifest::Run,
}

impl PluginTool {
    /// `run.args` filled with `values` (defaults applied first, as the tool does).
    pub fn argv(&self, values: &Map<String, Value>) -> Result<Vec<String>, String> {
        let mut values = values.clone();
        for (name, default) in &self.run.defaults {
            if values.get(name).is_none_or(Value::is_null) {
                values.insert(name.clone(), default.clone());
            }
        }
        self.run.args.expand(&values).map_err(|e| e.to_string())
    }
}

/// Load a manifest's text as `plugins/fuzz.toml` (the `exec.timeout_max` default as limit).
pub fn plugin_manifest(text: &str) -> Result<Vec<PluginTool>, String> {
    let limits = Limits {
        timeout_max: Duration::from_secs(600),
    };
    manifest::parse(Path::new("/nonexistent/plugins/fuzz.toml"), text, limits)
        .map(|tools| {
            tools
                .into_iter()
                .map(|tool| PluginTool {
                    name: tool.name,
                    command: tool.run.command.clone(),
                    run: tool.run,
                })
                .collect()
        })
        .map_err(|e| e.to_string())
}

/// Why an argv template gave no argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgvError {
    /// A value of the wrong kind or with a NUL.
    Invalid(String),
    /// A value that would start an element with `-` before a literal `--`.
    Refused(String),
}

/// A parsed `run.args` template.
pub struct Argv(template::ArgvTemplate);

impl Argv {
    /// Parse `args` (as `run.args` elements) for a tool with parameters `params`.
    pub fn parse(args: &[String], params: &[&str]) -> Result<Self, String> {
        template::ArgvTemplate::parse("run.args", args, params)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// The argv for `values`.
    pub fn expand(&self, values: &Map<String, Value>) -> Result<Vec<String>, ArgvError> {
        self.0.expand(values).map_err(|e| match e {
            ExpandError::Invalid(m) => ArgvError::Invalid(m),
            ExpandError::Refused(m) => ArgvError::Refused(m),
        })
    }
}

/// Parse a `run.cwd`/`run.stdin` template and fill it: `Ok(None)` when a value is absent.
pub fn text_template(
    text: &str,
    params: &[&str],
    values: &Map<String, Value>,
) -> Result<Option<String>, String> {
    template::Template::parse("run.stdin", text, params)
        .map_err(|e| e.to_string())?
        .expand(values)
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------
// 4. the DuckDuckGo result page

/// One search hit: title, URL, snippet.
pub type Hit = (String, String, String);

/// Parse a DuckDuckGo HTML result page for `count` hits; `Err` with the failure's message.
pub fn duckduckgo(body: &[u8], count: usize) -> Result<Vec<Hit>, String> {
    DuckDuckGo::new("http://unused".into())
        .parse(
            body,
            Query {
                text: "fuzz",
                count,
            },
        )
        .map(|hits| {
            hits.into_iter()
                .map(|h| (h.title, h.url, h.snippet))
                .collect()
        })
        .map_err(|e| e.message)
}

// ---------------------------------------------------------------------------------------------
// 5. the command policy

/// What the policy decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Runs.
    Allow,
    /// Never runs (the rule and reason).
    Deny(String),
    /// Runs after the human confirms (the reason).
    Confirm(String),
}

/// A command policy ([`policy::Policy`]).
pub struct CommandPolicy(policy::Policy);

impl CommandPolicy {
    /// Build it from rule lists, as `[exec]` does.
    pub fn new(
        allow: &[String],
        deny: &[String],
        confirm_rules: &[String],
        allow_shells: bool,
    ) -> Result<Self, String> {
        policy::Policy::new(allow, deny, confirm_rules, allow_shells)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// Judge `program args…`; with `place`, the working directory and the (real) roots.
    pub fn decide(
        &self,
        program: &str,
        args: &[String],
        place: Option<(&Path, &[PathBuf])>,
    ) -> Verdict {
        let place = place.map(|(cwd, roots)| policy::Place { cwd, roots });
        match self.0.decide(program, args, place.as_ref()) {
            Decision::Allow => Verdict::Allow,
            Decision::Deny { rule, reason } => Verdict::Deny(format!("{rule}: {reason}")),
            Decision::Confirm { reason } => Verdict::Confirm(reason),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 6. workspace path resolution

/// A workspace over the given roots with the default secret patterns.
pub struct Confined(Workspace);

impl Confined {
    /// Open the roots.
    pub fn new(roots: &[PathBuf]) -> Result<Self, String> {
        let patterns: Vec<String> = DEFAULT_SECRET_PATTERNS
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        Workspace::new(roots, &patterns)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// `read_file`'s open: the file and the path shown to the user.
    pub fn open_file(&self, user: &str) -> Result<(std::fs::File, PathBuf), String> {
        self.0
            .open_file(user)
            .map(|open| (open.file, open.display))
            .map_err(|e| e.to_string())
    }

    /// `list_directory`'s open: the directory and the path shown to the user.
    pub fn open_dir(&self, user: &str) -> Result<(std::fs::File, PathBuf), String> {
        self.0
            .open_dir(user)
            .map(|(dir, target)| (dir.into_std_file(), target.display().to_path_buf()))
            .map_err(|e| e.to_string())
    }

    /// A plugin path parameter's resolution: the real absolute path.
    pub fn resolve(&self, user: &str) -> Result<PathBuf, String> {
        self.0.resolve(user).map_err(|e| e.to_string())
    }

    /// Where a write would go (nothing is written): the parent directory opened beneath its
    /// root, the entry's name in it, and the real path shown to the user.
    pub fn write_target(
        &self,
        user: &str,
    ) -> Result<(std::fs::File, std::ffi::OsString, PathBuf), String> {
        let target = self
            .0
            .write_target(user, false)
            .map_err(|e| e.to_string())?;
        let (dir, name) = target.parts();
        let dir = dir
            .try_clone()
            .map_err(|e| format!("cannot duplicate the parent handle: {e}"))?;
        Ok((
            dir.into_std_file(),
            name.to_owned(),
            target.display().to_path_buf(),
        ))
    }

    /// Whether a path relative to a root matches a secret pattern.
    pub fn is_secret(&self, rel: &Path) -> bool {
        self.0.is_secret(rel)
    }
}

// ---------------------------------------------------------------------------------------------
// 7. the HTTP gate

/// The HTTP gate of the default `[http]` settings (loopback hosts and origins) with a token.
pub struct HttpGate(Gate);

impl HttpGate {
    /// The gate with `token` (`None`: `--no-auth`) and the default allowlists, plus the
    /// extra origin rules (each parsed as `--allowed-origin`; unparsable ones are skipped).
    pub fn new(token: Option<&str>, extra_origins: &[&str]) -> Self {
        let mut settings = HttpSettings::default();
        settings.allowed_origins.extend(
            extra_origins
                .iter()
                .filter_map(|o| OriginRule::parse(o).ok()),
        );
        Self(settings.gate(token.map(Secret::new)))
    }

    /// Check a request with these headers (appended in order; a name or value that is not
    /// valid HTTP is skipped, as hyper would not deliver it). `Err`: the rejection.
    pub fn check(&self, headers: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            if let (Ok(name), Ok(value)) =
                (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
            {
                map.append(name, value);
            }
        }
        self.0.check(&map).map_err(|e| format!("{e:?}"))
    }
}

/// Whether hyper would deliver this header (valid name and value).
pub fn valid_header(name: &[u8], value: &[u8]) -> bool {
    HeaderName::from_bytes(name).is_ok() && HeaderValue::from_bytes(value).is_ok()
}

/// Parse an `--allowed-origin` rule; `Ok` with the rule as `toolport config` prints it.
pub fn origin_rule(text: &str) -> Result<String, String> {
    OriginRule::parse(text).map(|rule| rule.to_string())
}
