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
//! # What is not a boundary
//! Hard links: a hard link inside a root to a file elsewhere *is* that file, and is readable.
//! The operator decides what lives inside the roots.

use std::borrow::Cow;
use std::io;
use std::os::fd::AsFd;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, Metadata, OpenOptions};
use globset::{Glob, GlobSet, GlobSetBuilder};

use schemars::JsonSchema;
use serde::Serialize;

/// Secret files denied by default: environment files, private keys and credential stores.
/// Patterns without `/` match any single path component; patterns with `/` match the whole
/// path relative to a root.
pub(crate) const DEFAULT_SECRET_PATTERNS: &[&str] = &[
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "id_dsa*",
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
];

/// The message cap-std gives when a lookup would leave the root (`EXDEV` from `openat2`, or its
/// own walk). It is the only way to tell an escape from an ordinary permission error.
const CAP_STD_ESCAPE: &str = "a path led outside of the filesystem";

/// Why the workspace could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A root does not exist or cannot be opened.
    #[error("cannot use {path} as a workspace root: {source}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A secret pattern is not a valid glob.
    #[error("invalid secret pattern {pattern:?}: {reason}")]
    Pattern {
        /// The pattern as written in `workspace.secret_patterns`.
        pattern: String,
        /// What the glob parser said.
        reason: String,
    },
}

/// Why a path cannot be used. Each message says what was wrong and what is allowed; callers
/// branch on the variant, never on the text. Tools turn it into a `ToolError` of the matching
/// kind (`From` in `tool.rs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PathError {
    /// An empty path.
    #[error(
        "the path is empty; give a path relative to {first_root} or an absolute path inside the allowed roots ({roots})"
    )]
    Empty {
        /// Where relative paths resolve.
        first_root: String,
        /// Every root.
        roots: String,
    },
    /// A NUL byte in the path.
    #[error("the path contains a NUL byte, which no file name can contain")]
    NulByte,
    /// The path as written lies outside every root.
    #[error(
        "{path} is outside the allowed roots; allowed roots are: {roots}. Relative paths resolve against {first_root}"
    )]
    OutsideRoots {
        /// The path as given.
        path: String,
        /// Every root.
        roots: String,
        /// Where relative paths resolve.
        first_root: String,
    },
    /// The path resolves (through `..` or a symlink) outside its root.
    #[error(
        "{path} resolves outside the allowed roots (through `..` or a symbolic link, or a link with an absolute target); allowed roots are: {roots}"
    )]
    Escapes {
        /// The path shown to the user.
        path: String,
        /// Every root.
        roots: String,
    },
    /// Nothing exists at the path.
    #[error("{path} does not exist (relative paths resolve against {first_root})")]
    NotFound {
        /// The path shown to the user.
        path: String,
        /// Where relative paths resolve.
        first_root: String,
    },
    /// A component of the path is a file, not a directory.
    #[error("{path}: a component of the path is a file, not a directory")]
    NotADirectory {
        /// The path shown to the user.
        path: String,
    },
    /// A directory where a file was expected.
    #[error("{path} is a directory; use list_directory to see its entries")]
    IsADirectory {
        /// The path shown to the user.
        path: String,
    },
    /// Something other than a regular file where one was expected.
    #[error(
        "{path} is not a regular file (it is a {}); only regular files can be read",
        kind.describe()
    )]
    NotRegular {
        /// The path shown to the user.
        path: String,
        /// What it is.
        kind: FileKind,
    },
    /// The path matches a secret pattern.
    #[error(
        "{path} is a protected secret (matches the deny rule {pattern:?}); its content is never returned. The operator can change the rules with `workspace.secret_patterns` in the config file"
    )]
    Secret {
        /// The path shown to the user.
        path: String,
        /// The rule that matched.
        pattern: String,
    },
    /// The operating system refused access.
    #[error("the operating system denied access to {path}")]
    OsDenied {
        /// The path shown to the user.
        path: String,
    },
    /// A symlink loop.
    #[error("{path}: too many levels of symbolic links (a link loop)")]
    LinkLoop {
        /// The path shown to the user.
        path: String,
    },
    /// A write inside a `.git` directory, which the operator has not allowed.
    #[error(
        "{path} is inside a .git directory; writing there is refused (git runs hooks from it, and its files are git's own). Change files of the working tree instead; the operator can allow such writes with `allow_git_writes = true` in the [fs] section of the config file"
    )]
    GitDir {
        /// The path shown to the user.
        path: String,
    },
    /// The directory a new entry would go into does not exist.
    #[error(
        "the parent directory of {path} does not exist; create it first with create_directory (the write tools never create parent directories on their own)"
    )]
    ParentMissing {
        /// The path shown to the user.
        path: String,
    },
    /// The path names no entry (a root, or it ends in `.` or `..`).
    #[error(
        "{path} does not name a file or directory inside a root (it is a root itself, or ends in `.` or `..`); give the path of the entry itself"
    )]
    NoName {
        /// The path shown to the user.
        path: String,
    },
    /// A symbolic link whose target does not exist: writing through it would create a file
    /// wherever it points.
    #[error(
        "{path} is a symbolic link to something that does not exist; nothing is created through a dangling link. Write to the path the link should point to, or remove the link first"
    )]
    DanglingLink {
        /// The path shown to the user.
        path: String,
    },
    /// Any other I/O failure.
    #[error("cannot access {path}: {message}")]
    Io {
        /// The path shown to the user.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

/// What a path is: the one vocabulary of file kinds, in results (`"type"`) and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A block device.
    BlockDevice,
    /// A character device.
    CharDevice,
    /// Anything else.
    Other,
}

