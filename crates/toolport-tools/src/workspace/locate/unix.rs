//! Unix path syntax: where a tool's path lies (`/` separates; an absolute path is placed under
//! the first root it lies beneath, comparing whole components with the file system's case rule), and its lexical normalisation. `..` may not climb above the root; the path
//! handed to the open keeps its `..` (the kernel resolves them after symlinks, beneath the
//! root), the normalised one is for display and the secret rules.

use std::path::{Component, Path, PathBuf};

use super::{PathError, Root, Workspace};

impl Workspace {
    /// The root `user` lies under, the path beneath it as given (for the open), and lexically
    /// normalised (for display and the secret rules).
    pub(in crate::workspace) fn locate(
        &self,
        user: &str,
    ) -> Result<(&Root, PathBuf, PathBuf), PathError> {
        let path = Path::new(user);
        let (root, rel) = if path.is_absolute() {
            self.roots
                .iter()
                .find_map(|r| {
                    let rel = self
                        .case
                        .strip_root(path, &r.path)
                        .or_else(|| r.alias.as_ref().and_then(|a| self.case.strip_root(path, a)));
                    rel.map(|rel| (r, rel))
                })
                .ok_or_else(|| self.outside(user))?
        } else {
            let root = self.roots.first().ok_or_else(|| self.outside(user))?;
            (root, path)
        };
        let mut normal = PathBuf::new();
        for part in rel.components() {
            match part {
                Component::CurDir => {}
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(self.outside(user));
                    }
                }
                Component::Normal(name) => normal.push(name),
                Component::RootDir | Component::Prefix(_) => return Err(self.outside(user)),
            }
        }
        Ok((root, rel.to_path_buf(), normal))
    }
}
