//! [`Toolbox`]: the built-in tools, plugin tools and an embedder's own, built from
//! [`Settings`] — what the `toolport` binary serves, without the server. The binary builds
//! its tool set through the same [`Catalog`] (plus live reload); this is the small front door
//! for a Rust agent.

use std::path::PathBuf;
use std::sync::Arc;

use crate::definition::DefinitionError;
use crate::plugins::Catalog;
use crate::registry::ToolRegistry;
use crate::tool::{AiTool, ConfirmFallback, ToolContext};
use crate::tools::exec::ExecSettings;
use crate::tools::fs::{FsSettings, WriteMode, WriteSettings};
use crate::tools::web::settings::WebSettings;
use crate::tools::{BuiltinSettings, SelectionError, ToolSelection, builtin_tools};
use crate::workspace::{Workspace, WorkspaceError};

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

    /// No tool writes: `write_file`, `edit_file`, `create_directory` and `move_path` are not
    /// built (as `toolport --read-only`).
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
