//! Windows: the real path of a handle from `GetFinalPathNameByHandleW` (normalised, with the
//! DOS volume name: `\\?\C:\…` or `\\?\UNC\server\share\…`, the form `std::fs::canonicalize`
//! gives the roots), and a rename that refuses an existing destination through `MoveFileExW`
//! without `MOVEFILE_REPLACE_EXISTING` (cap-std's rename replaces). There is no `openat2`:
//! every read takes the open-then-check-the-real-path way, and [`open_path_beneath`] is
//! cap-std's confined canonicalisation (`portable.rs`). A directory cannot be fsynced through
//! a read handle: [`sync_dir`] is a no-op (NTFS journals directory changes itself).

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata, OpenOptions};
use cap_std::io_lifetimes::AsFilelike;
use windows_sys::Win32::Foundation::{ERROR_CANT_RESOLVE_FILENAME, ERROR_TOO_MANY_LINKS};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_NAME_NORMALIZED, GetFinalPathNameByHandleW, MOVEFILE_WRITE_THROUGH, MoveFileExW,
    VOLUME_NAME_DOS,
};

pub(super) use super::portable::open_path_beneath;
use super::{FileKind, Target};
use crate::workspace::case::Case;

/// UTF-16 units first offered to `GetFinalPathNameByHandleW` (`MAX_PATH` plus room); a longer
/// path is asked for again with the size the call reports.
const PATH_BUFFER_UNITS: usize = 300;

/// No `openat2` on Windows: always `None`, so the caller checks the real path of what it opened.
pub(super) fn open_without_symlinks(_target: &Target<'_>) -> Option<std::fs::File> {
    None
}

/// A path as shown: without the `\\?\` of a real path when it names the same without it
/// (`winpath::plain`: `C:\work\a.txt`), else as it is (a long path, a name Win32 would rewrite).
pub(super) fn shown_path(path: &Path) -> Cow<'_, Path> {
    match path.to_str().and_then(crate::workspace::winpath::plain) {
        Some(plain) => Cow::Owned(PathBuf::from(plain)),
        None => Cow::Borrowed(path),
    }
}

pub(super) fn real_path(handle: &std::fs::File, _target: &Target<'_>) -> Option<PathBuf> {
    super::handle_path(handle)
}

#[allow(unsafe_code)]
pub(super) fn handle_path(file: &std::fs::File) -> Option<PathBuf> {
    let handle = file.as_raw_handle();
    let mut buffer = vec![0u16; PATH_BUFFER_UNITS];
    loop {
        let capacity = u32::try_from(buffer.len()).ok()?;
        // SAFETY: `handle` is an open handle borrowed from `file` for the call; `buffer` is
        // writable for `capacity` UTF-16 units.
        let written = unsafe {
            GetFinalPathNameByHandleW(
                handle,
                buffer.as_mut_ptr(),
                capacity,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        } as usize;
        if written == 0 {
            return None;
        }
        if written < buffer.len() {
            buffer.truncate(written);
            return Some(PathBuf::from(OsString::from_wide(&buffer)));
        }
        // Too small: `written` is the size needed, with the terminating NUL.
        buffer.resize(written, 0);
    }
}

/// `MoveFileExW` between the two directories' real paths, without `MOVEFILE_REPLACE_EXISTING`:
/// an existing destination fails (`ERROR_ALREADY_EXISTS`, which is `AlreadyExists`). The
/// names are single components; a directory renamed between reading its path and the move
/// makes the move fail or land where it now is (cap-std's own rename has the same window).
#[allow(unsafe_code)]
pub(super) fn rename_noreplace(
    from_dir: &Dir,
    from: &Path,
    to_dir: &Dir,
    to: &Path,
) -> io::Result<()> {
    let full = |dir: &Dir, name: &Path| -> io::Result<Vec<u16>> {
        let base = handle_path(&dir.as_filelike_view::<std::fs::File>())
            .ok_or_else(|| io::Error::other("cannot read the directory's real path"))?;
        let mut wide: Vec<u16> = base.join(name).as_os_str().encode_wide().collect();
        wide.push(0);
        Ok(wide)
    };
    let (from, to) = (full(from_dir, from)?, full(to_dir, to)?);
    // SAFETY: both are NUL-terminated UTF-16 strings that outlive the call.
    let ok = unsafe { MoveFileExW(from.as_ptr(), to.as_ptr(), MOVEFILE_WRITE_THROUGH) };
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A no-op: see the module doc.
pub(super) fn sync_dir(_dir: &Dir) -> io::Result<()> {
    Ok(())
}

/// Nothing to set: no FIFOs or terminals in the file system.
pub(super) fn read_options(_options: &mut OpenOptions) {}

/// Opens `name` (cap-std follows a link only beneath the root), then refuses the handle unless
/// its real path is the directory's real path joined with `name`, compared without case as
/// NTFS does: a symbolic link, junction or 8.3 short name at the entry is refused.
pub(super) fn open_entry_no_follow(dir: &Dir, name: &OsStr) -> io::Result<std::fs::File> {
    let file = dir.open(name)?.into_std();
    let expected = handle_path(&dir.as_filelike_view::<std::fs::File>()).map(|d| d.join(name));
    match (handle_path(&file), expected) {
        (Some(real), Some(expected)) if Case::Insensitive.same_path(&real, &expected) => Ok(file),
        _ => Err(io::Error::other(
            "it is a link (or a short name) to another file, which is not followed here",
        )),
    }
}

/// Nothing to set: `CREATE_NEW` never follows a link.
pub(super) fn create_new_options(_options: &mut OpenOptions) {}

/// Nothing is carried over: see [`super::keep_permissions`].
pub(super) fn keep_permissions(_file: &std::fs::File, _existing: &Metadata) -> io::Result<()> {
    Ok(())
}

/// Windows has no such error: cap-std's walk reports escapes in its message.
pub(super) fn is_escape(_error: &io::Error) -> bool {
    false
}

pub(super) fn is_link_loop(error: &io::Error) -> bool {
    let code = error.raw_os_error();
    code == Some(ERROR_TOO_MANY_LINKS as i32) || code == Some(ERROR_CANT_RESOLVE_FILENAME as i32)
}

/// Names compare without case (the default file system; a case-sensitive volume is treated as insensitive, which only refuses more).
pub(crate) const FS_CASE: crate::workspace::case::Case = crate::workspace::case::Case::Insensitive;

/// No FIFOs, sockets or devices in a Windows file system.
pub(super) fn special_kind(_t: std::fs::FileType) -> Option<FileKind> {
    None
}

/// No FIFOs, sockets or devices in a Windows file system.
pub(super) fn special_kind_cap(_t: cap_std::fs::FileType) -> Option<FileKind> {
    None
}

/// The system's trash API (the Finder's `trashItemAtURL`, the shell's `IFileOperation`)
/// handles every volume itself: nothing to check here.
pub(super) fn trash_reachable(
    _path: &std::path::Path,
    _existing: Option<&cap_std::fs::Metadata>,
) -> io::Result<()> {
    Ok(())
}
