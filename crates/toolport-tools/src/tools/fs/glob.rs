//! `glob`: the files under a path whose path matches a glob, sorted by path or by modification
//! time. The walk is `walk.rs`'s (inside the roots, ignore files honoured, secrets pruned,
//! symlinks not followed) and the pattern is its `GlobFilter` (gitignore syntax), the same
//! one `grep`'s `glob` argument uses, so both mean the same thing by a pattern.
//!
//! Every match is collected before sorting, so the first N by path (or the newest N) are the
//! right ones whatever order the parallel walk found them in; only a path, a size and a time
//! are kept per file.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;
use ignore::WalkState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::settings::FsSettings;
use super::{ANNOTATIONS, CATEGORY, blocking, walk};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::Workspace;

/// The tool's description, stating the operator's real limit.
fn description(settings: &FsSettings) -> String {
    format!(
        "Find files by name or path pattern under a directory inside the workspace roots. The pattern is a gitignore-style glob matched against each file's path relative to `path`: \"*.rs\" finds Rust files at any depth, \"src/**/*.test.ts\" only under src, \"*.{{toml,yaml}}\" either extension. Returns absolute paths with size and modification time, sorted by path, or newest first with sort \"mtime\". Files matched by .gitignore, hidden files (unless include_hidden) and secrets are left out; only regular files are listed (symbolic links are not followed). At most max_results files (default and server maximum {}); `truncated` says when there were more.",
        settings.list_max_entries
    )
}

/// How the files are ordered: by path (in byte order), or by modification time, newest first.
/// (The variants carry no doc comments, so the schema is a plain string enum.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sort {
    #[default]
    Path,
    Mtime,
}

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The glob (gitignore syntax): without '/' it matches a file name at any depth ("*.rs");
    /// with '/' a path relative to `path` ("src/**/*.rs"); "**" crosses directories; "{a,b}"
    /// is either.
    pattern: String,
    /// The directory to search: relative to the first workspace root, or absolute inside a
    /// root. Default "." (the first root).
    #[serde(default = "default_path")]
    path: String,
    /// Also list hidden files and look inside hidden directories (names starting with '.').
    #[serde(default)]
    include_hidden: bool,
    /// Most files to return (at most the server's limit, which is also the default).
    #[schemars(range(min = 1))]
    max_results: Option<u64>,
    /// "path": sorted by path. "mtime": by modification time, newest first.
    #[serde(default)]
    sort: Sort,
}

fn default_path() -> String {
    ".".into()
}

/// One file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct FoundFile {
    /// Absolute path.
    path: String,
    /// Size in bytes.
    size: u64,
    /// Last modification time, RFC 3339 in UTC.
    modified: Option<String>,
}

/// The structured result of `glob`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GlobResult {
    /// Absolute path of the searched directory.
    path: String,
    /// The matching files, in the requested order.
    files: Vec<FoundFile>,
    /// Number of matching files found (more than returned when truncated).
    total_matches: u64,
    /// True when max_results cut the list short.
    truncated: bool,
}

/// The `glob` tool.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    settings: FsSettings,
}

impl Glob {
    /// The tool with the operator's limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for Glob {
    type Params = Params;
    type Output = GlobResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob",
            title: "Find files by pattern",
            description: description(&self.settings),
            purpose: "Find files by name or extension (all Cargo.toml files, the tests of a module, what changed most recently with sort \"mtime\") before reading or searching them.",
            example: json!({"pattern": "src/**/*.rs", "sort": "mtime", "max_results": 20}),
            category: CATEGORY,
            tags: &["filesystem", "read", "search", "glob", "find"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &GlobResult) -> String {
        render(output)
    }

    const PAYLOAD: &'static [&'static str] = &["files"];

    fn summary(&self, output: &GlobResult) -> String {
        summary(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<GlobResult, ToolError> {
        let limit = self.settings.list_max_entries;
        let max = p.max_results.map_or(limit, |n| {
            usize::try_from(n).unwrap_or(limit).clamp(1, limit)
        });
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let query = Query {
                path: &p.path,
                pattern: &p.pattern,
                include_hidden: p.include_hidden,
                sort: p.sort,
                max,
            };
            find(&workspace, &query, &cancel)
        })
        .await
    }
}

/// What to find.
#[derive(Debug, Clone, Copy)]
pub(super) struct Query<'a> {
    pub(super) path: &'a str,
    pub(super) pattern: &'a str,
    pub(super) include_hidden: bool,
    pub(super) sort: Sort,
    pub(super) max: usize,
}

/// The files matching `query`, sorted and capped (also used by `read_many_files`).
pub(super) fn find(
    workspace: &Arc<Workspace>,
    query: &Query<'_>,
    cancel: &CancellationToken,
) -> Result<GlobResult, ToolError> {
    let start = walk::start(workspace, query.path)?;
    let filter = walk::GlobFilter::new(&start.path, query.pattern)?;
    let walker = walk::builder(workspace, &start, query.include_hidden).build_parallel();
    let found: Mutex<Vec<(PathBuf, u64, Option<SystemTime>)>> = Mutex::new(Vec::new());
    walker.run(|| {
        let (found, filter) = (&found, &filter);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            // The start itself is never a match: a glob finds files below it.
            if entry.depth() == 0
                || !entry.file_type().is_some_and(|t| t.is_file())
                || !filter.matches(entry.path())
            {
                return WalkState::Continue;
            }
            let Ok(meta) = entry.metadata() else {
                return WalkState::Continue;
            };
            found.lock().unwrap_or_else(PoisonError::into_inner).push((
                entry.into_path(),
                meta.len(),
                meta.modified().ok(),
            ));
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled("glob was cancelled".into()));
    }
    let mut found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    match query.sort {
        Sort::Path => found.sort_by(|a, b| a.0.cmp(&b.0)),
        // Newest first; equal times by path, so the order is stable.
        Sort::Mtime => found.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0))),
    }
    let total = found.len();
    found.truncate(query.max);
    let files = found
        .into_iter()
        .map(|(path, size, mtime)| FoundFile {
            path: start.show(&path).display().to_string(),
            size,
            modified: mtime.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
        })
        .collect();
    Ok(GlobResult {
        path: start.show(&start.path).display().to_string(),
        files,
        total_matches: total as u64,
        truncated: total > query.max,
    })
}

impl GlobResult {
    /// The absolute paths found, in order.
    pub(super) fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }

    /// Whether there were more matches than returned.
    pub(super) fn truncated(&self) -> bool {
        self.truncated
    }
}

fn render(r: &GlobResult) -> String {
    if r.files.is_empty() {
        return format!("No files match in {}.", r.path);
    }
    let mut text = String::new();
    for f in &r.files {
        text.push_str(&f.path);
        text.push('\n');
    }
    text.push_str(&footer(r, ""));
    text
}

/// The text beside a structured result that carries the files.
fn summary(r: &GlobResult) -> String {
    if r.files.is_empty() {
        return render(r);
    }
    footer(r, "; the files are in structuredContent.files")
}

/// The count, and what to do when the result was cut; `more` goes before the closing bracket.
fn footer(r: &GlobResult, more: &str) -> String {
    if r.truncated {
        format!(
            "[{} of {} matching files; truncated: narrow the pattern or path, or raise max_results up to the server's limit{more}]",
            r.files.len(),
            r.total_matches
        )
    } else {
        format!("[{} matching files{more}]", r.files.len())
    }
}
