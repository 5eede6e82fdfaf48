//! `copy_path`: copy a file or a folder's tree inside the roots. The source is read beneath
//! its root (a link at the source path is followed only inside the roots; links inside a
//! folder are not copied), secrets are skipped and listed, each file is written atomically
//! (temporary file, rename) and an existing destination is replaced only with `overwrite`.
//! A folder is listed and checked whole before anything is written; a failure part-way removes
//! what the call had created.

use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::journal::{self, Image, Journal, Kept, Recorder, Step};
use super::settings::WriteSettings;
use super::text;
use super::write::{self, MAX_LISTED, MAX_TREE_ENTRIES, WRITE_TAG};
use super::{CATEGORY, blocking};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::{FileKind, PathError, Refusal, SourceTree, Workspace, WriteTarget, walk};

/// Bytes read and written at a time when copying a file (and hashed on the way).
const COPY_CHUNK: usize = 64 * 1024;
/// What overwrite does for a folder, for the refusal of an existing destination.
const OVERWRITE_NOTE: &str = " (a folder is copied into the existing one)";

/// Arguments of `copy_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// What to copy: a file or a folder inside the roots.
    source: String,
    /// The path of the copy itself (not a folder to copy into): its parent folder must exist.
    destination: String,
    /// Replace an existing destination file; for a folder, copy into the existing folder,
    /// replacing files of the same name. Default false: an existing destination is an error.
    #[serde(default)]
    overwrite: bool,
}

/// An entry of the source that was not copied.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Skipped {
    /// Its path relative to the source folder.
    path: String,
    /// Why it was not copied.
    reason: String,
}

/// The structured result of `copy_path`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CopyPathResult {
    /// Absolute path of the source.
    source: String,
    /// Absolute path of the copy.
    destination: String,
    /// What was copied.
    #[serde(rename = "type")]
    kind: FileKind,
    /// Files written.
    files: usize,
    /// Folders created.
    folders: usize,
    /// Bytes written.
    bytes: u64,
    /// Existing files that were replaced (only with `overwrite`).
    replaced: usize,
    /// Entries of the folder that were not copied (secrets, links, special files, `.git/`), at
    /// most 100 (see `skipped_count`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<Skipped>,
    /// How many entries were skipped in all.
    skipped_count: usize,
    /// Whether and how this change can be undone.
    #[serde(flatten)]
    undo: Kept,
}

/// The `copy_path` tool.
#[derive(Debug, Clone)]
pub(crate) struct CopyPath {
    settings: WriteSettings,
    journal: Journal,
}

impl CopyPath {
    /// The tool with the operator's write settings, recording its changes in `journal`.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }
}

#[async_trait]
impl TypedTool for CopyPath {
    type Params = Params;
    type Output = CopyPathResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "copy_path",
            title: "Copy a file or folder",
            description: format!(
                "Copy a file or a folder (with everything in it) inside the workspace roots. The destination is the path of the copy itself and its parent folder must exist. An existing destination is never replaced unless overwrite is true (a folder is then copied into the existing one). Each file is written atomically. Secrets, symbolic links, special files and .git/ inside a folder are skipped and listed in the result. At most {MAX_TREE_ENTRIES} entries per call."
            ),
            purpose: "Duplicate a file or folder (a template, a fixture, a backup before a risky change) without passing its content through the conversation.",
            example: json!({"source": "templates/config.toml", "destination": "config.toml"}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "copy", "duplicate"],
            annotations: write::REPLACES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, _workspace: &Workspace) -> Option<String> {
        write::confirms(self.settings).then(|| {
            write::transfer_question("copy_path", "copy", &p.source, &p.destination, p.overwrite)
        })
    }

    fn render(&self, r: &CopyPathResult) -> String {
        let mut out = format!(
            "Copied the {} {} to {}",
            r.kind.describe(),
            r.source,
            r.destination
        );
        if r.kind == FileKind::Directory {
            out.push_str(&format!(" ({} files, {} folders", r.files, r.folders));
        } else {
            out.push_str(&format!(" ({} bytes", r.bytes));
        }
        if r.replaced > 0 {
            out.push_str(&format!(", {} existing files replaced", r.replaced));
        }
        out.push(')');
        if r.skipped_count > 0 {
            out.push_str(&format!("\nNot copied ({}):", r.skipped_count));
            for s in &r.skipped {
                out.push_str(&format!("\n  {}: {}", s.path, s.reason));
            }
        }
        out.push_str(&r.undo.line());
        out
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<CopyPathResult, ToolError> {
        let workspace = ctx.workspace.clone();
        let allow_git = self.settings.allow_git_writes;
        let (mut result, steps) = blocking(move || match workspace.open_file(&p.source) {
            Ok(source) => copy_file(&workspace, source, &p, allow_git),
            Err(PathError::IsADirectory { .. }) => {
                let source = workspace.open_tree(&p.source)?;
                copy_tree(&workspace, &source, &p, allow_git)
            }
            Err(e) => Err(e.into()),
        })
        .await?;
        result.undo = self.journal.keep(
            &ctx.session,
            "copy_path",
            format!("copied {} to {}", result.source, result.destination),
            Recorder::from_steps(steps),
        );
        Ok(result)
    }
}

