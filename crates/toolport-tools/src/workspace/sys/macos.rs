//! macOS: the real path of a handle from `fcntl(F_GETPATH)` (what was opened, not a name looked
//! up again), and `renameatx_np(RENAME_EXCL)`, which refuses an existing destination
//! atomically. There is no `openat2`: every read takes the open-then-check-the-real-path way,
//! and [`open_path_beneath`] is cap-std's confined canonicalisation (`portable.rs`).

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use super::Target;
pub(super) use super::portable::open_path_beneath;
pub(super) use super::unix::{
    create_new_options, is_escape, is_link_loop, keep_permissions, open_entry_no_follow,
    read_options, special_kind, special_kind_cap, sync_dir,
};

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
