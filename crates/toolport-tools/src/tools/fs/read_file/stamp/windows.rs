//! Windows: stable Rust exposes neither a file's identity (volume serial and file index) nor a
//! change time (a write can set the modification time back). The key carries the size and the
//! last write time, and [`NO_CHANGE_TIME`] as its change time, which never counts as settled:
//! no digest is kept on Windows, every read hashes the file.

use std::os::windows::fs::MetadataExt;

use super::FileKey;

/// A change time no file has (before the epoch): a key with it is never settled.
const NO_CHANGE_TIME: (i64, i64) = (-1, 0);

pub(super) fn key(meta: &std::fs::Metadata) -> FileKey {
    FileKey {
        dev: 0,
        ino: 0,
        size: meta.file_size(),
        mtime: (i64::try_from(meta.last_write_time()).unwrap_or(i64::MAX), 0),
        ctime: NO_CHANGE_TIME,
    }
}
