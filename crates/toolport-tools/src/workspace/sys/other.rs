//! Other Unix systems (the BSDs …): no call gives the real path of a handle, so the real path
//! is cap-std's confined canonicalisation of the name (racy: a swap after the open is not
//! seen), and a rename that must not replace checks first (racy). Confinement of the opens
//! themselves is cap-std's component-by-component walk, as on macOS.

use std::path::PathBuf;

use super::Target;
pub(super) use super::portable::{check_then_rename as rename_noreplace, open_path_beneath};
pub(super) use super::unix::{
    create_new_options, freedesktop_trash_reachable as trash_reachable, is_escape, is_link_loop,
    keep_permissions, open_entry_no_follow, read_options, shown_path, special_kind,
    special_kind_cap, sync_dir,
};

pub(super) fn open_without_symlinks(_target: &Target<'_>) -> Option<std::fs::File> {
    None
}

/// The target's name canonicalised beneath its root (not the handle's own path).
pub(super) fn real_path(_handle: &std::fs::File, target: &Target<'_>) -> Option<PathBuf> {
    target
        .root
        .dir
        .canonicalize(&target.rel)
        .ok()
        .map(|rel| target.root.path.join(rel))
}

/// Not available on this system.
pub(super) fn handle_path(_file: &std::fs::File) -> Option<PathBuf> {
    None
}

/// Names compare byte for byte (a case-folding ext4 directory or a FAT mount is not recognised).
pub(crate) const FS_CASE: crate::workspace::case::Case = crate::workspace::case::Case::Sensitive;
