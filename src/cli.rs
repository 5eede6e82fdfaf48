//! The `toolport` command: parse the command line, build the configuration, then serve or run
//! one of the subcommands (`tools`, `instructions`, `call`, `config`, `plugins check`,
//! `upstreams status|login|logout` (login.rs: the OAuth login's loopback redirect and browser),
//! `auth list|revoke`). `main.rs` only handles
//! the hidden helpers and calls [`run`].
//!
//! Output behaves like a Unix tool's: writing to a closed pipe (`toolport tools | head`) ends
//! the command quietly with status 0, never a panic. Serving never writes to stdout except
//! JSON-RPC (stdio transport); logs go to stderr.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::ValueEnum;
use regex::Regex;
use serde_json::Value;
use toolport_tools::host::{self, AlwaysConfirm};
use toolport_tools::{ExecuteError, ToolContext, ToolFilter, ToolFormat};

use crate::config::{
    AuthCommand, CallArgs, Cli, Command, Config, PluginsCommand, ToolsArgs, Transport,
    UpstreamsCommand,
};
use crate::observe::audit::{Caller, Outcome};
use crate::observe::{Call, Failure, TOOL_ERROR};
use crate::server::Shared;
use crate::transport::http::oauth::builtin::admin;

mod login;

/// This very binary, however it was started: the command watchdog runs as
/// `toolport __watchdog`. On Linux `/proc/self/exe`, which names it even if the file was
/// replaced since (an upgrade while serving); other systems have no such name (macOS has no
/// `/proc`), so there it is the path the OS reports for this process.
#[cfg(target_os = "linux")]
fn self_exe() -> std::ffi::OsString {
    "/proc/self/exe".into()
}

/// See the Linux form above: the path the OS reports (macOS `_NSGetExecutablePath`, Windows
/// `GetModuleFileNameW`), else how the process was started (`argv[0]`).
#[cfg(not(target_os = "linux"))]
fn self_exe() -> std::ffi::OsString {
    std::env::current_exe()
        .map(std::path::PathBuf::into_os_string)
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot tell where this binary is; using argv[0] for the command watchdog");
            std::env::args_os().next().unwrap_or_default()
        })
}

/// How long exiting waits for the runtime's blocking threads: a read of stdin blocks a
/// runtime thread that no cancellation can interrupt, and when the server stops on a signal
/// it must not wait for it (the default would wait forever).
const RUNTIME_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// The default log filter: toolport's own notices, and only warnings from its libraries (rmcp
/// logs every message at info, which would drown what matters).
const DEFAULT_LOG_FILTER: &str = "warn,toolport=info,toolport_tools=info";

/// Exit status for a usage or configuration error (as clap uses).
const USAGE_ERROR: u8 = 2;

/// Run the command line of this process.
pub fn run() -> ExitCode {
    let mut cli = <Cli as clap::Parser>::parse();
    // `serve DIR…` names roots too: after the --root ones.
    if let Some(Command::Serve(serve)) = &mut cli.command {
        cli.global.tools.roots.append(&mut serve.root_dirs);
    }
    let config = match Config::load(&cli.global, |key| std::env::var(key).ok()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("toolport: {error}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let command_to_run = cli.command.unwrap_or(Command::Serve(Default::default()));
    // Only the server exports traces (`toolport call` runs a tool without MCP: untraced).
    let traces = matches!(command_to_run, Command::Serve(_)).then_some(&config.telemetry);
    let exporter = init_logging(config.log_level.as_deref(), traces);
    config.warn_deprecated();
    let runtime = match runtime_for(&command_to_run, &config) {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolport: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(command(command_to_run, config));
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_GRACE);
    // After the runtime: the spans of the requests it dropped have ended and are queued.
    if let Some(exporter) = exporter {
        exporter.shutdown();
    }
    code
}

/// The async runtime for `command`. Serving HTTP takes many clients at once: a worker thread
/// per CPU. Everything else (a stdio session has one client; the other commands run once)
/// runs its async work on this thread and its blocking work (file system calls, hashing,
/// reaping processes) on tokio's blocking pool, whose threads start when first needed: a
/// stdio server starts one thread instead of three, which shortens its start and saves their
/// stacks and allocator caches (`git show a29830c:BENCHMARKS.md`, "Issue 16", "Second
/// session").
fn runtime_for(command: &Command, config: &Config) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = match (command, config.transport()) {
        (Command::Serve(_), Transport::Http(_)) => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    builder.enable_all().build()
}

/// Logs go to stderr only. `--log-level` / `TOOLPORT_LOG_LEVEL` / the file's `log_level` win;
/// otherwise `RUST_LOG`; otherwise [`DEFAULT_LOG_FILTER`]. With `traces` that name an endpoint,
/// request spans are exported too (built apart from the log lines: the log filter does not
/// apply to them), and the returned exporter must be shut down at exit.
fn init_logging(
    level: Option<&str>,
    traces: Option<&crate::config::TelemetrySettings>,
) -> Option<crate::observe::trace::Exporter> {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = match level {
        Some(level) => EnvFilter::try_new(level).unwrap_or_else(|error| {
            eprintln!(
                "toolport: invalid log level {level:?} ({error}); using {DEFAULT_LOG_FILTER}"
            );
            EnvFilter::new(DEFAULT_LOG_FILTER)
        }),
        None => {
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER))
        }
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(log_lines())
        .init();
    traces.and_then(|settings| {
        crate::observe::trace::export(settings).unwrap_or_else(|error| {
            tracing::error!(%error, "traces will not be exported");
            None
        })
    })
}

/// Log lines as people read them, on stderr.
fn log_lines<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        .with_ansi(false)
}

