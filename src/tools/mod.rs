//! The built-in tools, and [`builtin_registry`], which registers them and applies the
//! operator's tool selection (enabled/disabled names, tags, category, name pattern).

use std::sync::Arc;

use crate::config::Config;
use crate::registry::ToolRegistry;
use crate::tool::AiTool;

pub mod exec;
pub mod fs;
pub mod web;

/// Every built-in tool, in listing order, set up from the configuration.
pub fn builtin_tools(config: &Config) -> Result<Vec<Arc<dyn AiTool>>, SelectionError> {
    let exec = exec::ExecuteCommand::new(config).map_err(|reason| SelectionError::Setup {
        tool: "execute_command",
        reason,
    })?;
    Ok(vec![
        Arc::new(fs::ReadFile),
        Arc::new(fs::ListDirectory),
        Arc::new(fs::PathInfo),
        Arc::new(exec),
        Arc::new(web::WebSearch::new(&config.web)),
    ])
}

/// Why the tool selection in the config cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    /// `tools.enabled` or `tools.disabled` names a tool that does not exist.
    #[error("unknown tool {name:?} in {key}; known tools are: {known}")]
    UnknownTool {
        /// The name.
        name: String,
        /// `tools.enabled` or `tools.disabled`.
        key: &'static str,
        /// The known names.
        known: String,
    },
    /// A tool's settings are invalid (e.g. an unparsable policy rule).
    #[error("cannot set up {tool}: {reason}")]
    Setup {
        /// The tool.
        tool: &'static str,
        /// What is wrong, naming the setting.
        reason: String,
    },
    /// A built-in tool has an invalid definition (a bug).
    #[error(transparent)]
    Definition(#[from] crate::definition::DefinitionError),
}

/// The registry of built-in tools that the configuration enables.
pub fn builtin_registry(config: &Config) -> Result<ToolRegistry, SelectionError> {
    let mut all = ToolRegistry::new();
    for tool in builtin_tools(config)? {
        all.register(tool)?;
    }
    let known = all.names().join(", ");
    let selection = &config.tools;
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

/// Deserialize validated arguments into a params struct. The schema check has already run, so
/// a failure here means the schema and the struct disagree; still, say what went wrong.
pub(crate) fn params<T: serde::de::DeserializeOwned>(
    args: crate::tool::JsonObject,
) -> Result<T, crate::tool::ToolError> {
    serde_json::from_value(serde_json::Value::Object(args))
        .map_err(|e| crate::tool::ToolError::InvalidArguments(e.to_string()))
}

/// A structured result as JSON (our result types always serialize).
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
