//! The audit file on Windows: no mode bits. The file inherits its folder's ACL (see the
//! parent module for what that means); toolport neither sets nor narrows an ACL.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use super::Narrowing;

/// Open `path` for appending, creating it with the ACL its folder passes on.
pub(in crate::observe::audit) fn open_append(path: &Path) -> io::Result<(File, Narrowing)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    Ok((file, Narrowing::Untouched))
}
