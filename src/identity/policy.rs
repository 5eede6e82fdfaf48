//! The policy per principal (`[http.principals]`): rules as data that say, for the principals
//! they match (by subject, OAuth client, group or claim), which tools and tool classes they
//! may use, whether only read-only ones, which roots, and their own call budget.
//!
//! How a tool is decided for a principal, in this order, the same for `tools/list` and
//! `tools/call`:
//! 1. **Scopes are the ceiling.** A tool the token's scopes do not grant is never allowed
//!    ([`super::ScopeMap`]); no rule widens a token.
//! 2. **The matching rules** are every rule whose conditions all hold (a rule lists one or
//!    more of `subjects`, `clients`, `groups`, `claims`, each matched by any of its values;
//!    or `match_all`). Conditions only ever match by presence: there is no negated condition,
//!    so a rule cannot apply to a principal *because* it lacks a claim or a group (a negated
//!    filter that let unscoped callers through was a gateway's CVE this year,
//!    CVE-2026-108586). A principal no rule matches gets what `unmatched` says: its scopes'
//!    tools (`"scopes"`, the default) or nothing (`"nothing"`).
//! 3. **Deny wins.** A tool any matching rule denies (`deny_tools`, `deny_classes`, or not
//!    read-only under `read_only`) is refused, whatever another rule allows and in whatever
//!    order the rules are written.
//! 4. **Allow lists narrow.** A rule with `allow_tools` or `allow_classes` allows only those;
//!    a rule with neither allows what the scopes grant. With several matching rules, a tool
//!    must be allowed by at least one of them (and denied by none).
//!
//! Roots and budgets add up the same way: a principal's workspace is narrowed by every
//! matching rule's `roots` in turn (a path must lie inside each), and every matching rule's
//! budget must admit a call (`observe/budget.rs` keeps them per rule and subject).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};
use toolport_tools::host::config::{FilePrincipalRule, FilePrincipals};
use toolport_tools::host::settings::{SettingError, check_range};

use super::classes::{ClassRule, ToolClass};

/// The claim that holds a principal's groups unless `groups_claim` says another.
const DEFAULT_GROUPS_CLAIM: &str = "groups";
/// The most rules a policy may have: matching runs through all of them on every request.
const MAX_RULES: usize = 1000;
/// Largest `max_calls`: beyond any real use, below overflow.
const MAX_CALLS: u64 = 1_000_000_000;
/// Largest `max_calls_per_minute`.
const MAX_CALLS_PER_MINUTE: u32 = 60_000;
/// Largest `max_concurrent_calls`.
const MAX_CONCURRENT: u32 = 10_000;

/// What a principal that no rule matches may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Unmatched {
    /// What its token's scopes grant.
    #[default]
    Scopes,
    /// No tool.
    Nothing,
}

/// The operator's rules (`[http.principals]`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    unmatched: Unmatched,
    groups_claim: String,
    rules: Vec<Arc<PolicyRule>>,
    /// The section as written, its roots made absolute (what `toolport config` prints).
    source: Option<FilePrincipals>,
}

/// One rule: whom it matches, what it allows and denies, its roots and budget.
#[derive(Debug)]
pub(crate) struct PolicyRule {
    /// The rule's name, unique in the policy.
    pub(crate) name: String,
    who: Who,
    allow_tools: Option<Names>,
    deny_tools: Option<Names>,
    allow_classes: Vec<ClassRule>,
    deny_classes: Vec<ClassRule>,
    read_only: bool,
    /// The roots it narrows the workspace to (canonical, absolute).
    pub(crate) roots: Vec<PathBuf>,
    /// Its budget for each principal it matches.
    pub(crate) budget: RuleBudget,
}

/// A rule's call budget for each principal it matches, across the principal's sessions and
/// requests; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RuleBudget {
    pub(crate) max_calls: Option<u64>,
    pub(crate) max_calls_per_minute: Option<u32>,
    pub(crate) max_concurrent_calls: Option<u32>,
}

