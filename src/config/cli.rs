//! The command-line surface (clap): the subcommands and the global flags, which compose each
//! feature's own flags. Parsing does no I/O; [`super::Config::load`] layers the result over the
//! file and validates it.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, FromArgMatches as _, Parser, Subcommand};

use crate::definition::ToolFormat;
use crate::observe::audit::AuditArgs;
use crate::plugins::PluginArgs;
use crate::tools::SelectionArgs;
use crate::tools::exec::ExecArgs;
use crate::tools::fs::FsArgs;
use crate::transport::http::settings::HttpArgs;

const ABOUT: &str = "Serve AI tools (read_file, list_directory, path_info, …) to any MCP client.";

const LONG_ABOUT: &str = "\
toolport serves AI tools to MCP clients (Claude Desktop, VS Code, Cursor, Zed, the MCP Inspector,
agent frameworks). With no subcommand it serves MCP over stdio, with the current directory as the
workspace root: every path a tool touches must stay inside the roots.

Examples:
  toolport                                   serve stdio in the current directory
  toolport --root ~/code/app --root /data    serve stdio with two roots
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

/// The subcommands' names (and clap's `help`): an argument equal to one of them may start a
/// subcommand. A test checks the list against [`Command`].
const SUBCOMMAND_NAMES: &[&str] = &[
    "serve",
    "tools",
    "instructions",
    "call",
    "config",
    "plugins",
    "help",
];

impl Cli {
    /// Parse this process's command line (exits with clap's message on an error, `--help` or
    /// `--version`).
    ///
    /// A command line that names no subcommand (how MCP clients start a stdio server) is
    /// parsed against the global options alone: building the whole command copies each of the
    /// 19 global options into each of the 6 subcommands (clap's propagation): parsing took
    /// ~300,000 of a start's 2.27 million instructions and ~23 page faults of allocator
    /// memory, now ~105,000 and none of those faults (callgrind, perf; BENCHMARKS.md).
    /// Anything else, and any argument that could be a subcommand, help or version, or that
    /// the light parse rejects, goes to the full parse, which decides (and words the errors).
    pub(crate) fn parse_command_line() -> Self {
        let argv: Vec<OsString> = std::env::args_os().collect();
        Self::parse_globals_only(&argv).unwrap_or_else(|| Self::parse_from(argv))
    }

    /// `argv` parsed against the global options alone, when it names no subcommand; `None`
    /// when the full parse must decide.
    fn parse_globals_only(argv: &[OsString]) -> Option<Self> {
        let may_need_subcommands = argv.iter().skip(1).any(|arg| {
            let arg = arg.to_string_lossy();
            SUBCOMMAND_NAMES.contains(&arg.as_ref())
                // -h, -V and any cluster of them (no global option has a short form), --help,
                // --version.
                || (arg.starts_with('-') && !arg.starts_with("--"))
                || arg == "--help"
                || arg == "--version"
        });
        if may_need_subcommands {
            return None;
        }
        let globals = GlobalArgs::augment_args(clap::Command::new("toolport"));
        let matches = globals.try_get_matches_from(argv).ok()?;
        let global = GlobalArgs::from_arg_matches(&matches).ok()?;
        Some(Self {
            command: None,
            global,
        })
    }
}

/// Options shared by every subcommand.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// A workspace root: tools may only touch paths inside the roots. Repeat for several; the
    /// first one is where relative paths resolve. Default: the current directory.
    /// [env: TOOLPORT_ROOTS, a path list like PATH]
    #[arg(long = "root", value_name = "DIR", global = true)]
    pub(crate) roots: Vec<PathBuf>,

    /// TOML config file. Default: toolport.toml in the user config dir (~/.config/toolport/),
    /// if it exists.
    #[arg(long, value_name = "FILE", env = "TOOLPORT_CONFIG", global = true)]
    pub(crate) config: Option<PathBuf>,

    /// Log level or filter for the logs on stderr: error, warn, info, debug, trace, or a
    /// tracing filter such as "toolport=debug". RUST_LOG is used when this is not set.
    #[arg(long, value_name = "LEVEL", env = "TOOLPORT_LOG_LEVEL", global = true)]
    pub(crate) log_level: Option<String>,

    /// `read_file` / `list_directory` limits.
    #[command(flatten)]
    pub(crate) fs: FsArgs,

    /// Which tools are served.
    #[command(flatten)]
    pub(crate) selection: SelectionArgs,

    /// `execute_command`'s flags (`--sandbox`).
    #[command(flatten)]
    pub(crate) exec: ExecArgs,

    /// The HTTP transport's flags (`--http ADDR`, `--token-file`, …).
    #[command(flatten)]
    pub(crate) http: HttpArgs,

    #[command(flatten)]
    pub(crate) plugins: PluginArgs,

    #[command(flatten)]
    pub(crate) audit: AuditArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum Command {
    /// Serve MCP over stdio (the default when no subcommand is given), or over HTTP with
    /// --http ADDR.
    Serve,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    fn argv(args: &[&str]) -> Vec<OsString> {
        std::iter::once("toolport")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_subcommand_names_are_the_commands() {
        let mut names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        names.push("help".into());
        names.sort();
        let mut listed: Vec<String> = SUBCOMMAND_NAMES.iter().map(|n| n.to_string()).collect();
        listed.sort();
        assert_eq!(listed, names);
    }

    #[test]
    fn the_light_parse_agrees_with_the_full_parse() {
        for args in [
            &[][..],
            &["--root", "/tmp", "--root", "/srv"],
            &["--read-max-bytes", "2048", "--root=/tmp"],
            &["--http", "127.0.0.1:0", "--log-level", "debug"],
            &["--plugins", "/p", "--audit-log", "/a.jsonl"],
        ] {
            let light = Cli::parse_globals_only(&argv(args)).expect("no subcommand");
            let full = Cli::try_parse_from(argv(args)).unwrap();
            assert!(full.command.is_none());
            assert_eq!(format!("{light:?}"), format!("{full:?}"), "{args:?}");
        }
    }

    #[test]
    fn anything_that_may_name_a_subcommand_help_or_an_error_goes_to_the_full_parse() {
        for args in [
            &["serve"][..],
            &["--root", "/tmp", "tools"],
            &["--root", "config"],
            &["help"],
            &["-h"],
            &["-hV"],
            &["--help"],
            &["--version"],
            &["--no-such-flag"],
            &["stray"],
        ] {
            assert!(Cli::parse_globals_only(&argv(args)).is_none(), "{args:?}");
        }
    }
}
