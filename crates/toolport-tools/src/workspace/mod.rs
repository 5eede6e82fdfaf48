//! Workspace roots and path confinement: the only place a tool's path becomes a file handle.
//!
//! # The rules
//! - The operator names the roots (`--root`, default: the current directory). Each root is
//!   canonicalised and opened **once**, as a directory handle, when the server starts.
//! - A relative path resolves against the first root; an absolute path must lie (lexically,
//!   component by component, so `/w/proj2` is not inside `/w/proj`) under one of the roots.
//! - The file itself is opened *relative to the root handle* with `cap-std`, which uses
//!   `openat2(RESOLVE_BENEATH)` on Linux (and an equivalent component-by-component walk
//!   elsewhere). `..`, symlinks (absolute or relative, chained, dangling) and a symlink swapped
//!   in between two calls are resolved by the kernel *beneath* the root: nothing is checked by
//!   name and then reopened, so there is no check-then-use race.
//! - Secrets (`.env*`, keys, `.ssh/` …) are refused by pattern, checked on the path as given
//!   and on the real path of the opened handle (so a symlink named `notes.txt` that points at
//!   `.env` is refused too). A file whose path holds no symlink is first opened with
//!   `RESOLVE_NO_SYMLINKS`: its real path is then the path as given, and the real-path lookup
//!   (a `/proc` readlink, the largest cost of a small read) is skipped. A secret directory
//!   is not listed; a listing of its parent and `path_info` may show that a secret exists,
//!   but its content is never returned.
//! - A client's MCP roots can only narrow the operator's roots ([`Workspace::narrow`]).
//!
//! # Per system
//! The system calls are in `sys/` (one file per system; its `mod.rs` says what each call
//! guarantees where). The path syntax is Unix (`locate/unix.rs`) or Windows (`locate/windows.rs`
//! with the pure rules of `winpath.rs`: drive letters, UNC and `\\?\` forms; device paths,
//! streams, reserved names refused). Names compare exactly on Linux and without case on macOS
//! and Windows (`case.rs`, `sys::FS_CASE`): secrets, `.git` and the roots.
//!
//! Checked on Linux by the tests: `..`, symlinks (in process and over MCP), the Windows syntax
//! rules (as pure functions), and the case-insensitive rules (a [`Workspace`] built with
//! `Case::Insensitive`). Only checked on the real systems (type-checked here, not run): that
//! `F_GETPATH` and `GetFinalPathNameByHandleW` spell paths as the roots' canonical paths, that
//! cap-std treats junctions like symlinks, `MoveFileExW`'s refusal of an existing destination,
//! `renameatx_np(RENAME_EXCL)`, and what the file systems themselves do with case and 8.3 names.
//!
//! # What is not a boundary
//! Hard links: a hard link inside a root to a file elsewhere *is* that file, and is readable.
//! The operator decides what lives inside the roots.
//!
//! # Where things are
//! Confinement lives only in this module, so that one small body of code decides whether a
//! path may be touched and opens it beneath its root: a reviewer checks it here, once, and the
//! tools only take what it gives back (handles, real paths), never a root handle to open
//! paths against themselves. The [`Workspace`] type, its roots and the lexical resolution of a path (`Target`) are
//! here; each concern has its own file:
//! - `error.rs`: why the workspace or a path cannot be used ([`WorkspaceError`],
//!   `PathError`), and how an I/O error from a confined lookup maps to one;
//! - `kind.rs`: `FileKind`, the one vocabulary of file kinds;
//! - `settings.rs`: the `[workspace]` config section ([`WorkspaceSettings`]);
//! - `secrets.rs`: the secret rules and the checks of a path and of an opened handle's real
//!   path against them;
//! - `read.rs`: opening files and directories to read, metadata, and resolving a path for
//!   another program (`Workspace::resolve`);
//! - `write.rs`: where a write may land (`Workspace::write_target`,
//!   `Workspace::entry_target`, `Workspace::create_dir_all`): the parent opened beneath
//!   the root, secrets and `.git/` refused;
//! - `atomic.rs`: the changes made there (`WriteTarget`): atomic writes (exclusive temporary
//!   file, fsync, rename) and renames;
//! - `remove.rs`: deleting there, for good (beneath the parent's handle) or into the system's
//!   trash (by path, after checking the parent's real path);
//! - `tree.rs`: a folder's tree walked without following links, and why an entry of it may
//!   not be changed (secrets, `.git/`), checked before a recursive delete or a copy;
//! - `copy.rs`: a copy's source folder (`SourceTree`) and the places inside a destination
//!   folder (`WriteTarget::within`), each folder opened beneath the one above and checked by
//!   its real path;
//! - `sys/`: the operating-system calls behind one interface (`sys/mod.rs`: the real path of
//!   a handle, the open without symlinks, the rename that never replaces, directory fsync,
//!   open flags and permission bits), one file per system (`linux.rs`, `macos.rs`,
//!   `windows.rs`, `other.rs` for other Unix): the only files to port;
//! - `case.rs`: whether names compare with or without case (`sys::FS_CASE` per system).

