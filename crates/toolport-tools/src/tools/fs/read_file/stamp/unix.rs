//! Unix: a file's identity and times for [`FileKey`](super::FileKey) from `stat` (device,
//! inode, modification and change times to the nanosecond).

use std::os::unix::fs::MetadataExt;

use super::FileKey;

pub(super) fn key(meta: &std::fs::Metadata) -> FileKey {
    FileKey {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    }
}
