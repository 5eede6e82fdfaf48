//! [`Toolbox`]: the built-in tools, plugin tools and an embedder's own, built from
//! [`Settings`] — what the `toolport` binary serves, without the server. The binary builds
//! its tool set through the same [`Catalog`] (plus live reload); this is the small front door
//! for a Rust agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Environment, FileConfig, ToolArgs, ToolConfig};
use crate::definition::DefinitionError;
use crate::plugins::Catalog;
use crate::registry::ToolRegistry;
use crate::settings::SettingError;
use crate::tool::{AiTool, ConfirmFallback, ToolContext};
use crate::tools::exec::ExecSettings;
use crate::tools::fs::{FsSettings, WriteMode, WriteSettings};
use crate::tools::web::settings::WebSettings;
use crate::tools::{BuiltinSettings, SelectionError, ToolSelection, builtin_tools};
use crate::workspace::{Workspace, WorkspaceError};

/// Why [`Settings::from_toml`] refused a config text. The message names the key.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Not TOML, an unknown key, or a value of the wrong type.
    #[error("invalid tool settings: {0}")]
    Parse(String),
    /// A value outside what is allowed.
    #[error(transparent)]
    Setting(#[from] SettingError),
}

/// What a [`Toolbox`] is built from: the roots the tools may touch and how the built-in tools
/// behave. The defaults are the `toolport` binary's (docs/configuration.md): file tools
/// confined to the roots, writes allowed, commands under the default policy with risky ones
/// confirmed, web search through keyless DuckDuckGo.
///
/// ```
/// use toolport_tools::Settings;
///
/// let settings = Settings::new(["."]).read_only().plugin_dir("./tools.d");
/// # let _ = settings;
/// ```
#[derive(Debug, Clone)]
pub struct Settings {
    roots: Vec<PathBuf>,
    secret_patterns: Vec<String>,
    fs: FsSettings,
    write: WriteSettings,
    exec: ExecSettings,
    web: WebSettings,
    plugin_dirs: Vec<PathBuf>,
    selection: ToolSelection,
}

impl Settings {
    /// Settings from the text of a toolport config file (docs/configuration.md): `roots` and
    /// the sections the tools read — `[tools]`, `[limits]` (the file tools' keys), `[fs]`,
    /// `[workspace]`, `[exec]`, `[web]` (API keys from its `*_file` keys or the
    /// `TOOLPORT_*_API_KEY` variables, as in the server), `[plugins] dirs` — loaded by the
    /// same code as the server's, with its checks and messages. Relative paths resolve
    /// against `base_dir` (the file's folder); without `roots`, the root is `base_dir`. The
    /// server's own sections (`log_level`, `[http]`, `[audit]`, `[telemetry]`, the call
    /// budgets in `[limits]`) are parsed with the server's types, so their keys and types are
    /// checked, and otherwise left to it; `[[upstreams]]` gets the server's checks and is
    /// left to it too. So the same file configures both, and a misspelled key in any section
    /// is an error naming it.
    ///
    /// ```
    /// use toolport_tools::{Settings, Toolbox};
    ///
    /// let text = r#"
    ///     [exec]
    ///     timeout_max = "30s"
    ///     [tools]
    ///     disabled = ["web_search", "fetch_url"]
    /// "#;
    /// let settings = Settings::from_toml(text, &std::env::temp_dir())?;
    /// let toolbox = Toolbox::new(&settings)?;
    /// assert!(toolbox.registry().get("web_search").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_toml(text: &str, base_dir: &Path) -> Result<Self, SettingsError> {
        let file = FileConfig::parse(text).map_err(SettingsError::Parse)?;
        let read = |name: &str| std::env::var(name).ok();
        // No flags, so none of their variables (`TOOLPORT_ROOTS` …): `ToolArgs::default()`.
        let ToolConfig {
            roots,
            tools,
            limits,
            fs,
            workspace,
            exec,
            web,
            plugins,
            upstreams: _,
        } = ToolConfig::load(
            file,
            &ToolArgs::default(),
            &Environment::new(&read),
            base_dir,
            base_dir,
        )?;
        Ok(Self {
            roots,
            secret_patterns: workspace.secret_patterns,
            fs: limits,
            write: fs,
            exec,
            web,
            // A toolbox reads only the folders it is given, never the server's default one.
            plugin_dirs: if plugins.default_dir {
                Vec::new()
            } else {
                plugins.dirs
            },
            selection: tools,
        })
    }

    /// The defaults with these roots (the first is where relative paths start). Every path a
    /// tool touches must be inside one of them.
    pub fn new<P: Into<PathBuf>>(roots: impl IntoIterator<Item = P>) -> Self {
        Self {
            roots: roots.into_iter().map(Into::into).collect(),
            secret_patterns: Vec::new(),
            fs: FsSettings::default(),
            write: WriteSettings::default(),
            exec: ExecSettings::default(),
            web: WebSettings::default(),
            plugin_dirs: Vec::new(),
            selection: ToolSelection::default(),
        }
    }

    /// No tool writes: `write_file`, `edit_file`, `apply_patch`, `create_directory`, `move_path`,
    /// `copy_path`, `delete_path` and `undo_last_change` are not built (as
    /// `toolport --read-only`).
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.write.write = WriteMode::Off;
        self
    }

    /// Every write asks the call's [`Confirmer`](crate::Confirmer) first, with the diff (as
    /// `[fs] write = "confirm"`).
    #[must_use]
    pub fn confirm_writes(mut self) -> Self {
        self.write.write = WriteMode::Confirm;
        self
    }

    /// Also read tools from the plugin manifests (`*.toml`) in `dir` (docs/plugins.md).
    #[must_use]
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_dirs.push(dir.into());
        self
    }

    /// Also refuse paths matching this glob as secrets, beside the built-in rules (`.env`,
    /// keys, credentials; docs/security.md).
    #[must_use]
    pub fn secret_pattern(mut self, glob: impl Into<String>) -> Self {
        self.secret_patterns.push(glob.into());
        self
    }

    /// Serve only these tools (by name; as `[tools] enabled`). An unknown name is an error
    /// when the toolbox is built.
    #[must_use]
    pub fn only<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.selection.enabled = Some(names.into_iter().map(Into::into).collect());
        self
    }
}