mod atomic;
mod case;
mod copy;
mod error;
mod kind;
/// Where a tool's path lies and its lexical normalisation, by the system's path syntax.
#[cfg_attr(unix, path = "locate/unix.rs")]
#[cfg_attr(windows, path = "locate/windows.rs")]
mod locate;
mod read;
mod remove;
mod secrets;
mod settings;
mod sys;
mod tree;
#[cfg(any(windows, test))]
mod winpath;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

pub(crate) use self::atomic::WriteTarget;
use self::case::Case;
pub(crate) use self::copy::SourceTree;
pub(crate) use self::error::PathError;
pub use self::error::WorkspaceError;
pub(crate) use self::kind::FileKind;
pub(crate) use self::read::{OpenFile, RealPath};
pub(crate) use self::secrets::DEFAULT_SECRET_PATTERNS;
use self::secrets::SecretRules;
pub(crate) use self::settings::FileWorkspace;
pub use self::settings::WorkspaceSettings;
/// The real path of an open directory handle (a command's working directory): see
/// `sys::handle_path`.
#[cfg_attr(
    target_os = "linux",
    allow(
        unused_imports,
        reason = "on Linux the command engine enters /proc/self/fd/N instead"
    )
)]
pub(crate) use self::sys::handle_path;
pub(crate) use self::tree::{Refusal, TreeEntry, walk};

/// One root: its canonical path and an open handle that every lookup starts from.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    path: PathBuf,
    /// Its path as tools show it ([`shown`]: on Windows without `\\?\` when it names the
    /// same without it). Every path shown under this root starts with it, so the paths a tool
    /// shows, and takes back, are of one form.
    shown: PathBuf,
    /// The root as the operator spelled it (made absolute), when that differs from the
    /// canonical path, e.g. through a symlinked parent: absolute paths may use either. (On
    /// Windows it is one of the `spellings`.)
    #[cfg(not(windows))]
    alias: Option<PathBuf>,
    dir: Arc<Dir>,
    /// The root's spellings (its path, then its alias) parsed once by the Windows path rules,
    /// for placing a tool's path under it (`locate/windows.rs`).
    #[cfg(windows)]
    spellings: Vec<winpath::WinPath>,
}

impl Root {
    fn new(path: PathBuf, alias: Option<PathBuf>, dir: Dir) -> Self {
        Self {
            #[cfg(windows)]
            spellings: std::iter::once(&path)
                .chain(alias.as_ref())
                .filter_map(|p| winpath::parse(p.to_str()?).ok())
                .collect(),
            shown: shown(&path).into_owned(),
            path,
            #[cfg(not(windows))]
            alias,
            dir: Arc::new(dir),
        }
    }

    /// The path `rel` below this root, as shown.
    fn show(&self, rel: &Path) -> PathBuf {
        below(&self.shown, rel)
    }

    /// The path `rel` below this root, canonical.
    fn real(&self, rel: &Path) -> PathBuf {
        below(&self.path, rel)
    }
}

/// `base` joined with `rel`; `base` itself for an empty `rel` (`join` would add a separator).
pub(super) fn below(base: &Path, rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        base.to_path_buf()
    } else {
        base.join(rel)
    }
}

/// A path resolved to a root: where lookups start, the path relative to it, and the absolute
/// path to show the user.
#[derive(Debug, Clone)]
pub(crate) struct Target<'w> {
    root: &'w Root,
    /// As given (relative to the root); lookups use this, so the kernel resolves `..` and
    /// symlinks in their real order.
    rel: PathBuf,
    /// Lexically normalised, for display and the secret rules.
    normal: PathBuf,
    display: PathBuf,
}

