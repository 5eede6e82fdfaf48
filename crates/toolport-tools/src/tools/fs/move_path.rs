//! `move_path`: rename a file or directory within the roots. Both ends are confined (each
//! parent directory is opened beneath its root and the rename is made between the two
//! handles), secrets and `.git/` are refused at either end, and an existing destination is
//! never replaced unless asked: the kernel refuses it (`RENAME_NOREPLACE`), so a file that
//! appears meanwhile is safe too. A symbolic link is moved as the link.

use std::io;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::journal::{Journal, Kept, Recorder, Step};
use super::settings::WriteSettings;
use super::write::{self, WRITE_TAG};
use super::{CATEGORY, blocking};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::{FileKind, Workspace};

/// Arguments of `move_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// What to move: a file, directory or symbolic link inside the roots.
    source: String,
    /// The new path (not a folder to move into): its parent directory must exist.
    destination: String,
    /// Replace an existing destination (a file, or an empty directory when moving a
    /// directory). Default false: an existing destination is an error.
    #[serde(default)]
    overwrite: bool,
}

/// The structured result of `move_path`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct MovePathResult {
    /// Absolute path it was at.
    source: String,
    /// Absolute path it is at now.
    destination: String,
    /// What was moved.
    #[serde(rename = "type")]
    kind: FileKind,
    /// True when an existing destination was replaced.
    replaced: bool,
    /// Whether and how this change can be undone.
    #[serde(flatten)]
    undo: Kept,
}

/// The `move_path` tool.
#[derive(Debug, Clone)]
pub(crate) struct MovePath {
    settings: WriteSettings,
    journal: Journal,
}

impl MovePath {
    /// The tool with the operator's write settings, recording its changes in `journal`.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }
}

#[async_trait]
impl TypedTool for MovePath {
    type Params = Params;
    type Output = MovePathResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "move_path",
            title: "Move or rename",
            description: "Move or rename a file or directory inside the workspace roots (both paths must be inside them; a symbolic link is moved as the link). The destination is the new path itself and its parent directory must exist. An existing destination is never replaced unless overwrite is true. Secrets and .git/ are refused at either end. Moving across file systems is not supported.".into(),
            purpose: "Rename a file or folder, or move it to another folder of the project, without copying its content through the conversation.",
            example: json!({"source": "src/old_name.rs", "destination": "src/new_name.rs"}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "move", "rename"],
            annotations: write::CHANGES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, _workspace: &Workspace) -> Option<String> {
        write::confirms(self.settings).then(|| {
            write::transfer_question("move_path", "move", &p.source, &p.destination, p.overwrite)
        })
    }

    fn render(&self, r: &MovePathResult) -> String {
        format!(
            "Moved the {} {} to {}{}{}",
            r.kind.describe(),
            r.source,
            r.destination,
            if r.replaced {
                " (the previous destination was replaced)"
            } else {
                ""
            },
            r.undo.line()
        )
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<MovePathResult, ToolError> {
        let workspace = ctx.workspace.clone();
        let allow_git = self.settings.allow_git_writes;
        let (mut result, recorder) = blocking(move || {
            let from = workspace.entry_target(&p.source, allow_git)?;
            let source = from.display().display().to_string();
            let kind = from.existing_kind().ok_or_else(|| {
                ToolError::NotFound(format!("{source} does not exist; nothing was moved"))
            })?;
            let to = workspace.entry_target(&p.destination, allow_git)?;
            let destination = to.display().display().to_string();
            if source == destination {
                return Err(ToolError::InvalidArguments(format!(
                    "source and destination are the same path ({source}); nothing to move"
                )));
            }
            if kind == FileKind::Directory
                && std::path::Path::new(&destination).starts_with(&source)
            {
                return Err(ToolError::InvalidArguments(format!(
                    "cannot move the directory {source} into itself ({destination})"
                )));
            }
            let replaced = to.existing_kind().is_some();
            if replaced && !p.overwrite {
                return Err(write::destination_exists(&destination, ""));
            }
            // The file it replaces, kept for undo (an empty folder it replaces is not).
            let mut recorder = Recorder::default();
            let replaced_image = match to.existing_kind() {
                Some(FileKind::File) => {
                    let bytes = to
                        .read_existing()
                        .map_err(|e| write::failed(&destination, "reading", &e))?;
                    recorder.image(bytes, to.existing_metadata())
                }
                _ => None,
            };
            from.rename_to(&to, p.overwrite).map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => write::destination_exists(&destination, ""),
                io::ErrorKind::CrossesDevices => ToolError::InvalidArguments(format!(
                    "{source} and {destination} are on different file systems, which a rename cannot cross; nothing was moved"
                )),
                io::ErrorKind::DirectoryNotEmpty => ToolError::InvalidArguments(format!(
                    "{destination} is a directory that is not empty, so it cannot be replaced; nothing was moved"
                )),
                io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => {
                    ToolError::InvalidArguments(format!(
                        "{source} and {destination} are not both files or both directories, so one cannot replace the other; nothing was moved"
                    ))
                }
                _ => write::failed(&source, "moving", &e),
            })?;
            recorder.push(Step::Moved {
                from: source.clone(),
                to: destination.clone(),
                replaced: replaced_image,
            });
            Ok((
                MovePathResult {
                    source,
                    destination,
                    kind,
                    replaced,
                    undo: Kept::default(),
                },
                recorder,
            ))
        })
        .await?;
        result.undo = self.journal.keep(
            &ctx.session,
            "move_path",
            format!("moved {} to {}", result.source, result.destination),
            recorder,
        );
        Ok(result)
    }
}
