//! The `[workspace]` section of the config file: the secret patterns the operator chose.

use serde::Serialize;

use super::DEFAULT_SECRET_PATTERNS;
#[cfg(doc)]
use super::Workspace;

/// The `[workspace]` section of the config file.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileWorkspace {
    secret_patterns: Option<Vec<String>>,
}

/// The secret rules the operator chose (compiled by [`Workspace::new`], which reports a bad
/// pattern).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceSettings {
    /// Paths matching these patterns are never read.
    pub secret_patterns: Vec<String>,
}

impl Default for WorkspaceSettings {
    fn default() -> Self {
        Self {
            secret_patterns: DEFAULT_SECRET_PATTERNS
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

impl WorkspaceSettings {
    /// The file's patterns, or the defaults.
    pub(crate) fn load(file: FileWorkspace) -> Self {
        file.secret_patterns
            .map_or_else(Self::default, |secret_patterns| Self { secret_patterns })
    }
}
