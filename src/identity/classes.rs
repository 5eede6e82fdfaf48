//! Tool classes and the scopes that grant them: what an OAuth scope lets a principal use.
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
//! The scope map ([`ScopeMap`], `[http.oauth.scopes]`) names which classes each scope grants;
//! a principal's [`Access`] is the union over its scopes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use toolport_tools::AiTool;

use super::policy::{Applied, PolicyDenial};

/// The category of the built-in file tools.
const FILESYSTEM: &str = "filesystem";
/// The category of `execute_command` and the job tools.
const EXEC: &str = "exec";
/// The category of the web tools.
const WEB: &str = "web";
/// The rule granting every upstream's tools.
const ALL_UPSTREAMS: &str = "upstreams";
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

/// Which tool classes each scope grants (`[http.oauth.scopes]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeMap {
    /// Scope name -> the rules it grants (in name order: what a challenge names is stable).
    scopes: BTreeMap<String, Vec<ClassRule>>,
}

/// The scopes toolport knows without a `[http.oauth.scopes]` table: one per class.
const DEFAULT_SCOPES: &[(&str, &str)] = &[
    ("tools:read", "read"),
    ("tools:write", "write"),
    ("tools:exec", "exec"),
    ("tools:web", "web"),
    ("tools:upstreams", ALL_UPSTREAMS),
];

impl Default for ScopeMap {
    fn default() -> Self {
        let scopes = DEFAULT_SCOPES
            .iter()
            .map(|(scope, class)| {
                let rule =
                    ClassRule::parse(class).unwrap_or(ClassRule::Class(ToolClass::Unclassed));
                ((*scope).to_owned(), vec![rule])
            })
            .collect();
        Self { scopes }
    }
}

impl ScopeMap {
    /// The operator's table: scope name -> class names. A scope name must be a valid OAuth
    /// scope token (RFC 6749 §3.3: visible ASCII but space, `"` and `\`).
    pub(crate) fn parse(table: &BTreeMap<String, Vec<String>>) -> Result<Self, String> {
        if table.is_empty() {
            return Err("the table is empty: no scope would grant any tool".to_owned());
        }
        let mut scopes = BTreeMap::new();
        for (scope, classes) in table {
            let valid = !scope.is_empty()
                && scope
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
            if !valid {
                return Err(format!(
                    "{scope:?} is not a scope name (visible ASCII without spaces, quotes or backslashes)"
                ));
            }
            let rules = classes
                .iter()
                .map(|class| ClassRule::parse(class).map_err(|e| format!("scope {scope:?}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            scopes.insert(scope.clone(), rules);
        }
        Ok(Self { scopes })
    }

    /// Every scope name (the metadata's `scopes_supported`).
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.scopes.keys().map(String::as_str)
    }

    /// The table as the config file writes it (`toolport config`).
    pub(crate) fn table(&self) -> BTreeMap<&str, Vec<String>> {
        self.scopes
            .iter()
            .map(|(scope, rules)| {
                (
                    scope.as_str(),
                    rules.iter().map(ClassRule::to_string).collect(),
                )
            })
            .collect()
    }

    /// What a token with `scopes` may use (scopes the map does not know grant nothing).
    pub(crate) fn access(&self, scopes: &[String]) -> Access {
        let rules = scopes
            .iter()
            .filter_map(|scope| self.scopes.get(scope))
            .flatten()
            .cloned()
            .collect();
        Access {
            all: false,
            rules,
            policy: None,
        }
    }

    /// The scope that grants `class` (the first by name), for a challenge; `None` when no
    /// scope does.
    pub(crate) fn scope_for(&self, class: &ToolClass) -> Option<&str> {
        self.scopes
            .iter()
            .find(|(_, rules)| rules.iter().any(|rule| rule.covers(class)))
            .map(|(scope, _)| scope.as_str())
    }
}

/// The tools a principal may use: what its scopes grant, within the operator's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Access {
    /// Every tool the scopes could grant (the static token's holder).
    all: bool,
    rules: Vec<ClassRule>,
    /// The policy rules that apply (`[http.principals]`); `None` when none do.
    policy: Option<Arc<Applied>>,
}

impl Access {
    /// Every tool.
    pub(crate) fn all() -> Self {
        Self {
            all: true,
            rules: Vec::new(),
            policy: None,
        }
    }

