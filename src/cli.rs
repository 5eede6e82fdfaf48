//! The `toolport` command: parse the command line, build the configuration, then serve or run
//! one of the subcommands (`tools`, `instructions`, `call`, `config`). `main.rs` only handles
//! the hidden helpers and calls [`run`].
//!
//! Output behaves like a Unix tool's: writing to a closed pipe (`toolport tools | head`) ends
//! the command quietly with status 0, never a panic. Serving never writes to stdout except
//! JSON-RPC (stdio transport); logs go to stderr.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use regex::Regex;
use serde_json::Value;

use crate::config::{CallArgs, Cli, Command, Config, ToolsArgs, Transport};
use crate::registry::{ExecuteError, ToolFilter};
use crate::server::Shared;
use crate::tool::{AlwaysConfirm, ToolContext};

/// This very binary, however it was started (and even if the file was replaced since): the
/// command watchdog runs as `toolport __watchdog`.
const SELF_EXE: &str = "/proc/self/exe";

/// How long exiting waits for the runtime's blocking threads: a read of stdin blocks a
/// runtime thread that no cancellation can interrupt, and when the server stops on a signal
/// it must not wait for it (the default would wait forever).
const RUNTIME_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// The default log filter: toolport's own notices, and only warnings from its libraries (rmcp
/// logs every message at info, which would drown what matters).
const DEFAULT_LOG_FILTER: &str = "warn,toolport=info";

/// Exit status for a usage or configuration error (as clap uses).
const USAGE_ERROR: u8 = 2;

/// Run the command line of this process.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(&cli.global, |key| std::env::var(key).ok()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("toolport: {error}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    init_logging(config.log_level.as_deref());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolport: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(command(cli.command.unwrap_or(Command::Serve), config));
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_GRACE);
    code
}

/// Logs go to stderr only. `--log-level` / `TOOLPORT_LOG_LEVEL` / the file's `log_level` win;
/// otherwise `RUST_LOG`; otherwise [`DEFAULT_LOG_FILTER`].
fn init_logging(level: Option<&str>) {
    use tracing_subscriber::EnvFilter;
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
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(false)
        .init();
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
        Command::Serve => match build(config) {
            Ok(shared) => Ok(serve(shared, config).await),
            Err(code) => Err(code),
        },
        Command::Tools(args) => build(config).map(|shared| tools(&shared, &args)),
        Command::Instructions => {
            build(config).map(|shared| emit(&shared.registry.load().instructions()))
        }
        Command::Call(args) => match build(config) {
            Ok(shared) => Ok(call(&shared, &args).await),
            Err(code) => Err(code),
        },
    };
    code.unwrap_or_else(|code| code)
}

/// The server state for the commands that need it; a configuration it cannot be built from
/// (a root that does not exist, an unknown tool name) is a usage error.
fn build(config: &Config) -> Result<Arc<Shared>, ExitCode> {
    crate::build(config).map(Arc::new).map_err(|error| {
        eprintln!("toolport: {error}");
        ExitCode::from(USAGE_ERROR)
    })
}

/// Before commands can run: give up the controlling terminal and start the watchdog, once,
/// when `execute_command` is served.
fn prepare_commands(shared: &Shared) {
    if shared
        .registry
        .load()
        .get(crate::tools::exec::NAME)
        .is_some()
    {
        crate::tools::exec::prepare_host(std::ffi::OsStr::new(SELF_EXE));
    }
}

async fn serve(shared: Arc<Shared>, config: &Config) -> ExitCode {
    prepare_commands(&shared);
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
    let served = match transport {
        Transport::Stdio => crate::serve_stdio(shared).await,
        Transport::Http(_) => crate::serve_http(shared, config.http.clone()).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
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
    let filter = ToolFilter {
        tags: args.tags.clone(),
        category: args.category.clone(),
        name_pattern,
    };
    let definitions = shared
        .registry
        .load()
        .filter(&filter)
        .definitions(args.format);
    match serde_json::to_string_pretty(&definitions) {
        Ok(text) => emit(&text),
        Err(error) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
    }
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
    prepare_commands(shared);
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
    match shared
        .registry
        .load()
        .execute(&args.tool, arguments, &ctx)
        .await
    {
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
