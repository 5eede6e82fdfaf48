//! A directory tree walked beneath an opened directory, never following a symbolic link: what
//! a recursive delete or a copy would touch, listed before anything changes, so the secret and
//! `.git/` rules are checked on every entry first ([`Workspace::tree_refusals`]).
//!
//! Each level is opened through its parent's handle (cap-std: beneath it), so a directory
//! swapped for a link while the walk runs can at worst lead elsewhere inside the tree's top,
//! never out of it.

use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use cap_std::io_lifetimes::AsFilelike;

use super::{FileKind, Workspace, WriteTarget, sys};

/// Deepest nesting walked. The walk holds two handles per level (the directory and its
/// listing), so this bounds them too; real trees are far shallower.
const MAX_TREE_DEPTH: usize = 128;

/// One entry of a tree.
#[derive(Debug, Clone)]
pub(crate) struct TreeEntry {
    /// Its path relative to the tree's top.
    pub(crate) rel: PathBuf,
    /// What it is (a symbolic link is reported as one, never followed).
    pub(crate) kind: FileKind,
    /// Its size in bytes (a regular file's length; 0 for the rest).
    pub(crate) len: u64,
}

/// Why a tree was not walked to its end.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// It has more than `limit` entries.
    TooMany { limit: usize },
    /// It nests deeper than [`MAX_TREE_DEPTH`].
    TooDeep,
    /// Reading a directory failed.
    Io { rel: PathBuf, error: io::Error },
}

impl WalkError {
    /// The refusal in words, for `display` (the tree's top) and `what` (the operation).
    pub(crate) fn describe(&self, display: &Path, what: &str) -> String {
        let top = display.display();
        match self {
            Self::TooMany { limit } => format!(
                "{top} holds more than {limit} files and folders, more than one {what} call handles; work on its subfolders one at a time, or use a command"
            ),
            Self::TooDeep => format!(
                "{top} nests deeper than {MAX_TREE_DEPTH} levels of folders, more than one {what} call walks"
            ),
            Self::Io { rel, error } => format!(
                "cannot read the folder {}: {error}; nothing was changed",
                display.join(rel).display()
            ),
        }
    }
}

/// Every entry beneath `top` (not `top` itself), parents before their children, at most
/// `limit` of them. Links and special files are listed, never entered.
pub(crate) fn walk(top: &Dir, limit: usize) -> Result<Vec<TreeEntry>, WalkError> {
    let mut entries = Vec::new();
    let io_error = |rel: &Path, error| WalkError::Io {
        rel: rel.to_path_buf(),
        error,
    };
    let listing = top.entries().map_err(|e| io_error(Path::new(""), e))?;
    // One frame per open level: the directory (kept open so its listing stays valid), its
    // listing, and its path relative to the top.
    let mut stack = vec![(None::<Dir>, listing, PathBuf::new())];
    while let Some((_, listing, rel)) = stack.last_mut() {
        let Some(next) = listing.next() else {
            stack.pop();
            continue;
        };
        let rel = rel.clone();
        let entry = next.map_err(|e| io_error(&rel, e))?;
        let child = rel.join(entry.file_name());
        let file_type = entry.file_type().map_err(|e| io_error(&child, e))?;
        let kind = FileKind::of_cap(file_type);
        let len = if kind == FileKind::File {
            entry.metadata().map_err(|e| io_error(&child, e))?.len()
        } else {
            0
        };
        if entries.len() == limit {
            return Err(WalkError::TooMany { limit });
        }
        entries.push(TreeEntry {
            rel: child.clone(),
            kind,
            len,
        });
        if kind == FileKind::Directory {
            if stack.len() > MAX_TREE_DEPTH {
                return Err(WalkError::TooDeep);
            }
            let dir = entry.open_dir().map_err(|e| io_error(&child, e))?;
            let listing = dir.entries().map_err(|e| io_error(&child, e))?;
            stack.push((Some(dir), listing, child));
        }
    }
    Ok(entries)
}

impl WriteTarget {
    /// [`walk`] this entry, a folder: opened beneath its parent without following a link
    /// swapped in for it (checked by its real path).
    pub(crate) fn walk(&self, limit: usize) -> Result<Vec<TreeEntry>, WalkError> {
        let top = open_checked(&self.dir, Path::new(&self.name), &self.real).map_err(|error| {
            WalkError::Io {
                rel: PathBuf::new(),
                error,
            }
        })?;
        walk(&top, limit)
    }
}

/// Open the folder `rel` beneath `dir` (`dir` itself when `rel` is empty) and refuse it unless
/// its real path is `expected` (where the system can tell a handle's path).
pub(super) fn open_checked(dir: &Dir, rel: &Path, expected: &Path) -> io::Result<Dir> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let opened = dir.open_dir(rel)?;
    if let Some(real) = sys::handle_path(&opened.as_filelike_view::<std::fs::File>())
        && real != expected
    {
        return Err(io::Error::other(format!(
            "the folder {} changed while the call ran (it now leads to {})",
            super::shown(expected).display(),
            super::shown(&real).display()
        )));
    }
    Ok(opened)
}

/// Why an entry of a tree may not be changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It matches a secret pattern.
    Secret,
    /// It is inside a `.git` directory (and `.git/` writes are not allowed).
    Git,
}

impl Refusal {
    /// The reason in words.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Secret => "a secret (the secret rules refuse it)",
            Self::Git => "inside .git/ (git's own files; [fs] allow_git_writes is off)",
        }
    }
}

impl Workspace {
    /// Why `rel_in_tree` (relative to a tree whose top is `top_rel`, the top's real path
    /// relative to its root) may not be changed, if it may not.
    pub(crate) fn tree_refusal(
        &self,
        top_rel: &Path,
        rel_in_tree: &Path,
        allow_git: bool,
    ) -> Option<Refusal> {
        let rel = top_rel.join(rel_in_tree);
        if self.is_secret(&rel) {
            return Some(Refusal::Secret);
        }
        (self.in_git(&rel) && !allow_git).then_some(Refusal::Git)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::tests::two_roots;

    #[test]
    fn walks_parents_first_and_lists_links_without_entering_them() {
        let (_d, _ws, a, b) = two_roots();
        std::fs::create_dir_all(a.join("t/x/y")).unwrap();
        std::fs::write(a.join("t/x/y/f.txt"), "12345").unwrap();
        std::fs::write(b.join("outside.txt"), "no").unwrap();
        std::os::unix::fs::symlink(&b, a.join("t/out")).unwrap();
        let top = Dir::open_ambient_dir(a.join("t"), cap_std::ambient_authority()).unwrap();
        let mut seen: Vec<_> = walk(&top, 100)
            .unwrap()
            .into_iter()
            .map(|e| (e.rel.display().to_string(), e.kind, e.len))
            .collect();
        let x = seen.iter().position(|s| s.0 == "x").unwrap();
        let y = seen.iter().position(|s| s.0 == "x/y").unwrap();
        assert!(x < y, "parents first: {seen:?}");
        seen.sort_by(|l, r| l.0.cmp(&r.0));
        assert_eq!(
            seen,
            [
                ("out".to_owned(), FileKind::Symlink, 0),
                ("x".to_owned(), FileKind::Directory, 0),
                ("x/y".to_owned(), FileKind::Directory, 0),
                ("x/y/f.txt".to_owned(), FileKind::File, 5),
            ]
        );
        assert!(matches!(
            walk(&top, 3),
            Err(WalkError::TooMany { limit: 3 })
        ));
    }
}