    /// The same access within the policy rules `applied` (nothing changes when none apply).
    pub(crate) fn within(mut self, applied: Applied) -> Self {
        self.policy = (!applied.is_empty()).then(|| Arc::new(applied));
        self
    }

    /// Whether the scopes grant a tool of `class` (the policy aside: what a token with more
    /// scopes would change, so what a 403 `insufficient_scope` is about).
    pub(crate) fn allows(&self, class: &ToolClass) -> bool {
        self.all || self.rules.iter().any(|rule| rule.covers(class))
    }

    /// Why the policy refuses `tool`, if it does (scopes aside).
    pub(crate) fn policy_refuses(&self, tool: &dyn AiTool) -> Option<PolicyDenial> {
        let applied = self.policy.as_ref()?;
        applied
            .decide(
                tool.name(),
                &ToolClass::of(tool),
                tool.annotations().read_only,
            )
            .err()
    }

    /// Whether `tool` may be used: its scopes grant it and the policy does not refuse it.
    pub(crate) fn allows_tool(&self, tool: &dyn AiTool) -> bool {
        self.allows(&ToolClass::of(tool)) && self.policy_refuses(tool).is_none()
    }

    /// Whether every tool may be used (nothing to check).
    pub(crate) fn is_all(&self) -> bool {
        self.all && self.policy.is_none()
    }

    /// The policy rules that apply, when any do.
    pub(crate) fn policy(&self) -> Option<&Applied> {
        self.policy.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_default_map_grants_one_class_per_scope() {
        let map = ScopeMap::default();
        let read = map.access(&scopes(&["tools:read"]));
        assert!(read.allows(&ToolClass::Read));
        assert!(!read.allows(&ToolClass::Write));
        assert!(!read.allows(&ToolClass::Exec));
        let up = map.access(&scopes(&["tools:upstreams", "unknown:scope"]));
        assert!(up.allows(&ToolClass::Upstream("everything".into())));
        assert!(!up.allows(&ToolClass::Web));
        assert_eq!(map.scope_for(&ToolClass::Write), Some("tools:write"));
        assert_eq!(
            map.scope_for(&ToolClass::Upstream("x".into())),
            Some("tools:upstreams")
        );
        assert_eq!(map.scope_for(&ToolClass::Unclassed), None);
        assert!(map.access(&[]).rules.is_empty());
    }

    #[test]
    fn nothing_but_all_grants_an_unclassed_tool() {
        let map = ScopeMap::default();
        let every = map.access(&map.names().map(str::to_owned).collect::<Vec<_>>());
        assert!(!every.allows(&ToolClass::Unclassed));
        assert!(Access::all().allows(&ToolClass::Unclassed));
    }

    #[test]
    fn an_operator_map_names_classes_and_single_upstreams() {
        let table: BTreeMap<String, Vec<String>> = [
            (
                "files".to_owned(),
                vec!["read".to_owned(), "write".to_owned()],
            ),
            ("docs".to_owned(), vec!["upstream:docs".to_owned()]),
        ]
        .into();
        let map = ScopeMap::parse(&table).unwrap();
        let docs = map.access(&scopes(&["docs"]));
        assert!(docs.allows(&ToolClass::Upstream("docs".into())));
        assert!(!docs.allows(&ToolClass::Upstream("other".into())));
        assert!(map.access(&scopes(&["files"])).allows(&ToolClass::Write));
        assert_eq!(map.table()["files"], ["read", "write"]);
        let bad: BTreeMap<String, Vec<String>> =
            [("x".to_owned(), vec!["shell".to_owned()])].into();
        assert!(
            ScopeMap::parse(&bad)
                .unwrap_err()
                .contains("\"shell\" is not a tool class")
        );
        let bad: BTreeMap<String, Vec<String>> =
            [("two words".to_owned(), vec!["read".to_owned()])].into();
        assert!(ScopeMap::parse(&bad).is_err());
        assert!(ScopeMap::parse(&BTreeMap::new()).is_err());
    }
}
