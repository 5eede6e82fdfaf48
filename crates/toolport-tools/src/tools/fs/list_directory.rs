//! `list_directory`: the entries of a directory inside the roots, optionally recursive.
//!
//! The walk goes through directory *handles* (cap-std), never by re-resolving names, so it
//! cannot be steered outside a root. Symlinks are reported, not followed. `.gitignore` files
//! (from the root down to each listed directory) are read through the same handles and
//! matched with the `ignore` crate's gitignore matcher.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::settings::{FsSettings, MAX_LIST_MAX_DEPTH};
use super::{ANNOTATIONS, CATEGORY, blocking, media};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::{FileKind, Workspace};

/// A `.gitignore` larger than this is not a real one; skip it rather than read it whole.
const MAX_GITIGNORE_BYTES: u64 = 1024 * 1024;

/// The tool's description, stating the operator's real limits.
fn description(settings: &FsSettings) -> String {
    format!(
        "List the entries of a directory inside the workspace roots, with each entry's type (file, directory, symlink, fifo, socket, …) and size in bytes. Recurses `depth` levels (default 1 = only this directory; the server caps depth at {}). Hidden entries (names starting with '.') are left out unless include_hidden is true, and entries matched by .gitignore files are left out unless respect_gitignore is false. At most {} entries are returned; `truncated` says when there were more. Symlinks are listed, not followed. An image file (PNG, JPEG, GIF, WebP) has its type in `media`: read_file returns it as an image.",
        settings.list_max_depth, settings.list_max_entries
    )
}

/// Arguments of `list_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The directory: relative to the first workspace root, or absolute inside a root.
    /// Default "." (the first root).
    #[serde(default = "default_path")]
    path: String,
    /// How many levels to list: 1 lists only this directory, 2 also its subdirectories, and so on.
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = 64))]
    depth: u64,
    /// Include entries whose names start with '.'.
    #[serde(default)]
    include_hidden: bool,
    /// Leave out entries matched by .gitignore files.
    #[serde(default = "default_true")]
    respect_gitignore: bool,
}

fn default_path() -> String {
    ".".into()
}
fn default_depth() -> u64 {
    1
}
fn default_true() -> bool {
    true
}

/// One entry.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Entry {
    /// Path relative to the listed directory, with '/' separators.
    path: String,
    /// What the entry is (symlinks are not followed).
    #[serde(rename = "type")]
    kind: FileKind,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    /// Where a symlink points (its text, not resolved).
    #[serde(skip_serializing_if = "Option::is_none")]
    symlink_target: Option<String>,
    /// For an image file (PNG, JPEG, GIF, WebP: named so, and its first bytes agree), its
    /// type, e.g. "image/png": read_file returns it as an image.
    #[serde(skip_serializing_if = "Option::is_none")]
    media: Option<&'static str>,
}

/// The structured result of `list_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListResult {
    /// Absolute path of the listed directory.
    path: String,
    /// The depth actually used (after the server's cap).
    depth: u64,
    /// The entries, depth-first, sorted by name within each directory.
    entries: Vec<Entry>,
    /// True when the entry cap cut the listing short.
    truncated: bool,
    /// The depth the call asked for, for the text rendering's note when it was capped.
    #[serde(skip)]
    requested_depth: u64,
}

/// The `list_directory` tool.
#[derive(Debug, Clone)]
pub(crate) struct ListDirectory {
    settings: FsSettings,
}

impl ListDirectory {
    /// The tool with the operator's limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for ListDirectory {
    type Params = Params;
    type Output = ListResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_directory",
            title: "List directory",
            description: description(&self.settings),
            purpose: "Find out what files a project or folder contains before reading them. Start shallow (depth 1 or 2) and list deeper folders one at a time rather than asking for a huge recursive listing.",
            example: json!({"path": "src", "depth": 2}),
            category: CATEGORY,
            tags: &["filesystem", "read", "directory", "list"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &ListResult) -> String {
        let mut text = render(output);
        text.push_str(&capped(output));
        text
    }

    const PAYLOAD: &'static [&'static str] = &["entries"];

    fn summary(&self, output: &ListResult) -> String {
        let mut text = summary(output);
        text.push_str(&capped(output));
        text
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ListResult, ToolError> {
        let cap = self.settings.list_max_depth.min(MAX_LIST_MAX_DEPTH) as u64;
        let options = Walk {
            depth: p.depth.min(cap),
            include_hidden: p.include_hidden,
            respect_gitignore: p.respect_gitignore,
            max_entries: self.settings.list_max_entries,
        };
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let mut result = blocking(move || list(&workspace, &p.path, options, &cancel)).await?;
        result.requested_depth = p.depth;
        Ok(result)
    }
}

#[derive(Debug, Clone, Copy)]
struct Walk {
    depth: u64,
    include_hidden: bool,
    respect_gitignore: bool,
    max_entries: usize,
}

fn list(
    workspace: &Workspace,
    user: &str,
    walk: Walk,
    cancel: &CancellationToken,
) -> Result<ListResult, ToolError> {
    let (dir, target) = workspace.open_dir(user)?;
    let display = target.display().to_path_buf();
    let mut ignores = Vec::new();
    if walk.respect_gitignore {
        // .gitignore files of the ancestors between the root and the listed directory.
        let root = target.shown_root().to_path_buf();
        let mut ancestor = root.clone();
        let rel = display
            .strip_prefix(&root)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let mut parts = rel.components();
        loop {
            if ancestor != display
                && let Ok((handle, _)) = workspace.open_dir(&ancestor.display().to_string())
                && let Some(gi) = load_gitignore(&handle, &ancestor)
            {
                ignores.push(gi);
            }
            match parts.next() {
                Some(part) => ancestor.push(part),
                None => break,
            }
        }
    }
    let mut visitor = Visitor {
        workspace,
        walk,
        base: display
            .strip_prefix(target.shown_root())
            .unwrap_or(Path::new(""))
            .to_path_buf(),
        ignores,
        cancel,
        out: ListResult {
            path: display.display().to_string(),
            depth: walk.depth,
            entries: Vec::new(),
            truncated: false,
            requested_depth: walk.depth,
        },
    };
    visitor.visit(&dir, &display, Path::new(""), 1)?;
    Ok(visitor.out)
}

