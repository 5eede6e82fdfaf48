//! Which tools are served, and where their results' payload goes: the `[tools]` section of
//! the config file and the `--enable-tool` / `--disable-tool` / `--payload` flags
//! (`TOOLPORT_ENABLED_TOOLS`, `TOOLPORT_DISABLED_TOOLS`, `TOOLPORT_PAYLOAD`).

use clap::Args;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::SelectionError;
use crate::registry::{ToolFilter, ToolRegistry};
use crate::settings::SettingError;

/// The selection flags.
#[derive(Debug, Clone, Default, Args)]
pub struct SelectionArgs {
    /// Serve only these tools (comma-separated or repeated). Default: all.
    #[arg(
        long = "enable-tool",
        value_name = "NAME",
        value_delimiter = ',',
        env = "TOOLPORT_ENABLED_TOOLS",
        global = true
    )]
    pub(crate) enabled_tools: Vec<String>,

    /// Never serve these tools (comma-separated or repeated).
    #[arg(
        long = "disable-tool",
        value_name = "NAME",
        value_delimiter = ',',
        env = "TOOLPORT_DISABLED_TOOLS",
        global = true
    )]
    pub(crate) disabled_tools: Vec<String>,

    /// Where a result's payload (file text, matches, listings, command output) is sent, once:
    /// `auto` (by the client: structuredContent for Claude Code, Codex and VS Code, the text
    /// block for Claude Desktop, Zed, Continue, Cline, Goose and opencode, both for every other
    /// client), `text`, `structured`, or `both`.
    #[arg(long, value_name = "FORM", env = "TOOLPORT_PAYLOAD", global = true)]
    pub(crate) payload: Option<PayloadSetting>,
}

/// Where results' payload goes (`[tools] payload`, `--payload`); `auto` decides per session
/// from the client's name (see `server::clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PayloadSetting {
    /// By the client.
    #[default]
    Auto,
    /// Always in the text block.
    Text,
    /// Always in structuredContent.
    Structured,
    /// In both (twice).
    Both,
}

/// The `[tools]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTools {
    enabled: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    category: Option<String>,
    name_pattern: Option<String>,
    payload: Option<PayloadSetting>,
}

/// Which tools are served, and where their results' payload goes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolSelection {
    /// Only these tools (`None`: all).
    pub enabled: Option<Vec<String>>,
    /// Never these tools.
    pub(crate) disabled: Vec<String>,
    /// Only tools with all of these tags.
    pub(crate) tags: Vec<String>,
    /// Only tools in this category.
    pub(crate) category: Option<String>,
    /// Only tools whose name matches this regex.
    pub(crate) name_pattern: Option<String>,
    #[serde(skip)]
    name_regex: Option<Regex>,
    /// Where results' payload goes.
    pub payload: PayloadSetting,
}

impl ToolSelection {
    /// Layer the file < flags/environment, and compile the name pattern.
    pub fn load(file: FileTools, args: &SelectionArgs) -> Result<Self, SettingError> {
        let name_regex = file
            .name_pattern
            .as_deref()
            .map(Regex::new)
            .transpose()
            .map_err(|e| {
                SettingError::new(
                    "tools.name_pattern",
                    format!("not a valid regular expression: {e}"),
                )
            })?;
        Ok(Self {
            enabled: if args.enabled_tools.is_empty() {
                file.enabled
            } else {
                Some(args.enabled_tools.clone())
            },
            disabled: if args.disabled_tools.is_empty() {
                file.disabled.unwrap_or_default()
            } else {
                args.disabled_tools.clone()
            },
            tags: file.tags.unwrap_or_default(),
            category: file.category,
            name_pattern: file.name_pattern,
            name_regex,
            payload: args.payload.or(file.payload).unwrap_or_default(),
        })
    }

    /// The tag/category/name part of the selection as a registry filter.
    pub(crate) fn filter(&self) -> ToolFilter {
        ToolFilter {
            tags: self.tags.clone(),
            category: self.category.clone(),
            name_pattern: self.name_regex.clone(),
        }
    }

    /// The tools of `all` that the selection serves. A name in `tools.enabled` or
    /// `tools.disabled` that no tool has is an error when `strict`, else a warning (with
    /// plugins, the tool may come from a manifest that failed to load).
    pub(crate) fn apply(
        &self,
        all: &ToolRegistry,
        strict: bool,
    ) -> Result<ToolRegistry, SelectionError> {
        for (key, names) in [
            ("tools.enabled", self.enabled.as_deref().unwrap_or_default()),
            ("tools.disabled", self.disabled.as_slice()),
        ] {
            for name in names.iter().filter(|n| all.get(n).is_none()) {
                let error = SelectionError::UnknownTool {
                    name: name.clone(),
                    key,
                    known: all.names().join(", "),
                };
                if strict {
                    return Err(error);
                }
                tracing::warn!("{error}");
            }
        }
        Ok(all
            .retain_names(|name| {
                self.enabled
                    .as_ref()
                    .is_none_or(|enabled| enabled.iter().any(|e| e == name))
                    && !self.disabled.iter().any(|d| d == name)
            })
            .filter(&self.filter()))
    }
}
