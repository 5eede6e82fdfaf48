//! Configuration in two stages (as ripgrep does it): the command line is parsed by clap
//! ([`Cli`], with `env =` on each flag), then [`Config::load`] layers it over the TOML file and
//! the defaults and validates everything once into an immutable [`Config`].
//!
//! Precedence, lowest first: built-in defaults < TOML file (`--config`, else
//! `$XDG_CONFIG_HOME/toolport/toolport.toml` if present) < `TOOLPORT_*` environment < flags.
//! An unknown key in the file is an error that names the key.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::definition::ToolFormat;
use crate::registry::ToolFilter;
use crate::transport::http::settings::{FileHttp, HttpArgs, HttpSettings};
use crate::workspace::DEFAULT_SECRET_PATTERNS;

/// Default cap on text returned by one `read_file` call: 1 MiB is ~250k tokens, already more
/// than most context windows; larger files are paged with `offset`/`limit`.
pub const DEFAULT_READ_MAX_BYTES: u64 = 1024 * 1024;
/// Largest `read_max_bytes` an operator may set: one call should never be able to flood a
/// client with more than this.
pub const MAX_READ_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap on entries returned by one `list_directory` call.
pub const DEFAULT_LIST_MAX_ENTRIES: usize = 1000;
/// Largest `list_max_entries` an operator may set.
pub const MAX_LIST_MAX_ENTRIES: usize = 100_000;
/// Deepest recursion `list_directory` allows (its `depth` argument is clamped to this).
pub const DEFAULT_LIST_MAX_DEPTH: usize = 10;
/// Largest `list_max_depth` an operator may set.
pub const MAX_LIST_MAX_DEPTH: usize = 64;

/// Default `execute_command` timeout when the call gives none, in seconds.
pub const DEFAULT_EXEC_TIMEOUT_SECS: u64 = 60;
/// Default server maximum for an `execute_command` timeout: about the ~2 minutes most MCP
/// clients wait for a response before giving up themselves.
pub const DEFAULT_EXEC_TIMEOUT_MAX_SECS: u64 = 120;
/// Highest server maximum an operator may configure.
pub const MAX_EXEC_TIMEOUT_MAX_SECS: u64 = 300;
/// Default bytes kept per output stream (head and tail): enough for a test run's summary and
/// its failures, small enough not to flood a model's context.
pub const DEFAULT_EXEC_MAX_OUTPUT_BYTES: usize = 100 * 1024;
/// Default number of commands that may run at once; further calls queue.
pub const DEFAULT_EXEC_MAX_CONCURRENT: usize = 4;

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
  toolport config                            show the effective configuration";

