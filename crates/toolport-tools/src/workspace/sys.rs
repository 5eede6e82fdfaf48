//! The raw system calls confinement rests on, each behind one small function with its fallback
//! for systems without it: `openat2` (`RESOLVE_BENEATH`, `RESOLVE_NO_SYMLINKS`), the real path
//! of a handle (`/proc/self/fd`), `renameat2` (`RENAME_NOREPLACE`) and a directory's fsync.
//! Everything Linux-only in the workspace is here, so a port to another system changes this
//! file alone.

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use super::Target;
#[cfg(doc)]
use super::{PathError, Workspace};

/// Flags for opening a file to read (read-only is 0): non-blocking, so opening a FIFO with no
/// writer returns at once instead of hanging (it is then refused as not a regular file); no
/// controlling terminal from a tty.
#[cfg(unix)]
pub(super) const READ_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY;
#[cfg(not(unix))]
pub(super) const READ_FLAGS: i32 = 0;

/// Open `target` beneath its root when no component of the path is a symlink (openat2 with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), with `flags` and close-on-exec. `None` when that
/// open fails for any reason (a symlink on the way, a missing file, a kernel before 5.6, or
/// not Linux): the caller then opens the general way, which follows symlinks inside the
/// root, checks the real path, and reports the error.
pub(super) fn open_without_symlinks(
    target: &Target<'_>,
    flags: libc::c_int,
) -> Option<std::os::fd::OwnedFd> {
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
pub(super) fn open_path_beneath(target: &Target<'_>, rel: &Path) -> io::Result<PathBuf> {
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
pub(super) fn real_path(handle: &impl AsFd, target: &Target<'_>) -> Option<PathBuf> {
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

/// Rename `from` in `from_dir` to `to` in `to_dir` unless `to` exists (`AlreadyExists`):
/// `renameat2(RENAME_NOREPLACE)`, so the kernel refuses an existing destination atomically.
pub(super) fn rename_noreplace(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
) -> io::Result<()> {
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

/// Make a directory's entries durable (`fsync` of the directory); a no-op where directories
/// cannot be synced.
pub(super) fn sync_dir(dir: &Dir) -> io::Result<()> {
    #[cfg(unix)]
    {
        nix::unistd::fsync(dir).map_err(io::Error::from)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}
