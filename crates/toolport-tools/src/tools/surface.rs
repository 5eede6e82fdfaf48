//! What a session's `tools/list` holds: every served tool (`full`), or the pinned tools plus a
//! tool that finds the others and one that calls them (`search`), or one of the two picked per
//! client (`auto`, the server's client table). The `[tools]` keys `surface`, `pinned` and
//! `search_above`, and the flags `--surface`, `--pin`, `--search-above` (`TOOLPORT_SURFACE`,
//! `TOOLPORT_PINNED`, `TOOLPORT_SEARCH_ABOVE`).
//!
//! Why: three or four upstreams put 60–150 tools in one list. Some clients cap it (VS Code:
//! 128), some degrade (Cursor: past about 40), and every agent framework that sends every
//! definition with every request pays for them each turn. A client that searches tools itself
//! (Claude Code) is better served by the whole list with its hints.

use serde::{Deserialize, Serialize};

use crate::settings::{SettingError, check_range};

/// The surface flags (flattened into the selection's).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "host", derive(clap::Args))]
pub(crate) struct SurfaceArgs {
    /// What `tools/list` holds: `auto` (by the client: the whole list for clients that search
    /// tools themselves, the pinned tools plus search_tools and call_tool for clients past
    /// their known limit or, for others, past --search-above tools), `full`, or `search`.
    #[cfg_attr(
        feature = "host",
        arg(long, value_name = "SURFACE", env = "TOOLPORT_SURFACE", global = true)
    )]
    pub(crate) surface: Option<SurfaceSetting>,

    /// The tools listed beside search_tools and call_tool in the search surface
    /// (comma-separated or repeated). Default: read_file, grep, glob, edit_file,
    /// execute_command.
    #[cfg_attr(
        feature = "host",
        arg(
            long = "pin",
            value_name = "NAME",
            value_delimiter = ',',
            env = "TOOLPORT_PINNED",
            global = true
        )
    )]
    pub(crate) pinned: Vec<String>,

    /// With `--surface auto`, a client toolport knows nothing about gets the search surface
    /// once it would be listed more than this many tools. Default: 40.
    #[cfg_attr(
        feature = "host",
        arg(
            long,
            value_name = "TOOLS",
            env = "TOOLPORT_SEARCH_ABOVE",
            global = true
        )
    )]
    pub(crate) search_above: Option<usize>,
}

/// What `tools/list` holds (`[tools] surface`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "host", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum SurfaceSetting {
    /// By the client (the server's table), and the catalog's size.
    #[default]
    Auto,
    /// Every served tool.
    Full,
    /// The pinned tools, search_tools and call_tool.
    Search,
}

/// The surface a session gets once `auto` is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Every tool the session may use.
    Full,
    /// The pinned tools, search_tools and call_tool.
    Search,
}

/// The default of `search_above`: past it, a client toolport does not know gets the search
/// surface. Anthropic's tool-search documentation puts the point where a model's choice of
/// tool degrades at 30–50 tools, and Cursor degrades past about 40; toolport's own tools are
/// 21, so an upstream or two fit before the list is replaced.
pub const DEFAULT_SEARCH_ABOVE: usize = 40;

/// The range `search_above` takes: 1 (search once there is more than one tool) to a number
/// no catalog reaches (never search).
const SEARCH_ABOVE_RANGE: std::ops::RangeInclusive<usize> = 1..=100_000;

/// toolport's core tools: the ones an agent reaches for in almost every task. The default of
/// `always_load` (a client's tool search never has to find them) and of `pinned` (listed
/// beside the two search tools).
pub(crate) const CORE_TOOLS: &[&str] =
    &["read_file", "grep", "glob", "edit_file", "execute_command"];

/// The settings of the tool surface.
#[derive(Debug, Clone, Serialize)]
pub struct SurfaceSettings {
    /// `[tools] surface`.
    pub surface: SurfaceSetting,
    /// `[tools] pinned`: listed in the search surface, in this order.
    pub pinned: Vec<String>,
    /// `[tools] search_above`.
    pub search_above: usize,
    /// Whether the operator named the pinned tools (then each must be a tool).
    #[serde(skip)]
    pub(crate) pinned_named: bool,
}

impl Default for SurfaceSettings {
    fn default() -> Self {
        Self {
            surface: SurfaceSetting::Auto,
            pinned: CORE_TOOLS.iter().map(|&n| n.to_owned()).collect(),
            search_above: DEFAULT_SEARCH_ABOVE,
            pinned_named: false,
        }
    }
}

impl SurfaceSettings {
    /// Layer the file's keys < flags/environment.
    pub(crate) fn load(
        surface: Option<SurfaceSetting>,
        pinned: Option<Vec<String>>,
        search_above: Option<usize>,
        args: &SurfaceArgs,
    ) -> Result<Self, SettingError> {
        let defaults = Self::default();
        let pinned_named = !args.pinned.is_empty() || pinned.is_some();
        let pinned = if args.pinned.is_empty() {
            pinned.unwrap_or(defaults.pinned)
        } else {
            args.pinned.clone()
        };
        if let Some(blank) = pinned.iter().find(|n| n.trim().is_empty()) {
            return Err(SettingError::new(
                "tools.pinned",
                format!(
                    "{blank:?} is not a tool name: list tool names, e.g. [\"read_file\", \"grep\"]"
                ),
            ));
        }
        Ok(Self {
            surface: args.surface.or(surface).unwrap_or_default(),
            pinned,
            search_above: check_range(
                "tools.search_above",
                args.search_above
                    .or(search_above)
                    .unwrap_or(defaults.search_above),
                SEARCH_ABOVE_RANGE,
            )?,
            pinned_named,
        })
    }

    /// The pinned names the selection must check (those the operator named).
    pub(crate) fn named_pins(&self) -> &[String] {
        if self.pinned_named { &self.pinned } else { &[] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_defaults_fill_the_rest() {
        let loaded = SurfaceSettings::load(None, None, None, &SurfaceArgs::default()).unwrap();
        assert_eq!(loaded.surface, SurfaceSetting::Auto);
        assert_eq!(loaded.pinned, CORE_TOOLS);
        assert_eq!(loaded.search_above, DEFAULT_SEARCH_ABOVE);
        assert!(loaded.named_pins().is_empty());

        let args = SurfaceArgs {
            surface: Some(SurfaceSetting::Full),
            pinned: vec!["grep".into()],
            search_above: Some(20),
        };
        let loaded = SurfaceSettings::load(
            Some(SurfaceSetting::Search),
            Some(vec!["read_file".into()]),
            Some(90),
            &args,
        )
        .unwrap();
        assert_eq!(loaded.surface, SurfaceSetting::Full);
        assert_eq!(loaded.pinned, ["grep"]);
        assert_eq!(loaded.search_above, 20);
        assert_eq!(loaded.named_pins(), ["grep"]);
    }

    #[test]
    fn bad_values_name_the_key_and_what_it_takes() {
        let error = SurfaceSettings::load(None, None, Some(0), &SurfaceArgs::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("tools.search_above"), "{error}");
        let error =
            SurfaceSettings::load(None, Some(vec![" ".into()]), None, &SurfaceArgs::default())
                .unwrap_err()
                .to_string();
        assert!(error.contains("tools.pinned"), "{error}");
    }
}