impl RuleBudget {
    /// Whether any limit is set.
    pub(crate) fn is_limited(&self) -> bool {
        *self != Self::default()
    }
}

/// Whom a rule matches: every listed condition must hold.
#[derive(Debug, Default)]
struct Who {
    all: bool,
    subjects: Vec<String>,
    clients: Vec<String>,
    groups: Vec<String>,
    claims: BTreeMap<String, String>,
}

/// Tool-name patterns (`*` matches any run of characters), with their text for messages.
#[derive(Debug)]
struct Names {
    set: GlobSet,
}

impl Names {
    fn parse(key: &str, patterns: &[String]) -> Result<Self, SettingError> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let glob = Glob::new(pattern).map_err(|e| {
                SettingError::new(key.to_owned(), format!("{pattern:?} is not a pattern: {e}"))
            })?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|e| SettingError::new(key.to_owned(), e.to_string()))?;
        Ok(Self { set })
    }

    fn matches(&self, name: &str) -> bool {
        self.set.is_match(name)
    }
}

/// What a principal presents to the rules.
pub(crate) struct Presented<'a> {
    pub(crate) subject: &'a str,
    pub(crate) client_id: Option<&'a str>,
    pub(crate) claims: &'a Map<String, Value>,
}

/// The rules that apply to one principal (computed once, when it authenticates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The matching rules, in the order written.
    rules: Vec<Arc<PolicyRule>>,
    /// No rule matched and `unmatched = "nothing"`.
    nothing: bool,
}

/// Rules are known by their names, unique in a policy.
impl PartialEq for PolicyRule {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for PolicyRule {}

/// Why the policy refuses a tool to a principal (the message a model gets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyDenial {
    /// The rule that refused it; `None` when no rule matched (`unmatched = "nothing"`) or
    /// no matching rule allows it.
    pub(crate) rule: Option<String>,
    pub(crate) reason: String,
}

impl std::fmt::Display for PolicyDenial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl Policy {
    /// The section's rules, validated; relative `roots` are taken from `base` (the config
    /// file's folder) and must exist.
    pub(crate) fn load(file: Option<&FilePrincipals>, base: &Path) -> Result<Self, SettingError> {
        let Some(file) = file else {
            return Ok(Self::default());
        };
        let unmatched = match file.unmatched.as_deref() {
            None | Some("scopes") => Unmatched::Scopes,
            Some("nothing") => Unmatched::Nothing,
            Some(other) => {
                return Err(SettingError::new(
                    "http.principals.unmatched",
                    format!("{other:?} is not allowed; use \"scopes\" or \"nothing\""),
                ));
            }
        };
        let groups_claim = file
            .groups_claim
            .clone()
            .unwrap_or_else(|| DEFAULT_GROUPS_CLAIM.to_owned());
        if file.rules.len() > MAX_RULES {
            return Err(SettingError::new(
                "http.principals.rules",
                format!("{} rules; at most {MAX_RULES}", file.rules.len()),
            ));
        }
        let mut rules: Vec<Arc<PolicyRule>> = Vec::new();
        let mut source = file.clone();
        for (rule, written) in file.rules.iter().zip(&mut source.rules) {
            let loaded = PolicyRule::load(rule, base)?;
            if !loaded.roots.is_empty() {
                written.roots = Some(loaded.roots.clone());
            }
            if rules.iter().any(|r| r.name == loaded.name) {
                return Err(SettingError::new(
                    "http.principals.rules",
                    format!(
                        "two rules are named {:?}; names must be unique",
                        loaded.name
                    ),
                ));
            }
            rules.push(Arc::new(loaded));
        }
        Ok(Self {
            unmatched,
            groups_claim,
            rules,
            source: Some(source),
        })
    }

    /// The section as `toolport config` prints it (`None` when the file has none).
    pub(crate) fn source(&self) -> Option<&FilePrincipals> {
        self.source.as_ref()
    }