/// The command line.
#[derive(Debug, Parser)]
#[command(name = "toolport", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// Options shared by every subcommand.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// A workspace root: tools may only touch paths inside the roots. Repeat for several; the
    /// first one is where relative paths resolve. Default: the current directory.
    /// [env: TOOLPORT_ROOTS, a path list like PATH]
    #[arg(long = "root", value_name = "DIR", global = true)]
    pub roots: Vec<PathBuf>,

    /// TOML config file. Default: toolport.toml in the user config dir (~/.config/toolport/),
    /// if it exists.
    #[arg(long, value_name = "FILE", env = "TOOLPORT_CONFIG", global = true)]
    pub config: Option<PathBuf>,

    /// Log level or filter for the logs on stderr: error, warn, info, debug, trace, or a
    /// tracing filter such as "toolport=debug". RUST_LOG is used when this is not set.
    #[arg(long, value_name = "LEVEL", env = "TOOLPORT_LOG_LEVEL", global = true)]
    pub log_level: Option<String>,

    /// Most bytes of text one read_file call returns (default 1048576 = 1 MiB).
    #[arg(
        long,
        value_name = "BYTES",
        env = "TOOLPORT_READ_MAX_BYTES",
        global = true
    )]
    pub read_max_bytes: Option<u64>,

    /// Most entries one list_directory call returns (default 1000).
    #[arg(
        long,
        value_name = "N",
        env = "TOOLPORT_LIST_MAX_ENTRIES",
        global = true
    )]
    pub list_max_entries: Option<usize>,

    /// Serve only these tools (comma-separated or repeated). Default: all.
    #[arg(
        long = "enable-tool",
        value_name = "NAME",
        value_delimiter = ',',
        env = "TOOLPORT_ENABLED_TOOLS",
        global = true
    )]
    pub enabled_tools: Vec<String>,

    /// Confine execute_command with a kernel sandbox: "landlock" (Linux) or "none".
    /// With landlock, commands are refused when the kernel cannot enforce it.
    #[arg(long, value_name = "KIND", env = "TOOLPORT_SANDBOX", global = true)]
    pub sandbox: Option<SandboxKind>,

    /// Never serve these tools (comma-separated or repeated).
    #[arg(
        long = "disable-tool",
        value_name = "NAME",
        value_delimiter = ',',
        env = "TOOLPORT_DISABLED_TOOLS",
        global = true
    )]
    pub disabled_tools: Vec<String>,

    /// The HTTP transport's flags (`--http ADDR`, `--token-file`, …).
    #[command(flatten)]
    pub http: HttpArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default when no subcommand is given), or over HTTP with
    /// --http ADDR.
    Serve,
    /// Print the tool definitions as JSON, for MCP or a model provider's API.
    Tools(ToolsArgs),
    /// Print every tool's prompt instructions (for a system prompt).
    Instructions,
    /// Run one tool locally and print its structured result as JSON.
    Call(CallArgs),
    /// Print the effective configuration (after file, environment and flags) as TOML.
    Config,
}

/// `toolport tools`.
#[derive(Debug, Clone, Args)]
pub struct ToolsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "mcp")]
    pub format: ToolFormat,
    /// Only tools with this tag (repeat: tools must have all of them).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only tools in exactly this category (e.g. filesystem).
    #[arg(long, value_name = "CATEGORY")]
    pub category: Option<String>,
    /// Only tools whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub name_pattern: Option<String>,
}

/// `toolport call`.
#[derive(Debug, Clone, Args)]
pub struct CallArgs {
    /// The tool to run, e.g. read_file.
    pub tool: String,
    /// The arguments, as a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Answer "yes" to any confirmation the tool asks for (there is nobody else to ask).
    #[arg(long)]
    pub yes: bool,
}

