//! The operating-system calls confinement rests on, behind one interface (the functions of
//! this file, each saying what it guarantees) with one implementation per system:
//!
//! | file | system | real path of a handle | rename without replacing | open without symlinks |
//! |------|--------|-----------------------|--------------------------|-----------------------|
//! | `linux.rs` | Linux | `/proc/self/fd/N` (race-free) | `renameat2(RENAME_NOREPLACE)` (glibc; musl: check, then rename) | `openat2(RESOLVE_BENEATH \| RESOLVE_NO_SYMLINKS)` |
//! | `macos.rs` | macOS | `fcntl(F_GETPATH)` (race-free) | `renameatx_np(RENAME_EXCL)` | not available: every open takes the real-path check |
//! | `windows.rs` | Windows | `GetFinalPathNameByHandleW` (race-free), `\\?\C:\…` like `std::fs::canonicalize` | `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING`, between the directories' real paths | not available: every open takes the real-path check |
//! | `other.rs` | other Unix | none: a confined re-canonicalisation of the name (racy) | check, then rename (racy) | not available |
//!
//! `unix.rs` holds what all Unix systems share (open flags, permission bits, directory fsync,
//! error numbers, the freedesktop trash's file-system check); `portable.rs` the fallbacks built on cap-std alone. Everything else in the
//! workspace is the same on every system: the opens themselves go beneath the root handle with
//! cap-std (`openat2(RESOLVE_BENEATH)` on Linux; a component-by-component walk with
//! `O_NOFOLLOW` on macOS and other Unix, and with `NtCreateFile` relative to the parent handle
//! on Windows, where symlinks and junctions are followed by cap-std itself, only beneath the
//! root).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata, OpenOptions};
use cap_std::io_lifetimes::AsFilelike;

use super::{FileKind, Target};
#[cfg(doc)]
use super::{PathError, Workspace};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
mod other;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
use other as imp;

#[cfg(unix)]
mod unix;

#[cfg(not(target_os = "linux"))]
mod portable;

/// Whether this system's file names compare with or without case (see `case.rs`): the secret
/// rules, the `.git` refusal and the comparison of a path with a root follow it.
pub(crate) use imp::FS_CASE;

/// Open `target` for reading beneath its root when no component of the path is a symlink
/// (Linux: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), non-blocking and
/// close-on-exec. Its real path is then the path as given, so the caller skips the real-path
/// check. `None` when that open fails for any reason (a symlink on the way, a missing file, a
/// kernel before 5.6) or the system has no such open (macOS, Windows, other Unix): the caller
/// then opens the general way, which follows symlinks inside the root, checks the real path,
/// and reports the error.
pub(super) fn open_without_symlinks(target: &Target<'_>) -> Option<std::fs::File> {
    imp::open_without_symlinks(target)
}

/// The real absolute path of `rel` (relative to the target's root), looked up beneath the root:
/// symlinks are followed only while they stay inside it, and an escape fails (`EXDEV` on
/// Linux, cap-std's escape error elsewhere), which [`Workspace::io_error`] reports as
/// [`PathError::Escapes`]. Linux reads it from an `O_PATH` handle, macOS from an `O_EVTONLY`
/// one (falling back to the next way when that open fails); elsewhere it is cap-std's confined
/// canonicalisation joined to the root's path (components as spelled in the path given, which
/// is why the secret rules match case-insensitively where the file system does).
pub(super) fn open_path_beneath(target: &Target<'_>, rel: &Path) -> io::Result<PathBuf> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    imp::open_path_beneath(target, rel)
}

/// The real path of an open handle (a file or a directory), in the form of the roots'
/// canonical paths. Race-free (it names what was opened, whatever happened to the name since)
/// on Linux, macOS and Windows; on other Unix a confined canonicalisation of the target's
/// name. `None` when it cannot be had.
pub(super) fn real_path(handle: &impl AsFilelike, target: &Target<'_>) -> Option<PathBuf> {
    imp::real_path(&handle.as_filelike_view::<std::fs::File>(), target)
}

/// The real path of an open handle, from the handle alone: Linux `readlink /proc/self/fd/N`,
/// macOS `fcntl(F_GETPATH)`, Windows `GetFinalPathNameByHandleW` (`\\?\C:\…`, the form of
/// `std::fs::canonicalize`). `None` where the system has no such call (other Unix) or it
/// fails.
pub(crate) fn handle_path(file: &std::fs::File) -> Option<PathBuf> {
    imp::handle_path(file)
}