    /// Whether the policy has any effect (rules, or `unmatched = "nothing"`).
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.unmatched == Unmatched::Scopes
    }

    /// The rules that apply to `who`.
    pub(crate) fn apply(&self, who: &Presented<'_>) -> Applied {
        let rules: Vec<Arc<PolicyRule>> = self
            .rules
            .iter()
            .filter(|rule| rule.who.matches(who, &self.groups_claim))
            .cloned()
            .collect();
        Applied {
            nothing: rules.is_empty() && self.unmatched == Unmatched::Nothing,
            rules,
        }
    }
}

impl PolicyRule {
    fn load(file: &FilePrincipalRule, base: &Path) -> Result<Self, SettingError> {
        let name = file.name.trim().to_owned();
        let key = |k: &str| format!("http.principals.rules[{name:?}].{k}");
        if name.is_empty() {
            return Err(SettingError::new(
                "http.principals.rules.name",
                "a rule needs a name (it is in the audit log and in refusals)",
            ));
        }
        let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
        let who = Who {
            all: file.match_all.unwrap_or(false),
            subjects: list(&file.subjects),
            clients: list(&file.clients),
            groups: list(&file.groups),
            claims: file.claims.clone().unwrap_or_default(),
        };
        let conditions = !who.subjects.is_empty()
            || !who.clients.is_empty()
            || !who.groups.is_empty()
            || !who.claims.is_empty();
        if who.all == conditions {
            return Err(SettingError::new(
                key("match_all"),
                if who.all {
                    "match_all = true matches every principal: leave out subjects, clients, groups and claims"
                } else {
                    "the rule matches no one: give subjects, clients, groups or claims (each matched by any of its values), or match_all = true"
                },
            ));
        }
        let classes = |k: &str, v: &Option<Vec<String>>| {
            list(v)
                .iter()
                .map(|c| ClassRule::parse(c).map_err(|e| SettingError::new(key(k), e)))
                .collect::<Result<Vec<_>, _>>()
        };
        let names = |k: &str, v: &Option<Vec<String>>| {
            v.as_ref().map(|p| Names::parse(&key(k), p)).transpose()
        };
        let mut roots = Vec::new();
        for root in list_paths(&file.roots) {
            let path = if root.is_absolute() {
                root.clone()
            } else {
                base.join(&root)
            };
            let canonical = std::fs::canonicalize(&path)
                .map_err(|e| SettingError::new(key("roots"), format!("{}: {e}", path.display())))?;
            roots.push(canonical);
        }
        if file.roots.as_ref().is_some_and(Vec::is_empty) {
            return Err(SettingError::new(
                key("roots"),
                "an empty list would leave no file at all; leave the key out to keep the server's roots",
            ));
        }
        let budget = RuleBudget {
            max_calls: file
                .max_calls
                .map(|v| check_range(key("max_calls"), v, 1..=MAX_CALLS))
                .transpose()?,
            max_calls_per_minute: file
                .max_calls_per_minute
                .map(|v| check_range(key("max_calls_per_minute"), v, 1..=MAX_CALLS_PER_MINUTE))
                .transpose()?,
            max_concurrent_calls: file
                .max_concurrent_calls
                .map(|v| check_range(key("max_concurrent_calls"), v, 1..=MAX_CONCURRENT))
                .transpose()?,
        };
        Ok(Self {
            who,
            allow_tools: names("allow_tools", &file.allow_tools)?,
            deny_tools: names("deny_tools", &file.deny_tools)?,
            allow_classes: classes("allow_classes", &file.allow_classes)?,
            deny_classes: classes("deny_classes", &file.deny_classes)?,
            read_only: file.read_only.unwrap_or(false),
            roots,
            budget,
            name,
        })
    }

    /// Why this rule denies the tool, if it does.
    fn denies(&self, name: &str, class: &ToolClass, read_only: bool) -> Option<String> {
        if self.deny_tools.as_ref().is_some_and(|n| n.matches(name)) {
            return Some(format!("rule {:?} denies the tool {name}", self.name));
        }
        if self.deny_classes.iter().any(|c| c.covers(class)) {
            return Some(format!("rule {:?} denies {class} tools", self.name));
        }
        if self.read_only && !read_only {
            return Some(format!(
                "rule {:?} allows only read-only tools, and {name} can change things",
                self.name
            ));
        }
        None
    }

