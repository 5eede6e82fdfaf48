//! [`FileKind`]: what a path is, the one vocabulary of file kinds in results and messages.

use schemars::JsonSchema;
use serde::Serialize;

use super::sys;

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

/// The kind of a file type `$t` (std's or cap-std's: the same questions through two types):
/// the system's special kinds first (`sys::special_kind`: FIFOs, sockets, devices on Unix),
/// then link, directory, file.
macro_rules! kind_of {
    ($t:expr, $special:path) => {{
        let t = $t;
        if let Some(kind) = $special(t) {
            kind
        } else if t.is_symlink() {
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
        kind_of!(t, sys::special_kind)
    }

    /// The kind of a file type from a confined lookup (cap-std's type of the same facts).
    pub(crate) fn of_cap(t: cap_std::fs::FileType) -> Self {
        kind_of!(t, sys::special_kind_cap)
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

#[cfg(test)]
mod tests {
    use super::*;

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
