//! The file tools: `read_file`, `list_directory` and `path_info`. Thin adapters: every path
//! goes through [`crate::workspace::Workspace`], which owns confinement and secret rules.

mod list_directory;
mod path_info;
mod read_file;

pub use list_directory::ListDirectory;
pub use path_info::PathInfo;
pub use read_file::ReadFile;

use super::{blocking, params, to_value};

/// The category of every file tool.
pub const CATEGORY: &str = "filesystem";

/// Annotations shared by the file tools: read-only, idempotent, closed world.
pub const ANNOTATIONS: crate::tool::Annotations = crate::tool::Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};
