//! Reading inside the roots: files and directories opened beneath their root (secrets refused
//! by the given and the real path), metadata, symlink text, and the real path of a path
//! handed to another program ([`Workspace::resolve`]).

use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata, OpenOptions};

use super::sys;
use super::{FileKind, PathError, Target, Workspace};

/// A file opened for reading inside the roots.
#[derive(Debug)]
pub(crate) struct OpenFile {
    /// The handle (opened non-blocking, so a FIFO never hangs the open; see [`Workspace::open_file`]).
    pub(crate) file: std::fs::File,
    /// Its metadata, from the handle itself.
    pub(crate) metadata: std::fs::Metadata,
    /// The absolute path to show the user.
    pub(crate) display: PathBuf,
}

/// A real path inside the roots in its canonical form, with its root's canonical and shown
/// paths ([`Workspace::resolve_real`]).
#[derive(Debug)]
pub(crate) struct RealPath {
    pub(crate) path: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) shown_root: PathBuf,
}

impl RealPath {
    /// `path` (below `root`, as a walk from here gives it) as shown.
    pub(crate) fn show(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rel) => super::below(&self.shown_root, rel),
            Err(_) => path.to_path_buf(),
        }
    }
}

impl Workspace {
    /// Open a file for reading, confined beneath its root. The open is non-blocking, so a FIFO
    /// or device returns at once; anything but a regular file is refused. Secrets are refused
    /// by the path as given and by the real path of the opened handle.
    pub(crate) fn open_file(&self, user: &str) -> Result<OpenFile, PathError> {
        let target = self.target(user)?;
        self.check_secret(&target, &target.normal)?;
        // A path without symlinks is what it says: its real path is the one the secret rules
        // just checked. Only a path with one needs the open-then-check-the-real-path way.
        let plain = sys::open_without_symlinks(&target);
        let checked = plain.is_some();
        let file = match plain {
            Some(file) => file,
            None => {
                let mut options = OpenOptions::new();
                options.read(true);
                sys::read_options(&mut options);
                target
                    .root
                    .dir
                    .open_with(&target.rel, &options)
                    .map_err(|e| {
                        // Windows refuses to open a folder as a file as "access denied".
                        let folder = e.kind() == io::ErrorKind::PermissionDenied
                            && (target.root.dir.metadata(&target.rel)).is_ok_and(|m| m.is_dir());
                        if folder {
                            self.io_error(&target, &io::ErrorKind::IsADirectory.into())
                        } else {
                            self.io_error(&target, &e)
                        }
                    })?
                    .into_std()
            }
        };
        let metadata = file.metadata().map_err(|e| self.io_error(&target, &e))?;
        if metadata.is_dir() {
            return Err(self.io_error(&target, &io::Error::from(io::ErrorKind::IsADirectory)));
        }
        if !metadata.is_file() {
            return Err(PathError::NotRegular {
                path: target.display.display().to_string(),
                kind: FileKind::of(metadata.file_type()),
            });
        }
        if !checked {
            self.check_real_path(&file, &target)?;
        }
        Ok(OpenFile {
            file,
            metadata,
            display: target.display,
        })
    }

    /// Open a directory, confined beneath its root. Secret directories (`.ssh` …) are refused
    /// like secret files: their entries are not listed.
    pub(crate) fn open_dir(&self, user: &str) -> Result<(Dir, Target<'_>), PathError> {
        let target = self.target(user)?;
        self.check_secret(&target, &target.normal)?;
        let dir = target
            .root
            .dir
            .open_dir(&target.rel)
            .map_err(|e| self.io_error(&target, &e))?;
        self.check_real_path(&dir, &target)?;
        Ok((dir, target))
    }

    /// The real absolute path of `user` inside the roots, as shown under its root
    /// ([`Workspace::resolved`]): for results and messages.
    pub(crate) fn resolve(&self, user: &str) -> Result<PathBuf, PathError> {
        self.resolved(user).map(|(root, rel)| root.show(&rel))
    }

    /// The same, canonical (on Windows the `\\?\` form: no name below the root is read
    /// otherwise), and its root's canonical and shown paths: where a walk by path starts.
    pub(crate) fn resolve_real(&self, user: &str) -> Result<RealPath, PathError> {
        self.resolved(user).map(|(root, rel)| RealPath {
            path: root.real(&rel),
            root: root.path.clone(),
            shown_root: root.shown.clone(),
        })
    }

