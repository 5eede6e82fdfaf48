//! Configuration in two stages (as ripgrep does it): the command line is parsed by clap
//! ([`Cli`], with `env =` on each flag), then [`Config::load`] layers it over the TOML file and
//! the defaults into one immutable [`Config`].
//!
//! This module only composes: each feature owns its settings (file section, flags, defaults,
//! validation; see [`toolport_tools::host::settings`]). The tool sections — roots, `[tools]`,
//! `[limits]`, `[fs]`, `[workspace]`, `[exec]`, `[web]`, `[plugins]`, `[[upstreams]]` — are
//! loaded by the library's [`ToolConfig::load`], the code `Settings::from_toml` runs too; the
//! server's own (`log_level`, `[http]`, `[audit]`, `[telemetry]`, `[replicas]`, the call budgets of
//! `[limits]`) are loaded here from the same parsed file ([`FileConfig`], the library's: the
//! whole file's format is there). Precedence, lowest first: built-in defaults < TOML file
//! (`--config`, else `$XDG_CONFIG_HOME/toolport/toolport.toml` if present) < `TOOLPORT_*` (and
//! the standard `OTEL_*`) environment < flags.
//! An unknown key in the file is an error that names the key; a key read under a deprecated
//! name is warned about once logging is up ([`Config::warn_deprecated`]).
//!
//! [`Config::to_toml`] (`toolport config`) prints a config file: every key it prints is one
//! the file takes, with the value in effect, so `toolport config > f.toml` and
//! `toolport --config f.toml config` print the same. What is in effect but cannot be a key
//! there (secrets, the `--http` address, the default plugin folder) is a comment at the top.
//!
//! - [`cli`]: the subcommands and flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toolport_tools::host::config::{Environment, FileConfig, ToolConfig, absolute};
use toolport_tools::host::secret::Secret;
use toolport_tools::host::settings::{Deprecated, SettingError, commented};
use toolport_tools::host::{BuiltinSettings, WorkspaceSettings};

mod cli;

pub(crate) use cli::{AuthCommand, CallArgs, Command, PluginsCommand, ToolsArgs, UpstreamsCommand};
pub use cli::{Cli, GlobalArgs};

// Each feature's settings, as the composed `Config` holds them.
pub use crate::cluster::settings::ReplicaSettings;
pub use crate::observe::audit::AuditSettings;
pub use crate::observe::budget::BudgetSettings;
pub use crate::observe::trace::TelemetrySettings;
pub use crate::transport::http::settings::HttpSettings;
pub use toolport_tools::host::ExecSettings;
pub use toolport_tools::host::FsSettings;
pub use toolport_tools::host::PluginSettings;
pub use toolport_tools::host::ToolSelection;
pub use toolport_tools::host::UpstreamSettings;
pub use toolport_tools::host::WebSettings;
pub use toolport_tools::host::WriteSettings;

/// Why the configuration is unusable. Each message names the file or the setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file cannot be read.
    #[error("cannot read the config file {path}: {source}")]
    Read {
        /// The config file: `--config`, or the default one that exists.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has an unknown key or a wrong type.
    #[error("invalid config file {path}: {message}")]
    Parse {
        /// The config file that was read.
        path: PathBuf,
        /// The parser's message, naming the key and position.
        message: String,
    },
    /// A setting has a value outside what is allowed.
    #[error(transparent)]
    Setting(#[from] SettingError),
}

/// `[limits]`: the file tools' sizes and the call budgets, one section in the file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Limits {
    /// `read_file` / `list_directory` limits.
    #[serde(flatten)]
    pub fs: FsSettings,
    /// Calls per session, per minute and at once, for the session and per tool.
    #[serde(flatten)]
    pub calls: BudgetSettings,
}

/// The first line of `toolport config`.
const CONFIG_HEADER: &str = "The configuration in effect, as a config file: `toolport --config FILE config` prints it again.";

/// How the server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout (the default).
    Stdio,
    /// Streamable HTTP and legacy SSE on this address (`--http`).
    Http(SocketAddr),
}

