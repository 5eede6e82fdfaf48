//! The token file's folder on Unix: created 0700 (the file itself is 0600: tempfile creates
//! it so).

use std::os::unix::fs::DirBuilderExt as _;
use std::path::Path;

/// What the file store promises here.
pub(super) const PERMISSIONS: &str = "readable only by you: 0600 in a 0700 folder";

/// Create `dir` (and its parents) readable only by its owner.
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
