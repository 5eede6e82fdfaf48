//! Why the workspace cannot be set up ([`WorkspaceError`]) or a path cannot be used
//! ([`PathError`]), and how an I/O error from a confined lookup becomes one
//! ([`Workspace::io_error`]).

use std::io;
use std::path::PathBuf;

use super::{FileKind, Target, Workspace, sys};

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
    /// A Windows path form that names no plain file inside a directory (a device path, a
    /// drive-relative path, a stream, a reserved name …; `winpath.rs`).
    #[error("{path} is not allowed: {reason}")]
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "Windows path syntax only (locate/windows.rs)")
    )]
    WindowsSyntax {
        /// The path as given.
        path: String,
        /// What is not allowed and why.
        reason: String,
    },
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
    /// The entry is a workspace root or holds one (nested roots): it is never moved, replaced
    /// or deleted.
    #[error(
        "{path} is a workspace root or holds one ({root}); a root is never moved, replaced or deleted. Work on the entries inside it instead"
    )]
    HoldsRoot {
        /// The path shown to the user.
        path: String,
        /// The root it is or holds.
        root: String,
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

impl Workspace {
    /// Map an I/O error from a confined lookup to a path error.
    pub(crate) fn io_error(&self, target: &Target<'_>, error: &io::Error) -> PathError {
        let path = target.display.display().to_string();
        let escaped = (error.kind() == io::ErrorKind::PermissionDenied
            && error.to_string().contains(CAP_STD_ESCAPE))
            || sys::is_escape(error);
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
            _ if sys::is_link_loop(error) => PathError::LinkLoop { path },
            _ => PathError::Io {
                path,
                message: error.to_string(),
            },
        }
    }
}