/// Copy one file: streamed into a temporary file beside the destination, renamed over it.
fn copy_file(
    workspace: &Workspace,
    mut source: crate::workspace::OpenFile,
    p: &Params,
    allow_git: bool,
) -> Result<(CopyPathResult, Vec<Step>), ToolError> {
    let to = workspace.write_target(&p.destination, allow_git)?;
    let from = source.display.display().to_string();
    let destination = to.display().display().to_string();
    if from == destination {
        return Err(ToolError::InvalidArguments(format!(
            "source and destination are the same file ({from}); nothing to copy"
        )));
    }
    let replaced = match to.existing_kind() {
        None => false,
        Some(FileKind::Directory) => {
            return Err(ToolError::InvalidArguments(format!(
                "{destination} is a folder; give the path of the copy itself (e.g. {destination}/{})",
                Path::new(&from)
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
            )));
        }
        Some(_) if !p.overwrite => {
            return Err(write::destination_exists(&destination, OVERWRITE_NOTE));
        }
        Some(_) => true,
    };
    let like = cap_std::fs::Metadata::from_file(&source.file)
        .map_err(|e| write::failed(&from, "reading", &e))?;
    let bytes = source.metadata.len();
    let before = before_image(&to, &destination)?;
    let after = copy_into(&to, &mut source.file, &like, p.overwrite)
        .map_err(|e| write::failed(&destination, "writing", &e))?;
    let steps = vec![Step::File {
        path: destination.clone(),
        before,
        after: Some(after),
    }];
    Ok((
        CopyPathResult {
            source: from,
            destination,
            kind: FileKind::File,
            files: 1,
            folders: 0,
            bytes,
            replaced: usize::from(replaced),
            skipped: Vec::new(),
            skipped_count: 0,
            undo: Kept::default(),
        },
        steps,
    ))
}

/// The file `place` replaces, kept to restore (`None`: nothing is there).
fn before_image(place: &WriteTarget, display: &str) -> Result<Option<Image>, ToolError> {
    if place.existing_kind() != Some(FileKind::File) {
        return Ok(None);
    }
    let bytes = place
        .read_existing()
        .map_err(|e| write::failed(display, "reading", &e))?;
    Image::new(bytes, place.existing_metadata())
        .map(Some)
        .map_err(|e| write::failed(display, "keeping a copy of", &e))
}

/// Stream `source` into `place` atomically, as `like`'s permissions; the sha256 of what was
/// written.
fn copy_into(
    place: &WriteTarget,
    source: &mut std::fs::File,
    like: &cap_std::fs::Metadata,
    replace: bool,
) -> io::Result<String> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    place.write_atomic_with(
        |file| {
            let mut buf = vec![0; COPY_CHUNK];
            loop {
                let n = match io::Read::read(source, &mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                hasher.update(&buf[..n]);
                io::Write::write_all(file, &buf[..n])?;
            }
        },
        Some(like),
        replace,
    )?;
    Ok(text::hex(&hasher.finalize()))
}