/// Write `text` and a newline to stdout. A closed pipe (the reader went away, as `head`
/// does) is a normal end for a Unix tool: success, no message.
fn emit(text: &str) -> ExitCode {
    let mut out = io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolport: cannot write the output: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn command(command: Command, config: Config) -> ExitCode {
    let config = &config;
    let code = match command {
        Command::Config => Ok(emit(config.to_toml().trim_end())),
        Command::Serve(_) => match crate::assemble(config) {
            Ok((shared, catalog)) => {
                let shared = Arc::new(shared);
                prepare_commands(
                    &shared,
                    !catalog.dirs().is_empty() || !config.upstreams.is_empty(),
                );
                shared.upstreams.configure(config.upstreams.clone());
                host::reload::spawn(
                    catalog.clone(),
                    shared.registry.clone(),
                    config_source(config),
                );
                let code = serve(shared.clone(), config).await;
                shared.upstreams.shutdown().await;
                Ok(code)
            }
            Err(error) => Err(usage_error(&error)),
        },
        Command::Plugins(PluginsCommand::Check { dirs }) => Ok(check_plugins(config, &dirs)),
        Command::Auth(command) => Ok(auth(config, &command).await),
        Command::Upstreams(UpstreamsCommand::Login { name, no_browser }) => {
            Ok(login::login(config, &name, no_browser).await)
        }
        Command::Upstreams(UpstreamsCommand::Logout { name }) => {
            Ok(login::logout(config, &name).await)
        }
        Command::Upstreams(UpstreamsCommand::Status { json }) => match build(config).await {
            Ok(shared) => Ok(stop(&shared, upstreams_status(&shared, config, json)).await),
            Err(code) => Err(code),
        },
        Command::Tools(args) => match build(config).await {
            Ok(shared) => Ok(stop(&shared, tools(&shared, &args)).await),
            Err(code) => Err(code),
        },
        Command::Instructions => match build(config).await {
            Ok(shared) => {
                let code = emit(&shared.registry.load().instructions());
                Ok(stop(&shared, code).await)
            }
            Err(code) => Err(code),
        },
        Command::Call(args) => match build(config).await {
            Ok(shared) => {
                let code = call(&shared, &args).await;
                Ok(stop(&shared, code).await)
            }
            Err(code) => Err(code),
        },
    };
    code.unwrap_or_else(|code| code)
}

/// `toolport auth list|revoke`: the built-in OAuth server's grants.
async fn auth(config: &Config, command: &AuthCommand) -> ExitCode {
    let (oauth, replicas) = (config.http.oauth.as_ref(), config.replicas.as_ref());
    let result = match command {
        AuthCommand::List { json } => admin::list(oauth, replicas, *json).await,
        AuthCommand::Revoke { id } => admin::revoke(oauth, replicas, id).await,
    };
    match result {
        Ok(text) => emit(&text),
        Err(error) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The server state for the one-shot commands; a configuration it cannot be built from (a
/// root that does not exist, an unknown tool name) is a usage error. With upstreams
/// configured they are started and waited for (each within its `start_timeout`), so their
/// tools are listed and callable as the server would serve them; the caller stops them
/// ([`Upstreams::shutdown`](host::Upstreams::shutdown)), and they die with this
/// process in any case.
async fn build(config: &Config) -> Result<Arc<Shared>, ExitCode> {
    let (shared, catalog) = crate::assemble(config).map_err(|error| usage_error(&error))?;
    if !config.upstreams.is_empty() {
        prepare_commands(&shared, true);
        shared.upstreams.configure(config.upstreams.clone());
        shared.upstreams.settled().await;
        let live = shared.registry.clone();
        let _ = tokio::task::spawn_blocking(move || host::reload::reload(&catalog, &live)).await;
    }
    Ok(Arc::new(shared))
}

/// A one-shot command is done: stop the upstreams it started, then exit with `code`.
async fn stop(shared: &Shared, code: ExitCode) -> ExitCode {
    shared.upstreams.shutdown().await;
    code
}

/// The config file, for the reload of its `[[upstreams]]` (SIGHUP, a change of the file).
fn config_source(config: &Config) -> Option<host::reload::ConfigSource> {
    let path = config.config_file.clone()?;
    let read_from = path.clone();
    Some(host::reload::ConfigSource {
        path,
        read_upstreams: Box::new(move || crate::config::read_upstreams(&read_from)),
    })
}

/// `toolport upstreams status`: each configured upstream's state after its start, as a table
/// (or JSON); exit status 1 when an enabled one is not ready.
fn upstreams_status(shared: &Shared, config: &Config, json: bool) -> ExitCode {
    use toolport_tools::host::UpstreamState;
    if config.upstreams.is_empty() {
        eprintln!(
            "toolport: no upstreams are configured: add [[upstreams]] entries to the config file (docs/upstreams.md)"
        );
        return ExitCode::from(USAGE_ERROR);
    }
    let status = shared.upstreams.status();
    let text = if json {
        serde_json::to_string_pretty(&status).unwrap_or_default()
    } else {
        let mut lines = vec!["NAME\tTRANSPORT\tSTATE\tTOOLS\tERROR".to_owned()];
        lines.extend(status.iter().map(|s| {
            format!(
                "{}\t{}\t{}\t{}\t{}",
                s.name,
                s.transport,
                serde_json::to_value(s.state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                s.tools,
                match (&s.error, &s.stderr) {
                    (Some(error), Some(stderr)) =>
                        format!("{error}; its last stderr lines: {stderr}"),
                    (Some(error), None) => error.clone(),
                    (None, _) => String::new(),
                }
            )
        }));
        lines.join("\n")
    };
    let written = emit(&text);
    let failed = status
        .iter()
        .any(|s| !matches!(s.state, UpstreamState::Ready | UpstreamState::Disabled));
    if failed { ExitCode::FAILURE } else { written }
}

fn usage_error(error: &crate::Error) -> ExitCode {
    eprintln!("toolport: {error}");
    ExitCode::from(USAGE_ERROR)
}

/// Before commands can run: give up the controlling terminal and start the watchdog, once,
/// when `execute_command` is served, plugin tools may be (a reload can add them) or upstream
/// servers are started (`others`).
fn prepare_commands(shared: &Shared, others: bool) {
    if others || shared.registry.load().get(host::exec::NAME).is_some() {
        host::exec::prepare_host(&self_exe());
    }
}

async fn serve(shared: Arc<Shared>, config: &Config) -> ExitCode {
    let transport = config.transport();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        roots = %shared.workspace.describe_roots(),
        tools = %shared.registry.load().names().join(","),
        "serving MCP on {}",
        match transport {
            Transport::Stdio => "stdio",
            Transport::Http(_) => "HTTP",
        }
    );
    // No warm-up of the tools' schemas (registry.rs builds them on first use, the first
    // `tools/list`): building them on another thread beside the `initialize` answer was slower
    // to both answers on two CPUs (`git show a29830c:BENCHMARKS.md`, "Issue 16", "Second
    // session").
    // Boxed: the stdio session's future is ~18 KB, and unboxed it sat in every command's
    // future on the main thread's stack, whose pages stay resident (~30 page faults a start).
    let served = match transport {
        Transport::Stdio => Box::pin(crate::serve_stdio(shared.clone())).await,
        Transport::Http(_) => {
            Box::pin(crate::serve_http(shared.clone(), config.http.clone())).await
        }
    };
    flush_audit(&shared).await;
    // The jobs end with the server; their output files go now (the watchdog does it too,
    // for a server that dies without stopping).
    shared.jobs.remove_files();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Write out the audit records still queued (the last calls, those cancelled by the stop).
async fn flush_audit(shared: &Shared) {
    if let Some(audit) = shared.audit.clone() {
        let _ = tokio::task::spawn_blocking(move || audit.flush()).await;
    }
}

fn tools(shared: &Shared, args: &ToolsArgs) -> ExitCode {
    let name_pattern = match args.name_pattern.as_deref().map(Regex::new).transpose() {
        Ok(pattern) => pattern,
        Err(error) => {
            eprintln!("toolport: --name-pattern is not a valid regular expression: {error}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let mut filter = args
        .tags
        .iter()
        .fold(ToolFilter::new(), |f, tag| f.tag(tag));
    if let Some(category) = &args.category {
        filter = filter.category(category);
    }
    if let Some(pattern) = name_pattern {
        filter = filter.name_matching(pattern);
    }
    let registry = shared.registry.load().filter(&filter);
    let mut definitions = registry.definitions(args.format);
    if args.defer_loading {
        let names = registry.names();
        definitions = match deferred(args.format, definitions, &names, &shared.surface.pinned) {
            Ok(definitions) => definitions,
            Err(message) => {
                eprintln!("toolport: {message}");
                return ExitCode::from(USAGE_ERROR);
            }
        };
    }
    match serde_json::to_string_pretty(&definitions) {
        Ok(text) => emit(&text),
        Err(error) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The Anthropic tool search tool `--defer-loading` adds: the BM25 variant, which takes the
/// natural-language queries a model writes (the regex variant wants Python regular
/// expressions). Anthropic's tool search tool documentation, version 2025-11-19.
const ANTHROPIC_TOOL_SEARCH: (&str, &str) =
    ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25");

/// `definitions` (of the tools called `names`, in order) with every tool but the `pinned`
/// marked for the provider's deferred loading, and the provider's tool search added first:
/// OpenAI's Responses API (the only OpenAI API with `tool_search`: functions are flat there),
/// Anthropic's Messages API. Other formats have no deferred loading.
fn deferred(
    format: ToolFormat,
    definitions: Vec<Value>,
    names: &[&str],
    pinned: &[String],
) -> Result<Vec<Value>, String> {
    let search = match format {
        ToolFormat::Openai => serde_json::json!({"type": "tool_search"}),
        ToolFormat::Anthropic => {
            serde_json::json!({"type": ANTHROPIC_TOOL_SEARCH.0, "name": ANTHROPIC_TOOL_SEARCH.1})
        }
        other => {
            return Err(format!(
                "--defer-loading needs --format openai or --format anthropic (the providers with deferred tool loading), not {}",
                other
                    .to_possible_value()
                    .map_or_else(String::new, |v| v.get_name().to_owned())
            ));
        }
    };
    let mut out = vec![search];
    for (definition, name) in definitions.into_iter().zip(names) {
        let mut tool = match (format, definition) {
            // Chat Completions' `{"type": "function", "function": {...}}` as the Responses
            // API's flat function.
            (ToolFormat::Openai, Value::Object(mut outer)) => {
                let mut flat = match outer.remove("function") {
                    Some(Value::Object(function)) => function,
                    _ => serde_json::Map::new(),
                };
                flat.insert("type".into(), Value::from("function"));
                flat
            }
            (_, Value::Object(tool)) => tool,
            (_, other) => return Err(format!("a tool definition is not an object: {other}")),
        };
        if !pinned.iter().any(|p| p == name) {
            tool.insert("defer_loading".into(), Value::Bool(true));
        }
        out.push(Value::Object(tool));
    }
    Ok(out)
}

async fn call(shared: &Shared, args: &CallArgs) -> ExitCode {
    let arguments = match serde_json::from_str::<Value>(&args.args) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            eprintln!(
                "toolport: --args must be a JSON object like '{{\"path\":\"README.md\"}}', not {other}"
            );
            return ExitCode::from(USAGE_ERROR);
        }
        Err(error) => {
            eprintln!("toolport: --args is not valid JSON: {error}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    // Any tool but the file and web ones may run a command (plugin tools do).
    prepare_commands(shared, true);
    let mut ctx = ToolContext::local(shared.workspace.clone(), shared.confirm_fallback);
    if args.yes {
        ctx.confirmer = Arc::new(AlwaysConfirm);
    }
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let registry = shared.registry.load();
    // Audited and counted like a call over MCP, as transport `cli`.
    let audit = shared.audit.as_ref().map(|log| {
        log.begin(
            Caller {
                session: host::Session::new_id(),
                transport: "cli",
                client: None,
                principal: None,
                via: None,
            },
            &args.tool,
            registry
                .get(&args.tool)
                .as_deref()
                .and_then(|t| t.upstream()),
            &arguments,
        )
    });
    let observed = Call::begin(&shared.metrics, audit, &args.tool, ctx.facts.clone());
    let result = registry.execute(&args.tool, arguments, &ctx).await;
    let failure = match &result {
        Ok(_) => None,
        Err(ExecuteError::Tool(error)) => Some(Failure::tool(error, &ctx.facts)),
        Err(other @ ExecuteError::UnknownTool { .. }) => Some(Failure {
            kind: "unknown_tool",
            message: other.to_string(),
            outcome: Outcome::Error,
            error_type: TOOL_ERROR.into(),
        }),
        // Only a client can ask its user; here the confirmer answers at once.
        Err(other @ ExecuteError::ConfirmationRequired { .. }) => Some(Failure {
            kind: "confirmation_required",
            message: other.to_string(),
            outcome: Outcome::Denied,
            error_type: TOOL_ERROR.into(),
        }),
    };
    let size = result.as_ref().map_or(0, |output| {
        observed.size_of(&(output.text.as_str(), &output.structured))
    });
    observed.finish(failure, size);
    flush_audit(shared).await;
    match result {
        Ok(output) => match output.structured {
            Some(value) => match serde_json::to_string_pretty(&value) {
                Ok(text) => emit(&text),
                Err(_) => emit(&output.text),
            },
            None => emit(&output.text),
        },
        Err(error @ ExecuteError::UnknownTool { .. }) => {
            eprintln!("toolport: {error}");
            ExitCode::from(USAGE_ERROR)
        }
        Err(error @ (ExecuteError::Tool(_) | ExecuteError::ConfirmationRequired { .. })) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `toolport plugins check [DIR…]`: load every manifest of `dirs` (default: the configured
/// plugin directories), print each tool that would be registered, and report every problem.
/// Exit status 1 on any error (an unreadable directory, a manifest that does not load).
fn check_plugins(config: &Config, dirs: &[std::path::PathBuf]) -> ExitCode {
    let dirs = if dirs.is_empty() {
        config.plugins.dirs_to_read(&config.roots)
    } else {
        dirs.to_vec()
    };
    if dirs.is_empty() {
        eprintln!(
            "toolport: no plugin directories to check: name them (toolport plugins check DIR…), or configure --plugins, TOOLPORT_PLUGIN_DIRS or [plugins] dirs"
        );
        return ExitCode::from(USAGE_ERROR);
    }
    let catalog = match host::builtin_tools(config.builtin_settings())
        .map_err(crate::Error::from)
        .and_then(|builtins| {
            host::Catalog::new(
                builtins,
                dirs,
                host::ToolSelection::default(),
                config.exec.timeout_max,
            )
            .map_err(crate::Error::from)
        }) {
        Ok(catalog) => catalog,
        Err(error) => return usage_error(&error),
    };
    let built = match catalog.build(false) {
        Ok(built) => built,
        Err(error) => return usage_error(&crate::Error::from(error)),
    };
    let mut lines = Vec::new();
    for loaded in &built.discovery.tools {
        let tool = &loaded.tool;
        let registered = built
            .registry
            .get(tool.name())
            .is_some_and(|t| Arc::ptr_eq(&t, tool));
        if registered {
            lines.push(format!(
                "{}\t{}\t{}",
                tool.name(),
                loaded.file.display(),
                tool.title().unwrap_or_else(|| tool.description())
            ));
        }
    }
    for (dir, error) in &built.discovery.unreadable {
        eprintln!(
            "error: {}: cannot read the directory: {error}",
            dir.display()
        );
    }
    for error in &built.discovery.errors {
        eprintln!("error: {error}");
    }
    for duplicate in &built.duplicates {
        eprintln!("warning: {duplicate}");
    }
    let errors = built.discovery.errors.len() + built.discovery.unreadable.len();
    lines.push(format!(
        "{} plugin tools; {errors} errors; {} skipped duplicates",
        lines.len(),
        built.duplicates.len()
    ));
    let written = emit(&lines.join("\n"));
    if errors > 0 {
        ExitCode::FAILURE
    } else {
        written
    }
}
