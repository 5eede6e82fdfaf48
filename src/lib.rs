//! toolport: one binary that serves AI tools to any MCP client.
//!
//! The tools, their registry and the workspace are the `toolport-tools` library's: a
//! [`ToolRegistry`](toolport_tools::ToolRegistry) of [`AiTool`](toolport_tools::AiTool)s is
//! the single source of truth, and every path a tool touches goes through
//! [`Workspace`](toolport_tools::Workspace), the one place that turns a path into a file
//! handle. This crate reaches the rest of the library (the live registry, the plugin catalog,
//! upstreams, background jobs, the config file's format, secrets) through its one door,
//! `toolport_tools::host`. The [`server::ToolportServer`] maps the registry onto MCP
//! `tools/list`, `tools/call` and prompts, and the transports in [`transport`] carry it.
//!
//! Module map:
//! - [`cli`]: the commands (`serve`, `tools`, `call`, `config`, …);
//! - [`config`]: command line + TOML file + environment → one validated, immutable `Config`;
//! - [`server`]: the rmcp `ServerHandler`;
//! - [`transport`]: the stdio and HTTP transports;
//! - [`observe`]: the audit log, metrics, call budgets and traces;
//! - `cluster`: replicas' shared state in Redis (budgets, rates, the replica registry).

pub mod cli;
mod cluster;
pub mod config;
mod identity;
pub mod observe;
pub mod server;
mod shutdown;
pub mod transport;

use std::sync::Arc;

use rmcp::ServiceExt;
use toolport_tools::Workspace;
use toolport_tools::host::{
    BackgroundTable, Catalog, LiveRegistry, SelectionError, Upstreams, WorkspaceError,
    builtin_tools,
};

use crate::config::Config;
use crate::server::{Shared, ToolportServer};
use crate::transport::stdio::StdioTransport;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// A root cannot be used or a secret pattern is invalid.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The tool selection names an unknown tool.
    #[error(transparent)]
    Selection(#[from] SelectionError),
    /// The MCP session failed.
    #[error("the MCP session failed: {0}")]
    Serve(String),
    /// The HTTP server could not start or failed.
    #[error(transparent)]
    Http(#[from] transport::http::HttpError),
    /// The replicas' shared store cannot be set up (`[replicas]`).
    #[error("cannot set up the replicas' shared store: {0}")]
    Replicas(String),
}

/// Build everything a server shares across sessions, once: open the roots, compile the secret
/// rules, register the enabled tools (built-ins and plugins, compiling their validators).
pub fn build(config: &Config) -> Result<Shared, Error> {
    assemble(config).map(|(shared, _)| shared)
}

/// [`build`], also returning the plugin catalog a reload rebuilds the tool set from. Plugin
/// problems (a bad manifest, an unreadable directory) are logged, never fatal.
pub(crate) fn assemble(config: &Config) -> Result<(Shared, Arc<Catalog>), Error> {
    let workspace = Workspace::new(&config.roots, &config.workspace.secret_patterns)?;
    // Started by the commands that use them (`cli::start_upstreams`), once commands can run.
    let upstreams = Upstreams::new(
        config.roots.first().cloned().unwrap_or_default(),
        config.fs.read_only(),
    );
    let catalog = Catalog::new(
        builtin_tools(config.builtin_settings())?,
        config.plugins.dirs_to_read(&config.roots),
        config.tools.clone(),
        config.exec.timeout_max,
    )?
    .with_upstreams(upstreams.clone());
    // Strict about unknown names in the tool selection, unless upstreams are configured: a
    // name may be one of their tools, which are not there before they start.
    let built = catalog.build(config.upstreams.is_empty())?;
    built.log();
    // At start nothing is served yet: whatever could be read is the reference for reloads.
    let _ = catalog.accept(&built);
    // The HTTP token (configured or generated) is added by the HTTP transport, which knows it.
    let secrets = config.secrets();
    // Not connected yet: the HTTP transport starts it (nothing else shares state).
    let cluster = config
        .replicas
        .clone()
        .map(cluster::Cluster::new)
        .transpose()
        .map_err(Error::Replicas)?;
    if let Some(cluster) = &cluster {
        // Job ids name this replica; requests for other replicas' jobs go there.
        cluster.attach_jobs(&catalog.jobs());
    }
    let shared = Shared {
        registry: Arc::new(LiveRegistry::new(built.registry)),
        workspace: Arc::new(workspace),
        confirm_fallback: config.exec.confirm,
        audit: observe::audit::AuditLog::open(&config.audit, secrets),
        metrics: observe::metrics::Metrics::new(
            catalog.commands_running(),
            catalog.web_requests(),
            cluster.as_ref().map(|c| c.metrics()),
        ),
        budgets: Arc::new(config.limits.calls.clone()),
        jobs: BackgroundTable::new(Arc::new(catalog.jobs())),
        payload: config.tools.payload,
        result_cap: config.tools.result_cap,
        surface: config.tools.surface.clone(),
        search_index: Default::default(),
        upstreams,
        principal_budgets: Arc::new(observe::budget::PrincipalBudgets::new(cluster)),
    };
    // Before any upstream is configured: their secrets (env values, tokens as they are read,
    // entries a reload adds) are scrubbed from the audit log like the web keys.
    if let Some(audit) = shared.audit.clone() {
        shared
            .upstreams
            .on_secret(move |secret| audit.add_secret(secret));
    }
    {
        let registry = shared.registry.load();
        let served = registry.names();
        for name in shared.budgets.unknown_tools(&served) {
            tracing::warn!(
                tool = name,
                "[limits.tools.{name}] names a tool that is not served (a typo, or a plugin or upstream tool not loaded yet); its limits apply if such a tool appears"
            );
        }
    }
    Ok((shared, Arc::new(catalog)))
}

/// Serve one MCP session over a transport until the client disconnects or the process is
/// told to stop (`shutdown::signal`: SIGINT or SIGTERM, on Windows the console's Ctrl-C,
/// Ctrl-Break, close, logoff and shutdown events). Stopping cancels every call in flight, so running
/// commands are killed with their process groups before this returns.
pub async fn serve<T, E, A>(shared: Arc<Shared>, transport: T) -> Result<(), Error>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = ToolportServer::new(shared)
        .traced()
        .serve(transport)
        .await
        .map_err(|e| Error::Serve(e.to_string()))?;
    let stop = async {
        shutdown::signal().await;
        tracing::info!("stopping: cancelling calls in flight");
    };
    transport::serve_until_stopped(running, stop)
        .await
        .map_err(|e| Error::Serve(e.to_string()))?;
    Ok(())
}

/// Serve MCP over stdin/stdout until stdin closes or the process is told to stop.
pub(crate) async fn serve_stdio(shared: Arc<Shared>) -> Result<(), Error> {
    serve(shared, StdioTransport::stdio()).await
}

/// Serve MCP over HTTP on the configured `--http` address until the process is told to stop
/// (`shutdown::signal`); then calls in flight are cancelled (running commands are killed) and
/// connections get a bounded grace before this returns.
pub(crate) async fn serve_http(
    shared: Arc<Shared>,
    settings: transport::http::settings::HttpSettings,
) -> Result<(), Error> {
    transport::http::serve(shared, &settings, shutdown::signal()).await?;
    Ok(())
}