/// The effective, validated, immutable configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Workspace roots (absolute), first one first.
    pub roots: Vec<PathBuf>,
    /// Log filter.
    pub log_level: Option<String>,
    /// Which tools are served.
    pub tools: ToolSelection,
    /// `read_file` / `list_directory` limits and the call budgets.
    pub limits: Limits,
    /// The write tools (`[fs]`, `--read-only`).
    pub fs: WriteSettings,
    /// The secret rules.
    pub workspace: WorkspaceSettings,
    /// `execute_command`.
    pub exec: ExecSettings,
    /// `web_search` (keys masked when printed).
    pub web: WebSettings,
    /// The HTTP transport (the token is masked when printed).
    pub http: HttpSettings,
    /// Where plugin manifests are read from.
    pub plugins: PluginSettings,
    /// The audit log.
    pub audit: AuditSettings,
    /// Trace export (`[telemetry]`, `OTEL_*`).
    pub telemetry: TelemetrySettings,
    /// The replicas' shared store (`[replicas]`); `None`: this server shares nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaSettings>,
    /// Other MCP servers whose tools are served too (`[[upstreams]]`; last: an array of
    /// tables is printed after the sections).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<UpstreamSettings>,
    /// The config file that was read, if any (not printed by `toolport config`, whose output
    /// is loaded from wherever it is saved).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// Environment variables ignored because they held an unexpanded placeholder
    /// ([`Environment`]); warned about once logging is up.
    #[serde(skip)]
    pub unexpanded_env: Vec<String>,
}

impl Default for Config {
    /// Defaults, with the current directory as the only root.
    fn default() -> Self {
        Self {
            roots: vec![std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))],
            log_level: None,
            tools: ToolSelection::default(),
            limits: Limits::default(),
            fs: WriteSettings::default(),
            workspace: WorkspaceSettings::default(),
            exec: ExecSettings::default(),
            web: WebSettings::default(),
            http: HttpSettings::default(),
            plugins: PluginSettings::default(),
            audit: AuditSettings::default(),
            telemetry: TelemetrySettings::default(),
            replicas: None,
            upstreams: Vec::new(),
            config_file: None,
            unexpanded_env: Vec::new(),
        }
    }
}

/// The `[[upstreams]]` of the config file at `path`, read again (a live reload of the
/// upstreams): the same checks as at start; an error names the file and the key.
pub(crate) fn read_upstreams(path: &Path) -> Result<Vec<UpstreamSettings>, String> {
    let file = read_file(path).map_err(|e| e.to_string())?;
    let dir = path.parent().unwrap_or(Path::new("."));
    UpstreamSettings::load_all(file.upstreams, dir).map_err(|e| e.to_string())
}

/// Where the config file is looked for when `--config` is not given.
fn default_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("toolport").join("toolport.toml"))
}

/// The config file at `path`, read and parsed.
fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    FileConfig::parse(&text).map_err(|message| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    })
}

impl Config {
    /// Layer defaults < file < environment < flags and validate. `env` is read through the
    /// given function so tests need not touch the process environment.
    pub fn load(
        args: &GlobalArgs,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = Environment::new(&env);
        let mut config = Self::load_layers(args, &env)?;
        config.unexpanded_env = env.unexpanded();
        Ok(config)
    }