    /// Whether this rule allows the tool (a rule without allow lists allows what the scopes
    /// grant).
    fn allows(&self, name: &str, class: &ToolClass) -> bool {
        if self.allow_tools.is_none() && self.allow_classes.is_empty() {
            return true;
        }
        self.allow_tools.as_ref().is_some_and(|n| n.matches(name))
            || self.allow_classes.iter().any(|c| c.covers(class))
    }
}

fn list_paths(roots: &Option<Vec<PathBuf>>) -> Vec<PathBuf> {
    roots.clone().unwrap_or_default()
}

impl Who {
    /// Whether every condition holds for `who` (each list by any of its values).
    fn matches(&self, who: &Presented<'_>, groups_claim: &str) -> bool {
        if self.all {
            return true;
        }
        let subject = self.subjects.is_empty() || self.subjects.iter().any(|s| s == who.subject);
        let client = self.clients.is_empty()
            || who
                .client_id
                .is_some_and(|id| self.clients.iter().any(|c| c == id));
        let groups = self.groups.is_empty() || {
            let held = strings(who.claims.get(groups_claim));
            self.groups.iter().any(|g| held.contains(&g.as_str()))
        };
        let claims = self
            .claims
            .iter()
            .all(|(name, want)| strings(who.claims.get(name)).contains(&want.as_str()));
        subject && client && groups && claims
    }
}

