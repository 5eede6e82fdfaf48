//! The TOML config file: its root composes each feature's own section type, and every
//! section rejects unknown keys, so a typo is an error naming the key, never a no-op.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, de::Error as _};

use super::ConfigError;
use crate::observe::audit::FileAudit;
use crate::observe::budget::{self, FileBudgets};
use crate::observe::trace::FileTelemetry;
use crate::plugins::FilePlugins;
use crate::tools::FileTools;
use crate::tools::exec::FileExec;
use crate::tools::fs::{FileFs, FileLimits};
use crate::tools::web::settings::FileWeb;
use crate::transport::http::settings::FileHttp;
use crate::upstreams::FileUpstream;
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
    pub(super) limits: FileLimitsSection,
    #[serde(default)]
    pub(super) fs: FileFs,
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
    #[serde(default)]
    pub(super) upstreams: Vec<FileUpstream>,
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

/// `[limits]`: the file tools' size limits and the call budgets share the section (it was the
/// file tools' alone before budgets existed, and files that use it must keep working). It is
/// split by key: the budgets' keys ([`budget::KEYS`]) go to [`FileBudgets`], the rest to
/// [`FileLimits`]; each refuses what it does not know, so a typo is still an error naming it.
#[derive(Debug, Default)]
pub(super) struct FileLimitsSection {
    pub(super) fs: FileLimits,
    pub(super) calls: FileBudgets,
}

impl<'de> Deserialize<'de> for FileLimitsSection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fs = toml::Table::deserialize(deserializer)?;
        let calls: toml::Table = budget::KEYS
            .iter()
            .filter_map(|key| fs.remove_entry(*key))
            .collect();
        Ok(Self {
            fs: fs.try_into().map_err(|e: toml::de::Error| {
                D::Error::custom(format!(
                    "{} (or a call budget: {})",
                    e.message().trim_end(),
                    budget::KEYS.join(", ")
                ))
            })?,
            calls: calls
                .try_into()
                .map_err(|e: toml::de::Error| D::Error::custom(e.message().trim_end()))?,
        })
    }
}
