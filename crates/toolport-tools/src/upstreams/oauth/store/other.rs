//! The token file's folder elsewhere (Windows): no permission bits; the file is as private as
//! the user's profile folder it lives in, and nothing more is claimed.

use std::path::Path;

/// What the file store promises here.
pub(super) const PERMISSIONS: &str =
    "in your profile folder; no file permissions of its own are set on this system";

/// Create `dir` (and its parents).
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}
