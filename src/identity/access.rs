//! What a principal may use ([`Access`]): the tool classes its token's scopes grant through the
//! operator's scope map ([`ScopeMap`], `[http.oauth.scopes]`: the union over its scopes),
//! within the policy rules that apply to it (`policy.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use toolport_tools::AiTool;

use super::classes::{ALL_UPSTREAMS, ClassRule, ToolClass};
use super::policy::{Applied, PolicyDenial};

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