fn load_gitignore(dir: &Dir, path: &Path) -> Option<Gitignore> {
    let meta = dir.metadata(".gitignore").ok()?;
    if !meta.is_file() || meta.len() > MAX_GITIGNORE_BYTES {
        return None;
    }
    let text = dir.read_to_string(".gitignore").ok()?;
    let mut builder = GitignoreBuilder::new(path);
    for line in text.lines() {
        // A bad line is skipped, as git does.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok()
}

fn ignored(ignores: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for gi in ignores.iter().rev() {
        match gi.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// The state of one recursive listing.
struct Visitor<'a> {
    workspace: &'a Workspace,
    walk: Walk,
    /// The listed directory relative to its root (for the secret rules).
    base: PathBuf,
    /// Gitignore matchers from the root down to the directory being visited.
    ignores: Vec<Gitignore>,
    cancel: &'a CancellationToken,
    out: ListResult,
}

impl Visitor<'_> {
    fn visit(&mut self, dir: &Dir, abs: &Path, rel: &Path, level: u64) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled("list_directory was cancelled".into()));
        }
        let walk = self.walk;
        let pushed = walk.respect_gitignore
            && match load_gitignore(dir, abs) {
                Some(gi) => {
                    self.ignores.push(gi);
                    true
                }
                None => false,
            };
        let read = dir.entries().map_err(|e| {
            ToolError::ExecutionFailed(format!("cannot read the directory {}: {e}", abs.display()))
        })?;
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if self.out.entries.len() >= walk.max_entries {
                self.out.truncated = true;
                break;
            }
            let name = entry.file_name();
            if !walk.include_hidden && name.to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let entry_abs = abs.join(&name);
            let entry_rel = rel.join(&name);
            if walk.respect_gitignore && ignored(&self.ignores, &entry_abs, file_type.is_dir()) {
                continue;
            }
            let kind = FileKind::of_cap(file_type);
            let size = file_type
                .is_file()
                .then(|| entry.metadata().ok().map(|m| m.len()))
                .flatten();
            let symlink_target = file_type
                .is_symlink()
                .then(|| dir.read_link_contents(&name).ok())
                .flatten()
                .map(|t| t.display().to_string());
            let media = (file_type.is_file()
                && media::named_like_image(&name)
                && !self.workspace.is_secret(&self.base.join(&entry_rel)))
            .then(|| {
                let mut file = Workspace::open_listed(dir, &name).ok()?;
                media::sniff(&mut file).ok()?.map(media::Format::mime)
            })
            .flatten();
            self.out.entries.push(Entry {
                path: entry_rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
                kind,
                size,
                symlink_target,
                media,
            });
            let descend = file_type.is_dir()
                && level < walk.depth
                && !self.workspace.is_secret(&self.base.join(&entry_rel));
            if descend {
                // Opened through the parent's handle: the entry is a real directory (symlinks
                // are never descended into), so this cannot leave the root.
                if let Ok(child) = dir.open_dir(&name) {
                    self.visit(&child, &entry_abs, &entry_rel, level + 1)?;
                }
                if self.out.truncated {
                    break;
                }
            }
        }
        if pushed {
            self.ignores.pop();
        }
        Ok(())
    }
}

fn render(r: &ListResult) -> String {
    let mut text = heading(r);
    text.push('\n');
    if r.entries.is_empty() {
        text.push_str("(empty)\n");
    }
    for e in &r.entries {
        match (e.kind, e.size, &e.symlink_target) {
            (FileKind::Directory, _, _) => text.push_str(&format!("{}/\n", e.path)),
            (_, Some(size), _) => match e.media {
                Some(mime) => text.push_str(&format!("{} ({size} bytes, {mime})\n", e.path)),
                None => text.push_str(&format!("{} ({size} bytes)\n", e.path)),
            },
            (_, _, Some(target)) => text.push_str(&format!("{} -> {target}\n", e.path)),
            (kind, _, _) => text.push_str(&format!("{} ({})\n", e.path, kind.as_str())),
        }
    }
    text.pop();
    text
}

/// A note when the depth asked for was over the server's maximum.
fn capped(r: &ListResult) -> String {
    if r.depth < r.requested_depth {
        format!(
            "\n[depth {} was capped to the server's maximum of {}]",
            r.requested_depth, r.depth
        )
    } else {
        String::new()
    }
}

/// The text beside a structured result that carries the entries.
fn summary(r: &ListResult) -> String {
    let mut text = heading(r);
    if !r.entries.is_empty() {
        text.push_str("\n[the entries are in structuredContent.entries]");
    }
    text
}

/// The directory, how many entries, and whether the list was cut.
fn heading(r: &ListResult) -> String {
    let mut text = format!("{} ({} entries", r.path, r.entries.len());
    if r.truncated {
        text.push_str(
            ", truncated: the entry limit was reached; list a subdirectory or lower depth",
        );
    }
    text.push(')');
    text
}