/// The TOML file. Every section rejects unknown keys, so a typo is an error, not a no-op.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    roots: Option<Vec<PathBuf>>,
    log_level: Option<String>,
    #[serde(default)]
    tools: FileTools,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    workspace: FileWorkspace,
    #[serde(default)]
    exec: FileExec,
    #[serde(default)]
    web: crate::tools::web::config::FileWeb,
    #[serde(default)]
    http: FileHttp,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTools {
    enabled: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    category: Option<String>,
    name_pattern: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    read_max_bytes: Option<u64>,
    list_max_entries: Option<usize>,
    list_max_depth: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileExec {
    timeout_max: Option<u64>,
    max_output_bytes: Option<usize>,
    max_concurrent: Option<usize>,
    env_allowlist: Option<Vec<String>>,
    allow: Option<Vec<String>>,
    deny: Option<Vec<String>>,
    confirm_rules: Option<Vec<String>>,
    allow_shells: Option<bool>,
    confirm: Option<ConfirmFallback>,
    sandbox: Option<SandboxKind>,
    sandbox_network: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileWorkspace {
    secret_patterns: Option<Vec<String>>,
}

/// Why the configuration is unusable. Each message names the setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file cannot be read.
    #[error("cannot read the config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has an unknown key or a wrong type.
    #[error("invalid config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, naming the key and position.
        message: String,
    },
    /// A setting has a value outside what is allowed.
    #[error("invalid setting {key}: {message}")]
    Invalid {
        /// The setting, as written in the file.
        key: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A setting whose name is built at run time (e.g. `web.brave.base_url`) is invalid.
    #[error("invalid setting {key}: {message}")]
    InvalidKey {
        /// The setting, as written in the file (or the environment variable).
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A feature's settings are invalid (the shape of `crate::settings`).
    #[error(transparent)]
    Setting(#[from] crate::settings::SettingError),
}

/// Which tools are served.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolSelection {
    /// Only these tools (`None`: all).
    pub enabled: Option<Vec<String>>,
    /// Never these tools.
    pub disabled: Vec<String>,
    /// Only tools with all of these tags.
    pub tags: Vec<String>,
    /// Only tools in this category.
    pub category: Option<String>,
    /// Only tools whose name matches this regex.
    pub name_pattern: Option<String>,
    #[serde(skip)]
    name_regex: Option<Regex>,
}

impl ToolSelection {
    /// The tag/category/name part of the selection as a registry filter.
    pub fn filter(&self) -> ToolFilter {
        ToolFilter {
            tags: self.tags.clone(),
            category: self.category.clone(),
            name_pattern: self.name_regex.clone(),
        }
    }
}

/// Size limits.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    /// Most bytes of text one `read_file` call returns.
    pub read_max_bytes: u64,
    /// Most entries one `list_directory` call returns.
    pub list_max_entries: usize,
    /// Deepest `list_directory` recursion.
    pub list_max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            read_max_bytes: DEFAULT_READ_MAX_BYTES,
            list_max_entries: DEFAULT_LIST_MAX_ENTRIES,
            list_max_depth: DEFAULT_LIST_MAX_DEPTH,
        }
    }
}

/// Workspace settings.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceSettings {
    /// Paths matching these patterns are never read.
    pub secret_patterns: Vec<String>,
}

impl Default for WorkspaceSettings {
    fn default() -> Self {
        Self {
            secret_patterns: DEFAULT_SECRET_PATTERNS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

/// What happens to a call that needs the user's confirmation when the client cannot ask
/// (it has no elicitation support, or there is no client, as with `toolport call`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmFallback {
    /// Refuse the call, explaining how to allow it (the default).
    #[default]
    Deny,
    /// Run it without asking: for headless use where the operator accepts the risk.
    Allow,
}

/// Kernel confinement for executed commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    /// No kernel confinement (the default): commands can touch anything the server's user can.
    #[default]
    None,
    /// Landlock (Linux 5.13+): writes only inside the roots and the temp dir; refused if the
    /// kernel cannot enforce it.
    Landlock,
}

/// `execute_command` settings.
#[derive(Debug, Clone, Serialize)]
pub struct ExecSettings {
    /// Largest timeout a call may ask for, in seconds; larger requests are clamped.
    pub timeout_max: u64,
    /// Bytes kept per output stream (head + tail).
    pub max_output_bytes: usize,
    /// Commands that may run at once.
    pub max_concurrent: usize,
    /// Names of server environment variables passed through to commands (beyond PATH, HOME,
    /// LANG).
    pub env_allowlist: Vec<String>,
    /// Policy: only commands matching these rules may run (empty: no allowlist).
    pub allow: Vec<String>,
    /// Policy: commands matching these rules never run.
    pub deny: Vec<String>,
    /// Policy: extra rules needing confirmation, on top of the built-in set.
    pub confirm_rules: Vec<String>,
    /// Shells running a command string (`bash -c`) run without confirmation.
    pub allow_shells: bool,
    /// What to do when confirmation is needed but nobody can be asked.
    pub confirm: ConfirmFallback,
    /// Kernel confinement.
    pub sandbox: SandboxKind,
    /// With a sandbox: whether commands may use the network (TCP).
    pub sandbox_network: bool,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            timeout_max: DEFAULT_EXEC_TIMEOUT_MAX_SECS,
            max_output_bytes: DEFAULT_EXEC_MAX_OUTPUT_BYTES,
            max_concurrent: DEFAULT_EXEC_MAX_CONCURRENT,
            env_allowlist: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            confirm_rules: Vec::new(),
            allow_shells: false,
            confirm: ConfirmFallback::Deny,
            sandbox: SandboxKind::None,
            sandbox_network: true,
        }
    }
}

