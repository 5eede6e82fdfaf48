//! Which tools are served, where their results' payload goes, which are always loaded by a
//! client that defers tools behind a search, and the result cap default pages fit under: the
//! `[tools]` section of the config file and the `--enable-tool` / `--disable-tool` /
//! `--payload` / `--always-load` / `--result-cap` flags (`TOOLPORT_ENABLED_TOOLS`,
//! `TOOLPORT_DISABLED_TOOLS`, `TOOLPORT_PAYLOAD`, `TOOLPORT_ALWAYS_LOAD`,
//! `TOOLPORT_RESULT_CAP`); the tool surface's keys are read here too, and are
//! `surface.rs`'s.

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::SelectionError;
use super::surface::{CORE_TOOLS, SurfaceArgs, SurfaceSetting, SurfaceSettings};
use crate::registry::{ToolFilter, ToolRegistry};
use crate::settings::{SettingError, check_range};

/// The selection flags.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "host", derive(clap::Args))]
pub(crate) struct SelectionArgs {
    /// Serve only these tools (comma-separated or repeated). Default: all.
    #[cfg_attr(
        feature = "host",
        arg(
            long = "enable-tool",
            value_name = "NAME",
            value_delimiter = ',',
            env = "TOOLPORT_ENABLED_TOOLS",
            global = true
        )
    )]
    pub(crate) enabled_tools: Vec<String>,

    /// Never serve these tools (comma-separated or repeated).
    #[cfg_attr(
        feature = "host",
        arg(
            long = "disable-tool",
            value_name = "NAME",
            value_delimiter = ',',
            env = "TOOLPORT_DISABLED_TOOLS",
            global = true
        )
    )]
    pub(crate) disabled_tools: Vec<String>,

    /// Where a result's payload (file text, matches, listings, command output) is sent, once:
    /// `auto` (by the client: structuredContent for Claude Code, Codex and VS Code, the text
    /// block for Claude Desktop, Zed, Continue, Cline, Goose and opencode, both for every other
    /// client), `text`, `structured`, or `both`.
    #[cfg_attr(
        feature = "host",
        arg(long, value_name = "FORM", env = "TOOLPORT_PAYLOAD", global = true)
    )]
    pub(crate) payload: Option<PayloadSetting>,

    /// Tools a client that defers tools behind a search (Claude Code) keeps loaded: listed
    /// with `anthropic/alwaysLoad` (comma-separated or repeated). Default: read_file, grep,
    /// glob, edit_file, execute_command.
    #[cfg_attr(
        feature = "host",
        arg(
            long = "always-load",
            value_name = "NAME",
            value_delimiter = ',',
            env = "TOOLPORT_ALWAYS_LOAD",
            global = true
        )
    )]
    pub(crate) always_load: Vec<String>,

    /// The most characters of one result the client keeps, which the default page of
    /// read_file, read_many_files, grep and command output fits under: `auto` (the client's
    /// own cap when it is known: 500000 for Claude Code; none for others), `off`, or a number
    /// of characters for every client.
    #[cfg_attr(
        feature = "host",
        arg(long, value_name = "CAP", env = "TOOLPORT_RESULT_CAP", global = true)
    )]
    pub(crate) result_cap: Option<ResultCapSetting>,

    /// What `tools/list` holds (`surface.rs`).
    #[cfg_attr(feature = "host", command(flatten))]
    pub(crate) surface: SurfaceArgs,
}

/// The smallest result cap an operator may set: Claude Code's own default for an MCP tool
/// that declares no size (`maxResultSizeChars:1e5`). Below it a page would hold little more
/// than its envelope.
const MIN_RESULT_CAP: u64 = 100_000;

/// The result cap default pages fit under (`[tools] result_cap`, `--result-cap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResultCapSetting {
    /// `"auto"` or `"off"`.
    Word(CapWord),
    /// At most this many characters, for every client.
    Chars(u64),
}

/// The words `result_cap` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapWord {
    /// The client's own cap, when it is a known client.
    #[default]
    Auto,
    /// No cap: the tools' own limits alone.
    Off,
}

impl Default for ResultCapSetting {
    fn default() -> Self {
        Self::Word(CapWord::Auto)
    }
}

impl std::str::FromStr for ResultCapSetting {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "auto" => Ok(Self::Word(CapWord::Auto)),
            "off" => Ok(Self::Word(CapWord::Off)),
            number => number.parse().map(Self::Chars).map_err(|_| {
                format!("{text:?} is not a result cap: use auto, off, or a number of characters")
            }),
        }
    }
}

impl ResultCapSetting {
    /// The cap for a client whose own cap (by its name) is `known`: `None` for no cap.
    pub fn for_client(self, known: Option<u64>) -> Option<u64> {
        match self {
            Self::Word(CapWord::Auto) => known,
            Self::Word(CapWord::Off) => None,
            Self::Chars(chars) => Some(chars),
        }
    }
}

/// Where results' payload goes (`[tools] payload`, `--payload`); `auto` decides per session
/// from the client's name (see `server::clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "host", derive(clap::ValueEnum))]
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
pub(crate) struct FileTools {
    enabled: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    category: Option<String>,
    name_pattern: Option<String>,
    payload: Option<PayloadSetting>,
    always_load: Option<Vec<String>>,
    result_cap: Option<ResultCapSetting>,
    surface: Option<SurfaceSetting>,
    pinned: Option<Vec<String>>,
    search_above: Option<usize>,
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
    /// The tools listed with `anthropic/alwaysLoad`.
    pub(crate) always_load: Vec<String>,
    /// Whether the operator named them (then each must be a tool); else the default, of
    /// which the tools not served are left out.
    #[serde(skip)]
    always_load_named: bool,
    /// The result cap default pages fit under.
    pub result_cap: ResultCapSetting,
    /// What `tools/list` holds.
    #[serde(flatten)]
    pub surface: SurfaceSettings,
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
            payload: args.payload.or(file.payload).unwrap_or_default(),
            result_cap: match args.result_cap.or(file.result_cap).unwrap_or_default() {
                ResultCapSetting::Chars(chars) => ResultCapSetting::Chars(check_range(
                    "tools.result_cap",
                    chars,
                    MIN_RESULT_CAP..=u64::MAX,
                )?),
                word => word,
            },
            always_load_named: !args.always_load.is_empty() || file.always_load.is_some(),
            always_load: if args.always_load.is_empty() {
                // The core tools, so a client's tool search never has to find them.
                file.always_load
                    .unwrap_or_else(|| CORE_TOOLS.iter().map(|&n| n.to_owned()).collect())
            } else {
                args.always_load.clone()
            },
            surface: SurfaceSettings::load(
                file.surface,
                file.pinned,
                file.search_above,
                &args.surface,
            )?,
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
        let always_load: &[String] = if self.always_load_named {
            &self.always_load
        } else {
            &[]
        };
        for (key, names) in [
            ("tools.enabled", self.enabled.as_deref().unwrap_or_default()),
            ("tools.disabled", self.disabled.as_slice()),
            ("tools.always_load", always_load),
            ("tools.pinned", self.surface.named_pins()),
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
            .filter(&self.filter())
            .with_always_load(&self.always_load))
    }
}
