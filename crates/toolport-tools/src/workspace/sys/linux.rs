//! Linux: `openat2` (`RESOLVE_BENEATH`, `RESOLVE_NO_SYMLINKS`, kernel 5.6+), the real path of a
//! handle from `/proc/self/fd`, and `renameat2(RENAME_NOREPLACE)`.

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};

use super::Target;
use super::unix::READ_FLAGS;
pub(super) use super::unix::{
    create_new_options, freedesktop_trash_reachable as trash_reachable, is_escape, is_link_loop,
    keep_permissions, open_entry_no_follow, read_options, shown_path, special_kind,
    special_kind_cap, sync_dir,
};

pub(super) fn open_without_symlinks(target: &Target<'_>) -> Option<std::fs::File> {
    let how = OpenHow::new()
        .flags(OFlag::from_bits_retain(READ_FLAGS) | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
    openat2(&target.root.dir, target.rel.as_path(), how)
        .ok()
        .map(std::fs::File::from)
}

/// `openat2(O_PATH, RESOLVE_BENEATH)`, then the handle's real path.
pub(super) fn open_path_beneath(target: &Target<'_>, rel: &Path) -> io::Result<PathBuf> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH);
    let fd = openat2(&target.root.dir, rel, how).map_err(io::Error::from)?;
    std::fs::read_link(proc_fd(fd.as_raw_fd()))
}

pub(super) fn real_path(handle: &std::fs::File, _target: &Target<'_>) -> Option<PathBuf> {
    super::handle_path(handle)
}

pub(super) fn handle_path(file: &std::fs::File) -> Option<PathBuf> {
    std::fs::read_link(proc_fd(file.as_raw_fd())).ok()
}

/// The `/proc` link naming what descriptor `fd` of this process has open.
fn proc_fd(fd: std::os::fd::RawFd) -> String {
    format!("/proc/self/fd/{fd}")
}

/// `renameat2(RENAME_NOREPLACE)`: the kernel refuses an existing destination atomically. A raw
/// system call through rustix, so the static (musl) release binary has it too.
pub(super) fn rename_noreplace(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
) -> io::Result<()> {
    use rustix::fs::{RenameFlags, renameat_with};
    renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE).map_err(io::Error::from)
}

/// Names compare byte for byte (a case-folding ext4 directory or a FAT mount is not recognised).
pub(crate) const FS_CASE: crate::workspace::case::Case = crate::workspace::case::Case::Sensitive;