impl Target<'_> {
    /// The absolute path (root joined with the lexically normalised relative path).
    pub(crate) fn display(&self) -> &Path {
        &self.display
    }

    /// The path of the root this target is in, as shown (the start of [`Target::display`]).
    pub(crate) fn shown_root(&self) -> &Path {
        &self.root.shown
    }
}

/// The set of roots a call may touch, plus the secret rules. A [`Toolbox`](crate::Toolbox)
/// opens it from its settings; every path a tool touches is opened through it, beneath a root.
///
/// ```
/// use toolport_tools::Workspace;
///
/// let root = std::env::temp_dir();
/// let workspace = Workspace::new(&[root.clone()], &["*.sqlite".to_owned()])?;
/// // The root as tools show it: canonical (on Windows without `\\?\`).
/// let name = root.canonicalize()?.file_name().map(|n| n.to_string_lossy().into_owned());
/// assert!(workspace.describe_roots().ends_with(&name.unwrap_or_default()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Workspace {
    roots: Vec<Root>,
    secrets: SecretRules,
    /// How names compare: the file system's rule (`sys::FS_CASE`), for the roots, the secret
    /// rules and `.git`.
    case: Case,
}

impl Workspace {
    /// Canonicalise and open every root once; compile the secret patterns.
    pub fn new(roots: &[PathBuf], secret_patterns: &[String]) -> Result<Self, WorkspaceError> {
        Self::with_case(roots, secret_patterns, sys::FS_CASE)
    }

    /// [`Workspace::new`] with names compared by `case` rather than the system's rule (the
    /// tests run the case-insensitive rules of macOS and Windows on Linux).
    pub(crate) fn with_case(
        roots: &[PathBuf],
        secret_patterns: &[String],
        case: Case,
    ) -> Result<Self, WorkspaceError> {
        let mut opened: Vec<Root> = Vec::new();
        for given in roots {
            let path = std::fs::canonicalize(given).map_err(|source| WorkspaceError::Root {
                path: given.clone(),
                source,
            })?;
            let dir = Dir::open_ambient_dir(&path, ambient_authority()).map_err(|source| {
                WorkspaceError::Root {
                    path: given.clone(),
                    source,
                }
            })?;
            let alias = std::path::absolute(given).ok().filter(|a| *a != path);
            if !opened.iter().any(|r| r.path == path) {
                opened.push(Root::new(path, alias, dir));
            }
        }
        Ok(Self {
            roots: opened,
            secrets: SecretRules::new(secret_patterns, case)?,
            case,
        })
    }

