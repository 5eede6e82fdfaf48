//! What a copy inside the roots reads and writes through: a source folder opened beneath its
//! root ([`Workspace::open_tree`], walked by `tree.rs`, each file opened beneath it without
//! following a link at its name), and places inside a destination folder
//! ([`WriteTarget::within`]) that the atomic write of `atomic.rs` fills. Every folder on the
//! way is opened beneath the one above it and its real path read back from the handle, so a
//! folder swapped for a link meanwhile is refused, not followed.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata};

use super::tree::open_checked;
use super::{PathError, Workspace, WriteTarget, sys};

/// A folder opened to be read whole (a copy's source).
#[derive(Debug)]
pub(crate) struct SourceTree {
    /// The folder, opened beneath its root.
    pub(crate) dir: Dir,
    /// Its real absolute path (what the checks compare).
    real: PathBuf,
    /// The same below its root's shown path ([`SourceTree::display`]).
    shown: PathBuf,
    /// Its real path relative to its root (the secret rules are checked on what is below it).
    pub(crate) rel: PathBuf,
}

impl Workspace {
    /// Open the folder `user` to read it whole: beneath its root, refused when it (by the
    /// path given or its real path) is a secret.
    pub(crate) fn open_tree(&self, user: &str) -> Result<SourceTree, PathError> {
        let (dir, target) = self.open_dir(user)?;
        let escapes = || PathError::Escapes {
            path: target.display.display().to_string(),
            roots: self.describe_roots(),
        };
        let real = sys::real_path(&dir, &target).ok_or_else(escapes)?;
        let rel = self
            .case
            .strip_root(&real, &target.root.path)
            .ok_or_else(escapes)?
            .to_path_buf();
        Ok(SourceTree {
            dir,
            shown: target.root.show(&rel),
            real,
            rel,
        })
    }
}

impl SourceTree {
    /// Its real absolute path as shown in results and messages.
    pub(crate) fn display(&self) -> &Path {
        &self.shown
    }

    /// Its real absolute path, canonical: for comparing with another real path.
    pub(crate) fn real(&self) -> &Path {
        &self.real
    }

    /// Open the regular file `rel` (relative to this folder) to read: its folder opened
    /// beneath this one and checked by its real path, the file itself opened without
    /// following a link. Its handle and metadata.
    pub(crate) fn open_file(&self, rel: &Path) -> io::Result<(std::fs::File, Metadata)> {
        let (parent, name) = split(rel)?;
        let dir = open_checked(&self.dir, parent, &self.real.join(parent))?;
        let file = sys::open_entry_no_follow(&dir, &name)?;
        let metadata = Metadata::from_file(&file)?;
        if !metadata.is_file() {
            return Err(io::Error::other("it is no longer a regular file"));
        }
        Ok((file, metadata))
    }
}

impl WriteTarget {
    /// The place `rel` inside this entry, which must be a folder: the folder holding it opened
    /// beneath this entry's parent and checked by its real path (a link swapped in on the way
    /// is refused), then the entry itself looked at without following it.
    pub(crate) fn within(&self, rel: &Path) -> io::Result<WriteTarget> {
        let (parent, name) = split(rel)?;
        let inside = Path::new(&self.name).join(parent);
        let dir = open_checked(&self.dir, &inside, &self.real.join(parent))?;
        let existing = match dir.symlink_metadata(&name) {
            Ok(metadata) => Some(metadata),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(WriteTarget {
            dir,
            real: self.real.join(rel),
            shown: self.shown.join(rel),
            rel: self.rel.join(rel),
            name,
            existing,
        })
    }

    /// Create this entry as an empty folder (`AlreadyExists` when something is there).
    pub(crate) fn create_dir(&self) -> io::Result<()> {
        self.dir.create_dir(&self.name)?;
        self.sync_dir();
        Ok(())
    }

    /// The real path of this entry relative to its root (what the secret and `.git/` rules
    /// were checked on).
    pub(crate) fn rel(&self) -> &Path {
        &self.rel
    }
}

/// `rel`'s folder and its name; `rel` must name something (not empty, not `..`).
fn split(rel: &Path) -> io::Result<(&Path, OsString)> {
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names nothing"))?;
    Ok((rel.parent().unwrap_or(Path::new("")), name.to_owned()))
}
