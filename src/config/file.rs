//! The TOML config file: its root composes each feature's own section type, and every
//! section rejects unknown keys, so a typo is an error naming the key, never a no-op.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;
use crate::observe::audit::FileAudit;
use crate::observe::trace::FileTelemetry;
use crate::plugins::FilePlugins;
use crate::tools::FileTools;
use crate::tools::exec::FileExec;
use crate::tools::fs::FileLimits;
use crate::tools::web::settings::FileWeb;
use crate::transport::http::settings::FileHttp;
use crate::workspace::FileWorkspace;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) roots: Option<Vec<PathBuf>>,
    pub(super) log_level: Option<String>,
    #[serde(default)]
    pub(super) tools: FileTools,
    #[serde(default)]
    pub(super) limits: FileLimits,
    #[serde(default)]
    pub(super) workspace: FileWorkspace,
    #[serde(default)]
    pub(super) exec: FileExec,
    #[serde(default)]
    pub(super) web: FileWeb,
    #[serde(default)]
    pub(super) http: FileHttp,
    #[serde(default)]
    pub(super) plugins: FilePlugins,
    #[serde(default)]
    pub(super) audit: FileAudit,
    #[serde(default)]
    pub(super) telemetry: FileTelemetry,
}

impl FileConfig {
    /// Read and parse `path`.
    pub(super) fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_owned(),
        })
    }
}
