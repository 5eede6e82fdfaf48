//! The command-line surface (clap): the subcommands and the global flags, which compose each
//! feature's own flags. Parsing does no I/O; [`super::Config::load`] layers the result over the
//! file and validates it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use toolport_tools::ToolFormat;
use toolport_tools::host::config::ToolArgs;

use crate::cluster::ReplicaArgs;
use crate::observe::audit::AuditArgs;
use crate::transport::http::settings::HttpArgs;

const ABOUT: &str = "Serve AI tools (read_file, list_directory, path_info, …) to any MCP client.";

const LONG_ABOUT: &str = "\
toolport serves AI tools to MCP clients (Claude Desktop, VS Code, Cursor, Zed, the MCP Inspector,
agent frameworks). With no subcommand it serves MCP over stdio, with the current directory as the
workspace root: every path a tool touches must stay inside the roots.

Examples:
  toolport                                   serve stdio in the current directory
  toolport --root ~/code/app --root /data    serve stdio with two roots
  toolport serve ~/code/app /data            the same
  toolport serve --http 127.0.0.1:8787       serve HTTP: /mcp (Streamable HTTP), /sse (legacy)
  toolport tools --format openai             print tool definitions for the OpenAI API
  toolport call read_file --args '{\"path\":\"README.md\"}'
  toolport config                            show the effective configuration
  toolport --plugins plugins/examples        serve the example plugin tools (git, system_info)
  toolport plugins check ~/.config/toolport/plugins   check plugin manifests";

/// The command line.
#[derive(Debug, Parser)]
#[command(name = "toolport", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// Options shared by every subcommand.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// TOML config file. Default: toolport.toml in the user config dir (~/.config/toolport/),
    /// if it exists.
    #[arg(long, value_name = "FILE", env = "TOOLPORT_CONFIG", global = true)]
    pub(crate) config: Option<PathBuf>,

    /// Log level or filter for the logs on stderr: error, warn, info, debug, trace, or a
    /// tracing filter such as "toolport=debug". RUST_LOG is used when this is not set.
    #[arg(long, value_name = "LEVEL", env = "TOOLPORT_LOG_LEVEL", global = true)]
    pub(crate) log_level: Option<String>,

    /// The tools' flags (the library's): `--root`, the file tools' limits and `--read-only`,
    /// the tool selection, `--sandbox`, `--plugins`.
    #[command(flatten)]
    pub(crate) tools: ToolArgs,

    /// The HTTP transport's flags (`--http ADDR`, `--token-file`, …).
    #[command(flatten)]
    pub(crate) http: HttpArgs,

    #[command(flatten)]
    pub(crate) audit: AuditArgs,

    /// The replicas' shared store (`--redis-url`, `--replica-id`, …).
    #[command(flatten)]
    pub(crate) replicas: ReplicaArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum Command {
    /// Serve MCP over stdio (the default when no subcommand is given), or over HTTP with
    /// --http ADDR.
    Serve(ServeArgs),
    /// Print the tool definitions as JSON, for MCP or a model provider's API.
    Tools(ToolsArgs),
    /// Print every tool's prompt instructions (for a system prompt).
    Instructions,
    /// Run one tool locally and print its structured result as JSON.
    Call(CallArgs),
    /// Print the effective configuration (after file, environment and flags) as a config file
    /// that --config loads; secrets are never printed.
    Config,
    /// Plugin manifests: `toolport plugins check [DIR…]`.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// The other MCP servers whose tools are served (`[[upstreams]]`): `toolport upstreams
    /// status`, `login NAME`, `logout NAME`.
    #[command(subcommand)]
    Upstreams(UpstreamsCommand),
    /// The built-in OAuth authorization server's grants (`[http.oauth] authorization_server =
    /// "builtin"`): `toolport auth list`, `toolport auth revoke ID`.
    #[command(subcommand)]
    Auth(AuthCommand),
}

/// `toolport auth …` (the state folder is the server's: give the same config or flags).
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum AuthCommand {
    /// List the grants: id, client, subject, scopes, created and last used.
    List {
        /// Print JSON (one object per grant) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// End a grant: its refresh token stops working, and its access tokens at their next
    /// request (a running server reads the change).
    Revoke {
        /// The grant's id, as `toolport auth list` prints it.
        id: String,
    },
}

/// `toolport upstreams …`.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum UpstreamsCommand {
    /// Start every configured upstream as the server would, wait until each is ready or has
    /// failed (each within its start_timeout), print each one's state, tool count and error,
    /// and stop them; exit non-zero when an enabled upstream is not ready.
    Status {
        /// Print JSON (one object per upstream) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Log in to an upstream that authorizes with OAuth (auth = "oauth"): the authorization
    /// code flow with PKCE, the URL printed on stderr and opened in the browser ($BROWSER),
    /// the redirect back to 127.0.0.1; its tokens kept in the system credential store (or a
    /// private file) for every toolport that runs with this config.
    Login {
        /// The upstream's name.
        name: String,
        /// Only print the URL; do not open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget an upstream's stored OAuth tokens.
    Logout {
        /// The upstream's name.
        name: String,
    },
}

/// `toolport serve [DIR…]`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ServeArgs {
    /// Workspace roots, as with --root (after any --root). `toolport serve ~/a ~/b` is the
    /// form launchers that expand one setting into several arguments use (a Claude Desktop
    /// bundle's folder list).
    /// (Not named `dirs`: an argument's id is its field name, and the global `--plugins` is
    /// `dirs` already.)
    #[arg(value_name = "DIR")]
    pub(crate) root_dirs: Vec<PathBuf>,
}

/// `toolport plugins …`.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum PluginsCommand {
    /// Check plugin manifests and print each tool they would register; exit non-zero on any
    /// error (for plugin authors and CI). Default: the configured plugin directories.
    Check {
        /// Directories to check instead of the configured ones.
        #[arg(value_name = "DIR")]
        dirs: Vec<PathBuf>,
    },
}

/// `toolport tools`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ToolsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "mcp")]
    pub(crate) format: ToolFormat,
    /// Only tools with this tag (repeat: tools must have all of them).
    #[arg(long = "tag", value_name = "TAG")]
    pub(crate) tags: Vec<String>,
    /// Only tools in exactly this category (e.g. filesystem).
    #[arg(long, value_name = "CATEGORY")]
    pub(crate) category: Option<String>,
    /// Only tools whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub(crate) name_pattern: Option<String>,
    /// Mark every tool but the pinned ones (`[tools] pinned`) for the provider's deferred
    /// loading, and add its tool search: with `--format openai`, the Responses API's tool list
    /// (functions with `defer_loading: true` and `{"type": "tool_search"}`); with `--format
    /// anthropic`, `defer_loading: true` and the BM25 tool search tool.
    #[arg(long)]
    pub(crate) defer_loading: bool,
}

/// `toolport call`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CallArgs {
    /// The tool to run, e.g. read_file.
    pub(crate) tool: String,
    /// The arguments, as a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
    /// Answer "yes" to any confirmation the tool asks for (there is nobody else to ask).
    #[arg(long)]
    pub(crate) yes: bool,
}
