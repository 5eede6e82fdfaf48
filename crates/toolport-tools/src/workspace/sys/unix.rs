//! What every Unix shares (Linux, macOS, other Unix): open flags, permission bits, the
//! directory fsync and the error numbers. The per-OS files re-export these.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io;
#[cfg(not(target_os = "macos"))]
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata, OpenOptions, OpenOptionsExt};

use crate::workspace::FileKind;

/// Flags for opening a file to read (read-only is 0): non-blocking, so opening a FIFO with no
/// writer returns at once instead of hanging (it is then refused as not a regular file); no
/// controlling terminal from a tty.
pub(super) const READ_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY;
/// Permission bits kept from the replaced file (rwx for all, setuid/setgid/sticky).
const MODE_BITS: u32 = 0o7777;
/// Mode of a newly created file before the umask, as `open(2)` callers conventionally use.
const NEW_FILE_MODE: u32 = 0o666;

pub(super) fn read_options(options: &mut OpenOptions) {
    options.custom_flags(READ_FLAGS);
}

pub(super) fn open_entry_no_follow(dir: &Dir, name: &OsStr) -> io::Result<std::fs::File> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(READ_FLAGS | libc::O_NOFOLLOW);
    Ok(dir.open_with(name, &options)?.into_std())
}

pub(super) fn create_new_options(options: &mut OpenOptions) {
    options.mode(NEW_FILE_MODE).custom_flags(libc::O_NOFOLLOW);
}

pub(super) fn keep_permissions(file: &std::fs::File, existing: &Metadata) -> io::Result<()> {
    use cap_std::fs::PermissionsExt as _;
    use std::os::unix::fs::PermissionsExt;
    let mode = existing.permissions().mode() & MODE_BITS;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

pub(super) fn sync_dir(dir: &Dir) -> io::Result<()> {
    nix::unistd::fsync(dir).map_err(io::Error::from)
}

pub(super) fn is_escape(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::EXDEV)
}

pub(super) fn is_link_loop(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ELOOP)
}

/// FIFO, socket, block or character device, from the answers of a Unix file type.
fn special(fifo: bool, socket: bool, block: bool, char_device: bool) -> Option<FileKind> {
    if fifo {
        Some(FileKind::Fifo)
    } else if socket {
        Some(FileKind::Socket)
    } else if block {
        Some(FileKind::BlockDevice)
    } else if char_device {
        Some(FileKind::CharDevice)
    } else {
        None
    }
}

pub(super) fn special_kind(t: std::fs::FileType) -> Option<FileKind> {
    use std::os::unix::fs::FileTypeExt;
    special(
        t.is_fifo(),
        t.is_socket(),
        t.is_block_device(),
        t.is_char_device(),
    )
}

pub(super) fn special_kind_cap(t: cap_std::fs::FileType) -> Option<FileKind> {
    use cap_std::fs::FileTypeExt;
    special(
        t.is_fifo(),
        t.is_socket(),
        t.is_block_device(),
        t.is_char_device(),
    )
}

/// The freedesktop trash (Linux and other Unix, the `trash` crate's backend) can take `path`
/// by a rename into the user's home trash only when both are on one file system. Elsewhere the
/// crate would make a `.Trash-<uid>` folder at the top of that file system, or copy the whole
/// tree into the home trash by path (slow, and the window for a swapped folder grows to the
/// whole copy): refused instead, with the setting that deletes for good.
#[cfg(not(target_os = "macos"))]
pub(super) fn freedesktop_trash_reachable(
    path: &Path,
    existing: Option<&Metadata>,
) -> io::Result<()> {
    use cap_std::fs::MetadataExt as _;
    use std::os::unix::fs::MetadataExt as _;
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .ok_or_else(|| {
            io::Error::other("there is no home folder (HOME is not set), so there is no trash")
        })?;
    let trash = data.join("Trash");
    let on = trash
        .ancestors()
        .find_map(|a| std::fs::metadata(a).ok())
        .ok_or_else(|| io::Error::other("the trash folder cannot be found"))?;
    let device = match existing {
        Some(m) => m.dev(),
        None => return Err(io::ErrorKind::NotFound.into()),
    };
    if on.dev() == device {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{} is on another file system than the trash ({}), so moving it there would mean copying it",
            path.display(),
            trash.display()
        )))
    }
}

/// A path as shown: as it is (a Unix path has one spelling).
pub(super) fn shown_path(path: &std::path::Path) -> Cow<'_, std::path::Path> {
    Cow::Borrowed(path)
}