    fn load_layers(args: &GlobalArgs, env: &Environment<'_>) -> Result<Self, ConfigError> {
        let cwd = std::env::current_dir().map_err(|source| ConfigError::Read {
            path: PathBuf::from("."),
            source,
        })?;
        let path = args
            .config
            .clone()
            .or_else(|| default_config_path().filter(|p| p.is_file()))
            .map(|p| absolute(&cwd, &p));
        let (file, file_dir) = match &path {
            Some(path) => (
                read_file(path)?,
                path.parent().map_or_else(|| cwd.clone(), Path::to_path_buf),
            ),
            None => (FileConfig::default(), cwd.clone()),
        };

        // The server's sections first: the tools' loading takes the file.
        let log_level = args.log_level.clone().or_else(|| file.log_level.clone());
        let calls = BudgetSettings::load(&file.limits)?;
        let http = HttpSettings::load(&args.http, &file.http, &file_dir)?;
        let audit = AuditSettings::load(&file.audit, &args.audit, &file_dir, &cwd)?;
        let telemetry = TelemetrySettings::load(&file.telemetry, |name| env.get(name))?;
        let replicas = ReplicaSettings::load(&file.replicas, &args.replicas, |name| env.get(name))?;
        let loaded = ToolConfig::load(
            file,
            &args.tools.clone().with_env(env),
            env,
            &file_dir,
            &cwd,
        )?;
        Ok(Self {
            roots: loaded.roots,
            log_level,
            tools: loaded.tools,
            limits: Limits {
                fs: loaded.limits,
                calls,
            },
            fs: loaded.fs,
            workspace: loaded.workspace,
            exec: loaded.exec,
            web: loaded.web,
            http,
            plugins: loaded.plugins,
            audit,
            telemetry,
            replicas,
            upstreams: loaded.upstreams,
            config_file: path,
            unexpanded_env: Vec::new(),
        })
    }

    /// Log a warning for each key the file gave under a deprecated name (call once logging
    /// is set up).
    pub(crate) fn warn_deprecated(&self) {
        self.web.deprecated.iter().for_each(Deprecated::warn);
        for name in &self.unexpanded_env {
            tracing::warn!(
                "{name} holds an unexpanded placeholder (\"${{...}}\": a setting the client's \
                 config or bundle left empty); it is treated as unset"
            );
        }
    }

    /// The secrets the audit log scrubs wherever they appear from the start: the web keys and
    /// the Redis password.
    /// (The upstreams tell theirs as they are configured and connect:
    /// [`Upstreams::on_secret`](toolport_tools::host::Upstreams::on_secret).)
    pub(crate) fn secrets(&self) -> Vec<Secret> {
        let mut secrets = self.web.secrets();
        secrets.extend(
            self.replicas
                .as_ref()
                .and_then(|r| r.password.as_ref())
                .map(|(password, _)| password.clone()),
        );
        secrets
    }

    /// How the server is reached: HTTP when `--http` gave an address, else stdio.
    pub(crate) fn transport(&self) -> Transport {
        self.http.bind.map_or(Transport::Stdio, Transport::Http)
    }