/// The kind of a file type `$t`, whose Unix extension trait is `$ext`: std's and cap-std's file
/// types answer the same questions through two traits of the same shape.
macro_rules! kind_of {
    ($t:expr, $ext:path) => {{
        let t = $t;
        #[cfg(unix)]
        {
            use $ext as _;
            if t.is_fifo() {
                return Self::Fifo;
            }
            if t.is_socket() {
                return Self::Socket;
            }
            if t.is_block_device() {
                return Self::BlockDevice;
            }
            if t.is_char_device() {
                return Self::CharDevice;
            }
        }
        if t.is_symlink() {
            Self::Symlink
        } else if t.is_dir() {
            Self::Directory
        } else if t.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }};
}

impl FileKind {
    /// The kind of a file type (symlinks are reported as such, not followed).
    pub(crate) fn of(t: std::fs::FileType) -> Self {
        kind_of!(t, std::os::unix::fs::FileTypeExt)
    }

    /// The kind of a file type from a confined lookup (cap-std's type of the same facts).
    pub(crate) fn of_cap(t: cap_std::fs::FileType) -> Self {
        kind_of!(t, cap_std::fs::FileTypeExt)
    }

    /// The kind as it appears in results: `file`, `block_device` ….
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Directory => "directory",
            Self::Symlink => "symlink",
            Self::Fifo => "fifo",
            Self::Socket => "socket",
            Self::BlockDevice => "block_device",
            Self::CharDevice => "char_device",
            Self::Other => "other",
        }
    }

    /// The kind in words, for messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::File => "regular file",
            Self::Directory => "directory",
            Self::Symlink => "symbolic link",
            Self::Fifo => "named pipe (FIFO)",
            Self::Socket => "socket",
            Self::BlockDevice => "block device",
            Self::CharDevice => "character device",
            Self::Other => "special file",
        }
    }
}

/// The `[workspace]` section of the config file.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWorkspace {
    secret_patterns: Option<Vec<String>>,
}

/// The secret rules the operator chose (compiled by [`Workspace::new`], which reports a bad
/// pattern).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceSettings {
    /// Paths matching these patterns are never read.
    pub(crate) secret_patterns: Vec<String>,
}

