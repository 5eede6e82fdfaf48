//! The tree walk that `grep`, `glob` and `read_many_files` share: ripgrep's own walker (the
//! `ignore` crate), started at a path resolved through the [`Workspace`] and kept inside it.
//!
//! # Why it stays inside the roots
//! - The start is resolved with [`Workspace::resolve`]: `..` and symlinks are followed by the
//!   kernel beneath the root, the result is its *real* path, and a secret start is refused.
//! - The walk never follows a symlink (`follow_links(false)`), so it only descends real
//!   directories below a real path inside the root.
//! - Secret directories (`.ssh` …) are pruned and secret files left out by the workspace's own
//!   rules ([`Workspace::is_secret`]); a tool that opens a file does it with
//!   [`Workspace::open_file`] (`openat2(RESOLVE_BENEATH)`, secrets checked on the real path),
//!   so a directory swapped for a symlink during the walk can name a file outside the root
//!   but never return its content.
//! - Ignore rules are read inside the root only: the `.gitignore` files of the start's
//!   ancestors *up to the root* are added by hand, instead of the walker's own parent lookup,
//!   which reads them up to `/`. `.gitignore` is honoured outside git repositories too, as
//!   `list_directory` does; the user's global git excludes (outside the roots) are not read.
//!
//! A user's glob ([`GlobFilter`]) is matched in the visitor, not given to the walker as an
//! override: the walker's overrides win over `.gitignore` and hidden rules (as ripgrep's
//! `--glob` does), and these tools promise to honour both.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::tool::ToolError;
use crate::workspace::Workspace;

/// Where a walk starts: its real path in the canonical form, so no name below it is read
/// otherwise by the system (on Windows a plain path drops a name's ending dot); its entries
/// are shown with [`Start::show`].
pub(super) type Start = crate::workspace::RealPath;

/// Resolve `user` (a file or a directory that exists) to the start of a walk.
pub(super) fn start(workspace: &Workspace, user: &str) -> Result<Start, ToolError> {
    let target = workspace.target(user)?;
    // Exists? Asked through the root handle, so the error names the real reason.
    workspace
        .metadata(&target)
        .map_err(|e| workspace.io_error(&target, &e))?;
    Ok(workspace.resolve_real(user)?)
}

/// A walker over `start`: ignore files honoured, hidden entries only with `include_hidden`,
/// symlinks not followed, secrets pruned.
pub(super) fn builder(
    workspace: &Arc<Workspace>,
    start: &Start,
    include_hidden: bool,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(&start.path);
    builder
        .follow_links(false)
        .hidden(!include_hidden)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false);
    for ancestor in ancestors_inside(&start.root, &start.path) {
        let file = ancestor.join(".gitignore");
        if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
            // Explicit ignore files are matched relative to the walker's current directory.
            builder.current_dir(&ancestor);
            // A bad line is skipped, as git does.
            let _ = builder.add_ignore(&file);
        }
    }
    let workspace = workspace.clone();
    let root = start.root.clone();
    builder.filter_entry(move |entry| match entry.path().strip_prefix(&root) {
        Ok(rel) => !workspace.is_secret(rel),
        Err(_) => false,
    });
    builder
}

/// The directories from `root` down to the parent of `path` (none when `path` is the root).
fn ancestors_inside(root: &Path, path: &Path) -> Vec<PathBuf> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut dir = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        out.push(dir.clone());
        dir.push(part);
    }
    if !parts.is_empty() {
        out.push(dir);
    }
    out
}

/// A user's glob in gitignore syntax, relative to the start of the walk: without `/` it
/// matches a name at any depth (`*.rs`), with `/` a path from the start (`src/**/*.ts`); a
/// pattern that names a directory matches the files under it.
#[derive(Debug, Clone)]
pub(super) struct GlobFilter(Gitignore);

impl GlobFilter {
    /// The filter for `glob` under `base` (the walk's start directory).
    pub(super) fn new(base: &Path, glob: &str) -> Result<Self, ToolError> {
        let bad = |e: ignore::Error| {
            ToolError::InvalidArguments(format!(
                "invalid glob {glob:?}: {e}. Use gitignore-style globs: \"*.rs\" (a file name at any depth), \"src/**/*.ts\" (a path relative to the searched directory), \"*.{{js,ts}}\""
            ))
        };
        if glob.trim().is_empty() || glob.starts_with('!') {
            return Err(ToolError::InvalidArguments(format!(
                "invalid glob {glob:?}: give a pattern of the files to include, such as \"*.rs\" or \"src/**/*.toml\" (negated patterns are not supported)"
            )));
        }
        let mut builder = GitignoreBuilder::new(base);
        builder.add_line(None, glob).map_err(bad)?;
        builder.build().map(Self).map_err(bad)
    }

    /// Whether a file found by the walk (a path under the base) matches.
    pub(super) fn matches(&self, path: &Path) -> bool {
        self.0.matched_path_or_any_parents(path, false).is_ignore()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_run_from_the_root_to_the_parent() {
        let root = Path::new("/w");
        assert_eq!(
            ancestors_inside(root, Path::new("/w")),
            Vec::<PathBuf>::new()
        );
        assert_eq!(
            ancestors_inside(root, Path::new("/w/a")),
            vec![PathBuf::from("/w")]
        );
        assert_eq!(
            ancestors_inside(root, Path::new("/w/a/b")),
            vec![PathBuf::from("/w"), PathBuf::from("/w/a")]
        );
    }

    #[test]
    fn globs_match_names_anywhere_or_paths_from_the_base() {
        let base = Path::new("/w");
        let matches = |glob: &str, path: &str| {
            GlobFilter::new(base, glob)
                .map(|g| g.matches(Path::new(path)))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert!(matches("*.rs", "/w/a.rs"));
        assert!(matches("*.rs", "/w/src/deep/a.rs"));
        assert!(!matches("*.rs", "/w/a.rsx"));
        assert!(matches("src/**/*.rs", "/w/src/deep/a.rs"));
        assert!(!matches("src/**/*.rs", "/w/lib/src/a.rs"));
        assert!(matches("*.{js,ts}", "/w/x/y.ts"));
        assert!(
            matches("tests", "/w/tests/it/main.rs"),
            "a directory's files"
        );
        assert!(GlobFilter::new(base, "!*.md").is_err());
        assert!(GlobFilter::new(base, "{a,b").is_err());
    }
}