/// The effective, validated, immutable configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Workspace roots (absolute), first one first.
    pub roots: Vec<PathBuf>,
    /// Log filter.
    pub log_level: Option<String>,
    /// Tool selection.
    pub tools: ToolSelection,
    /// Size limits.
    pub limits: Limits,
    /// Workspace settings.
    pub workspace: WorkspaceSettings,
    /// `execute_command` settings.
    pub exec: ExecSettings,
    /// `web_search` settings (keys masked when printed).
    pub web: crate::tools::web::config::WebSettings,
    /// HTTP transport settings (the token is masked when printed).
    pub http: HttpSettings,
    /// The config file that was read, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_file: Option<PathBuf>,
}

impl Default for Config {
    /// Defaults, with the current directory as the only root.
    fn default() -> Self {
        Self {
            roots: vec![std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))],
            log_level: None,
            tools: ToolSelection::default(),
            limits: Limits::default(),
            workspace: WorkspaceSettings::default(),
            exec: ExecSettings::default(),
            web: Default::default(),
            http: HttpSettings::default(),
            config_file: None,
        }
    }
}

/// Where the config file is looked for when `--config` is not given.
pub fn default_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("toolport").join("toolport.toml"))
}

/// Make `path` absolute against `base`.
fn absolute(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

impl Config {
    /// Layer defaults < file < environment < flags and validate. `env` is read through the
    /// given function so tests need not touch the process environment.
    pub fn load(
        args: &GlobalArgs,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let cwd = std::env::current_dir().map_err(|source| ConfigError::Read {
            path: PathBuf::from("."),
            source,
        })?;
        let explicit = args.config.clone();
        let path = explicit
            .clone()
            .or_else(|| default_config_path().filter(|p| p.is_file()));
        let (file, file_dir) = match &path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                })?;
                let file: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
                    path: path.clone(),
                    message: e.to_string().trim_end().to_string(),
                })?;
                let dir = absolute(&cwd, path)
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| cwd.clone());
                (file, dir)
            }
            None => (FileConfig::default(), cwd.clone()),
        };

        let mut config = Config {
            config_file: path.map(|p| absolute(&cwd, &p)),
            ..Config::default()
        };

        // Roots: flags > TOOLPORT_ROOTS > file (relative to the file's folder) > cwd.
        let env_roots: Vec<PathBuf> = env("TOOLPORT_ROOTS")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        config.roots = if !args.roots.is_empty() {
            args.roots.iter().map(|r| absolute(&cwd, r)).collect()
        } else if !env_roots.is_empty() {
            env_roots.iter().map(|r| absolute(&cwd, r)).collect()
        } else if let Some(roots) = &file.roots {
            roots.iter().map(|r| absolute(&file_dir, r)).collect()
        } else {
            vec![cwd.clone()]
        };
        if config.roots.is_empty() {
            return Err(ConfigError::Invalid {
                key: "roots",
                message: "at least one root is needed".into(),
            });
        }

        config.log_level = args.log_level.clone().or(file.log_level);

        let tools = &file.tools;
        config.tools.enabled = if args.enabled_tools.is_empty() {
            tools.enabled.clone()
        } else {
            Some(args.enabled_tools.clone())
        };
        config.tools.disabled = if args.disabled_tools.is_empty() {
            tools.disabled.clone().unwrap_or_default()
        } else {
            args.disabled_tools.clone()
        };
        config.tools.tags = tools.tags.clone().unwrap_or_default();
        config.tools.category = tools.category.clone();
        config.tools.name_pattern = tools.name_pattern.clone();
        if let Some(pattern) = &config.tools.name_pattern {
            config.tools.name_regex =
                Some(Regex::new(pattern).map_err(|e| ConfigError::Invalid {
                    key: "tools.name_pattern",
                    message: format!("not a valid regular expression: {e}"),
                })?);
        }

        let limits = &file.limits;
        config.limits.read_max_bytes = args
            .read_max_bytes
            .or(limits.read_max_bytes)
            .unwrap_or(DEFAULT_READ_MAX_BYTES);
        if !(1024..=MAX_READ_MAX_BYTES).contains(&config.limits.read_max_bytes) {
            return Err(ConfigError::Invalid {
                key: "limits.read_max_bytes",
                message: format!(
                    "{} is out of range; allowed is 1024..={MAX_READ_MAX_BYTES}",
                    config.limits.read_max_bytes
                ),
            });
        }
        config.limits.list_max_entries = args
            .list_max_entries
            .or(limits.list_max_entries)
            .unwrap_or(DEFAULT_LIST_MAX_ENTRIES);
        if !(1..=MAX_LIST_MAX_ENTRIES).contains(&config.limits.list_max_entries) {
            return Err(ConfigError::Invalid {
                key: "limits.list_max_entries",
                message: format!(
                    "{} is out of range; allowed is 1..={MAX_LIST_MAX_ENTRIES}",
                    config.limits.list_max_entries
                ),
            });
        }
        config.limits.list_max_depth = limits.list_max_depth.unwrap_or(DEFAULT_LIST_MAX_DEPTH);
        if !(1..=MAX_LIST_MAX_DEPTH).contains(&config.limits.list_max_depth) {
            return Err(ConfigError::Invalid {
                key: "limits.list_max_depth",
                message: format!(
                    "{} is out of range; allowed is 1..={MAX_LIST_MAX_DEPTH}",
                    config.limits.list_max_depth
                ),
            });
        }

        if let Some(patterns) = file.workspace.secret_patterns {
            config.workspace.secret_patterns = patterns;
        }

        let exec = file.exec;
        let e = &mut config.exec;
        e.timeout_max = exec.timeout_max.unwrap_or(DEFAULT_EXEC_TIMEOUT_MAX_SECS);
        if !(1..=MAX_EXEC_TIMEOUT_MAX_SECS).contains(&e.timeout_max) {
            return Err(ConfigError::Invalid {
                key: "exec.timeout_max",
                message: format!(
                    "{} is out of range; allowed is 1..={MAX_EXEC_TIMEOUT_MAX_SECS} seconds",
                    e.timeout_max
                ),
            });
        }
        e.max_output_bytes = exec
            .max_output_bytes
            .unwrap_or(DEFAULT_EXEC_MAX_OUTPUT_BYTES);
        if !(1024..=64 * 1024 * 1024).contains(&e.max_output_bytes) {
            return Err(ConfigError::Invalid {
                key: "exec.max_output_bytes",
                message: format!(
                    "{} is out of range; allowed is 1024..=67108864",
                    e.max_output_bytes
                ),
            });
        }
        e.max_concurrent = exec.max_concurrent.unwrap_or(DEFAULT_EXEC_MAX_CONCURRENT);
        if !(1..=256).contains(&e.max_concurrent) {
            return Err(ConfigError::Invalid {
                key: "exec.max_concurrent",
                message: format!("{} is out of range; allowed is 1..=256", e.max_concurrent),
            });
        }
        e.env_allowlist = exec.env_allowlist.unwrap_or_default();
        e.allow = exec.allow.unwrap_or_default();
        e.deny = exec.deny.unwrap_or_default();
        e.confirm_rules = exec.confirm_rules.unwrap_or_default();
        e.allow_shells = exec.allow_shells.unwrap_or(false);
        e.confirm = exec.confirm.unwrap_or_default();
        e.sandbox = args.sandbox.or(exec.sandbox).unwrap_or_default();
        e.sandbox_network = exec.sandbox_network.unwrap_or(true);
        config.web = crate::tools::web::config::WebSettings::load(file.web, &file_dir, &env)?;
        config.http = HttpSettings::load(&args.http, file.http)?;
        Ok(config)
    }

    /// The effective configuration as TOML, for `toolport config`. Secrets (the web search
    /// API keys, the HTTP token) serialize masked.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut argv = vec!["toolport"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).unwrap();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load(&cli.global, |k| env.get(k).cloned())
    }

    fn file(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolport.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path.display().to_string())
    }

    #[test]
    fn defaults_use_the_current_directory() {
        let (_d, path) = file("");
        let c = load(&["--config", &path], &[]).unwrap();
        assert_eq!(c.roots, vec![std::env::current_dir().unwrap()]);
        assert_eq!(c.limits.read_max_bytes, DEFAULT_READ_MAX_BYTES);
        assert_eq!(
            c.workspace.secret_patterns.len(),
            DEFAULT_SECRET_PATTERNS.len()
        );
    }

    #[test]
    fn layers_file_then_env_then_flags() {
        let (dir, path) =
            file("roots = [\"sub\"]\n[limits]\nread_max_bytes = 2048\nlist_max_entries = 7\n");
        let c = load(&["--config", &path], &[]).unwrap();
        assert_eq!(
            c.roots,
            vec![dir.path().join("sub")],
            "file roots are relative to the file"
        );
        assert_eq!(
            (c.limits.read_max_bytes, c.limits.list_max_entries),
            (2048, 7)
        );

        let c = load(&["--config", &path], &[("TOOLPORT_ROOTS", "/a:/b")]).unwrap();
        assert_eq!(c.roots, vec![PathBuf::from("/a"), PathBuf::from("/b")]);

        let c = load(
            &[
                "--config",
                &path,
                "--root",
                "/c",
                "--read-max-bytes",
                "4096",
            ],
            &[("TOOLPORT_ROOTS", "/a")],
        )
        .unwrap();
        assert_eq!(c.roots, vec![PathBuf::from("/c")]);
        assert_eq!(c.limits.read_max_bytes, 4096);
        assert_eq!(c.limits.list_max_entries, 7);
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it() {
        let (_d, path) = file("[limits]\nread_max_byte = 10\n");
        let err = load(&["--config", &path], &[]).unwrap_err().to_string();
        assert!(err.contains("unknown field `read_max_byte`"), "{err}");
        assert!(
            err.contains("read_max_bytes"),
            "the message lists the allowed keys: {err}"
        );
        let (_d, path) = file("colour = true\n");
        let err = load(&["--config", &path], &[]).unwrap_err().to_string();
        assert!(err.contains("unknown field `colour`"), "{err}");
    }

    #[test]
    fn out_of_range_values_name_the_setting() {
        let (_d, path) = file("[limits]\nread_max_bytes = 1\n");
        let err = load(&["--config", &path], &[]).unwrap_err().to_string();
        assert!(
            err.contains("limits.read_max_bytes") && err.contains("1024..="),
            "{err}"
        );
        let (_d, path) = file("[tools]\nname_pattern = \"(\"\n");
        let err = load(&["--config", &path], &[]).unwrap_err().to_string();
        assert!(err.contains("tools.name_pattern"), "{err}");
    }

    #[test]
    fn a_missing_explicit_file_is_an_error() {
        let err = load(&["--config", "/no/such/toolport.toml"], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("/no/such/toolport.toml"), "{err}");
    }

    #[test]
    fn tool_selection_from_flags() {
        let (_d, path) = file("[tools]\nenabled = [\"read_file\"]\n");
        let c = load(
            &[
                "--config",
                &path,
                "--enable-tool",
                "path_info,list_directory",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            c.tools.enabled,
            Some(vec!["path_info".into(), "list_directory".into()])
        );
    }
}
