//! Fallbacks built on cap-std alone, for systems without the Linux calls: the confined
//! canonicalisation of a name (cap-std walks it component by component beneath the root, so
//! it cannot leave it, but the answer is about the name: a swap after it is not seen) and a
//! rename that checks first (a writer can create the destination in between).

use std::io;
use std::path::Path;

/// The root's path joined with cap-std's confined canonicalisation of `rel`.
#[cfg(not(target_os = "linux"))]
pub(super) fn open_path_beneath(
    target: &super::Target<'_>,
    rel: &Path,
) -> io::Result<std::path::PathBuf> {
    target
        .root
        .dir
        .canonicalize(rel)
        .map(|real| target.root.path.join(real))
}

/// Check that `to` does not exist, then rename (not atomic: a racing writer can slip in).
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub(super) fn check_then_rename(
    from_dir: &cap_std::fs::Dir,
    from: &Path,
    to_dir: &cap_std::fs::Dir,
    to: &Path,
) -> io::Result<()> {
    if to_dir.symlink_metadata(to).is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    from_dir.rename(from, to_dir, to)
}