    /// The same for handing to another program (a plugin's path parameter): shown as people
    /// write it only when the whole path names the same that way ([`super::shown`]), so a
    /// program never opens another file than the one checked.
    pub(crate) fn program_path(&self, user: &str) -> Result<PathBuf, PathError> {
        self.resolved(user)
            .map(|(root, rel)| super::shown(&root.real(&rel)).into_owned())
    }

    /// The root of `user` and its real path below it: the nearest existing ancestor is opened
    /// beneath its root (so `..` and symlinks cannot leave it) and its real path taken from the
    /// handle; the components that do not exist yet are appended as written. Secrets are
    /// refused by the path as given and by the real path. The path need not exist (`git log
    /// -- deleted.rs`).
    pub(super) fn resolved(&self, user: &str) -> Result<(&super::Root, PathBuf), PathError> {
        let target = self.target(user)?;
        self.check_secret(&target, &target.normal)?;
        let mut existing = target.normal.clone();
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        let real = loop {
            match sys::open_path_beneath(&target, &existing) {
                Ok(real) => break real,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    // A dangling symlink is not a path that "does not exist yet": where it
                    // points could be made to exist (outside the roots) before the program
                    // follows it.
                    if target
                        .root
                        .dir
                        .symlink_metadata(&existing)
                        .is_ok_and(|m| m.file_type().is_symlink())
                    {
                        return Err(PathError::Escapes {
                            path: target.display.display().to_string(),
                            roots: self.describe_roots(),
                        });
                    }
                    match existing.file_name() {
                        Some(name) => missing.push(name.to_owned()),
                        None => return Err(self.io_error(&target, &error)),
                    }
                    existing.pop();
                }
                Err(error) => return Err(self.io_error(&target, &error)),
            }
        };
        let mut resolved = real;
        resolved.extend(missing.iter().rev());
        match self.case.strip_root(&resolved, &target.root.path) {
            Some(rel) => {
                self.check_secret(&target, rel)?;
                Ok((target.root, rel.to_path_buf()))
            }
            None => Err(PathError::Escapes {
                path: target.display.display().to_string(),
                roots: self.describe_roots(),
            }),
        }
    }

    /// Whether something (a file, folder or link) is at `user`, looked up beneath its root;
    /// false for a path outside the roots too.
    pub(crate) fn exists(&self, user: &str) -> bool {
        self.target(user)
            .is_ok_and(|target| self.symlink_metadata(&target).is_ok())
    }

    /// Open the entry `name` of a listed directory `dir` (opened beneath its root) to read,
    /// not through a link, non-blocking (a FIFO swapped in never hangs the open). The caller
    /// has checked that the entry is not a secret.
    pub(crate) fn open_listed(dir: &Dir, name: &std::ffi::OsStr) -> io::Result<std::fs::File> {
        sys::open_entry_no_follow(dir, name)
    }

    /// Metadata of the path itself (a symlink is not followed), confined beneath its root.
    pub(crate) fn symlink_metadata(&self, target: &Target<'_>) -> io::Result<Metadata> {
        if target.rel == Path::new(".") {
            return target.root.dir.dir_metadata();
        }
        target.root.dir.symlink_metadata(&target.rel)
    }

    /// Metadata of what the path points to (symlinks followed, but only beneath the root).
    pub(crate) fn metadata(&self, target: &Target<'_>) -> io::Result<Metadata> {
        if target.rel == Path::new(".") {
            return target.root.dir.dir_metadata();
        }
        target.root.dir.metadata(&target.rel)
    }

    /// The text of a symlink (not resolved; it may point anywhere).
    pub(crate) fn read_link(&self, target: &Target<'_>) -> io::Result<PathBuf> {
        target.root.dir.read_link_contents(&target.rel)
    }
}

/// The fuzz target `workspace_paths`'s doors (fuzz/; `fuzzing` feature only): the opens and
/// the resolution above, their errors as text.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
impl Workspace {
    /// [`Workspace::open_file`]: the file and the path shown to the user.
    pub fn fuzz_open_file(&self, user: &str) -> Result<(std::fs::File, PathBuf), String> {
        let open = self.open_file(user).map_err(|e| e.to_string())?;
        Ok((open.file, open.display))
    }

    /// [`Workspace::open_dir`]: the directory and the path shown to the user.
    pub fn fuzz_open_dir(&self, user: &str) -> Result<(std::fs::File, PathBuf), String> {
        let (dir, target) = self.open_dir(user).map_err(|e| e.to_string())?;
        Ok((dir.into_std_file(), target.display().to_path_buf()))
    }

    /// [`Workspace::resolve`]: the real absolute path.
    pub fn fuzz_resolve(&self, user: &str) -> Result<PathBuf, String> {
        self.resolve(user).map_err(|e| e.to_string())
    }
}
