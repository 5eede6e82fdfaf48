//! macOS: the real path of a handle from `fcntl(F_GETPATH)` (what was opened, not a name looked
//! up again), and `renameatx_np(RENAME_EXCL)`, which refuses an existing destination
//! atomically. There is no `openat2`: every read takes the open-then-check-the-real-path way.
//! [`open_path_beneath`] opens the path beneath the root with `O_EVTONLY` (no read permission
//! needed, like Linux's `O_PATH`) and reads the handle's real path; when that open fails it
//! falls back to cap-std's confined canonicalisation of the name (`portable.rs`), which gives
//! the error (both are confined: the fallback changes only how exact the answer is).

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use super::Target;
pub(super) use super::unix::{
    create_new_options, is_escape, is_link_loop, keep_permissions, open_entry_no_follow,
    read_options, shown_path, special_kind, special_kind_cap, sync_dir,
};

/// Open `rel` beneath the root for events only (`O_EVTONLY`, non-blocking: no read permission
/// needed, a FIFO does not hang), following symlinks only beneath it, and read the handle's
/// real path; if that fails, cap-std's confined canonicalisation.
pub(super) fn open_path_beneath(target: &Target<'_>, rel: &Path) -> io::Result<PathBuf> {
    use cap_std::fs::{OpenOptions, OpenOptionsExt};
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_EVTONLY | libc::O_NONBLOCK | libc::O_NOCTTY);
    let by_handle = target
        .root
        .dir
        .open_with(rel, &options)
        .ok()
        .and_then(|file| super::handle_path(&file.into_std()));
    match by_handle {
        Some(real) => Ok(real),
        None => super::portable::open_path_beneath(target, rel),
    }
}

/// No `openat2` on macOS: always `None`, so the caller checks the real path of what it opened.
pub(super) fn open_without_symlinks(_target: &Target<'_>) -> Option<std::fs::File> {
    None
}

pub(super) fn real_path(handle: &std::fs::File, _target: &Target<'_>) -> Option<PathBuf> {
    super::handle_path(handle)
}

pub(super) fn handle_path(file: &std::fs::File) -> Option<PathBuf> {
    use nix::fcntl::{FcntlArg, fcntl};
    let mut path = PathBuf::new();
    fcntl(file, FcntlArg::F_GETPATH(&mut path)).ok()?;
    Some(path)
}

/// `renameatx_np(RENAME_EXCL)` (macOS 10.12+; nix does not wrap it, libc declares it).
#[allow(unsafe_code)]
pub(super) fn rename_noreplace(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
) -> io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the name"))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both descriptors are open directories borrowed for the call, and both names
    // are NUL-terminated strings that outlive it.
    let rc = unsafe {
        libc::renameatx_np(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
            libc::RENAME_EXCL,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Names compare without case (the default file system; a case-sensitive volume is treated as insensitive, which only refuses more).
pub(crate) const FS_CASE: crate::workspace::case::Case = crate::workspace::case::Case::Insensitive;

/// The system's trash API (the Finder's `trashItemAtURL`, the shell's `IFileOperation`)
/// handles every volume itself: nothing to check here.
pub(super) fn trash_reachable(
    _path: &std::path::Path,
    _existing: Option<&cap_std::fs::Metadata>,
) -> io::Result<()> {
    Ok(())
}
