//! The file tools: `read_file`, `list_directory`, `path_info`; the search tools `grep`,
//! `glob` and `read_many_files`, which share one tree walk (`walk.rs`); and the write tools
//! `write_file`, `edit_file`, `apply_patch`, `create_directory`, `move_path`, `copy_path`,
//! `delete_path` and `undo_last_change`, which takes back their changes from the session's
//! undo journal (`journal.rs`) (all served unless `[fs] write = "off"`). Thin adapters: every path goes through
//! [`crate::workspace::Workspace`], which owns confinement and secret rules; `text.rs` holds
//! encodings, hashes and diffs, `write.rs` what the write tools share, `media.rs`
//! which files are images (read_file returns them as images, path_info names their type).

mod apply_patch;
mod copy_path;
mod create_directory;
mod delete_path;
mod edit_file;
mod glob;
mod grep;
mod journal;
mod list_directory;
mod media;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use media::fuzz as fuzz_image;
mod move_path;
mod path_info;
mod read_file;
mod read_many;
mod settings;
mod text;
mod undo;
mod walk;
mod write;
mod write_file;

pub(crate) use apply_patch::ApplyPatch;
pub(crate) use copy_path::CopyPath;
pub(crate) use create_directory::CreateDirectory;
pub(crate) use delete_path::DeletePath;
pub(crate) use edit_file::EditFile;
pub(crate) use glob::Glob;
pub(crate) use grep::Grep;
pub(crate) use journal::Journal;
pub(crate) use list_directory::ListDirectory;
pub(crate) use move_path::MovePath;
pub(crate) use path_info::PathInfo;
pub(crate) use read_file::ReadFile;
pub(crate) use read_many::ReadManyFiles;
#[cfg(feature = "host")]
pub use settings::FileBudget;
pub(crate) use settings::FileFs;
pub use settings::FileLimits;
pub(crate) use settings::FsArgs;
pub use settings::FsSettings;
pub(crate) use settings::WriteMode;
pub use settings::WriteSettings;
pub(crate) use undo::UndoLastChange;
pub(crate) use write_file::WriteFile;

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