/// Why a [`Toolbox`] could not be built. The message names the setting.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A root cannot be used, or a secret pattern is not a valid glob.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The tool selection names an unknown tool, or a tool's settings are invalid.
    #[error(transparent)]
    Selection(#[from] SelectionError),
}

/// The tools, built: a [`ToolRegistry`] over a [`Workspace`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use toolport_tools::{Settings, Toolbox};
///
/// let dir = std::env::temp_dir();
/// let toolbox = Toolbox::new(&Settings::new([dir]).read_only())?;
/// assert!(toolbox.registry().get("read_file").is_some());
/// assert!(toolbox.registry().get("write_file").is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Toolbox {
    registry: ToolRegistry,
    workspace: Arc<Workspace>,
    confirm_fallback: ConfirmFallback,
}

impl Toolbox {
    /// Open the roots, build the built-in tools and read the plugin folders. A plugin manifest
    /// that does not load is skipped (logged with `tracing`), as the binary does.
    pub fn new(settings: &Settings) -> Result<Self, BuildError> {
        let workspace = Workspace::new(&settings.roots, &settings.secret_patterns)?;
        let builtins = builtin_tools(BuiltinSettings {
            roots: &settings.roots,
            fs: &settings.fs,
            write: &settings.write,
            exec: &settings.exec,
            web: &settings.web,
        })?;
        let catalog = Catalog::new(
            builtins,
            settings.plugin_dirs.clone(),
            settings.selection.clone(),
            settings.exec.timeout_max,
        )?;
        let built = catalog.build(true)?;
        built.log();
        Ok(Self {
            registry: built.registry,
            workspace: Arc::new(workspace),
            confirm_fallback: settings.exec.confirm,
        })
    }

    /// Add a tool of your own beside the built-ins. `Ok(false)` when a tool of that name is
    /// there already (the first one stays); an error when its definition is invalid (name,
    /// schema).
    pub fn add(&mut self, tool: Arc<dyn AiTool>) -> Result<bool, DefinitionError> {
        self.registry.register(tool)
    }

    /// The tools: list their definitions, run calls.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The roots every call is confined to.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// A context for one call: this toolbox's roots, a fresh cancellation token, no progress
    /// reports, and nobody to confirm risky calls (they are refused with a message the model
    /// can read) — set a [`Confirmer`](crate::Confirmer) with
    /// [`ToolContext::with_confirmer`] to ask the user.
    pub fn context(&self) -> ToolContext {
        ToolContext::local(self.workspace.clone(), self.confirm_fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_server_config_file_gives_the_tool_settings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let text = r#"
            roots = ["work"]
            log_level = "debug"
            [limits]
            read_max_bytes = 4096
            max_calls_per_session = 10
            [fs]
            write = "off"
            [exec]
            timeout_max = "30s"
            [http]
            max_body_bytes = 1000
            [limits.tools.grep]
            max_calls_per_minute = 5
            [audit]
            path = "audit.jsonl"
            [telemetry]
            service_name = "agent"
            [plugins]
            dirs = ["tools.d"]
            [[upstreams]]
            name = "files"
            command = "mcp-server-filesystem"
        "#;
        let settings = Settings::from_toml(text, dir.path()).unwrap();
        assert_eq!(settings.roots, vec![dir.path().join("work")]);
        assert_eq!(settings.fs.read_max_bytes, 4096);
        assert_eq!(settings.write.write, WriteMode::Off);
        assert_eq!(
            settings.exec.timeout_max,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(settings.plugin_dirs, vec![dir.path().join("tools.d")]);
        let toolbox = Toolbox::new(&settings).unwrap();
        assert!(toolbox.registry().get("write_file").is_none());
        assert!(toolbox.registry().get("read_file").is_some());
    }

    #[test]
    fn defaults_root_at_the_base_dir_and_read_no_default_plugin_folder() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::from_toml("", dir.path()).unwrap();
        assert_eq!(settings.roots, vec![dir.path().to_path_buf()]);
        assert!(settings.plugin_dirs.is_empty());
    }

    #[test]
    fn a_typo_or_a_bad_value_is_an_error_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        for (text, names) in [
            ("[exec]\ntimeout_maxx = \"3s\"\n", "timeout_maxx"),
            ("[limits]\nread_max_bytes = 0\n", "read_max_bytes"),
            ("[nonsense]\n", "nonsense"),
            ("[web]\nproviders = [\"nope\"]\n", "nope"),
        ] {
            let error = Settings::from_toml(text, dir.path())
                .unwrap_err()
                .to_string();
            assert!(error.contains(names), "{text}: {error}");
        }
    }

    /// Issue 39: `[limits] read_max_byte` passed `from_toml` silently (it kept only the file
    /// tools' keys of `[limits]`), and so did any misspelled key of the server's sections. A
    /// misspelled key in any section is an error naming it, as in the server.
    #[test]
    fn a_misspelled_key_in_any_section_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let cases: toml::Table =
            toml::from_str(include_str!("../tests/data/misspelled_keys.toml")).unwrap();
        for (key, text) in &cases {
            let text = text.as_str().unwrap();
            let error = Settings::from_toml(text, dir.path())
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(&format!("unknown field `{key}`")),
                "{text}: {error}"
            );
        }
    }
}