    /// The canonical paths of the roots, in order.
    pub(crate) fn root_paths(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.path.as_path())
    }

    /// The roots' paths as shown, in order.
    pub(crate) fn shown_roots(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.shown.as_path())
    }

    /// The roots, for messages: `/a, /b`.
    pub fn describe_roots(&self) -> String {
        if self.roots.is_empty() {
            return "none (the client's roots do not overlap the server's)".into();
        }
        self.roots
            .iter()
            .map(|r| r.shown.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The workspace seen by a client that declared `client_roots` (already canonical absolute
    /// paths): each client root inside an operator root becomes a root (opened through the
    /// operator root's handle, so it cannot escape); each operator root inside a client root
    /// stays. Nothing outside the operator's roots is ever added.
    pub fn narrow(&self, client_roots: &[PathBuf]) -> Workspace {
        let mut roots: Vec<Root> = Vec::new();
        let mut add = |root: Root| {
            if !roots.iter().any(|r| r.path == root.path) {
                roots.push(root);
            }
        };
        for client in client_roots {
            for op in &self.roots {
                if let Some(rel) = self.case.strip_root(client, &op.path) {
                    let opened = if rel.as_os_str().is_empty() {
                        Ok(op.clone())
                    } else {
                        op.dir
                            .open_dir(rel)
                            .map(|dir| Root::new(client.clone(), None, dir))
                    };
                    match opened {
                        Ok(root) => add(root),
                        Err(error) => {
                            tracing::warn!(root = %client.display(), %error, "ignoring a client root that cannot be opened inside the server's roots");
                        }
                    }
                } else if self.case.strip_root(&op.path, client).is_some() {
                    add(op.clone());
                }
            }
        }
        Workspace {
            roots,
            secrets: self.secrets.clone(),
            case: self.case,
        }
    }

    /// Resolve a user-supplied path to a root and a relative path, without touching the disk.
    pub(crate) fn target(&self, user: &str) -> Result<Target<'_>, PathError> {
        if user.is_empty() {
            return Err(PathError::Empty {
                first_root: self.first_root_name(),
                roots: self.describe_roots(),
            });
        }
        if user.contains('\0') {
            return Err(PathError::NulByte);
        }
        let (root, rel, normal) = self.locate(user)?;
        let display = root.show(&normal);
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        Ok(Target {
            root,
            rel,
            normal,
            display,
        })
    }

    fn first_root_name(&self) -> String {
        self.roots
            .first()
            .map(|r| r.shown.display().to_string())
            .unwrap_or_else(|| "the first root".into())
    }

    fn outside(&self, user: &str) -> PathError {
        PathError::OutsideRoots {
            path: user.to_owned(),
            roots: self.describe_roots(),
            first_root: self.first_root_name(),
        }
    }
}

/// A canonical path as tools show it (in results and messages): on Windows without the `\\?\`
/// of real paths when it names the same without it (`C:\work\a.txt`), elsewhere as it is.
/// Lookups and the confinement checks keep the canonical form.
pub(crate) fn shown(path: &Path) -> std::borrow::Cow<'_, Path> {
    sys::shown_path(path)
}

