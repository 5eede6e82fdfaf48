//! Which tools are served: the `[tools]` section of the config file and the
//! `--enable-tool` / `--disable-tool` flags (`TOOLPORT_ENABLED_TOOLS`,
//! `TOOLPORT_DISABLED_TOOLS`).

use clap::Args;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::registry::ToolFilter;
use crate::settings::SettingError;

/// The selection flags.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SelectionArgs {
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
}

/// The `[tools]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTools {
    enabled: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    category: Option<String>,
    name_pattern: Option<String>,
}

/// Which tools are served.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolSelection {
    /// Only these tools (`None`: all).
    pub(crate) enabled: Option<Vec<String>>,
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
}

impl ToolSelection {
    /// Layer the file < flags/environment, and compile the name pattern.
    pub(crate) fn load(file: FileTools, args: &SelectionArgs) -> Result<Self, SettingError> {
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
}
