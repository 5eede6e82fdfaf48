//! The built-in tools, and [`builtin_registry`], which registers them and applies the
//! operator's tool selection (enabled/disabled names, tags, category, name pattern).

use std::path::PathBuf;
use std::sync::Arc;

use crate::registry::ToolRegistry;
use crate::tool::AiTool;
use crate::typed::typed;

pub mod exec;
pub(crate) mod fs;
mod selection;
pub(crate) mod web;

pub(crate) use selection::FileTools;
pub(crate) use selection::SelectionArgs;
pub use selection::ToolSelection;

/// What the built-in tools are built with: each tool family's own settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BuiltinSettings<'a> {
    /// The workspace roots (the sandbox keeps them writable).
    pub(crate) roots: &'a [PathBuf],
    /// `read_file` and `list_directory` limits.
    pub(crate) fs: &'a fs::FsSettings,
    /// `execute_command`.
    pub(crate) exec: &'a exec::ExecSettings,
    /// `web_search`.
    pub(crate) web: &'a web::settings::WebSettings,
}

/// Every built-in tool, in listing order.
fn builtin_tools(settings: BuiltinSettings<'_>) -> Result<Vec<Arc<dyn AiTool>>, SelectionError> {
    let executor = exec::Executor::new(settings.exec, settings.roots).map_err(|reason| {
        SelectionError::Setup {
            tool: exec::NAME,
            reason,
        }
    })?;
    Ok(vec![
        typed(fs::ReadFile::new(settings.fs)),
        typed(fs::ListDirectory::new(settings.fs)),
        typed(fs::PathInfo),
        typed(exec::ExecuteCommand::new(Arc::new(executor))),
        typed(web::WebSearch::new(settings.web)),
    ])
}

/// Why the tool selection in the config cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    /// `tools.enabled` or `tools.disabled` names a tool that does not exist.
    #[error("unknown tool {name:?} in {key}; known tools are: {known}")]
    UnknownTool {
        /// The name as configured.
        name: String,
        /// `tools.enabled` or `tools.disabled`.
        key: &'static str,
        /// The known names.
        known: String,
    },
    /// A tool's settings are invalid (e.g. an unparsable policy rule).
    #[error("cannot set up {tool}: {reason}")]
    Setup {
        /// The tool's name.
        tool: &'static str,
        /// What is wrong, naming the setting.
        reason: String,
    },
    /// A built-in tool has an invalid definition (a bug).
    #[error(transparent)]
    Definition(#[from] crate::definition::DefinitionError),
}

/// The registry of the built-in tools that `selection` enables.
pub(crate) fn builtin_registry(
    settings: BuiltinSettings<'_>,
    selection: &ToolSelection,
) -> Result<ToolRegistry, SelectionError> {
    let mut all = ToolRegistry::new();
    for tool in builtin_tools(settings)? {
        all.register(tool)?;
    }
    let known = all.names().join(", ");
    for (key, names) in [
        (
            "tools.enabled",
            selection.enabled.as_deref().unwrap_or_default(),
        ),
        ("tools.disabled", selection.disabled.as_slice()),
    ] {
        if let Some(name) = names.iter().find(|n| all.get(n).is_none()) {
            return Err(SelectionError::UnknownTool {
                name: name.clone(),
                key,
                known,
            });
        }
    }
    let selected = all
        .retain_names(|name| {
            selection
                .enabled
                .as_ref()
                .is_none_or(|enabled| enabled.iter().any(|e| e == name))
                && !selection.disabled.iter().any(|d| d == name)
        })
        .filter(&selection.filter());
    Ok(selected)
}

/// Run blocking file work off the async runtime, mapping a panic or a runtime shutdown to a
/// tool error.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::tool::ToolError> + Send + 'static,
) -> Result<T, crate::tool::ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(crate::tool::ToolError::Cancelled(format!(
            "the server is shutting down ({e})"
        ))),
    }
}
