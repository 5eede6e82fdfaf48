//! `create_directory`: a directory inside the roots, with any missing parents. Not
//! destructive: nothing existing is changed, and an existing directory is success.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::settings::WriteSettings;
use super::write::{self, WRITE_TAG};
use super::{CATEGORY, blocking};
use crate::tool::{Annotations, ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};
use crate::workspace::Workspace;

/// Arguments of `create_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The directory: relative to the first workspace root, or absolute inside a root.
    /// Missing parent directories are created too.
    path: String,
}

/// The structured result of `create_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CreateDirectoryResult {
    /// Absolute path of the directory.
    path: String,
    /// False when the directory already existed (nothing was changed).
    created: bool,
}

/// The `create_directory` tool.
#[derive(Debug, Clone)]
pub(crate) struct CreateDirectory {
    settings: WriteSettings,
}

impl CreateDirectory {
    /// The tool with the operator's write settings.
    pub(crate) fn new(settings: WriteSettings) -> Self {
        Self { settings }
    }
}

#[async_trait]
impl TypedTool for CreateDirectory {
    type Params = Params;
    type Output = CreateDirectoryResult;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_directory",
            title: "Create directory",
            description: "Create a directory inside the workspace roots, with any missing parent directories (like mkdir -p). An existing directory is not an error (created is then false). Secret paths (.ssh …) and .git/ are refused.".into(),
            purpose: "Make the folder a new file goes into before calling write_file (which never creates parent directories).",
            example: json!({"path": "src/tools/new_module"}),
            category: CATEGORY,
            tags: &[WRITE_TAG, "filesystem", "directory", "create"],
            annotations: Annotations {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }
    }

    const ASKS_CONFIRMATION: bool = true;

    fn confirmation(&self, p: &Params, _workspace: &Workspace) -> Option<String> {
        write::confirms(self.settings).then(|| format!("create_directory: create {}", p.path))
    }

    fn render(&self, r: &CreateDirectoryResult) -> String {
        if r.created {
            format!("Created the directory {}", r.path)
        } else {
            format!("{} already exists as a directory; nothing changed", r.path)
        }
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<CreateDirectoryResult, ToolError> {
        let workspace = ctx.workspace.clone();
        let allow_git = self.settings.allow_git_writes;
        blocking(move || {
            let (path, created) = workspace.create_dir_all(&p.path, allow_git)?;
            Ok(CreateDirectoryResult {
                path: path.display().to_string(),
                created,
            })
        })
        .await
    }
}
