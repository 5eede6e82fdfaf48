//! One settings path for both front doors: a toolport config file ([`FileConfig`]) layered
//! with flags ([`ToolArgs`]) and the environment ([`Environment`]) into [`ToolConfig`], the
//! tool sections loaded. The `toolport` binary's `Config` and
//! [`Settings::from_toml`](crate::Settings::from_toml) are both made from it, so they cannot
//! disagree about a key, a default, a check or where a relative path starts.
//!
//! Precedence, lowest first: the built-in defaults < the file < the environment < flags.
//! Each feature owns its section type, its flags and its `<X>Settings::load`
//! ([`crate::settings`]); this module only composes them, once. The file's format is the
//! library's whole, the server's own sections included ([`FileHttp`], [`FileAudit`],
//! [`FileTelemetry`], the budget keys of [`FileLimits`](crate::tools::fs::FileLimits)): every
//! section refuses unknown keys, so a file read through either door is refused for the same
//! misspelled key. Their values are the server's to check.
//!
//! - [`file`]: the file's root;
//! - [`server`]: the server's sections, as data.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

mod file;
mod server;

pub use file::FileConfig;
#[cfg(feature = "host")]
pub use server::{
    FileAudit, FileHttp, FileOAuth, FilePrincipalRule, FilePrincipals, FileReplicas, FileTelemetry,
};

use crate::plugins::{PluginArgs, PluginSettings};
use crate::settings::SettingError;
use crate::tools::exec::{ExecArgs, ExecSettings};
use crate::tools::fs::{FsArgs, FsSettings, WriteSettings};
use crate::tools::web::settings::WebSettings;
use crate::tools::{SelectionArgs, ToolSelection};
use crate::upstreams::UpstreamSettings;
use crate::workspace::WorkspaceSettings;

/// The tools' flags (the server's command line flattens them into its own).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "host", derive(clap::Args))]
pub struct ToolArgs {
    /// A workspace root: tools may only touch paths inside the roots. Repeat for several; the
    /// first one is where relative paths resolve. Default: the current directory.
    /// [env: TOOLPORT_ROOTS, a path list like PATH]
    #[cfg_attr(
        feature = "host",
        arg(long = "root", value_name = "DIR", global = true)
    )]
    pub roots: Vec<PathBuf>,

    /// `read_file` / `list_directory` limits, `--read-only`.
    #[cfg_attr(feature = "host", command(flatten))]
    pub(crate) fs: FsArgs,

    /// Which tools are served.
    #[cfg_attr(feature = "host", command(flatten))]
    pub(crate) selection: SelectionArgs,

    /// `execute_command`'s flags (`--sandbox`).
    #[cfg_attr(feature = "host", command(flatten))]
    pub(crate) exec: ExecArgs,

    /// Plugin folders (`--plugins`).
    #[cfg_attr(feature = "host", command(flatten))]
    pub(crate) plugins: PluginArgs,
}

impl ToolArgs {
    /// These flags with the two variables clap cannot read for them, path lists like PATH:
    /// `TOOLPORT_ROOTS` stands for `--root` and `TOOLPORT_PLUGIN_DIRS` for `--plugins` when
    /// the flag is not given (every other flag's variable is its clap `env =`). The server's
    /// command line reads them; [`Settings::from_toml`](crate::Settings::from_toml), which
    /// has no flags, reads neither.
    pub fn with_env(mut self, env: &Environment<'_>) -> Self {
        if self.roots.is_empty() {
            self.roots = path_list(env, "TOOLPORT_ROOTS");
        }
        if self.plugins.dirs.is_empty() {
            self.plugins.dirs = path_list(env, "TOOLPORT_PLUGIN_DIRS");
        }
        self
    }
}