/// The string values of a claim: itself when a string (also split on spaces, as `scope`-like
/// claims are written), the strings of an array; nothing for any other type (a number or a
/// boolean never matches a condition written as text, and a missing claim matches nothing).
fn strings(claim: Option<&Value>) -> Vec<&str> {
    match claim {
        Some(Value::String(text)) => {
            let mut values = vec![text.as_str()];
            values.extend(text.split_whitespace().filter(|part| *part != text));
            values
        }
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

impl Applied {
    /// Whether the policy refuses the tool `name` (of `class`, read-only or not), and why:
    /// deny wins over allow, and with rules matched at least one must allow it.
    pub(crate) fn decide(
        &self,
        name: &str,
        class: &ToolClass,
        read_only: bool,
    ) -> Result<(), PolicyDenial> {
        if self.nothing {
            return Err(PolicyDenial {
                rule: None,
                reason: "no rule of the server's policy matches this principal, and the policy gives such principals no tools (http.principals.unmatched = \"nothing\")".to_owned(),
            });
        }
        if let Some((rule, reason)) = self
            .rules
            .iter()
            .find_map(|rule| rule.denies(name, class, read_only).map(|r| (rule, r)))
        {
            return Err(PolicyDenial {
                rule: Some(rule.name.clone()),
                reason: format!("the server's policy refuses {name}: {reason}"),
            });
        }
        if !self.rules.is_empty() && !self.rules.iter().any(|rule| rule.allows(name, class)) {
            let names: Vec<&str> = self.rules.iter().map(|r| r.name.as_str()).collect();
            return Err(PolicyDenial {
                rule: None,
                reason: format!(
                    "the server's policy refuses {name}: none of the rules that apply to this principal ({}) allows it",
                    names.join(", ")
                ),
            });
        }
        Ok(())
    }

    /// The matching rules that narrow the workspace, in order.
    pub(crate) fn roots(&self) -> impl Iterator<Item = &[PathBuf]> {
        self.rules
            .iter()
            .filter(|r| !r.roots.is_empty())
            .map(|r| r.roots.as_slice())
    }

    /// The matching rules with a budget.
    pub(crate) fn budgeted(&self) -> impl Iterator<Item = &Arc<PolicyRule>> {
        self.rules.iter().filter(|r| r.budget.is_limited())
    }

    /// Whether nothing applies (no rule matched, and unmatched principals keep their scopes).
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty() && !self.nothing
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A policy from the text of `[http.principals]` (and its rules).
    fn policy(toml_text: &str) -> Result<Policy, String> {
        let file: FilePrincipals = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        Policy::load(Some(&file), Path::new("/")).map_err(|e| e.to_string())
    }

    fn claims(value: &serde_json::Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    /// What `subject` through `client` with `claims` may do with `tool` (of `class`).
    fn decide(
        policy: &Policy,
        subject: &str,
        client: Option<&str>,
        claims: &Map<String, Value>,
        tool: &str,
        class: &ToolClass,
        read_only: bool,
    ) -> Result<(), PolicyDenial> {
        policy
            .apply(&Presented {
                subject,
                client_id: client,
                claims,
            })
            .decide(tool, class, read_only)
    }

    /// Three rules, each its own `[[rules]]` table.
    const RULE_TEXTS: [&str; 3] = [
        "[[rules]]\nname = \"contractors\"\ngroups = [\"contractors\"]\nallow_classes = [\"read\", \"web\"]\ndeny_tools = [\"fetch_url\"]\n",
        "[[rules]]\nname = \"alice\"\nsubjects = [\"alice\"]\nallow_tools = [\"execute_command\", \"read_*\"]\n",
        "[[rules]]\nname = \"no-shell-for-claude\"\nclients = [\"claude\"]\ndeny_classes = [\"exec\"]\n",
    ];

    fn rules_text() -> String {
        RULE_TEXTS.concat()
    }

    #[test]
    fn deny_wins_over_allow_whatever_the_order() {
        let none = Map::new();
        let groups = claims(&json!({"groups": ["contractors"]}));
        let mut reversed = RULE_TEXTS;
        reversed.reverse();
        for text in [rules_text(), reversed.concat()] {
            let p = policy(&text).unwrap();
            let may =
                |subject: &str,
                 client: Option<&str>,
                 c: &Map<String, Value>,
                 tool: &str,
                 class: ToolClass,
                 ro: bool| { decide(&p, subject, client, c, tool, &class, ro) };
            // alice may run commands (her rule allows it) ... unless through claude, whose
            // rule denies exec: deny wins.
            assert!(
                may(
                    "alice",
                    Some("cli"),
                    &none,
                    "execute_command",
                    ToolClass::Exec,
                    false
                )
                .is_ok()
            );
            let refused = may(
                "alice",
                Some("claude"),
                &none,
                "execute_command",
                ToolClass::Exec,
                false,
            )
            .unwrap_err();
            assert_eq!(refused.rule.as_deref(), Some("no-shell-for-claude"));
            // A contractor: the web, but not fetch_url, even though its class is allowed.
            assert!(may("bob", None, &groups, "web_search", ToolClass::Web, true).is_ok());
            let refused = may("bob", None, &groups, "fetch_url", ToolClass::Web, true).unwrap_err();
            assert_eq!(refused.rule.as_deref(), Some("contractors"));
            // alice in the contractors group: two allow lists, either may allow...
            let both = may(
                "alice",
                None,
                &groups,
                "execute_command",
                ToolClass::Exec,
                false,
            );
            assert!(both.is_ok(), "{both:?}");
            // ... and the contractors' deny still holds for her.
            assert!(may("alice", None, &groups, "fetch_url", ToolClass::Web, true).is_err());
        }
    }

    #[test]
    fn an_allow_list_narrows_and_an_unmatched_principal_keeps_its_scopes() {
        let p = policy(&rules_text()).unwrap();
        let groups = claims(&json!({"groups": "contractors"}));
        let write = decide(
            &p,
            "bob",
            None,
            &groups,
            "write_file",
            &ToolClass::Write,
            false,
        )
        .unwrap_err();
        assert!(
            write.reason.contains("none of the rules that apply"),
            "{write}"
        );
        // No rule matches carol: her scopes decide.
        assert!(
            decide(
                &p,
                "carol",
                None,
                &Map::new(),
                "write_file",
                &ToolClass::Write,
                false
            )
            .is_ok()
        );
        let strict = policy(&format!("unmatched = \"nothing\"\n{}", rules_text())).unwrap();
        let refused = decide(
            &strict,
            "carol",
            None,
            &Map::new(),
            "read_file",
            &ToolClass::Read,
            true,
        )
        .unwrap_err();
        assert!(
            refused.reason.contains("unmatched = \"nothing\""),
            "{refused}"
        );
    }

    /// Conditions match only by presence: a missing claim, a claim of another type, a group
    /// named like a substring, an empty client: none of them makes a rule apply.
    #[test]
    fn conditions_match_only_what_is_there() {
        let p = policy(
            r#"
            unmatched = "nothing"
            [[rules]]
            name = "acme"
            claims = { tenant = "acme" }
            [[rules]]
            name = "admins"
            groups = ["admin"]
            clients = ["console"]
        "#,
        )
        .unwrap();
        let read = |subject: &str, client: Option<&str>, c: serde_json::Value| {
            decide(
                &p,
                subject,
                client,
                &claims(&c),
                "read_file",
                &ToolClass::Read,
                true,
            )
            .is_ok()
        };
        assert!(read("x", None, json!({"tenant": "acme"})));
        assert!(read("x", None, json!({"tenant": ["other", "acme"]})));
        assert!(
            !read("x", None, json!({})),
            "a missing claim matches nothing"
        );
        assert!(!read("x", None, json!({"tenant": "acme-evil"})));
        assert!(!read("x", None, json!({"tenant": {"name": "acme"}})));
        assert!(!read("x", None, json!({"tenant": null})));
        // Both conditions of a rule must hold.
        assert!(read("x", Some("console"), json!({"groups": ["admin"]})));
        assert!(!read("x", None, json!({"groups": ["admin"]})));
        assert!(!read(
            "x",
            Some("console"),
            json!({"groups": ["administrators"]})
        ));
        assert!(!read("x", Some("console"), json!({"groups": [true, 1]})));
    }

    #[test]
    fn read_only_refuses_tools_that_change_things() {
        let p = policy("[[rules]]\nname = \"ro\"\nmatch_all = true\nread_only = true\n").unwrap();
        let none = Map::new();
        assert!(decide(&p, "x", None, &none, "read_file", &ToolClass::Read, true).is_ok());
        let refused =
            decide(&p, "x", None, &none, "write_file", &ToolClass::Write, false).unwrap_err();
        assert!(refused.reason.contains("only read-only tools"), "{refused}");
    }

    #[test]
    fn bad_rules_are_refused_with_their_key() {
        for (text, expected) in [
            ("[[rules]]\nname = \"a\"\n", "matches no one"),
            (
                "[[rules]]\nname = \"a\"\nmatch_all = true\nsubjects = [\"x\"]\n",
                "leave out subjects",
            ),
            ("[[rules]]\nname = \"\"\nmatch_all = true\n", "needs a name"),
            (
                "[[rules]]\nname = \"a\"\nmatch_all = true\n[[rules]]\nname = \"a\"\nmatch_all = true\n",
                "two rules are named",
            ),
            (
                "[[rules]]\nname = \"a\"\nmatch_all = true\nallow_classes = [\"shell\"]\n",
                "not a tool class",
            ),
            (
                "[[rules]]\nname = \"a\"\nmatch_all = true\nmax_calls = 0\n",
                "max_calls",
            ),
            (
                "[[rules]]\nname = \"a\"\nmatch_all = true\nroots = []\n",
                "empty list",
            ),
            (
                "[[rules]]\nname = \"a\"\nmatch_all = true\nroots = [\"/no/such/dir\"]\n",
                "/no/such/dir",
            ),
            ("unmatched = \"deny\"\n", "\"scopes\" or \"nothing\""),
        ] {
            let error = policy(text)
                .err()
                .unwrap_or_else(|| panic!("{text} loaded"));
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
