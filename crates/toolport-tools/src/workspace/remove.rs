//! Deleting inside the roots, at a place `write.rs` chose ([`Workspace::entry_target`]: the
//! parent opened beneath its root, the root itself, secrets and `.git/` refused): for good,
//! relative to the parent's handle ([`WriteTarget::remove`]), or into the system's trash
//! ([`WriteTarget::trash`], the `trash` crate).
//!
//! The trash is reached by path (every system's trash API takes one: freedesktop's rename
//! into `~/.local/share/Trash`, the Finder's `trashItemAtURL`, the shell's `IFileOperation`).
//! Just before handing the path over, the parent directory's real path is read from its
//! handle and compared with what the path now leads to; a folder swapped for a link in the
//! moment between that check and the trash's own rename is the one window left, which a
//! delete for good (`[fs] delete = "confirm"`) does not have.

use std::io;

use cap_std::io_lifetimes::AsFilelike;

use super::{FileKind, WriteTarget, sys};

impl WriteTarget {
    /// Delete this entry for good, relative to its parent's handle: a file or a symbolic link
    /// (the link, never what it points to) is unlinked; a directory is removed with everything
    /// in it when `recursive` (beneath the parent's handle: links inside are removed, never
    /// followed), else only when empty. What is there is looked at anew (without following
    /// a link).
    pub(crate) fn remove(&self, recursive: bool) -> io::Result<()> {
        let now = FileKind::of_cap(self.dir.symlink_metadata(&self.name)?.file_type());
        // What was checked is what goes: a file swapped for a folder meanwhile is not removed
        // (its tree was never checked against the secret and .git/ rules).
        if self.existing_kind().is_some_and(|was| was != now) {
            return Err(io::Error::other(format!(
                "it changed while the call ran (it is now a {})",
                now.describe()
            )));
        }
        match now {
            FileKind::Directory if recursive => self.dir.remove_dir_all(&self.name)?,
            FileKind::Directory => self.dir.remove_dir(&self.name)?,
            _ => self.dir.remove_file(&self.name)?,
        }
        self.sync_dir();
        Ok(())
    }

    /// Move this entry to the system's trash (a symbolic link goes as the link), after
    /// checking that its parent directory's path still leads to the directory this target
    /// opened. Where the system cannot name a handle's path (other Unix), refused.
    pub(crate) fn trash(&self) -> io::Result<()> {
        let parent = self
            .real
            .parent()
            .ok_or_else(|| io::Error::other("it has no parent folder"))?;
        let opened =
            sys::handle_path(&self.dir.as_filelike_view::<std::fs::File>()).ok_or_else(|| {
                io::Error::other(
                    "this system cannot confirm where the folder is, so nothing is moved by path",
                )
            })?;
        let by_path = std::fs::canonicalize(parent)?;
        if by_path != opened {
            return Err(io::Error::other(format!(
                "its folder changed while the call ran ({} now leads to {})",
                super::shown(parent).display(),
                super::shown(&by_path).display()
            )));
        }
        sys::trash_reachable(&self.real, self.existing.as_ref())?;
        trash::delete(&self.real).map_err(io::Error::other)
    }
}
