//! The built-in tools ([`builtin_tools`]), the command executor they share with plugin tools,
//! and the operator's tool selection (enabled/disabled names, tags, category, name pattern),
//! which `plugins::Catalog` applies to built-in and plugin tools alike.

use std::path::PathBuf;
use std::sync::Arc;

use crate::tool::AiTool;
use crate::typed::{typed, typed_bounded};

pub(crate) mod exec;
pub(crate) mod fs;
mod selection;
mod surface;
pub(crate) mod web;

pub(crate) use selection::FileTools;
pub(crate) use selection::SelectionArgs;
pub use selection::ToolSelection;
#[cfg(feature = "host")]
pub use selection::{PayloadSetting, ResultCapSetting};
#[cfg(feature = "host")]
pub use surface::{DEFAULT_SEARCH_ABOVE, Surface, SurfaceSetting, SurfaceSettings};

/// What the built-in tools are built with: each tool family's own settings.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinSettings<'a> {
    /// The workspace roots (the sandbox keeps them writable).
    pub roots: &'a [PathBuf],
    /// `read_file` and `list_directory` limits.
    pub fs: &'a fs::FsSettings,
    /// The write tools (`[fs]`): served or not, confirmed or not.
    pub write: &'a fs::WriteSettings,
    /// `execute_command`.
    pub exec: &'a exec::ExecSettings,
    /// `web_search`.
    pub web: &'a web::settings::WebSettings,
}

/// The built-in tools, and the command executor they share with plugin tools.
pub struct Builtins {
    /// Every built-in tool, in listing order.
    pub(crate) tools: Vec<Arc<dyn AiTool>>,
    /// The one executor (policy, slots, sandbox) of every tool that runs a command.
    pub(crate) executor: Arc<exec::Executor>,
    /// `web_search`'s provider requests by provider and outcome (a metric).
    pub(crate) web_requests: web::RequestCounter,
}

/// Build every built-in tool from its settings.
pub fn builtin_tools(settings: BuiltinSettings<'_>) -> Result<Builtins, SelectionError> {
    let executor = Arc::new(exec::Executor::new(settings.exec, settings.roots).map_err(
        |reason| SelectionError::Setup {
            tool: exec::NAME,
            reason,
        },
    )?);
    let web_requests = web::RequestCounter::default();
    let (job_output, job_input, job_kill, job_list) = exec::job_tools(&executor);
    let read_file = fs::ReadFile::new(settings.fs);
    // The tools whose results a byte limit bounds declare their largest result from it (the
    // listing's `anthropic/maxResultSizeChars`): read_file's page, read_many_files' whole
    // call and grep's matches are all capped by `read_max_bytes`, a command's output by
    // `max_output_bytes` per stream (stdout and stderr).
    let read_bytes = settings.fs.read_max_bytes;
    let output_bytes = u64::try_from(settings.exec.max_output_bytes)
        .unwrap_or(u64::MAX)
        .saturating_mul(2);
    let mut tools = vec![
        typed_bounded(read_file.clone(), read_bytes),
        typed(fs::ListDirectory::new(settings.fs)),
        typed(fs::PathInfo),
        typed_bounded(fs::Grep::new(settings.fs), read_bytes),
        typed(fs::Glob::new(settings.fs)),
        typed_bounded(fs::ReadManyFiles::new(read_file), read_bytes),
    ];
    if settings.write.write != fs::WriteMode::Off {
        // The write tools' changes, per session, for undo_last_change.
        let journal = fs::Journal::default();
        let write = *settings.write;
        tools.extend([
            typed(fs::WriteFile::new(write, journal.clone())),
            typed(fs::EditFile::new(write, journal.clone())),
            typed(fs::ApplyPatch::new(write, journal.clone())),
            typed(fs::CreateDirectory::new(write)),
            typed(fs::MovePath::new(write, journal.clone())),
            typed(fs::CopyPath::new(write, journal.clone())),
            typed(fs::DeletePath::new(write, journal.clone())),
            typed(fs::UndoLastChange::new(write, journal)),
        ]);
    }
    tools.extend([
        typed_bounded(exec::ExecuteCommand::new(executor.clone()), output_bytes),
        typed(job_output),
        typed(job_input),
        typed(job_kill),
        typed(job_list),
        typed(web::WebSearch::new(settings.web, web_requests.clone())),
        typed(web::FetchUrl::new(&settings.web.fetch)),
    ]);
    Ok(Builtins {
        tools,
        executor,
        web_requests,
    })
}

/// Why the tool selection in the config cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    /// `tools.enabled`, `tools.disabled`, `tools.always_load` or `tools.pinned` names a tool
    /// that does not exist.
    #[error("unknown tool {name:?} in {key}; known tools are: {known}")]
    UnknownTool {
        /// The name as configured.
        name: String,
        /// `tools.enabled`, `tools.disabled`, `tools.always_load` or `tools.pinned`.
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
