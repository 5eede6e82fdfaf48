//! `read_many_files`: several text files in one call, each read exactly as `read_file` reads
//! it (the same tool runs for each: confinement, secret rules, binary refusal, encodings,
//! line-aligned cuts), each with its own content or its own error, so one bad path does not
//! fail the batch.
//!
//! The call has one byte budget, the `read_file` limit: each file gets at most
//! `max_bytes_per_file` of it, and what is left when the budget is spent is listed as not read
//! (`truncated`). Files are read one after the other, in the order given (paths first, then
//! the glob's matches by path), so the budget goes to the files asked for first.

use std::collections::HashSet;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::glob::{self, Query, Sort};
use super::read_file::{self, ReadFile};
use super::settings::FsSettings;
use super::{ANNOTATIONS, CATEGORY, blocking};
use crate::settings::human_bytes;
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};

/// Each file's share of the budget when the call does not say: a source file of ~1,500 lines
/// fits, and one large file cannot take the whole call's budget from the others.
const DEFAULT_MAX_BYTES_PER_FILE: u64 = 64 * 1024;
/// A file is read only while this much of the call's budget is left (or its own limit, when
/// that is smaller): the first few bytes of a file are noise, not content.
const MIN_SHARE: u64 = 256;
/// The most files one call reads: more is a listing (glob) followed by a choice, not a read.
const MAX_FILES: usize = 200;

/// The tool's description, stating the operator's real limits.
fn description(settings: &FsSettings) -> String {
    format!(
        "Read several text files inside the workspace roots in one call: the files named in `paths`, then those matching `glob` (sorted by path). Each file is read as read_file reads it and gets its own entry with its content, or its own error (missing, outside the roots, a secret, binary, an image: read_file shows images …), so one bad path does not fail the others. Each file returns at most max_bytes_per_file (default {}); the whole call at most {} (files past that are listed as not read, and `truncated` is true). At most {MAX_FILES} files per call. A cut file has `truncated` and `next_offset`: continue it with read_file.",
        human_bytes(DEFAULT_MAX_BYTES_PER_FILE.min(settings.read_max_bytes)),
        human_bytes(settings.read_max_bytes)
    )
}

/// Arguments of `read_many_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The files: each relative to the first workspace root, or absolute inside a root.
    paths: Option<Vec<String>>,
    /// Also read the files matching this glob (gitignore syntax, relative to the first root,
    /// as the glob tool's pattern: "src/**/*.rs", "*.toml"); hidden and .gitignored files
    /// are left out.
    glob: Option<String>,
    /// Most bytes of text returned per file (at most the server's per-call limit).
    #[schemars(range(min = 1))]
    max_bytes_per_file: Option<u64>,
}

/// One file's outcome: its content (with read_file's facts), or an error.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct FileEntry {
    /// Absolute path (as given when it could not be resolved).
    path: String,
    /// The text (original line endings kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// The encoding used to decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
    /// Number of lines in the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_lines: Option<u64>,
    /// True when the file's content was cut (by max_bytes_per_file or the call's budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
    /// The read_file `offset` to continue a cut file from.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<u64>,
    /// Why this file was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The structured result of `read_many_files`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadManyResult {
    /// One entry per file, in order: the paths as given, then the glob's matches.
    files: Vec<FileEntry>,
    /// Bytes of text returned in all.
    total_bytes: u64,
    /// True when a file was cut or left unread (by its own limit, the call's budget, or the
    /// call's file limit for a glob).
    truncated: bool,
}

/// The `read_many_files` tool.
#[derive(Debug, Clone)]
pub(crate) struct ReadManyFiles {
    /// Reads each file: the served `read_file` itself (a clone shares its state), so one
    /// digest cache, one set of large-read turns and one set of limits serve both tools.
    reader: ReadFile,
}

impl ReadManyFiles {
    /// The tool reading through `reader`, with its limits.
    pub(crate) fn new(reader: ReadFile) -> Self {
        Self { reader }
    }
}

#[async_trait]
impl TypedTool for ReadManyFiles {
    type Params = Params;
    type Output = ReadManyResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_many_files",
            title: "Read many files",
            description: description(self.reader.settings()),
            purpose: "Read a handful of related files at once (a module and its tests, every config file) instead of one read_file call each. For one large file, use read_file and page through it.",
            example: json!({"paths": ["Cargo.toml", "src/lib.rs"], "glob": "src/tools/*.rs"}),
            category: CATEGORY,
            tags: &["filesystem", "read", "file", "text", "batch"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &ReadManyResult) -> String {
        render(output)
    }