impl Default for WorkspaceSettings {
    fn default() -> Self {
        Self {
            secret_patterns: DEFAULT_SECRET_PATTERNS
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

impl WorkspaceSettings {
    /// The file's patterns, or the defaults.
    pub fn load(file: FileWorkspace) -> Self {
        file.secret_patterns
            .map_or_else(Self::default, |secret_patterns| Self { secret_patterns })
    }
}

/// One root: its canonical path and an open handle that every lookup starts from.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    path: PathBuf,
    /// The root as the operator spelled it (made absolute), when that differs from the
    /// canonical path, e.g. through a symlinked parent: absolute paths may use either.
    alias: Option<PathBuf>,
    dir: Arc<Dir>,
}

/// Which patterns make a path a secret.
///
/// The patterns are parsed when the server starts (a bad one is a start-up error naming it),
/// and compiled into glob sets by the first path check: a session that never touches a file
/// (a web search, a command) does not pay for the automata. Clones (the narrowed workspace of
/// each client) share one compilation.
#[derive(Debug, Clone)]
struct SecretRules {
    /// Patterns without a `/`: matched against each path component.
    component: Arc<[(Glob, String)]>,
    /// Patterns with a `/`: matched against the whole relative path (as `**/pattern`).
    whole: Arc<[(Glob, String)]>,
    compiled: Arc<OnceLock<Result<CompiledSecrets, String>>>,
}

/// [`SecretRules`]' glob sets; match `i` is pattern `i` of its list.
#[derive(Debug)]
struct CompiledSecrets {
    component: GlobSet,
    whole: GlobSet,
}

impl SecretRules {
    fn new(patterns: &[String]) -> Result<Self, WorkspaceError> {
        let (mut component, mut whole) = (Vec::new(), Vec::new());
        for pattern in patterns {
            let trimmed = pattern.trim_end_matches('/');
            let err = |e: globset::Error| WorkspaceError::Pattern {
                pattern: pattern.clone(),
                reason: e.kind().to_string(),
            };
            if trimmed.contains('/') {
                let glob = format!("**/{}", trimmed.trim_start_matches('/'));
                whole.push((Glob::new(&glob).map_err(err)?, pattern.clone()));
            } else {
                component.push((Glob::new(trimmed).map_err(err)?, pattern.clone()));
            }
        }
        Ok(Self {
            component: component.into(),
            whole: whole.into(),
            compiled: Arc::default(),
        })
    }

    /// The glob sets, compiled on first use. Compiling parsed globs fails only past the
    /// regex engine's size limits; the error is logged and kept, and every check then refuses
    /// (below).
    fn compiled(&self) -> Result<&CompiledSecrets, &str> {
        self.compiled
            .get_or_init(|| {
                let compiled = self.compile();
                if let Err(reason) = &compiled {
                    tracing::error!(
                        %reason,
                        "workspace.secret_patterns could not be compiled; every path is refused"
                    );
                }
                compiled
            })
            .as_ref()
            .map_err(String::as_str)
    }

    fn compile(&self) -> Result<CompiledSecrets, String> {
        let set = |globs: &[(Glob, String)]| {
            let mut builder = GlobSetBuilder::new();
            for (glob, _) in globs {
                builder.add(glob.clone());
            }
            builder.build().map_err(|e| e.to_string())
        };
        Ok(CompiledSecrets {
            component: set(&self.component)?,
            whole: set(&self.whole)?,
        })
    }

    /// The pattern that makes `rel` (a path relative to a root) a secret, if any. Fails
    /// closed: if the patterns could not be compiled, every path is refused with the reason.
    fn matching(&self, rel: &Path) -> Option<Cow<'_, str>> {
        let compiled = match self.compiled() {
            Ok(compiled) => compiled,
            Err(reason) => {
                return Some(Cow::Owned(format!(
                    "workspace.secret_patterns (they could not be compiled: {reason})"
                )));
            }
        };
        for part in rel.components() {
            if let Component::Normal(name) = part
                && let Some(&i) = compiled.component.matches(Path::new(name)).first()
            {
                return Some(Cow::Borrowed(&self.component[i].1));
            }
        }
        compiled
            .whole
            .matches(rel)
            .first()
            .map(|&i| Cow::Borrowed(self.whole[i].1.as_str()))
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

    /// The canonical path of the root this target is in.
    pub(crate) fn root_path(&self) -> &Path {
        &self.root.path
    }
}

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

/// The set of roots a call may touch, plus the secret rules.
#[derive(Debug, Clone)]
pub struct Workspace {
    roots: Vec<Root>,
    secrets: SecretRules,
}

impl Workspace {
    /// Canonicalise and open every root once; compile the secret patterns.
    pub fn new(roots: &[PathBuf], secret_patterns: &[String]) -> Result<Self, WorkspaceError> {
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
                opened.push(Root {
                    path,
                    alias,
                    dir: Arc::new(dir),
                });
            }
        }
        Ok(Self {
            roots: opened,
            secrets: SecretRules::new(secret_patterns)?,
        })
    }

