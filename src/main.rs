//! The `toolport` command: parse the command line, build the configuration, then serve or run
//! a subcommand. All logic lives in the library.

// Subcommands print their results on stdout. `serve` never does: there stdout is the
// JSON-RPC channel, and logs go to stderr.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use regex::Regex;
use serde_json::Value;
use toolport::config::{CallArgs, Cli, Command, Config, ToolsArgs};
use toolport::registry::{ExecuteError, ToolFilter};
use toolport::server::Shared;
use toolport::tool::{AlwaysConfirm, ToolContext};

/// mimalloc instead of glibc malloc: a server's requests allocate and free many small
/// objects across threads, where glibc's arenas cost about a tenth of the CPU under load
/// (BENCHMARKS.md, HTTP load).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The sandbox shim (`toolport __sandbox-exec … -- PROGRAM ARGS`): toolport re-executes
    // itself to confine a command with Landlock before exec'ing it. Dispatched before any
    // configuration or logging, and never shown in --help.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == toolport::tools::exec::sandbox::SHIM_SUBCOMMAND)
    {
        let code = toolport::tools::exec::sandbox::run_shim(&argv[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(125));
    }
    if argv
        .get(1)
        .is_some_and(|a| a == toolport::tools::exec::watchdog::WATCHDOG_SUBCOMMAND)
    {
        return ExitCode::from(
            u8::try_from(toolport::tools::exec::watchdog::run_watchdog()).unwrap_or(1),
        );
    }
    let cli = Cli::parse();
    let config = match Config::load(&cli.global, |key| std::env::var(key).ok()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("toolport: {error}");
            return ExitCode::from(2);
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
    let code = runtime.block_on(run(cli.command.unwrap_or(Command::Serve), config));
    // A read of stdin blocks a runtime thread that no cancellation can interrupt; when the
    // server stops on a signal, do not wait for it (the default would wait forever).
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_GRACE);
    code
}

/// This very binary, however it was started (and even if the file was replaced since): the
/// command watchdog runs as `toolport __watchdog`.
const SELF_EXE: &str = "/proc/self/exe";

/// How long exiting waits for the runtime's blocking threads (see `main`).
const RUNTIME_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// The default log filter: toolport's own notices, and only warnings from its libraries (rmcp
/// logs every message at info, which would drown what matters).
const DEFAULT_LOG_FILTER: &str = "warn,toolport=info";

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
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

async fn run(command: Command, config: Config) -> ExitCode {
    if let Command::Config = command {
        print!("{}", config.to_toml());
        return ExitCode::SUCCESS;
    }
    let shared = match toolport::build(config) {
        Ok(shared) => Arc::new(shared),
        Err(error) => {
            eprintln!("toolport: {error}");
            return ExitCode::from(2);
        }
    };
    if matches!(command, Command::Serve | Command::Call(_))
        && shared.registry.get(toolport::tools::exec::NAME).is_some()
    {
        toolport::tools::exec::prepare_host(std::ffi::OsStr::new(SELF_EXE));
    }
    match command {
        Command::Serve => {
            let http = shared.config.http.bind;
            tracing::info!(
                version = env!("CARGO_PKG_VERSION"),
                roots = %shared.workspace.describe_roots(),
                tools = %shared.registry.names().join(","),
                "serving MCP on {}",
                if http.is_some() { "HTTP" } else { "stdio" }
            );
            let served = match http {
                Some(_) => toolport::serve_http(shared).await,
                None => toolport::serve_stdio(shared).await,
            };
            match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("toolport: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Tools(args) => tools(&shared, &args),
        Command::Instructions => {
            println!("{}", shared.registry.instructions());
            ExitCode::SUCCESS
        }
        Command::Call(args) => call(&shared, &args).await,
        Command::Config => ExitCode::SUCCESS,
    }
}

fn tools(shared: &Shared, args: &ToolsArgs) -> ExitCode {
    let name_pattern = match args.name_pattern.as_deref().map(Regex::new).transpose() {
        Ok(pattern) => pattern,
        Err(error) => {
            eprintln!("toolport: --name-pattern is not a valid regular expression: {error}");
            return ExitCode::from(2);
        }
    };
    let filter = ToolFilter {
        tags: args.tags.clone(),
        category: args.category.clone(),
        name_pattern,
    };
    let definitions = shared.registry.filter(&filter).definitions(args.format);
    match serde_json::to_string_pretty(&definitions) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
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
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("toolport: --args is not valid JSON: {error}");
            return ExitCode::from(2);
        }
    };
    let mut ctx = ToolContext::local(shared.workspace.clone(), shared.config.clone());
    if args.yes {
        ctx.confirmer = Arc::new(AlwaysConfirm);
    }
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    match shared.registry.execute(&args.tool, arguments, &ctx).await {
        Ok(output) => {
            match output.structured {
                Some(value) => match serde_json::to_string_pretty(&value) {
                    Ok(text) => println!("{text}"),
                    Err(_) => println!("{}", output.text),
                },
                None => println!("{}", output.text),
            }
            ExitCode::SUCCESS
        }
        Err(error @ ExecuteError::UnknownTool { .. }) => {
            eprintln!("toolport: {error}");
            ExitCode::from(2)
        }
        Err(error @ (ExecuteError::Tool(_) | ExecuteError::ConfirmationRequired { .. })) => {
            eprintln!("toolport: {error}");
            ExitCode::FAILURE
        }
    }
}
