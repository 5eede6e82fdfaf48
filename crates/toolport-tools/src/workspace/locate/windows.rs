//! Windows path syntax: where a tool's path lies and its lexical normalisation, by the pure
//! rules of `winpath.rs` (drive letters in any case, `/` and `\`, UNC and `\\?\` forms; device
//! paths, drive-relative paths, streams, reserved names refused; roots compared without case).
//! `..` is resolved lexically, as Win32 does, and may not climb above the root: the open gets
//! the normalised path, beneath the root handle (cap-std follows symlinks and junctions only
//! beneath it).

use std::path::PathBuf;

use super::winpath::{self, PlaceError};
use super::{PathError, Root, Workspace};

impl Workspace {
    /// The root `user` lies under, and the path beneath it (normalised; the same path serves
    /// the open, the display and the secret rules).
    pub(in crate::workspace) fn locate(
        &self,
        user: &str,
    ) -> Result<(&Root, PathBuf, PathBuf), PathError> {
        // Parsed once, when each root was opened.
        let spellings: Vec<&[winpath::WinPath]> =
            self.roots.iter().map(|r| r.spellings.as_slice()).collect();
        match winpath::place(user, &spellings) {
            Ok(placed) => {
                let normal: PathBuf = placed.parts.iter().collect();
                Ok((&self.roots[placed.root], normal.clone(), normal))
            }
            Err(PlaceError::Outside) => Err(self.outside(user)),
            Err(PlaceError::Syntax(error)) => Err(PathError::WindowsSyntax {
                path: user.to_owned(),
                reason: error.to_string(),
            }),
        }
    }
}