/// A canonical path as tools show it: on Windows without the `\\?\` that real paths and
/// `std::fs::canonicalize` carry, when the path names the same without it (`C:\work\a.txt`);
/// elsewhere the path itself. Lookups and checks keep the canonical form.
pub(super) fn shown_path(path: &Path) -> Cow<'_, Path> {
    imp::shown_path(path)
}

/// Rename `from` in `from_dir` to `to` in `to_dir` unless `to` exists (`AlreadyExists`). Atomic
/// (the system refuses an existing destination) on Linux with glibc, macOS and Windows; a
/// check, then a rename elsewhere, where a racing writer can slip in between.
pub(super) fn rename_noreplace(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
) -> io::Result<()> {
    imp::rename_noreplace(from_dir, from, to_dir, to)
}

/// Whether the system's trash can take `path` (its metadata `existing`) without copying it:
/// on Linux and other Unix (the freedesktop trash) only when it is on the file system of the
/// user's home trash; on macOS and Windows the system's trash API handles every volume.
pub(super) fn trash_reachable(path: &Path, existing: Option<&Metadata>) -> io::Result<()> {
    imp::trash_reachable(path, existing)
}

/// Make a directory's entries durable: `fsync` of the directory on Unix; a no-op on Windows,
/// where a directory cannot be flushed through a read handle (NTFS journals its metadata).
pub(super) fn sync_dir(dir: &Dir) -> io::Result<()> {
    imp::sync_dir(dir)
}

/// Set the options of an open to read a file: on Unix non-blocking (opening a FIFO with no
/// writer returns at once instead of hanging; it is then refused as not a regular file) and
/// never the controlling terminal. Nothing on Windows (no FIFOs in the file system).
pub(super) fn read_options(options: &mut OpenOptions) {
    imp::read_options(options);
}

/// Open the entry `name` of `dir` to read, not through a symbolic link: Unix `O_NOFOLLOW`
/// (a link fails to open); Windows opens it and refuses it unless the handle's real path is
/// the directory's real path joined with `name` (a link, junction or 8.3 alias is refused).
pub(super) fn open_entry_no_follow(dir: &Dir, name: &OsStr) -> io::Result<std::fs::File> {
    imp::open_entry_no_follow(dir, name)
}

/// Set the options of an exclusive create of a new file: on Unix mode `0666` before the umask
/// and `O_NOFOLLOW`; nothing on Windows (a create-new never follows a link there).
pub(super) fn create_new_options(options: &mut OpenOptions) {
    imp::create_new_options(options);
}

/// Give `file` (a replacement about to be renamed over `existing`) the replaced file's
/// permissions: the Unix mode bits (with setuid/setgid/sticky). On Windows nothing is carried
/// over (a read-only file refuses the replacement with the system's access-denied error).
pub(super) fn keep_permissions(file: &std::fs::File, existing: &Metadata) -> io::Result<()> {
    imp::keep_permissions(file, existing)
}

/// Whether `error` is the system's own "the lookup would leave the directory" (`EXDEV` from
/// `openat2(RESOLVE_BENEATH)` on Linux). cap-std's walk elsewhere says it in its message,
/// which the caller checks.
pub(super) fn is_escape(error: &io::Error) -> bool {
    imp::is_escape(error)
}

/// Whether `error` is a symlink loop (`ELOOP` on Unix; `ERROR_TOO_MANY_LINKS` or
/// `ERROR_CANT_RESOLVE_FILENAME` on Windows).
pub(super) fn is_link_loop(error: &io::Error) -> bool {
    imp::is_link_loop(error)
}

/// The special kinds of a file type: FIFO, socket, block or character device on Unix; `None`
/// for the common kinds (link, directory, file), and always on Windows (no special files in
/// its file system).
pub(super) fn special_kind(t: std::fs::FileType) -> Option<FileKind> {
    imp::special_kind(t)
}

/// [`special_kind`] of cap-std's file type.
pub(super) fn special_kind_cap(t: cap_std::fs::FileType) -> Option<FileKind> {
    imp::special_kind_cap(t)
}
