//! Tool classes: what a tool can do, the grain scopes and policy rules grant access in.
//!
//! A tool's class says what it can do, the grain an operator grants access in:
//! - `read`: the file tools that only read (category `filesystem`, annotated read-only);
//! - `write`: the file tools that change files (the rest of `filesystem`, `undo_last_change`
//!   included);
//! - `exec`: commands and jobs (category `exec`), and every plugin tool, which runs a
//!   program whatever its manifest claims (a manifest may call itself `filesystem` and
//!   read-only; that is its author's word, not a property toolport checked);
//! - `web`: `web_search` and `fetch_url` (category `web`);
//! - `upstream:NAME`: the tools of one `[[upstreams]]` entry; `upstreams` grants them all.
//!
//! A built-in of another category has no class and no scope grants it (fail closed); a unit
//! test keeps every built-in classed.
//!
//! Which classes a scope grants, and what a principal may use, are `access.rs`'s.

use std::fmt;

use toolport_tools::AiTool;

/// The category of the built-in file tools.
const FILESYSTEM: &str = "filesystem";
/// The category of `execute_command` and the job tools.
const EXEC: &str = "exec";
/// The category of the web tools.
const WEB: &str = "web";
/// The rule granting every upstream's tools.
pub(crate) const ALL_UPSTREAMS: &str = "upstreams";
/// The prefix of the rule granting one upstream's tools.
const UPSTREAM_PREFIX: &str = "upstream:";

/// What a tool can do, as access is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolClass {
    /// A file tool that only reads.
    Read,
    /// A file tool that writes.
    Write,
    /// Commands, jobs and plugin tools.
    Exec,
    /// The web tools.
    Web,
    /// A tool of this `[[upstreams]]` entry.
    Upstream(String),
    /// None of the above: no scope grants it.
    Unclassed,
}

impl ToolClass {
    /// The class of `tool`.
    pub(crate) fn of(tool: &dyn AiTool) -> Self {
        if let Some(upstream) = tool.upstream() {
            return Self::Upstream(upstream.to_owned());
        }
        if tool.plugin() {
            return Self::Exec;
        }
        match tool.category() {
            Some(FILESYSTEM) if tool.annotations().read_only => Self::Read,
            Some(FILESYSTEM) => Self::Write,
            Some(EXEC) => Self::Exec,
            Some(WEB) => Self::Web,
            _ => Self::Unclassed,
        }
    }
}

impl fmt::Display for ToolClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read => f.write_str("read"),
            Self::Write => f.write_str("write"),
            Self::Exec => f.write_str("exec"),
            Self::Web => f.write_str("web"),
            Self::Upstream(name) => write!(f, "{UPSTREAM_PREFIX}{name}"),
            Self::Unclassed => f.write_str("unclassed"),
        }
    }
}

/// One class a scope (or a policy rule) names, as the config file writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClassRule {
    /// Exactly this class.
    Class(ToolClass),
    /// Every upstream's tools.
    AllUpstreams,
}

impl ClassRule {
    /// `read`, `write`, `exec`, `web`, `upstreams` or `upstream:NAME`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        Ok(match text.trim() {
            "read" => Self::Class(ToolClass::Read),
            "write" => Self::Class(ToolClass::Write),
            "exec" => Self::Class(ToolClass::Exec),
            "web" => Self::Class(ToolClass::Web),
            ALL_UPSTREAMS => Self::AllUpstreams,
            other => match other.strip_prefix(UPSTREAM_PREFIX) {
                Some(name) if !name.is_empty() => Self::Class(ToolClass::Upstream(name.to_owned())),
                _ => {
                    return Err(format!(
                        "{other:?} is not a tool class; the classes are read, write, exec, web, upstreams and upstream:NAME"
                    ));
                }
            },
        })
    }

    /// Whether it names `class` (never the unclassed).
    pub(crate) fn covers(&self, class: &ToolClass) -> bool {
        match self {
            Self::AllUpstreams => matches!(class, ToolClass::Upstream(_)),
            Self::Class(own) => own == class && *class != ToolClass::Unclassed,
        }
    }
}

impl fmt::Display for ClassRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Class(class) => class.fmt(f),
            Self::AllUpstreams => f.write_str(ALL_UPSTREAMS),
        }
    }
}
