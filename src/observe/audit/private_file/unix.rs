//! The audit file on Unix: created 0600; an existing file others may read narrowed to 0600.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::Narrowing;

/// The file's mode: read and write for its owner only.
const OWNER_ONLY: u32 = 0o600;
/// The mode bits of the group and of others.
const GROUP_AND_OTHERS: u32 = 0o077;

/// Open `path` for appending, creating it 0600, and narrow an existing file others may read.
pub(in crate::observe::audit) fn open_append(path: &Path) -> io::Result<(File, Narrowing)> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(OWNER_ONLY)
        .open(path)?;
    if file.metadata()?.permissions().mode() & GROUP_AND_OTHERS == 0 {
        return Ok((file, Narrowing::Untouched));
    }
    let narrowing = match file.set_permissions(Permissions::from_mode(OWNER_ONLY)) {
        Ok(()) => Narrowing::Narrowed,
        Err(error) => Narrowing::Failed(error),
    };
    Ok((file, narrowing))
}