    /// What the built-in tools are built with.
    pub(crate) fn builtin_settings(&self) -> BuiltinSettings<'_> {
        BuiltinSettings {
            roots: &self.roots,
            fs: &self.limits.fs,
            write: &self.fs,
            exec: &self.exec,
            web: &self.web,
        }
    }

    /// The effective configuration as a config file, for `toolport config`: loaded with
    /// `--config`, it gives this configuration again (see the module doc). Secrets are never
    /// printed: a key file is printed as its `*_file` key, any other source as a comment.
    pub(crate) fn to_toml(&self) -> String {
        let toml =
            toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}\n"));
        let header = [CONFIG_HEADER.to_owned()];
        let notes: Vec<_> = [
            self.web.notes(),
            self.http.notes(),
            self.plugins.notes(),
            self.telemetry.notes(),
            self.replicas
                .as_ref()
                .map(ReplicaSettings::notes)
                .unwrap_or_default(),
            self.upstreams
                .iter()
                .enumerate()
                .flat_map(|(index, upstream)| upstream.notes(index))
                .collect(),
        ]
        .concat();
        commented(&header, &notes, &self.web.unset(), &toml)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
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
        assert_eq!(c.limits.fs, FsSettings::default());
        assert_eq!(c.workspace, WorkspaceSettings::default());
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
            (c.limits.fs.read_max_bytes, c.limits.fs.list_max_entries),
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
        assert_eq!(c.limits.fs.read_max_bytes, 4096);
        assert_eq!(c.limits.fs.list_max_entries, 7);
    }

    #[test]
    fn plugin_dirs_layer_file_then_env_then_flags() {
        let (dir, path) = file("[plugins]\ndirs = [\"p\", \"/abs\"]\n");
        let c = load(&["--config", &path], &[]).unwrap();
        assert_eq!(
            c.plugins.dirs,
            vec![dir.path().join("p"), PathBuf::from("/abs")],
            "file dirs are relative to the file"
        );
        let c = load(&["--config", &path], &[("TOOLPORT_PLUGIN_DIRS", "/a:b")]).unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(c.plugins.dirs, vec![PathBuf::from("/a"), cwd.join("b")]);
        let c = load(
            &["--config", &path, "--plugins", "/c", "--plugins", "/d"],
            &[("TOOLPORT_PLUGIN_DIRS", "/a")],
        )
        .unwrap();
        assert_eq!(
            c.plugins.dirs,
            vec![PathBuf::from("/c"), PathBuf::from("/d")]
        );
        assert!(!c.plugins.default_dir);
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

    /// The cases `Settings::from_toml` refuses (the library's test) are refused here too:
    /// one misspelled key in each section, the server's own included.
    #[test]
    fn a_misspelled_key_in_any_section_is_an_error_naming_it() {
        let cases: toml::Table = toml::from_str(include_str!(
            "../../crates/toolport-tools/tests/data/misspelled_keys.toml"
        ))
        .unwrap();
        for (key, text) in &cases {
            let (_d, path) = file(text.as_str().unwrap());
            let err = load(&["--config", &path], &[]).unwrap_err().to_string();
            assert!(
                err.contains(&format!("unknown field `{key}`")) && err.contains(&path),
                "{text}: {err}"
            );
        }
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

    #[test]
    fn durations_are_strings_and_legacy_numbers_keep_their_unit() {
        use std::time::Duration;
        let (_d, path) = file(
            "[exec]\ntimeout_max = \"90s\"\n[web]\ncall_timeout = \"45s\"\ncache_ttl = \"1h\"\n[http]\nsse_keep_alive = \"20s\"\n",
        );
        let c = load(&["--config", &path], &[]).unwrap();
        assert_eq!(
            (
                c.exec.timeout_max,
                c.web.call_timeout,
                c.web.cache_ttl,
                c.http.sse_keep_alive
            ),
            (
                Duration::from_secs(90),
                Duration::from_secs(45),
                Duration::from_secs(3600),
                Duration::from_secs(20)
            )
        );
        assert!(c.web.deprecated.is_empty());
        let (_d, path) =
            file("[exec]\ntimeout_max = 90\n[web]\ncall_timeout_ms = 45500\ncache_ttl_secs = 0\n");
        let c = load(&["--config", &path], &[]).unwrap();
        assert_eq!(
            (c.exec.timeout_max, c.web.call_timeout, c.web.cache_ttl),
            (
                Duration::from_secs(90),
                Duration::from_millis(45_500),
                Duration::ZERO
            )
        );
        assert_eq!(c.web.deprecated.len(), 2, "{:?}", c.web.deprecated);
        let shown = c.to_toml();
        assert!(
            shown.contains("timeout_max = \"1m30s\"")
                && shown.contains("call_timeout = \"45.5s\"")
                && shown.contains("cache_ttl = \"0s\""),
            "toolport config prints durations under their names today, as people write them: {shown}"
        );
        let (_d, path) = file("[exec]\ntimeout_max = \"10m\"\n");
        let err = load(&["--config", &path], &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid setting exec.timeout_max: 10m is out of range; allowed is 1s..=5m"
        );
    }

    /// `toolport config` prints a file `--config` loads back to the same configuration: the
    /// defaults, and a file that sets every section (the binary's round trip is in
    /// tests/it/cli.rs).
    #[test]
    fn the_printed_config_loads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("brave.key"), "brave-key-planted\n").unwrap();
        let env = [("TOOLPORT_TAVILY_API_KEY", "tavily-key-planted")];
        for text in [
            "",
            "log_level = \"debug\"\n[tools]\ndisabled = [\"grep\"]\n[limits]\nmax_calls_per_minute = 30\n[limits.tools.grep]\nmax_calls_per_session = 5\n[exec]\ntimeout_max = 90\ndeny = [\"git push\"]\n[web]\nproviders = [\"brave\", \"tavily\"]\ncall_timeout_ms = 1500\n[web.brave]\napi_key_file = \"brave.key\"\n[web.fetch]\nallowed_hosts = [\"wiki.corp\"]\n[http]\nallowed_hosts = [\"*\"]\nno_auth = true\n[plugins]\ndirs = [\"p\"]\n[audit]\npath = \"a.log\"\n",
        ] {
            let path = dir.path().join("first.toml");
            std::fs::write(&path, text).unwrap();
            let first = load(&["--config", path.to_str().unwrap()], &env)
                .unwrap()
                .to_toml();
            let again = dir.path().join("again.toml");
            std::fs::write(&again, &first).unwrap();
            let second = load(&["--config", again.to_str().unwrap()], &env)
                .unwrap_or_else(|e| panic!("{e}\n{first}"))
                .to_toml();
            assert_eq!(first, second);
            assert!(!first.contains("planted"), "{first}");
        }
    }

    /// A Claude Desktop bundle passes an optional setting the user left empty as the literal
    /// `${user_config.…}`: such a value is unset, never an API key or a root.
    #[test]
    fn unexpanded_placeholders_in_the_environment_count_as_unset() {
        let placeholder = "${user_config.brave_api_key}";
        let c = load(
            &[],
            &[
                ("TOOLPORT_BRAVE_API_KEY", placeholder),
                ("TOOLPORT_ROOTS", "${user_config.dirs}"),
            ],
        )
        .unwrap();
        assert_eq!(c.roots, vec![std::env::current_dir().unwrap()]);
        let shown = c.to_toml();
        // No key noted as set from the environment: Brave's key is shown as unset.
        assert!(
            !shown.contains("web.brave.api_key:")
                && shown.contains("web.brave.api_key_file = \"…\"  (or TOOLPORT_BRAVE_API_KEY)")
                && !shown.contains(placeholder),
            "{shown}"
        );
        let mut ignored = c.unexpanded_env;
        ignored.sort();
        assert_eq!(ignored, ["TOOLPORT_BRAVE_API_KEY", "TOOLPORT_ROOTS"]);
    }

    #[test]
    fn the_web_section_loads_through_the_whole_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolport.toml");
        let load = |text: &str, env: &[(&str, &str)]| {
            std::fs::write(&path, text).unwrap();
            let cli = crate::config::Cli::try_parse_from([
                "toolport",
                "--config",
                path.to_str().unwrap(),
            ])
            .unwrap();
            let env: HashMap<String, String> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            crate::config::Config::load(&cli.global, |k| env.get(k).cloned())
        };
        let text = "[web]\nproviders = [\"brave\", \"duckduckgo\"]\n";
        let err = load(text, &[]).unwrap_err().to_string();
        assert!(
            err.contains("web.providers") && err.contains("TOOLPORT_BRAVE_API_KEY"),
            "{err}"
        );
        let c = load(text, &[("TOOLPORT_BRAVE_API_KEY", "sk-secret")]).unwrap();
        assert_eq!(
            c.web.providers,
            vec![
                toolport_tools::host::ProviderId::Brave,
                toolport_tools::host::ProviderId::Duckduckgo
            ]
        );
        let shown = c.to_toml();
        assert!(
            !shown.contains("sk-secret")
                && shown.contains("web.brave.api_key: set from TOOLPORT_BRAVE_API_KEY"),
            "{shown}"
        );
        assert!(!format!("{c:?}").contains("sk-secret"));
        let err = load("[web]\nprovider = []\n", &[]).unwrap_err().to_string();
        assert!(err.contains("unknown field `provider`"), "{err}");
        let err = load("[web.brave]\napi_key_file = \"missing.key\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.key"), "{err}");
    }
}
