//! The names an upstream's tools are served under: `name__tool` or the tool's own, by the
//! upstream's prefix mode, made valid for every export format, and never two of one name.
//!
//! Pure functions over the names, so every rule is unit-tested: the catalog calls
//! [`assign`] with what is registered already (built-in and plugin tools) and every ready
//! upstream's tools, in the configured order.

use std::collections::{HashMap, HashSet};

use super::settings::PrefixMode;
use crate::definition::MAX_TOOL_NAME_LEN;

/// Between an upstream's name and its tool's: `everything__echo`.
pub(crate) const SEPARATOR: &str = "__";

/// Hex digits of the hash that ends a name shortened to fit [`MAX_TOOL_NAME_LEN`]: two long
/// names with one beginning stay apart.
const HASH_HEX: usize = 8;

/// `name` as a tool name every format takes (`[A-Za-z0-9_-]{1,64}`): any other character
/// becomes `_` (`files.read` → `files_read`, `a/b` → `a_b`), and a longer name keeps its
/// beginning and ends with a hash of the whole (stable across restarts).
pub(crate) fn servable(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    if out.len() > MAX_TOOL_NAME_LEN {
        let keep = MAX_TOOL_NAME_LEN - HASH_HEX - 1;
        out.truncate(keep);
        out.push('_');
        out.push_str(&format!(
            "{:0width$x}",
            fnv1a(name) & 0xffff_ffff,
            width = HASH_HEX
        ));
    }
    out
}

/// FNV-1a: a small stable hash (not `std`'s, which is seeded per process).
fn fnv1a(text: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    text.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// `upstream__tool`, servable.
pub(crate) fn prefixed(upstream: &str, tool: &str) -> String {
    servable(&format!("{upstream}{SEPARATOR}{tool}"))
}

/// One upstream's tools, by their own names, with its prefix mode.
pub(crate) struct Offer<'a> {
    pub(crate) upstream: &'a str,
    pub(crate) prefix: PrefixMode,
    pub(crate) tools: Vec<&'a str>,
}

/// What [`assign`] decided for one tool.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Assigned {
    /// Served under this name.
    Served(String),
    /// Not served: why (a warning).
    Skipped(String),
}

/// The served name of every offered tool, in order (`result[i][j]` for `offers[i].tools[j]`).
/// `taken` holds the names already registered (built-in and plugin tools). `always` gets
/// `upstream__tool`; `conditional` the tool's own name unless a registered tool or another
/// upstream's tool has it, else the prefixed one; `never` the own name, or nothing when it is
/// taken. A name given out earlier (in configured order) is never given again.
pub(crate) fn assign(taken: &HashSet<String>, offers: &[Offer<'_>]) -> Vec<Vec<Assigned>> {
    // How many upstreams offer each own (servable) name: a conditional tool whose name
    // another upstream also has is prefixed, whatever the order.
    let mut offered: HashMap<String, usize> = HashMap::new();
    for offer in offers {
        let names: HashSet<String> = offer.tools.iter().map(|t| servable(t)).collect();
        for name in names {
            *offered.entry(name).or_default() += 1;
        }
    }
    let mut used: HashSet<String> = taken.clone();
    offers
        .iter()
        .map(|offer| {
            offer
                .tools
                .iter()
                .map(|tool| {
                    let own = servable(tool);
                    let name = match offer.prefix {
                        PrefixMode::Always => prefixed(offer.upstream, tool),
                        PrefixMode::Never => own,
                        PrefixMode::Conditional => {
                            if used.contains(&own) || offered.get(&own).copied().unwrap_or(0) > 1 {
                                prefixed(offer.upstream, tool)
                            } else {
                                own
                            }
                        }
                    };
                    if used.insert(name.clone()) {
                        Assigned::Served(name)
                    } else {
                        Assigned::Skipped(format!(
                            "not serving tool {tool:?} of upstream {}: another tool is named {name:?} (set prefix = \"always\" or \"conditional\" on the upstream, or deny_tools = [{tool:?}])",
                            offer.upstream
                        ))
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_valid_and_short_enough() {
        assert_eq!(servable("get-sum"), "get-sum");
        assert_eq!(servable("files.read/all"), "files_read_all");
        assert_eq!(servable(""), "_");
        let long = "x".repeat(80);
        let short = servable(&long);
        assert_eq!(short.len(), MAX_TOOL_NAME_LEN);
        assert_ne!(
            short,
            servable(&format!("{long}y")),
            "the hash keeps them apart"
        );
        assert_eq!(short, servable(&long), "stable");
        assert!(crate::definition::is_valid_tool_name(&short));
        assert_eq!(prefixed("everything", "echo"), "everything__echo");
    }

    fn served(assigned: &[Assigned]) -> Vec<&str> {
        assigned
            .iter()
            .map(|a| match a {
                Assigned::Served(name) => name.as_str(),
                Assigned::Skipped(_) => "-",
            })
            .collect()
    }

    #[test]
    fn each_mode_names_as_documented() {
        let taken: HashSet<String> = ["read_file".to_owned()].into();
        let offers = [
            Offer {
                upstream: "a",
                prefix: PrefixMode::Always,
                tools: vec!["echo", "read_file"],
            },
            Offer {
                upstream: "c",
                prefix: PrefixMode::Conditional,
                tools: vec!["read_file", "search", "fetch"],
            },
            Offer {
                upstream: "n",
                prefix: PrefixMode::Never,
                tools: vec!["search", "read_file", "list"],
            },
        ];
        let result = assign(&taken, &offers);
        assert_eq!(served(&result[0]), ["a__echo", "a__read_file"]);
        // read_file is a built-in; search is offered by n too: both prefixed. fetch is unique.
        assert_eq!(served(&result[1]), ["c__read_file", "c__search", "fetch"]);
        // never: search is free (c took c__search), read_file is taken: skipped.
        assert_eq!(served(&result[2]), ["search", "-", "list"]);
        match &result[2][1] {
            Assigned::Skipped(why) => assert!(why.contains("prefix"), "{why}"),
            Assigned::Served(name) => panic!("served as {name}"),
        }
    }
}
