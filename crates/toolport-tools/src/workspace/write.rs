//! Where a write may land: the parent directory opened beneath the root, the entry named in
//! it, a final symlink followed only beneath the root, secrets and `.git/` refused by the
//! given and the real path ([`Workspace::write_target`], [`Workspace::entry_target`],
//! [`Workspace::create_dir_all`]). The change itself is [`WriteTarget`]'s (`atomic.rs`).

use std::io;
use std::path::{Component, Path, PathBuf};

use super::{FileKind, PathError, Target, Workspace, WriteTarget, sys};

/// Most symlinks followed to reach a write target (a link to a link …): a link that leads on
/// further than this is refused as a loop.
const MAX_WRITE_LINKS: usize = 8;
/// The directory git keeps its own files (and hooks) in: writes there are refused unless
/// allowed (matched without case where the file system ignores case: `.GIT` is the same
/// directory there).
const GIT_DIR: &str = ".git";

impl Workspace {
    /// Refuse to write `rel` (relative to the target's root) when it is a secret or, unless
    /// `allow_git`, inside a `.git` directory.
    fn check_writable(
        &self,
        target: &Target<'_>,
        rel: &Path,
        allow_git: bool,
    ) -> Result<(), PathError> {
        self.check_secret(target, rel)?;
        if self.in_git(rel) && !allow_git {
            return Err(PathError::GitDir {
                path: target.display.display().to_string(),
            });
        }
        Ok(())
    }

    /// Whether `rel` (relative to a root) has a `.git` component.
    pub(super) fn in_git(&self, rel: &Path) -> bool {
        rel.components()
            .any(|c| matches!(c, Component::Normal(name) if self.case.is_name(name, GIT_DIR)))
    }

    /// The place to create or replace the file `user`: its parent directory opened beneath
    /// the root (it must exist), secrets and `.git` refused by the path as given and by the
    /// parent's real path. A symbolic link at the path is followed while it stays inside the
    /// root (the write then replaces the file it points to); a link leading out, or to
    /// nothing, is refused, so no file is ever created outside the roots.
    pub(crate) fn write_target(
        &self,
        user: &str,
        allow_git: bool,
    ) -> Result<WriteTarget, PathError> {
        let mut path = user.to_owned();
        for _ in 0..MAX_WRITE_LINKS {
            let (target, entry) = self.entry(&path, allow_git)?;
            let is_link = entry
                .existing
                .as_ref()
                .is_some_and(|m| m.file_type().is_symlink());
            if !is_link {
                return Ok(entry);
            }
            // Where the link leads, resolved beneath the root (an absolute or escaping link
            // fails with EXDEV; one to nothing with ENOENT).
            let real = match sys::open_path_beneath(&target, &target.rel) {
                Ok(real) => real,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    return Err(PathError::DanglingLink {
                        path: target.display.display().to_string(),
                    });
                }
                Err(error) => return Err(self.io_error(&target, &error)),
            };
            path = real
                .to_str()
                .map(str::to_owned)
                .ok_or_else(|| PathError::Io {
                    path: target.display.display().to_string(),
                    message: "the link leads to a path that is not valid UTF-8".into(),
                })?;
        }
        Err(PathError::LinkLoop {
            path: user.to_owned(),
        })
    }

    /// The entry `user` itself (a symbolic link is not followed): what a rename moves or
    /// replaces. Its parent is opened beneath the root; secrets and `.git` are refused.
    pub(crate) fn entry_target(
        &self,
        user: &str,
        allow_git: bool,
    ) -> Result<WriteTarget, PathError> {
        self.entry(user, allow_git).map(|(_, entry)| entry)
    }

    fn entry(&self, user: &str, allow_git: bool) -> Result<(Target<'_>, WriteTarget), PathError> {
        let target = self.target(user)?;
        self.check_writable(&target, &target.normal, allow_git)?;
        let no_name = || PathError::NoName {
            path: target.display.display().to_string(),
        };
        let name = target.rel.file_name().ok_or_else(no_name)?.to_owned();
        if target.normal.as_os_str().is_empty() {
            return Err(no_name());
        }
        let parent = match target.rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir =
            target
                .root
                .dir
                .open_dir(parent)
                .map_err(|e| match self.io_error(&target, &e) {
                    PathError::NotFound { path, .. } => PathError::ParentMissing { path },
                    other => other,
                })?;
        let escapes = || PathError::Escapes {
            path: target.display.display().to_string(),
            roots: self.describe_roots(),
        };
        let real_parent = sys::real_path(&dir, &target).ok_or_else(escapes)?;
        let real_rel = self
            .case
            .strip_root(&real_parent, &target.root.path)
            .ok_or_else(escapes)?
            .join(&name);
        self.check_writable(&target, &real_rel, allow_git)?;
        let real = target.root.real(&real_rel);
        let shown = target.root.show(&real_rel);
        // A root nested in another is an entry of the outer one: never moved, replaced or
        // deleted, and neither is a folder holding one.
        if let Some(root) = self
            .root_paths()
            .find(|root| self.case.strip_root(root, &real).is_some())
        {
            return Err(PathError::HoldsRoot {
                path: shown.display().to_string(),
                root: super::shown(root).display().to_string(),
            });
        }
        let existing = match dir.symlink_metadata(&name) {
            Ok(metadata) => Some(metadata),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(self.io_error(&target, &e)),
        };
        let entry = WriteTarget {
            dir,
            name,
            shown,
            real,
            rel: real_rel,
            existing,
        };
        Ok((target, entry))
    }

    /// Create the directory `user` and any missing parents, beneath its root. Secrets and
    /// `.git` are refused by the path as given and by the real path of the nearest existing
    /// ancestor (a dangling link on the way is refused). The real absolute path (as shown),
    /// and whether it was created (false: it was already a directory).
    pub(crate) fn create_dir_all(
        &self,
        user: &str,
        allow_git: bool,
    ) -> Result<(PathBuf, bool), PathError> {
        let target = self.target(user)?;
        self.check_writable(&target, &target.normal, allow_git)?;
        let (root, real_rel) = self.resolved(user)?;
        self.check_writable(&target, &real_rel, allow_git)?;
        let existed = match self.metadata(&target) {
            Ok(m) if m.is_dir() => true,
            Ok(m) => {
                return Err(PathError::Io {
                    path: target.display.display().to_string(),
                    message: format!(
                        "it already exists and is a {}, not a directory",
                        FileKind::of_cap(m.file_type()).describe()
                    ),
                });
            }
            Err(_) => false,
        };
        if !existed {
            target
                .root
                .dir
                .create_dir_all(&target.rel)
                .map_err(|e| self.io_error(&target, &e))?;
        }
        Ok((root.show(&real_rel), !existed))
    }
}

/// The fuzz target `workspace_paths`'s door to [`Workspace::write_target`] (fuzz/; only with
/// `fuzzing` feature only): where a write would go, nothing written.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
impl Workspace {
    /// The parent directory opened beneath its root, the entry's name in it, and the real
    /// path shown to the user.
    pub fn fuzz_write_target(
        &self,
        user: &str,
    ) -> Result<(std::fs::File, std::ffi::OsString, PathBuf), String> {
        let target = self.write_target(user, false).map_err(|e| e.to_string())?;
        let (dir, name) = target.parts();
        let dir = dir
            .try_clone()
            .map_err(|e| format!("cannot duplicate the parent handle: {e}"))?;
        Ok((
            dir.into_std_file(),
            name.to_owned(),
            target.display().to_path_buf(),
        ))
    }
}
