//! The file tools: `read_file`, `list_directory`, `path_info`, and the search tools `grep`,
//! `glob` and `read_many_files`. Thin adapters: every path goes through
//! [`crate::workspace::Workspace`], which owns confinement and secret rules; the search tools
//! share one tree walk (`walk.rs`).

mod glob;
mod grep;
mod list_directory;
mod path_info;
mod read_file;
mod read_many;
mod settings;
mod walk;

pub(crate) use glob::Glob;
pub(crate) use grep::Grep;
pub(crate) use list_directory::ListDirectory;
pub(crate) use path_info::PathInfo;
pub(crate) use read_file::ReadFile;
pub(crate) use read_many::ReadManyFiles;
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
