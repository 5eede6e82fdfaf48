//! `delete_path`: delete a file, link or folder inside the roots. By default it goes to the
//! system's trash (`[fs] delete = "trash"`), where the user can restore it; with
//! `[fs] delete = "confirm"` it is deleted for good, and only after the user confirms. Never a
//! root itself, never a secret, never inside `.git/` unless allowed (for a folder: nothing in
//! it either, checked on the whole tree before anything goes), a folder only with
//! `recursive: true`. The result lists what went.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::journal::{Journal, Kept, Recorder, Step};
use super::settings::{DeleteMode, WriteSettings};
use super::write::{self, MAX_LISTED, MAX_TREE_ENTRIES, WRITE_TAG};
use super::{CATEGORY, blocking};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::{FileKind, TreeEntry, Workspace, WriteTarget};

/// Arguments of `delete_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// What to delete: a file, a symbolic link (the link itself, never what it points to) or
    /// a folder, inside the roots.
    path: String,
    /// Delete a folder with everything in it. Default false: a folder is refused, so nothing
    /// more than the model meant goes.
    #[serde(default)]
    recursive: bool,
}

/// The structured result of `delete_path`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeletePathResult {
    /// Absolute path of what was deleted.
    path: String,
    /// What it was.
    #[serde(rename = "type")]
    kind: FileKind,
    /// True: it was moved to the system's trash, where the user can restore it. False: it was
    /// deleted for good (a symbolic link always is: it holds no data).
    trashed: bool,
    /// Files that went (the file itself, or every file in the folder).
    files: usize,
    /// Folders that went (the folder itself and every folder in it).
    folders: usize,
    /// Symbolic links and other entries that went.
    others: usize,
    /// Bytes of the files that went.
    bytes: u64,
    /// What was in the folder, relative to it (at most 100; see `contents_truncated`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    contents: Vec<String>,
    /// True when the folder held more than `contents` lists.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    contents_truncated: bool,
    /// Whether and how this change can be undone.
    #[serde(flatten)]
    undo: Kept,
}

/// The `delete_path` tool.
#[derive(Debug, Clone)]
pub(crate) struct DeletePath {
    settings: WriteSettings,
    journal: Journal,
}

impl DeletePath {
    /// The tool with the operator's write settings, recording its changes in `journal`.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }

    fn trashes(&self) -> bool {
        self.settings.delete == DeleteMode::Trash
    }
}

#[async_trait]
impl TypedTool for DeletePath {
    type Params = Params;
    type Output = DeletePathResult;