/// Parse a client root URI (`file:///home/me/proj`) into a canonical absolute path.
pub fn client_root_path(uri: &str) -> Option<PathBuf> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    let path = url.to_file_path().ok()?;
    std::fs::canonicalize(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace over two real directories, `<tmp>/a` (first) and `<tmp>/b`.
    pub(super) fn two_roots() -> (tempfile::TempDir, Workspace, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (a, b) = (base.join("a"), base.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let ws = Workspace::new(&[a.clone(), b.clone()], &[]).unwrap();
        (dir, ws, a, b)
    }

    #[test]
    fn target_resolves_lexically_against_the_roots() {
        let (_d, ws, a, b) = two_roots();
        let shown = |user: &str| {
            ws.target(user)
                .map(|t| t.display().to_path_buf())
                .map_err(|e| std::mem::discriminant(&e))
        };
        let outside = Err(std::mem::discriminant(&PathError::OutsideRoots {
            path: String::new(),
            roots: String::new(),
            first_root: String::new(),
        }));
        for (user, expected) in [
            ("x.txt", Ok(a.join("x.txt"))),
            (".", Ok(a.clone())),
            ("./src/../x.txt", Ok(a.join("x.txt"))),
            ("src/./lib.rs", Ok(a.join("src/lib.rs"))),
            ("..", outside.clone()),
            ("src/../../x", outside.clone()),
        ] {
            assert_eq!(shown(user), expected, "{user}");
        }
        let in_b = b.join("deep/file.rs");
        assert_eq!(shown(in_b.to_str().unwrap()), Ok(in_b.clone()));
        // `/w/b2` is not inside `/w/b`: containment is by component, not by prefix.
        let sibling = format!("{}2/x", b.display());
        assert_eq!(shown(&sibling), outside);
        assert_eq!(shown("/etc/passwd"), outside);
    }

    #[test]
    fn target_refuses_empty_and_nul_paths_saying_why() {
        let (_d, ws, a, _b) = two_roots();
        let empty = ws.target("").map(|_| ()).unwrap_err();
        assert_eq!(
            empty,
            PathError::Empty {
                first_root: a.display().to_string(),
                roots: ws.describe_roots(),
            }
        );
        assert_eq!(
            ws.target("a\0b").map(|_| ()).unwrap_err(),
            PathError::NulByte
        );
        assert_eq!(
            ws.target("../x").map(|_| ()).unwrap_err().to_string(),
            format!(
                "../x is outside the allowed roots; allowed roots are: {}. Relative paths resolve against {}",
                ws.describe_roots(),
                a.display()
            )
        );
    }

    /// macOS and Windows rules on Linux: secrets and `.git` by any case, a root spelled in
    /// another case neither a way out nor a break. (That the file system itself then opens
    /// `.env` for `.ENV` is only seen on the real systems.)
    #[test]
    #[cfg(unix)]
    fn names_compare_without_case_where_the_file_system_ignores_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(".ENV"), "TOKEN=1").unwrap();
        std::fs::write(root.join("KEY.PEM"), "key").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::os::unix::fs::symlink(".ENV", root.join("notes.txt")).unwrap();
        let ws = Workspace::with_case(
            std::slice::from_ref(&root),
            &DEFAULT_SECRET_PATTERNS
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            Case::Insensitive,
        )
        .unwrap();
        let secret = |r: Result<(), PathError>| matches!(r, Err(PathError::Secret { .. }));
        for path in [".ENV", ".Env.local", "KEY.PEM", ".SSH/id_rsa", "Id_Rsa"] {
            assert!(secret(ws.open_file(path).map(|_| ())), "{path}");
        }
        // By the real path: a link with an innocent name to `.ENV`.
        assert!(secret(ws.open_file("notes.txt").map(|_| ())));
        assert!(matches!(
            ws.write_target(".GIT/config", false),
            Err(PathError::GitDir { .. })
        ));
        // The root spelled in another case resolves to the root ...
        let upper = root.to_str().unwrap().to_uppercase();
        let inside = ws.target(&format!("{upper}/src/lib.rs")).unwrap();
        assert_eq!(inside.display(), root.join("src/lib.rs"));
        assert!(ws.open_file(&format!("{upper}/src/lib.rs")).is_ok());
        // ... and is no way out: `ROOT/../root` climbs above the root.
        for outside in [
            format!("{upper}/../root/src/lib.rs"),
            format!("{}/../ROOT/src/lib.rs", root.display()),
            format!("{upper}2/x"),
        ] {
            assert!(
                matches!(ws.target(&outside), Err(PathError::OutsideRoots { .. })),
                "{outside}"
            );
        }
        // With exact names (Linux), `.ENV` is not `.env`.
        let exact = Workspace::with_case(
            std::slice::from_ref(&root),
            &[".env*".to_owned()],
            Case::Sensitive,
        )
        .unwrap();
        assert!(exact.open_file(".ENV").is_ok());
        assert!(exact.target(&format!("{upper}/src/lib.rs")).is_err());
    }

    /// A root moved after start: the real path of a handle is then no longer under the root's
    /// path, and the secret rules cannot be checked on it. A link with an innocent name to a
    /// secret is refused, not read.
    #[test]
    #[cfg(unix)]
    fn a_real_path_outside_the_roots_path_is_refused_not_passed() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join(".env"), "TOKEN=1").unwrap();
        std::os::unix::fs::symlink(".env", root.join("notes.txt")).unwrap();
        let ws = Workspace::new(std::slice::from_ref(&root), &[".env*".to_owned()]).unwrap();
        std::fs::rename(&root, base.join("moved")).unwrap();
        let opened = ws.open_file("notes.txt").map(|_| ());
        assert!(
            matches!(opened, Err(PathError::Escapes { .. })),
            "{opened:?}"
        );
    }

    #[test]
    fn handle_path_names_what_was_opened() {
        let (_d, _ws, a, _b) = two_roots();
        std::fs::create_dir(a.join("sub")).unwrap();
        let dir = std::fs::File::open(a.join("sub")).unwrap();
        std::fs::rename(a.join("sub"), a.join("moved")).unwrap();
        assert_eq!(super::handle_path(&dir), Some(a.join("moved")));
    }

    #[test]
    fn client_roots_only_narrow() {
        let (_d, ws, a, _b) = two_roots();
        let inner = a.join("inner");
        std::fs::create_dir_all(&inner).unwrap();
        let narrowed = ws.narrow(std::slice::from_ref(&inner));
        assert_eq!(narrowed.describe_roots(), inner.display().to_string());
        assert!(
            narrowed.target("../x").is_err(),
            "the parent is no longer in"
        );
        // A client root outside the operator's roots adds nothing.
        let outside = ws.narrow(&[PathBuf::from("/")]);
        assert!(outside.target("/etc/passwd").is_err());
    }
}
