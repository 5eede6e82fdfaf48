//! The file tools: `read_file`, `list_directory` and `path_info`. Thin adapters: every path
//! goes through [`crate::workspace::Workspace`], which owns confinement and secret rules.

mod list_directory;
mod path_info;
mod read_file;
mod settings;

pub(crate) use list_directory::ListDirectory;
pub(crate) use path_info::PathInfo;
pub(crate) use read_file::ReadFile;
pub(crate) use settings::FileLimits;
pub(crate) use settings::FsArgs;
pub use settings::FsSettings;

use super::blocking;

/// The category of every file tool.
const CATEGORY: &str = "filesystem";

/// Annotations shared by the file tools: read-only, idempotent, closed world.
const ANNOTATIONS: crate::tool::Annotations = crate::tool::Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};