    /// The canonical paths of the roots, in order.
    pub(crate) fn root_paths(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.path.as_path())
    }

    /// The roots, for messages: `/a, /b`.
    pub(crate) fn describe_roots(&self) -> String {
        if self.roots.is_empty() {
            return "none (the client's roots do not overlap the server's)".into();
        }
        self.roots
            .iter()
            .map(|r| r.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The workspace seen by a client that declared `client_roots` (already canonical absolute
    /// paths): each client root inside an operator root becomes a root (opened through the
    /// operator root's handle, so it cannot escape); each operator root inside a client root
    /// stays. Nothing outside the operator's roots is ever added.
    pub(crate) fn narrow(&self, client_roots: &[PathBuf]) -> Workspace {
        let mut roots: Vec<Root> = Vec::new();
        let mut add = |root: Root| {
            if !roots.iter().any(|r| r.path == root.path) {
                roots.push(root);
            }
        };
        for client in client_roots {
            for op in &self.roots {
                if let Ok(rel) = client.strip_prefix(&op.path) {
                    let opened = if rel.as_os_str().is_empty() {
                        Ok(op.clone())
                    } else {
                        op.dir.open_dir(rel).map(|dir| Root {
                            path: client.clone(),
                            alias: None,
                            dir: Arc::new(dir),
                        })
                    };
                    match opened {
                        Ok(root) => add(root),
                        Err(error) => {
                            tracing::warn!(root = %client.display(), %error, "ignoring a client root that cannot be opened inside the server's roots");
                        }
                    }
                } else if op.path.starts_with(client) {
                    add(op.clone());
                }
            }
        }
        Workspace {
            roots,
            secrets: self.secrets.clone(),
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
        let path = Path::new(user);
        let (root, rel) = if path.is_absolute() {
            self.roots
                .iter()
                .find_map(|r| {
                    let rel = path
                        .strip_prefix(&r.path)
                        .ok()
                        .or_else(|| r.alias.as_ref().and_then(|a| path.strip_prefix(a).ok()));
                    rel.map(|rel| (r, rel))
                })
                .ok_or_else(|| self.outside(user))?
        } else {
            let root = self.roots.first().ok_or_else(|| self.outside(user))?;
            (root, path)
        };
        // Lexical normalisation for display and for an early, clear error; the real
        // resolution (symlinks included) is done by the kernel beneath the root handle.
        let mut normal = PathBuf::new();
        for part in rel.components() {
            match part {
                Component::CurDir => {}
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(self.outside(user));
                    }
                }
                Component::Normal(name) => normal.push(name),
                Component::RootDir | Component::Prefix(_) => return Err(self.outside(user)),
            }
        }
        let display = if normal.as_os_str().is_empty() {
            root.path.clone()
        } else {
            root.path.join(&normal)
        };
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel.to_path_buf()
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
            .map(|r| r.path.display().to_string())
            .unwrap_or_else(|| "the first root".into())
    }

    fn outside(&self, user: &str) -> PathError {
        PathError::OutsideRoots {
            path: user.to_owned(),
            roots: self.describe_roots(),
            first_root: self.first_root_name(),
        }
    }

    /// Map an I/O error from a confined lookup to a path error.
    pub(crate) fn io_error(&self, target: &Target<'_>, error: &io::Error) -> PathError {
        let path = target.display.display().to_string();
        let escaped = (error.kind() == io::ErrorKind::PermissionDenied
            && error.to_string().contains(CAP_STD_ESCAPE))
            || error.raw_os_error() == Some(libc::EXDEV);
        if escaped {
            return PathError::Escapes {
                path,
                roots: self.describe_roots(),
            };
        }
        match error.kind() {
            io::ErrorKind::NotFound => PathError::NotFound {
                path,
                first_root: self.first_root_name(),
            },
            io::ErrorKind::PermissionDenied => PathError::OsDenied { path },
            io::ErrorKind::NotADirectory => PathError::NotADirectory { path },
            io::ErrorKind::IsADirectory => PathError::IsADirectory { path },
            _ if error.raw_os_error() == Some(libc::ELOOP) => PathError::LinkLoop { path },
            _ => PathError::Io {
                path,
                message: error.to_string(),
            },
        }
    }

    /// Refuse `rel` if it matches a secret pattern.
    fn check_secret(&self, target: &Target<'_>, rel: &Path) -> Result<(), PathError> {
        match self.secrets.matching(rel) {
            Some(pattern) => Err(PathError::Secret {
                path: target.display.display().to_string(),
                pattern: pattern.into_owned(),
            }),
            None => Ok(()),
        }
    }

    /// Whether a path relative to a root matches a secret pattern (for listings).
    pub(crate) fn is_secret(&self, rel: &Path) -> bool {
        self.secrets.matching(rel).is_some()
    }

    /// Open a file for reading, confined beneath its root. The open is non-blocking, so a FIFO
    /// or device returns at once; anything but a regular file is refused. Secrets are refused
    /// by the path as given and by the real path of the opened handle.
    pub(crate) fn open_file(&self, user: &str) -> Result<OpenFile, PathError> {
        let target = self.target(user)?;
        self.check_secret(&target, &target.normal)?;
        // A path without symlinks is what it says: its real path is the one the secret rules
        // just checked. Only a path with one needs the open-then-check-the-real-path way.
        let plain = open_without_symlinks(&target, READ_FLAGS);
        let checked = plain.is_some();
        let file = match plain {
            Some(fd) => std::fs::File::from(fd),
            None => {
                let mut options = OpenOptions::new();
                options.read(true);
                #[cfg(unix)]
                {
                    use cap_std::fs::OpenOptionsExt;
                    options.custom_flags(READ_FLAGS);
                }
                target
                    .root
                    .dir
                    .open_with(&target.rel, &options)
                    .map_err(|e| self.io_error(&target, &e))?
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

    /// Refuse an opened handle whose real path (what was actually opened, after symlinks) is
    /// a secret.
    fn check_real_path(&self, handle: &impl AsFd, target: &Target<'_>) -> Result<(), PathError> {
        match real_path(handle, target) {
            Some(real) => match real.strip_prefix(&target.root.path) {
                Ok(rel) => self.check_secret(target, rel),
                Err(_) => Ok(()),
            },
            None => Ok(()),
        }
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

    /// The real absolute path of `user` inside the roots, for handing to another program (a
    /// plugin's path parameter): the nearest existing ancestor is opened beneath its root (so
    /// `..` and symlinks cannot leave it) and its real path taken from the handle; the
    /// components that do not exist yet are appended as written. Secrets are refused by the
    /// path as given and by the real path. The path need not exist (`git log -- deleted.rs`).
    pub(crate) fn resolve(&self, user: &str) -> Result<PathBuf, PathError> {
        let target = self.target(user)?;
        self.check_secret(&target, &target.normal)?;
        let mut existing = target.normal.clone();
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        let real = loop {
            match open_path_beneath(&target, &existing) {
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
        match resolved.strip_prefix(&target.root.path) {
            Ok(rel) => self.check_secret(&target, rel)?,
            Err(_) => {
                return Err(PathError::Escapes {
                    path: target.display.display().to_string(),
                    roots: self.describe_roots(),
                });
            }
        }
        Ok(resolved)
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

/// Where a write lands: the entry `name` in the directory `dir`, which was opened beneath its
/// root. Every change (create, replace, rename) is made relative to `dir`, so it cannot leave
/// the root whatever happens to the path by name meanwhile.
#[derive(Debug)]
pub(crate) struct WriteTarget {
    /// The parent directory, opened beneath the root.
    dir: Dir,
    /// The entry's name in `dir` (one component).
    name: std::ffi::OsString,
    /// The real absolute path (the parent's real path joined with the name).
    display: PathBuf,
    /// What is there now (the entry itself, a symlink not followed); `None`: nothing yet.
    existing: Option<Metadata>,
}

/// Prefix and suffix of the temporary file an atomic write fills before renaming it over the
/// target: hidden, in the same directory (a rename is only atomic within one file system),
/// and recognisable as ours should a crash leave one behind.
const TEMP_PREFIX: &str = ".toolport-";
const TEMP_SUFFIX: &str = ".tmp";
/// Random bytes in a temporary file's name: enough that two writers never pick the same one
/// (the create is exclusive anyway).
const TEMP_RANDOM_BYTES: usize = 8;
/// Most symlinks followed to reach a write target (a link to a link …): a link that leads on
/// further than this is refused as a loop.
const MAX_WRITE_LINKS: usize = 8;
/// Permission bits kept from the replaced file (rwx for all, setuid/setgid/sticky).
const MODE_BITS: u32 = 0o7777;
/// Mode of a newly created file before the umask, as `open(2)` callers conventionally use.
const NEW_FILE_MODE: u32 = 0o666;

impl WriteTarget {
    /// The real absolute path, for results and messages.
    pub(crate) fn display(&self) -> &Path {
        &self.display
    }

    /// The parent directory's handle and the entry's name, for the fuzz target's check that
    /// the handle is beneath the root.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn parts(&self) -> (&Dir, &std::ffi::OsStr) {
        (&self.dir, &self.name)
    }

    /// What is at the path now (a symlink is reported as such), or `None`.
    pub(crate) fn existing_kind(&self) -> Option<FileKind> {
        self.existing
            .as_ref()
            .map(|m| FileKind::of_cap(m.file_type()))
    }

    /// The current bytes of the existing regular file (opened without following a link,
    /// non-blocking, so a FIFO swapped in meanwhile never hangs the call).
    pub(crate) fn read_existing(&self) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.custom_flags(READ_FLAGS | libc::O_NOFOLLOW);
        }
        let mut file = self.dir.open_with(&self.name, &options)?.into_std();
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("it is no longer a regular file"));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Write `bytes` atomically: into a new temporary file in the same directory (created
    /// exclusively through the directory handle), fsynced, given the replaced file's
    /// permissions, then renamed over the target; the directory is fsynced after. A reader
    /// sees the old content or the new, never part of either. With `replace` false the rename
    /// refuses to replace anything (`RENAME_NOREPLACE`): a file that appeared meanwhile stays
    /// (`AlreadyExists`). The temporary file is removed on any failure.
    pub(crate) fn write_atomic(&self, bytes: &[u8], replace: bool) -> io::Result<()> {
        use std::io::Write;
        let random = crate::secret::random_token(TEMP_RANDOM_BYTES).map_err(io::Error::other)?;
        let temp = format!("{TEMP_PREFIX}{random}{TEMP_SUFFIX}");
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.mode(NEW_FILE_MODE);
            options.custom_flags(libc::O_NOFOLLOW);
        }
        let file = self.dir.open_with(&temp, &options)?;
        let cleanup = RemoveOnDrop {
            dir: &self.dir,
            name: Some(&temp),
        };
        let mut file = file.into_std();
        #[cfg(unix)]
        if let Some(existing) = &self.existing
            && existing.is_file()
        {
            use cap_std::fs::PermissionsExt as _;
            use std::os::unix::fs::PermissionsExt;
            let mode = existing.permissions().mode() & MODE_BITS;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        rename_beneath(
            &self.dir,
            Path::new(&temp),
            &self.dir,
            Path::new(&self.name),
            replace,
        )?;
        cleanup.disarm();
        self.sync_dir();
        Ok(())
    }

    /// Rename this entry to `to` (both directories opened beneath their roots). Without
    /// `replace`, an existing destination is never replaced (`AlreadyExists`).
    pub(crate) fn rename_to(&self, to: &WriteTarget, replace: bool) -> io::Result<()> {
        rename_beneath(
            &self.dir,
            Path::new(&self.name),
            &to.dir,
            Path::new(&to.name),
            replace,
        )?;
        self.sync_dir();
        to.sync_dir();
        Ok(())
    }

    /// Make the directory entry durable. Best effort: the data is already on disk, and a
    /// failure here (a file system that cannot fsync a directory) is not the caller's fault.
    fn sync_dir(&self) {
        #[cfg(unix)]
        if let Err(error) = nix::unistd::fsync(&self.dir) {
            tracing::debug!(%error, dir = %self.display.display(), "fsync of the directory failed");
        }
    }
}

/// Removes a temporary file unless disarmed (the write succeeded and renamed it).
struct RemoveOnDrop<'a> {
    dir: &'a Dir,
    name: Option<&'a str>,
}

impl RemoveOnDrop<'_> {
    fn disarm(mut self) {
        self.name = None;
    }
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name {
            let _ = self.dir.remove_file(name);
        }
    }
}

/// `renameat` between two directory handles; without `replace`, `renameat2(RENAME_NOREPLACE)`
/// so an existing destination is refused by the kernel, not by an earlier check that a racing
/// writer could outrun.
fn rename_beneath(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
    replace: bool,
) -> io::Result<()> {
    if replace {
        return from_dir.rename(from, to_dir, to);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::fcntl::{RenameFlags, renameat2};
        renameat2(from_dir, from, to_dir, to, RenameFlags::RENAME_NOREPLACE)
            .map_err(io::Error::from)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        // No renameat2 here: check, then rename (a racing writer can slip in between).
        if to_dir.symlink_metadata(to).is_ok() {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        from_dir.rename(from, to_dir, to)
    }
}

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
        let in_git = rel
            .components()
            .any(|c| matches!(c, Component::Normal(name) if name == ".git"));
        if in_git && !allow_git {
            return Err(PathError::GitDir {
                path: target.display.display().to_string(),
            });
        }
        Ok(())
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
            let real = match open_path_beneath(&target, &target.rel) {
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
        let real_parent = real_path(&dir, &target).ok_or_else(escapes)?;
        let real_rel = real_parent
            .strip_prefix(&target.root.path)
            .map_err(|_| escapes())?
            .join(&name);
        self.check_writable(&target, &real_rel, allow_git)?;
        let existing = match dir.symlink_metadata(&name) {
            Ok(metadata) => Some(metadata),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(self.io_error(&target, &e)),
        };
        let entry = WriteTarget {
            dir,
            name,
            display: target.root.path.join(&real_rel),
            existing,
        };
        Ok((target, entry))
    }

    /// Create the directory `user` and any missing parents, beneath its root. Secrets and
    /// `.git` are refused by the path as given and by the real path of the nearest existing
    /// ancestor (a dangling link on the way is refused). The real absolute path, and whether
    /// it was created (false: it was already a directory).
    pub(crate) fn create_dir_all(
        &self,
        user: &str,
        allow_git: bool,
    ) -> Result<(PathBuf, bool), PathError> {
        let target = self.target(user)?;
        self.check_writable(&target, &target.normal, allow_git)?;
        let real = self.resolve(user)?;
        let real_rel = real
            .strip_prefix(&target.root.path)
            .map_err(|_| PathError::Escapes {
                path: target.display.display().to_string(),
                roots: self.describe_roots(),
            })?;
        self.check_writable(&target, real_rel, allow_git)?;
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
        Ok((real, !existed))
    }
}

/// Flags for opening a file to read (read-only is 0): non-blocking, so opening a FIFO with no
/// writer returns at once instead of hanging (it is then refused as not a regular file); no
/// controlling terminal from a tty.
#[cfg(unix)]
const READ_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY;
#[cfg(not(unix))]
const READ_FLAGS: i32 = 0;

/// Open `target` beneath its root when no component of the path is a symlink (openat2 with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), with `flags` and close-on-exec. `None` when that
/// open fails for any reason (a symlink on the way, a missing file, a kernel before 5.6, or
/// not Linux): the caller then opens the general way, which follows symlinks inside the
/// root, checks the real path, and reports the error.
fn open_without_symlinks(target: &Target<'_>, flags: libc::c_int) -> Option<std::os::fd::OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
        let how = OpenHow::new()
            .flags(OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        openat2(&target.root.dir, target.rel.as_path(), how).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (target, flags);
        None
    }
}

/// The real absolute path of `rel` (relative to the target's root), looked up beneath the root:
/// symlinks are followed only while they stay inside it (`RESOLVE_BENEATH`), and the real path
/// is read from the resulting `O_PATH` handle. An escape fails with `EXDEV`, which
/// [`Workspace::io_error`] reports as [`PathError::Escapes`].
fn open_path_beneath(target: &Target<'_>, rel: &Path) -> io::Result<PathBuf> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
        use std::os::fd::AsRawFd;
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH);
        let fd = openat2(&target.root.dir, rel, how).map_err(io::Error::from)?;
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        target
            .root
            .dir
            .canonicalize(rel)
            .map(|real| target.root.path.join(real))
    }
}

/// The real path of an open handle: `/proc/self/fd` on Linux (race-free: it names what was
/// opened), a confined canonicalisation elsewhere.
fn real_path(handle: &impl AsFd, target: &Target<'_>) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let _ = target;
        std::fs::read_link(format!("/proc/self/fd/{}", handle.as_fd().as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = handle;
        target
            .root
            .dir
            .canonicalize(&target.rel)
            .ok()
            .map(|rel| target.root.path.join(rel))
    }
}

/// Parse a client root URI (`file:///home/me/proj`) into a canonical absolute path.
pub(crate) fn client_root_path(uri: &str) -> Option<PathBuf> {
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

    fn rules(patterns: &[&str]) -> SecretRules {
        let patterns: Vec<String> = patterns.iter().map(ToString::to_string).collect();
        SecretRules::new(&patterns).unwrap()
    }

    #[test]
    fn secret_rules_match_components_or_whole_paths() {
        let defaults = rules(DEFAULT_SECRET_PATTERNS);
        for (path, expected) in [
            (".env", Some(".env*")),
            (".env.local", Some(".env*")),
            ("app/.env.production", Some(".env*")),
            ("certs/server.pem", Some("*.pem")),
            ("home/.ssh/config", Some(".ssh")),
            (".ssh", Some(".ssh")),
            ("keys/id_ed25519.pub", Some("id_ed25519*")),
            ("src/main.rs", None),
            ("environment.md", None),
            ("docs/ssh.md", None),
            ("pem", None),
        ] {
            assert_eq!(
                defaults.matching(Path::new(path)).as_deref(),
                expected,
                "{path}"
            );
        }
        let whole = rules(&["config/prod/*.toml", "secrets/"]);
        for (path, expected) in [
            ("config/prod/db.toml", Some("config/prod/*.toml")),
            ("app/config/prod/db.toml", Some("config/prod/*.toml")),
            ("config/dev/db.toml", None),
            ("secrets", Some("secrets/")),
            ("a/secrets/b.txt", Some("secrets/")),
        ] {
            assert_eq!(
                whole.matching(Path::new(path)).as_deref(),
                expected,
                "{path}"
            );
        }
    }

    #[test]
    fn secret_rules_compile_on_first_use_once_for_all_clones() {
        let rules = rules(DEFAULT_SECRET_PATTERNS);
        let narrowed = rules.clone();
        assert!(rules.compiled.get().is_none(), "compiled at start");
        assert_eq!(
            narrowed.matching(Path::new("a/.env")).as_deref(),
            Some(".env*")
        );
        assert!(
            rules.compiled.get().is_some(),
            "the clone's first check compiled for itself only"
        );
        assert!(Arc::ptr_eq(&rules.compiled, &narrowed.compiled));
    }

    #[test]
    fn secret_rules_that_failed_to_compile_refuse_every_path() {
        let rules = rules(&[".env*"]);
        rules
            .compiled
            .set(Err("regex too big".into()))
            .expect("not compiled yet");
        let refusal = rules.matching(Path::new("src/main.rs"));
        assert!(
            refusal
                .as_deref()
                .is_some_and(|r| r.contains("could not be compiled: regex too big")),
            "{refusal:?}"
        );
    }

    #[test]
    fn a_bad_pattern_is_an_error_naming_it() {
        let err = SecretRules::new(&["a[".to_owned()])
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.starts_with("invalid secret pattern \"a[\"")),
            "{err:?}"
        );
    }

    /// A workspace over two real directories, `<tmp>/a` (first) and `<tmp>/b`.
    fn two_roots() -> (tempfile::TempDir, Workspace, PathBuf, PathBuf) {
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

    /// Atomic writes: 1,000 replacements while another thread reads the file by name; every
    /// read sees one whole version, and no temporary file is left.
    #[test]
    fn a_reader_never_sees_a_half_written_file() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let (_d, ws, a, _b) = two_roots();
        let path = a.join("data");
        let versions = [vec![b'a'; 48 * 1024], vec![b'b'; 80 * 1024]];
        std::fs::write(&path, &versions[0]).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (stop, reads, path, versions) =
                (stop.clone(), reads.clone(), path, versions.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let seen = std::fs::read(&path).unwrap();
                    assert!(versions.contains(&seen), "torn: {} bytes", seen.len());
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        for round in 0..1000 {
            let target = ws.write_target("data", false).unwrap();
            target
                .write_atomic(&versions[(round + 1) % 2], true)
                .unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap();
        assert!(reads.load(Ordering::Relaxed) > 0);
        let left: Vec<_> = std::fs::read_dir(&a).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
    }

    #[test]
    fn a_new_file_is_not_replaced_when_one_appears_meanwhile() {
        let (_d, ws, a, _b) = two_roots();
        let target = ws.write_target("new.txt", false).unwrap();
        assert_eq!(target.existing_kind(), None);
        std::fs::write(a.join("new.txt"), "theirs").unwrap();
        let error = target.write_atomic(b"mine", false).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read_to_string(a.join("new.txt")).unwrap(),
            "theirs"
        );
        assert_eq!(std::fs::read_dir(&a).unwrap().count(), 1);
    }

    #[test]
    fn file_kinds_have_one_vocabulary() {
        assert_eq!(
            [FileKind::File, FileKind::BlockDevice, FileKind::Fifo].map(FileKind::as_str),
            ["file", "block_device", "fifo"]
        );
        assert_eq!(
            serde_json::to_value([FileKind::CharDevice, FileKind::Symlink]).unwrap(),
            serde_json::json!(["char_device", "symlink"])
        );
        assert_eq!(FileKind::Fifo.describe(), "named pipe (FIFO)");
    }
}