/// Copy a folder's tree: listed and checked whole, then its folders created and its files
/// copied one by one (each atomically), parents first. A failure removes what was created.
fn copy_tree(
    workspace: &Workspace,
    source: &SourceTree,
    p: &Params,
    allow_git: bool,
) -> Result<(CopyPathResult, Vec<Step>), ToolError> {
    let to = workspace.entry_target(&p.destination, allow_git)?;
    let from = source.display().display().to_string();
    let destination = to.display().display().to_string();
    if to.real().starts_with(source.real()) {
        return Err(ToolError::InvalidArguments(format!(
            "cannot copy the folder {from} into itself ({destination})"
        )));
    }
    let create_top = match to.existing_kind() {
        None => true,
        Some(FileKind::Directory) if p.overwrite => false,
        Some(FileKind::Directory) => {
            return Err(write::destination_exists(&destination, OVERWRITE_NOTE));
        }
        Some(kind) => {
            return Err(ToolError::InvalidArguments(format!(
                "{destination} is a {}, not a folder, so a folder cannot be copied onto it; choose another destination",
                kind.describe()
            )));
        }
    };
    let tree = walk(&source.dir, MAX_TREE_ENTRIES)
        .map_err(|e| ToolError::InvalidArguments(e.describe(source.display(), "copy_path")))?;

    // The plan: what is copied, and what is skipped (with everything under a skipped folder).
    let mut skipped = Vec::new();
    let mut skipped_dirs: Vec<PathBuf> = Vec::new();
    let mut plan = Vec::new();
    for entry in tree {
        if skipped_dirs.iter().any(|d| entry.rel.starts_with(d)) {
            continue;
        }
        let reason = match entry.kind {
            FileKind::File | FileKind::Directory => workspace
                .tree_refusal(&source.rel, &entry.rel, true)
                .or_else(|| workspace.tree_refusal(to.rel(), &entry.rel, allow_git))
                .map(|why| match why {
                    Refusal::Secret => why.describe().to_owned(),
                    Refusal::Git => {
                        "it would land inside .git/ ([fs] allow_git_writes is off)".to_owned()
                    }
                }),
            FileKind::Symlink => Some(
                "a symbolic link (links are not copied; copy what it points to by its own path)"
                    .to_owned(),
            ),
            other => Some(format!(
                "a {} (only files and folders are copied)",
                other.describe()
            )),
        };
        match reason {
            Some(reason) => {
                if entry.kind == FileKind::Directory {
                    skipped_dirs.push(entry.rel.clone());
                }
                skipped.push(Skipped {
                    path: entry.rel.display().to_string(),
                    reason,
                });
            }
            None => plan.push(entry),
        }
    }

    let mut done: Vec<Step> = Vec::new();
    let mut result = CopyPathResult {
        source: from,
        destination,
        kind: FileKind::Directory,
        files: 0,
        folders: 0,
        bytes: 0,
        replaced: 0,
        skipped_count: skipped.len(),
        skipped: skipped.into_iter().take(MAX_LISTED).collect(),
        undo: Kept::default(),
    };
    let copied = (|| -> Result<(), (PathBuf, String)> {
        fn at(rel: &Path) -> impl FnOnce(io::Error) -> (PathBuf, String) + '_ {
            move |e| (rel.to_path_buf(), e.to_string())
        }
        if create_top {
            to.create_dir().map_err(at(Path::new("")))?;
            done.push(Step::MadeFolder {
                path: result.destination.clone(),
            });
            result.folders += 1;
        }
        for entry in &plan {
            let place = to.within(&entry.rel).map_err(at(&entry.rel))?;
            let display = place.display().display().to_string();
            if entry.kind == FileKind::Directory {
                match place.existing_kind() {
                    None => {
                        place.create_dir().map_err(at(&entry.rel))?;
                        done.push(Step::MadeFolder { path: display });
                        result.folders += 1;
                    }
                    Some(FileKind::Directory) => {}
                    Some(kind) => {
                        return Err((
                            entry.rel.clone(),
                            format!("a {} is there, not a folder", kind.describe()),
                        ));
                    }
                }
                continue;
            }
            let replaces = match place.existing_kind() {
                None => false,
                Some(FileKind::Directory) => {
                    return Err((entry.rel.clone(), "a folder is there, not a file".into()));
                }
                Some(_) if !p.overwrite => {
                    return Err((entry.rel.clone(), "it appeared while the copy ran".into()));
                }
                Some(_) => true,
            };
            let before =
                before_image(&place, &display).map_err(|e| (entry.rel.clone(), e.to_string()))?;
            let (mut file, like) = source.open_file(&entry.rel).map_err(at(&entry.rel))?;
            let after = copy_into(&place, &mut file, &like, p.overwrite).map_err(at(&entry.rel))?;
            done.push(Step::File {
                path: display,
                before,
                after: Some(after),
            });
            result.replaced += usize::from(replaces);
            result.files += 1;
            result.bytes += like.len();
        }
        Ok(())
    })();
    if let Err((rel, error)) = copied {
        let undone = journal::take_back(workspace, allow_git, &done);
        return Err(ToolError::ExecutionFailed(format!(
            "copying {} to {} failed at {}: {error}; {undone}",
            result.source,
            result.destination,
            Path::new(&result.source).join(&rel).display()
        )));
    }
    Ok((result, done))
}
