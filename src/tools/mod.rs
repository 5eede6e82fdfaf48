//! The built-in tools, and [`builtin_registry`], which registers them and applies the
//! operator's tool selection (enabled/disabled names, tags, category, name pattern).

use std::sync::Arc;

use crate::config::Config;
use crate::registry::ToolRegistry;
use crate::tool::AiTool;

pub mod fs;

/// Every built-in tool, in listing order.
pub fn builtin_tools() -> Vec<Arc<dyn AiTool>> {
    vec![
        Arc::new(fs::ReadFile),
        Arc::new(fs::ListDirectory),
        Arc::new(fs::PathInfo),
    ]
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
    /// A built-in tool has an invalid definition (a bug).
    #[error(transparent)]
    Definition(#[from] crate::definition::DefinitionError),
}

/// The registry of built-in tools that the configuration enables.
pub fn builtin_registry(config: &Config) -> Result<ToolRegistry, SelectionError> {
    let mut all = ToolRegistry::new();
    for tool in builtin_tools() {
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