/// The paths of the list variable `name` (empty entries left out).
fn path_list(env: &Environment<'_>, name: &str) -> Vec<PathBuf> {
    env.get(name)
        .map(|list| {
            std::env::split_paths(&list)
                .filter(|path| !path.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The environment as the settings read it: through a function (the process's, or a test's,
/// so tests need not touch the process environment). A value that is a client's substitution
/// variable left as it was written ([`is_unexpanded_placeholder`]) counts as unset; the names
/// of such variables are kept for a warning ([`Environment::unexpanded`]).
pub struct Environment<'a> {
    read: &'a dyn Fn(&str) -> Option<String>,
    unexpanded: RefCell<Vec<String>>,
}

impl<'a> Environment<'a> {
    /// The environment `read` gives.
    pub fn new(read: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            read,
            unexpanded: RefCell::new(Vec::new()),
        }
    }

    /// The value of `name`, unless it is unset or an unexpanded placeholder.
    pub fn get(&self, name: &str) -> Option<String> {
        let value = (self.read)(name)?;
        if is_unexpanded_placeholder(&value) {
            let mut names = self.unexpanded.borrow_mut();
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
            return None;
        }
        Some(value)
    }

    /// The variables read so far that held an unexpanded placeholder, in the order first read.
    pub fn unexpanded(self) -> Vec<String> {
        self.unexpanded.into_inner()
    }
}

/// True for a value that is a client's substitution variable left as it was written, such as
/// `${user_config.brave_api_key}`: a Claude Desktop bundle (MCPB) passes an optional setting
/// the user left empty that way. Such a value is never a real key, path or setting, so the
/// environment variable holding it counts as unset.
fn is_unexpanded_placeholder(value: &str) -> bool {
    value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
        })
}

/// `path` made absolute against `base`: the one rule for a relative root (and the config
/// file's own path): from the current directory when given by a flag or variable, from the
/// config file's folder when written in the file.
pub fn absolute(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// The tool sections of a config file, loaded: each field is its section's settings.
#[derive(Debug)]
pub struct ToolConfig {
    /// Workspace roots (absolute), first one first.
    pub roots: Vec<PathBuf>,
    /// `[tools]`: which tools are served.
    pub tools: ToolSelection,
    /// `[limits]`: the file tools' sizes (the budget keys are the server's).
    pub limits: FsSettings,
    /// `[fs]`: the write tools.
    pub fs: WriteSettings,
    /// `[workspace]`: the secret rules.
    pub workspace: WorkspaceSettings,
    /// `[exec]`: `execute_command`.
    pub exec: ExecSettings,
    /// `[web]`: `web_search` and `fetch_url`.
    pub web: WebSettings,
    /// `[plugins]`: where plugin manifests are read from.
    pub plugins: PluginSettings,
    /// `[[upstreams]]`: other MCP servers.
    pub upstreams: Vec<UpstreamSettings>,
}

impl ToolConfig {
    /// Layer the defaults < `file` < the environment < `args` and validate each section.
    /// Relative paths in the file resolve against `file_dir` (the file's folder), those of
    /// flags and variables against `cwd`; without roots anywhere, the root is `cwd`.
    pub fn load(
        file: FileConfig,
        args: &ToolArgs,
        env: &Environment<'_>,
        file_dir: &Path,
        cwd: &Path,
    ) -> Result<Self, SettingError> {
        let roots = if !args.roots.is_empty() {
            args.roots.iter().map(|root| absolute(cwd, root)).collect()
        } else if let Some(roots) = &file.roots {
            roots.iter().map(|root| absolute(file_dir, root)).collect()
        } else {
            vec![cwd.to_path_buf()]
        };
        if roots.is_empty() {
            return Err(SettingError::new("roots", "at least one root is needed"));
        }
        Ok(Self {
            roots,
            tools: ToolSelection::load(file.tools, &args.selection)?,
            limits: FsSettings::load(&file.limits, &args.fs)?,
            fs: WriteSettings::load(file.fs, &args.fs),
            workspace: WorkspaceSettings::load(file.workspace),
            exec: ExecSettings::load(file.exec, &args.exec)?,
            web: WebSettings::load(file.web, file_dir, |name| env.get(name))?,
            plugins: PluginSettings::load(file.plugins, &args.plugins, file_dir, cwd),
            upstreams: UpstreamSettings::load_all(file.upstreams, file_dir)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unexpanded_placeholders_count_as_unset_and_are_named_once() {
        let read = |name: &str| match name {
            "A" => Some("${user_config.a}".to_owned()),
            "B" => Some("sk-${x}".to_owned()),
            _ => None,
        };
        let env = Environment::new(&read);
        assert_eq!((env.get("A"), env.get("A")), (None, None));
        assert_eq!(env.get("B").as_deref(), Some("sk-${x}"));
        assert_eq!(env.unexpanded(), ["A"]);
        // A real value, or one that only contains `${`, is kept.
        for value in ["sk-${x}", "${not closed", "${}", "${a b}"] {
            assert!(!is_unexpanded_placeholder(value), "{value}");
        }
        for value in ["${HOME}", "${user_config.dirs}", "${__dirname}", "${/}"] {
            assert!(is_unexpanded_placeholder(value), "{value}");
        }
    }
}