    fn spec(&self) -> ToolSpec {
        let how = if self.trashes() {
            "It goes to the system's trash, where the user can restore it."
        } else {
            "It is deleted for good, after the user confirms."
        };
        ToolSpec {
            name: "delete_path",
            title: "Delete a file or folder",
            description: format!(
                "Delete a file, a symbolic link (the link, not what it points to; removed, not trashed) or a folder inside the workspace roots. {how} A folder needs recursive: true and is refused whole if anything in it is a secret or inside .git/. A root itself, secrets and .git/ are never deleted. The result lists what went."
            ),
            purpose: "Remove a file or folder the task no longer needs (a generated file, a stale module, a scratch folder) without a shell command.",
            example: json!({"path": "build/old_output.txt"}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "delete", "remove"],
            annotations: write::REPLACES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, _workspace: &Workspace) -> Option<String> {
        let what = if p.recursive {
            format!("{} and everything in it", p.path)
        } else {
            p.path.clone()
        };
        if !self.trashes() {
            Some(format!(
                "delete_path: delete {what} for good (it cannot be restored)"
            ))
        } else if write::confirms(self.settings) {
            Some(format!("delete_path: move {what} to the trash"))
        } else {
            None
        }
    }

    fn render(&self, r: &DeletePathResult) -> String {
        let mut out = format!(
            "{} the {} {}",
            if r.trashed {
                "Moved to the trash:"
            } else {
                "Deleted for good:"
            },
            r.kind.describe(),
            r.path
        );
        if r.kind == FileKind::Directory {
            out.push_str(&format!(
                " ({} files, {} folders, {} other entries, {} bytes)",
                r.files,
                r.folders - 1,
                r.others,
                r.bytes
            ));
            for entry in &r.contents {
                out.push_str("\n  ");
                out.push_str(entry);
            }
            if r.contents_truncated {
                out.push_str("\n  …");
            }
        }
        out.push_str(&r.undo.line());
        out
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<DeletePathResult, ToolError> {
        let workspace = ctx.workspace.clone();
        let allow_git = self.settings.allow_git_writes;
        let trash_mode = self.trashes();
        let (mut result, recorder) = blocking(move || {
            let entry = workspace.entry_target(&p.path, allow_git)?;
            let path = entry.display().display().to_string();
            let kind = entry.existing_kind().ok_or_else(|| {
                ToolError::NotFound(format!("{path} does not exist; nothing was deleted"))
            })?;
            // A symbolic link holds no data: it is removed, not trashed.
            let trash = trash_mode && kind != FileKind::Symlink;
            let mut result = DeletePathResult {
                path,
                kind,
                trashed: trash,
                files: usize::from(kind == FileKind::File),
                folders: usize::from(kind == FileKind::Directory),
                others: usize::from(!matches!(kind, FileKind::File | FileKind::Directory)),
                bytes: 0,
                contents: Vec::new(),
                contents_truncated: false,
                undo: Kept::default(),
            };
            let tree = if kind == FileKind::Directory {
                Some(entry.walk(MAX_TREE_ENTRIES).map_err(|e| {
                    ToolError::InvalidArguments(e.describe(entry.display(), "delete_path"))
                })?)
            } else {
                None
            };
            if let Some(tree) = &tree {
                if !p.recursive {
                    let holding = match tree.len() {
                        0 => "an empty folder".to_owned(),
                        n => format!("a folder holding {n} entries"),
                    };
                    return Err(ToolError::InvalidArguments(format!(
                        "{} is {holding}; pass recursive: true to delete a folder (with everything in it), or delete its entries one by one",
                        result.path
                    )));
                }
                let refused: Vec<String> = tree
                    .iter()
                    .filter_map(|e| {
                        workspace
                            .tree_refusal(entry.rel(), &e.rel, allow_git)
                            .map(|why| format!("{} is {}", e.rel.display(), why.describe()))
                    })
                    .collect();
                if !refused.is_empty() {
                    return Err(ToolError::PermissionDenied(format!(
                        "{} holds entries that are never deleted: {}; nothing was deleted. Delete the other entries one by one",
                        result.path,
                        write::listing(&refused, MAX_LISTED)
                    )));
                }
                for e in tree {
                    match e.kind {
                        FileKind::File => result.files += 1,
                        FileKind::Directory => result.folders += 1,
                        _ => result.others += 1,
                    }
                    result.bytes += e.len;
                }
                result.contents_truncated = tree.len() > MAX_LISTED;
                result.contents = tree
                    .iter()
                    .take(MAX_LISTED)
                    .map(|e| e.rel.display().to_string())
                    .collect();
            } else if kind == FileKind::File {
                result.bytes = entry.existing_len();
            }
            // What undo_last_change needs to make it again (read before it goes).
            let mut recorder = Recorder::default();
            keep_before(&entry, kind, tree.as_deref(), &mut recorder);
            let done = if trash {
                entry.trash()
            } else {
                entry.remove(kind == FileKind::Directory)
            };
            done.map_err(|e| {
                if trash {
                    ToolError::ExecutionFailed(format!(
                        "could not move {} to the trash: {e}; nothing was deleted. (The operator can set delete = \"confirm\" in the [fs] section of the config file to delete for good after asking the user.)",
                        result.path
                    ))
                } else if kind == FileKind::Directory {
                    ToolError::ExecutionFailed(format!(
                        "deleting {} stopped part-way: {e}; some of what it held may be gone (list it to see what is left)",
                        result.path
                    ))
                } else {
                    write::failed(&result.path, "deleting", &e)
                }
            })?;
            Ok((result, recorder))
        })
        .await?;
        result.undo = self.journal.keep(
            &ctx.session,
            "delete_path",
            format!("deleted {}", result.path),
            recorder,
        );
        Ok(result)
    }
}

/// Keep what undoing the deletion of `entry` needs: a file's bytes; a folder's files, then
/// its folders innermost first (undone in reverse: folders outermost first, then the files).
/// Links and special files cannot be made again, so a deletion with one is not undoable.
fn keep_before(
    entry: &WriteTarget,
    kind: FileKind,
    tree: Option<&[TreeEntry]>,
    recorder: &mut Recorder,
) {
    let path = entry.display().display().to_string();
    match (kind, tree) {
        (FileKind::File, _) => {
            let before = recorder.image_read(
                entry.existing_len(),
                || entry.read_existing(),
                entry.existing_metadata(),
            );
            recorder.push(Step::File {
                path,
                before,
                after: None,
            });
        }
        (FileKind::Directory, Some(tree)) => {
            let mut folders = vec![path];
            for e in tree {
                let at = entry.display().join(&e.rel).display().to_string();
                match e.kind {
                    FileKind::Directory => folders.push(at),
                    FileKind::File => {
                        let place = entry.within(&e.rel);
                        let before = match &place {
                            Ok(place) => recorder.image_read(
                                e.len,
                                || place.read_existing(),
                                place.existing_metadata(),
                            ),
                            Err(error) => {
                                recorder.refuse(format!(
                                    "cannot be undone: {at} could not be read ({error})"
                                ));
                                None
                            }
                        };
                        recorder.push(Step::File {
                            path: at,
                            before,
                            after: None,
                        });
                    }
                    other => recorder.refuse(format!(
                        "cannot be undone: it held a {} ({at}), which the undo journal cannot make again",
                        other.describe()
                    )),
                }
            }
            for folder in folders.into_iter().rev() {
                recorder.push(Step::RemovedFolder { path: folder });
            }
        }
        _ => recorder.refuse(format!(
            "cannot be undone: a {} is not kept by the undo journal",
            kind.describe()
        )),
    }
}
