//! The config file's format: [`FileConfig`], the whole file as serde reads it. It composes each
//! feature's section type (`File<X>`, beside its settings) and the server's own sections
//! ([`super::server`]), and every one of them refuses unknown keys, so a misspelled key is an
//! error naming it whichever front door reads the file: the `toolport` binary or
//! [`Settings::from_toml`](crate::Settings::from_toml). Nothing here validates a value; that
//! is each feature's `<X>Settings::load`.

use std::path::PathBuf;

use serde::Deserialize;

use super::server::{FileAudit, FileHttp, FileReplicas, FileTelemetry};
use crate::plugins::FilePlugins;
use crate::tools::FileTools;
use crate::tools::exec::FileExec;
use crate::tools::fs::{FileFs, FileLimits};
use crate::tools::web::settings::FileWeb;
use crate::upstreams::FileUpstream;
use crate::workspace::FileWorkspace;

/// The whole file. The tool sections are read by [`ToolConfig::load`](super::ToolConfig::load);
/// the server reads its own from the `pub` fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub(crate) roots: Option<Vec<PathBuf>>,
    /// The server's log filter.
    pub log_level: Option<String>,
    #[serde(default)]
    pub(crate) tools: FileTools,
    /// The file tools' sizes and the server's call budgets.
    #[serde(default)]
    pub limits: FileLimits,
    #[serde(default)]
    pub(crate) fs: FileFs,
    #[serde(default)]
    pub(crate) workspace: FileWorkspace,
    #[serde(default)]
    pub(crate) exec: FileExec,
    #[serde(default)]
    pub(crate) web: FileWeb,
    /// The server's HTTP transport.
    #[serde(default)]
    pub http: FileHttp,
    #[serde(default)]
    pub(crate) plugins: FilePlugins,
    /// The server's audit log.
    #[serde(default)]
    pub audit: FileAudit,
    /// The server's trace export.
    #[serde(default)]
    pub telemetry: FileTelemetry,
    /// The replicas' shared store.
    #[serde(default)]
    pub replicas: FileReplicas,
    /// Other MCP servers whose tools are served (the server also reads them again on a
    /// reload).
    #[serde(default)]
    pub upstreams: Vec<FileUpstream>,
}

impl FileConfig {
    /// Parse a config file's text. The error is the parser's message, which names the key (an
    /// unknown one with the keys its section takes) and its line.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())
    }
}
