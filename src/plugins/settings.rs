//! Where plugins come from: `[plugins] dirs` in the config file, `--plugins DIR` (repeatable)
//! and `TOOLPORT_PLUGIN_DIRS` (a path list like PATH). With none of them, the `plugins/`
//! folder beside the user config file (`~/.config/toolport/plugins/`) is read if it exists,
//! unless it lies inside a workspace root: a folder the agent can write to must not be able to
//! define tools unless the operator lists it.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};

/// The plugin flags.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PluginArgs {
    /// Read plugin manifests (*.toml) from this directory (repeatable; in this order). Default:
    /// ~/.config/toolport/plugins if it exists.
    #[arg(
        long = "plugins",
        value_name = "DIR",
        env = "TOOLPORT_PLUGIN_DIRS",
        value_delimiter = ':',
        global = true
    )]
    pub(crate) dirs: Vec<PathBuf>,
}

/// The `[plugins]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePlugins {
    /// Plugin directories, relative to the config file's folder.
    dirs: Option<Vec<PathBuf>>,
}

/// Where plugin manifests are read from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PluginSettings {
    /// The directories, in the order they are read (the first tool of a name wins).
    pub(crate) dirs: Vec<PathBuf>,
    /// Whether `dirs` is the default folder (not listed by the operator): it is then skipped
    /// when it lies inside a workspace root.
    #[serde(skip)]
    pub(crate) default_dir: bool,
}

impl PluginSettings {
    /// Layer the file < environment/flags. Relative directories resolve against the config
    /// file's folder (file) or the current directory (flags and environment).
    pub(crate) fn load(file: FilePlugins, args: &PluginArgs, file_dir: &Path, cwd: &Path) -> Self {
        let listed: Vec<PathBuf> = args
            .dirs
            .iter()
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| cwd.join(d))
            .collect();
        if !listed.is_empty() {
            return Self {
                dirs: listed,
                default_dir: false,
            };
        }
        if let Some(dirs) = file.dirs {
            return Self {
                dirs: dirs.iter().map(|d| file_dir.join(d)).collect(),
                default_dir: false,
            };
        }
        match default_dir().filter(|d| d.is_dir()) {
            Some(dir) => Self {
                dirs: vec![dir],
                default_dir: true,
            },
            None => Self::default(),
        }
    }

    /// The directories to read, leaving out the default folder when it lies inside one of
    /// `roots` (logged: the operator can list it to use it).
    pub(crate) fn dirs_to_read(&self, roots: &[PathBuf]) -> Vec<PathBuf> {
        if !self.default_dir {
            return self.dirs.clone();
        }
        self.dirs
            .iter()
            .filter(|dir| {
                let real = std::fs::canonicalize(dir).unwrap_or_else(|_| (*dir).clone());
                let inside = roots.iter().any(|root| {
                    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
                    real.starts_with(&root)
                });
                if inside {
                    tracing::warn!(
                        dir = %dir.display(),
                        "not reading the default plugin folder: it is inside a workspace root, where the agent could write tools for itself; list it with --plugins or [plugins] dirs to use it"
                    );
                }
                !inside
            })
            .cloned()
            .collect()
    }
}

/// `plugins/` beside the user config file.
fn default_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("toolport").join("plugins"))
}