    const PAYLOAD: &'static [&'static str] = &["files"];

    fn summary(&self, output: &ReadManyResult) -> String {
        summary(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<ReadManyResult, ToolError> {
        let mut paths = p.paths.unwrap_or_default();
        if paths.is_empty() && p.glob.is_none() {
            return Err(ToolError::InvalidArguments(
                "give `paths` (a list of files), `glob` (a pattern such as \"src/**/*.rs\"), or both".into(),
            ));
        }
        if paths.len() > MAX_FILES {
            return Err(ToolError::InvalidArguments(format!(
                "{} paths were given; at most {MAX_FILES} files are read per call. Split them into several calls",
                paths.len()
            )));
        }
        let budget = self.reader.settings().read_page_bytes(ctx);
        let per_file = p
            .max_bytes_per_file
            .unwrap_or(DEFAULT_MAX_BYTES_PER_FILE)
            .clamp(1, budget);
        let mut truncated = false;
        if let Some(pattern) = p.glob {
            let workspace = ctx.workspace.clone();
            let cancel = ctx.cancel.clone();
            let max = MAX_FILES - paths.len();
            let found = blocking(move || {
                let query = Query {
                    path: ".",
                    pattern: &pattern,
                    include_hidden: false,
                    sort: Sort::Path,
                    max,
                };
                glob::find(&workspace, &query, &cancel)
            })
            .await?;
            truncated |= found.truncated();
            let mut seen: HashSet<String> = paths
                .iter()
                .filter_map(|p| ctx.workspace.target(p).ok())
                .map(|t| t.display().display().to_string())
                .collect();
            paths.extend(
                found
                    .paths()
                    .filter(|p| seen.insert((*p).to_owned()))
                    .map(str::to_owned),
            );
        }
        let mut files = Vec::with_capacity(paths.len());
        let mut remaining = budget;
        for path in paths {
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled("read_many_files was cancelled".into()));
            }
            let shown = ctx
                .workspace
                .target(&path)
                .map_or_else(|_| path.clone(), |t| t.display().display().to_string());
            if remaining < MIN_SHARE.min(per_file) {
                truncated = true;
                files.push(FileEntry {
                    path: shown,
                    error: Some(format!(
                        "not read: the call's limit of {} was used by the files before it; read it with read_file or in another call",
                        human_bytes(budget)
                    )),
                    ..FileEntry::default()
                });
                continue;
            }
            let entry = self
                .read_one(&path, shown, per_file.min(remaining), ctx)
                .await;
            let used = entry.content.as_ref().map_or(0, |c| c.len() as u64);
            truncated |= entry.truncated == Some(true);
            remaining = remaining.saturating_sub(used);
            files.push(entry);
        }
        Ok(ReadManyResult {
            total_bytes: budget - remaining,
            files,
            truncated,
        })
    }
}

impl ReadManyFiles {
    /// Read one file with `read_file` itself, within `max_bytes`.
    async fn read_one(
        &self,
        path: &str,
        shown: String,
        max_bytes: u64,
        ctx: &ToolContext,
    ) -> FileEntry {
        match self
            .reader
            .read_up_to(read_file::Params::whole(path), max_bytes, ctx)
            .await
        {
            Ok(read) => FileEntry {
                path: read.path,
                content: Some(read.content),
                encoding: Some(read.encoding),
                total_lines: Some(read.total_lines),
                truncated: Some(read.truncated),
                next_offset: read.next_offset,
                error: None,
            },
            Err(error) => FileEntry {
                path: shown,
                error: Some(error.to_string()),
                ..FileEntry::default()
            },
        }
    }
}

/// The text a model reads: each file under a header line, then a summary.
fn render(r: &ReadManyResult) -> String {
    let mut text = String::new();
    let mut read = 0;
    for f in &r.files {
        match (&f.content, &f.error) {
            (Some(content), _) => {
                read += 1;
                text.push_str(&format!("==> {} <==\n", f.path));
                text.push_str(content);
                if !content.ends_with('\n') {
                    text.push('\n');
                }
                if f.truncated == Some(true) {
                    match f.next_offset {
                        Some(next) => text.push_str(&format!(
                            "[cut short; call read_file with path {} and offset={next} for more]\n",
                            f.path
                        )),
                        None => text.push_str("[cut short]\n"),
                    }
                }
            }
            (None, Some(error)) => {
                text.push_str(&format!("==> {} <==\n[error: {error}]\n", f.path));
            }
            (None, None) => {}
        }
        text.push('\n');
    }
    text.push_str(&footer(r, read, ""));
    text
}

/// The text beside a structured result that carries the files.
fn summary(r: &ReadManyResult) -> String {
    let read = r.files.iter().filter(|f| f.content.is_some()).count();
    footer(r, read, "; the files are in structuredContent.files")
}

/// The counts, and whether anything was cut; `more` goes before the closing bracket.
fn footer(r: &ReadManyResult, read: usize, more: &str) -> String {
    let mut text = format!(
        "[{read} of {} files read, {} bytes",
        r.files.len(),
        r.total_bytes
    );
    if r.truncated {
        text.push_str("; truncated: some files were not read or were cut");
    }
    text.push_str(more);
    text.push(']');
    text
}
