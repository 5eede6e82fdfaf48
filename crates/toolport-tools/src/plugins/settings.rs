//! Where plugins come from: `[plugins] dirs` in the config file, `--plugins DIR` (repeatable)
//! and `TOOLPORT_PLUGIN_DIRS` (a path list like PATH). With none of them, the `plugins/`
//! folder beside the user config file (`~/.config/toolport/plugins/`) is read if it exists,
//! unless it lies inside a workspace root: a folder the agent can write to must not be able to
//! define tools unless the operator lists it.

use std::path::{Path, PathBuf};

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::settings::Note;

/// The plugin flags.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "host", derive(clap::Args))]
pub(crate) struct PluginArgs {
    /// Read plugin manifests (*.toml) from this directory (repeatable; in this order; env
    /// TOOLPORT_PLUGIN_DIRS, a path list like PATH). Default: ~/.config/toolport/plugins if it
    /// exists.
    #[cfg_attr(
        feature = "host",
        arg(long = "plugins", value_name = "DIR", global = true)
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginSettings {
    /// The directories, in the order they are read (the first tool of a name wins).
    pub dirs: Vec<PathBuf>,
    /// Whether `dirs` is the default folder (not listed by the operator): it is then skipped
    /// when it lies inside a workspace root.
    pub default_dir: bool,
}

/// `[plugins]` as `toolport config` prints it: `dirs` when the operator listed them. The
/// default folder is a note instead: listed, it would be read even inside a workspace root.
impl Serialize for PluginSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut section = serializer.serialize_struct("PluginSettings", 1)?;
        if self.default_dir {
            section.skip_field("dirs")?;
        } else {
            section.serialize_field("dirs", &self.dirs)?;
        }
        section.end()
    }
}

impl PluginSettings {
    /// Layer the file < flags (or `TOOLPORT_PLUGIN_DIRS`, which
    /// [`ToolArgs::with_env`](crate::config::ToolArgs::with_env) reads into `args`).
    /// Relative directories resolve against the config file's folder (file) or the current
    /// directory (flags and environment).
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

    /// What `toolport config` prints as a comment: the default folder, when it is the one.
    pub fn notes(&self) -> Vec<Note> {
        self.dirs
            .iter()
            .filter(|_| self.default_dir)
            .map(|dir| {
                Note::new(
                    "plugins.dirs",
                    format!(
                        "{} (the default folder: read when it exists and lies outside the roots)",
                        dir.display()
                    ),
                )
            })
            .collect()
    }

    /// The directories to read, each once (by real path), leaving out the default folder when
    /// it lies inside one of `roots` (logged: the operator can list it to use it).
    pub fn dirs_to_read(&self, roots: &[PathBuf]) -> Vec<PathBuf> {
        let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let roots: Vec<PathBuf> = roots.iter().map(|r| real(r)).collect();
        let mut seen = Vec::new();
        let mut dirs = Vec::new();
        for dir in &self.dirs {
            let canonical = real(dir);
            if seen.contains(&canonical) {
                continue;
            }
            if self.default_dir && roots.iter().any(|root| canonical.starts_with(root)) {
                tracing::warn!(
                    dir = %dir.display(),
                    "not reading the default plugin folder: it is inside a workspace root, where the agent could write tools for itself; list it with --plugins or [plugins] dirs to use it"
                );
                continue;
            }
            seen.push(canonical);
            dirs.push(dir.clone());
        }
        dirs
    }
}

/// `plugins/` beside the user config file.
fn default_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("toolport").join("plugins"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_folder_is_read_once_and_the_default_one_only_outside_the_roots() {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        let inside = root.join(".config/toolport/plugins");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let roots = vec![root.clone()];

        let listed = PluginSettings {
            dirs: vec![
                inside.clone(),
                outside.clone(),
                root.join(".config/../.config/toolport/plugins"),
            ],
            default_dir: false,
        };
        assert_eq!(
            listed.dirs_to_read(&roots),
            vec![inside.clone(), outside.clone()],
            "listed folders are read even inside a root, each once"
        );
        let default = |dir: PathBuf| PluginSettings {
            dirs: vec![dir],
            default_dir: true,
        };
        assert!(default(inside).dirs_to_read(&roots).is_empty());
        assert_eq!(default(outside.clone()).dirs_to_read(&roots), vec![outside]);
    }
}
