//! `undo_last_change`: take back a change the write tools made in this session (the latest,
//! or the one named by its `change_id`), from the undo journal (`journal.rs`). Refused, with
//! nothing changed, when a file the change touched is no longer as the change left it.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::journal::{self, Journal};
use super::settings::WriteSettings;
use super::write::{self, WRITE_TAG};
use super::{CATEGORY, blocking};
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::Workspace;

/// Arguments of `undo_last_change`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The change to take back, as a write tool's result named it (`change_id`, e.g. "c3").
    /// Default: the latest change of this session.
    change_id: Option<String>,
}

/// The structured result of `undo_last_change`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct UndoResult {
    /// The change taken back.
    change_id: String,
    /// The tool that had made it.
    tool: String,
    /// What the change had done.
    summary: String,
    /// What the undo did, file by file.
    restored: Vec<String>,
}

/// The `undo_last_change` tool.
#[derive(Debug, Clone)]
pub(crate) struct UndoLastChange {
    settings: WriteSettings,
    journal: Journal,
}

impl UndoLastChange {
    /// The tool over the write tools' journal.
    pub(crate) fn new(settings: WriteSettings, journal: Journal) -> Self {
        Self { settings, journal }
    }
}

#[async_trait]
impl TypedTool for UndoLastChange {
    type Params = Params;
    type Output = UndoResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "undo_last_change",
            title: "Undo a file change",
            description: format!(
                "Take back a change this session's write tools made (write_file, edit_file, apply_patch, move_path, copy_path, delete_path): the latest, or the one named by the change_id its result gave. Files are put back as they were before it (created ones removed, removed ones restored, moves reversed), only if every file is still as the change left it; otherwise nothing is changed and the file that differs is named. The last {} changes of the session are kept.",
                journal::MAX_CHANGES
            ),
            purpose: "Revert a write, edit, patch, move, copy or delete that turned out wrong, without rewriting the old content from memory.",
            example: json!({}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "undo", "revert"],
            annotations: write::CHANGES,
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, _workspace: &Workspace) -> Option<String> {
        write::confirms(self.settings).then(|| {
            format!(
                "undo_last_change: take back {}",
                p.change_id
                    .as_deref()
                    .map_or("the latest change".to_owned(), |id| format!("change {id}"))
            )
        })
    }

    fn render(&self, r: &UndoResult) -> String {
        let mut out = format!(
            "Took back change {} ({}: {}):",
            r.change_id, r.tool, r.summary
        );
        for line in &r.restored {
            out.push_str("\n  ");
            out.push_str(line);
        }
        out
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<UndoResult, ToolError> {
        let change = self.journal.take(&ctx.session, p.change_id.as_deref())?;
        let workspace = ctx.workspace.clone();
        let allow_git = self.settings.allow_git_writes;
        let (change, outcome) = blocking(move || {
            let outcome = match journal::check(&workspace, allow_git, &change.steps) {
                Err(why) => Err(ToolError::InvalidArguments(format!(
                    "change {} ({}: {}) cannot be undone, because a file it touched is no longer as it left it: {why}. Nothing was changed; take back the later changes to that file first, or restore it by hand",
                    change.id(), change.tool, change.summary
                ))),
                Ok(()) => {
                    let (done, failed) = journal::apply(&workspace, allow_git, &change.steps);
                    if failed.is_empty() {
                        Ok(done)
                    } else {
                        Err(ToolError::ExecutionFailed(format!(
                            "taking back change {} failed part-way: {}; done: {}",
                            change.id(),
                            failed.join("; "),
                            if done.is_empty() { "nothing".to_owned() } else { done.join("; ") }
                        )))
                    }
                }
            };
            Ok((change, outcome))
        })
        .await?;
        match outcome {
            Ok(restored) => Ok(UndoResult {
                change_id: change.id(),
                tool: change.tool.to_owned(),
                summary: change.summary,
                restored,
            }),
            Err(error) => {
                if matches!(error, ToolError::InvalidArguments(_)) {
                    self.journal.put_back(&ctx.session, change);
                }
                Err(error)
            }
        }
    }
}
