//! Call budgets: how many tool calls one session may make, how fast, and how many at once —
//! the MCP server's form of an agent's "max calls per turn / max iterations" (a server sees no
//! turns, but it sees sessions).
//!
//! `[limits]` has three budget keys, each off by default, and the same three per tool under
//! `[limits.tools.NAME]` (the section's type, with the file tools' keys beside these, is the
//! library's `FileLimits`: the library owns the file's format):
//! - `max_calls_per_session`: calls admitted in the whole session;
//! - `max_calls_per_minute`: a token bucket per session (`governor`, GCRA): a burst of that
//!   many calls, then one more every minute / N;
//! - `max_concurrent_calls_per_session`: calls running at once.
//!
//! A call over a budget is not run: it gets an `isError` result naming the limit, its value
//! and when to retry (for rates), and the audit log records it as `denied`. Checks happen
//! under one lock per session, so a call that is refused consumes nothing except, for a
//! call refused by the session's rate after its tool's rate admitted it, that tool's token.
//!
//! Stateless HTTP has no sessions: each request is its own, so these limits do not bound it;
//! the HTTP transport's per-client request rate (`[http] max_requests_per_minute`) does.
//!
//! A session lives on one replica, so its budget is always counted here. The budgets policy
//! rules give principals ([`PrincipalBudgets`]) span sessions, and so replicas: with
//! `[replicas] redis_url` each call is admitted by one atomic script in Redis
//! ([`crate::cluster::Cluster::admit`], the same limits decided the same way), and while Redis
//! is away by the operator's choice: refused ([`Limit::StoreAway`]) or counted here.

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde::Serialize;
use toolport_tools::host::settings::{SettingError, check_range};
use toolport_tools::host::{FileBudget, FileLimits};

use crate::cluster::{self, Cluster, Lease, Refused, SharedLimit, WhenAway};
use crate::identity::policy::PolicyRule;

/// Largest `max_calls_per_session`: beyond any real session, below overflow.
const MAX_CALLS_PER_SESSION: u64 = 1_000_000_000;
/// Largest `max_calls_per_minute`: a thousand a second, far above what a model does.
const MAX_CALLS_PER_MINUTE: u32 = 60_000;
/// Largest `max_concurrent_calls_per_session`.
const MAX_CONCURRENT: u32 = 10_000;

/// One set of limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_calls_per_session: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_calls_per_minute: Option<NonZeroU32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_concurrent_calls_per_session: Option<NonZeroU32>,
}

impl Budget {
    fn load(file: FileBudget, prefix: &str) -> Result<Self, SettingError> {
        let key = |name: &str| format!("{prefix}{name}");
        let positive = |name: &str, value: u32, max: u32| {
            check_range(key(name), value, 1..=max)
                .map(|v| NonZeroU32::new(v).unwrap_or(NonZeroU32::MIN))
        };
        Ok(Self {
            max_calls_per_session: file
                .max_calls_per_session
                .map(|v| check_range(key("max_calls_per_session"), v, 1..=MAX_CALLS_PER_SESSION))
                .transpose()?,
            max_calls_per_minute: file
                .max_calls_per_minute
                .map(|v| positive("max_calls_per_minute", v, MAX_CALLS_PER_MINUTE))
                .transpose()?,
            max_concurrent_calls_per_session: file
                .max_concurrent_calls_per_session
                .map(|v| positive("max_concurrent_calls_per_session", v, MAX_CONCURRENT))
                .transpose()?,
        })
    }

    fn is_unlimited(&self) -> bool {
        *self == Self::default()
    }
}

/// The call budgets: the session's and each named tool's (`toolport config` prints them
/// inside `[limits]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BudgetSettings {
    #[serde(flatten)]
    pub(crate) session: Budget,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) tools: BTreeMap<String, Budget>,
}

impl BudgetSettings {
    /// Validate the budget keys of `[limits]` (the section's type is the library's, with the
    /// file tools' keys): every limit is at least 1 (leave a key out for no limit).
    pub(crate) fn load(file: &FileLimits) -> Result<Self, SettingError> {
        let session = Budget::load(
            FileBudget {
                max_calls_per_session: file.max_calls_per_session,
                max_calls_per_minute: file.max_calls_per_minute,
                max_concurrent_calls_per_session: file.max_concurrent_calls_per_session,
            },
            "limits.",
        )?;
        let mut tools = BTreeMap::new();
        for (name, budget) in &file.tools {
            let budget = Budget::load(*budget, &format!("limits.tools.{name}."))?;
            if !budget.is_unlimited() {
                tools.insert(name.clone(), budget);
            }
        }
        Ok(Self { session, tools })
    }

    /// Whether any limit is set (without one, calls skip the bookkeeping).
    pub(crate) fn is_unlimited(&self) -> bool {
        self.session.is_unlimited() && self.tools.is_empty()
    }

    /// Tool names with limits that are not among `served` (a typo, or a plugin tool that is
    /// not loaded yet): the server warns about them.
    pub(crate) fn unknown_tools<'a>(
        &'a self,
        served: &'a [&str],
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.tools
            .keys()
            .map(String::as_str)
            .filter(|name| !served.contains(name))
    }
}

/// Which limit refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    CallsPerSession,
    CallsPerMinute,
    Concurrent,
    /// The budget is shared through Redis, which cannot be reached, and the operator chose to
    /// refuse meanwhile (`[replicas] when_redis_away = "refuse"`).
    StoreAway,
}

impl Limit {
    fn key(self) -> &'static str {
        match self {
            Self::CallsPerSession => "max_calls_per_session",
            Self::CallsPerMinute => "max_calls_per_minute",
            Self::Concurrent => "max_concurrent_calls_per_session",
            Self::StoreAway => "replicas.when_redis_away",
        }
    }

    /// A shared refusal's limit.
    fn of(shared: SharedLimit) -> Self {
        match shared {
            SharedLimit::Calls => Self::CallsPerSession,
            SharedLimit::Rate => Self::CallsPerMinute,
            SharedLimit::Running => Self::Concurrent,
        }
    }
}

/// Whose budget refused a call: the session's (`[limits]`), or the one a policy rule gives a
/// principal across its sessions (`[[http.principals.rules]]`, named).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Owner {
    #[default]
    Session,
    Rule(String),
}

/// A call refused by a budget. Its `Display` is the message the model gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// Whose budget refused it.
    pub(crate) owner: Owner,
    pub(crate) limit: Limit,
    /// The tool whose own limit refused the call; `None` for the session's limits.
    pub(crate) tool: Option<String>,
    /// The limit's configured value.
    pub(crate) value: u64,
    /// When the call may be retried (rates only).
    pub(crate) retry_after: Option<Duration>,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Owner::Rule(rule) = &self.owner {
            return self.fmt_rule(rule, f);
        }
        let (key, calls) = match &self.tool {
            Some(tool) => (
                format!("limits.tools.{tool}.{}", self.limit.key()),
                format!("{tool} calls"),
            ),
            None => (format!("limits.{}", self.limit.key()), "tool calls".into()),
        };
        let value = self.value;
        match self.limit {
            Limit::CallsPerSession => write!(
                f,
                "call refused: this session has used its budget of {value} {calls} ({key} = {value}); the operator's limit cannot be raised from here — finish without this tool or start a new session"
            ),
            Limit::CallsPerMinute => {
                let wait = self.retry_after.unwrap_or_default();
                write!(
                    f,
                    "call refused: over the rate of {value} {calls} per minute ({key} = {value}); retry in {:.1} s",
                    wait.as_secs_f64().max(0.1)
                )
            }
            Limit::Concurrent => write!(
                f,
                "call refused: this session already has {value} {calls} running ({key} = {value}); retry when one of them has finished"
            ),
            Limit::StoreAway => fmt_store_away(self.retry_after, f),
        }
    }
}

/// The message of a call refused because its shared budget cannot be checked.
fn fmt_store_away(
    retry_after: Option<Duration>,
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    write!(
        f,
        "call refused: your call budget is shared by the server's replicas through a store that cannot be reached right now, and the operator chose to refuse calls meanwhile (replicas.when_redis_away = \"refuse\"); retry in {:.0} s",
        retry_after.unwrap_or_default().as_secs_f64().max(1.0)
    )
}

impl Denial {
    /// The message for a policy rule's budget (its keys are the rule's).
    fn fmt_rule(&self, rule: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = self.value;
        let key = |name: &str| format!("http.principals.rules[{rule:?}].{name}");
        match self.limit {
            Limit::CallsPerSession => write!(
                f,
                "call refused: you have used the {value} tool calls the server's policy gives you, across your sessions ({} = {value}); the operator's limit cannot be raised from here",
                key("max_calls")
            ),
            Limit::CallsPerMinute => write!(
                f,
                "call refused: over the {value} tool calls per minute the server's policy gives you ({} = {value}); retry in {:.1} s",
                key("max_calls_per_minute"),
                self.retry_after.unwrap_or_default().as_secs_f64().max(0.1)
            ),
            Limit::Concurrent => write!(
                f,
                "call refused: you already have {value} tool calls running, the most the server's policy allows ({} = {value}); retry when one of them has finished",
                key("max_concurrent_calls")
            ),
            Limit::StoreAway => fmt_store_away(self.retry_after, f),
        }
    }
}

/// Counts of one scope (the session, or one tool in it).
#[derive(Debug, Default)]
struct Counts {
    calls: u64,
    running: u32,
}

/// What one session has used, with its rate buckets.
#[derive(Debug)]
pub(crate) struct SessionBudget {
    /// Whose budget it is (in its refusals).
    owner: Owner,
    settings: Arc<BudgetSettings>,
    state: Mutex<State>,
    /// The session's bucket, when `max_calls_per_minute` is set.
    rate: Option<DefaultDirectRateLimiter>,
    /// Each limited tool's bucket.
    tool_rates: HashMap<String, DefaultDirectRateLimiter>,
}

#[derive(Debug, Default)]
struct State {
    session: Counts,
    tools: HashMap<String, Counts>,
}

fn bucket(per_minute: Option<NonZeroU32>) -> Option<DefaultDirectRateLimiter> {
    per_minute.map(|n| RateLimiter::direct(Quota::per_minute(n)))
}

impl SessionBudget {
    /// A new session's budget: nothing used.
    pub(crate) fn new(settings: Arc<BudgetSettings>) -> Arc<Self> {
        Self::owned(settings, Owner::Session)
    }

    /// A budget of `owner`'s.
    fn owned(settings: Arc<BudgetSettings>, owner: Owner) -> Arc<Self> {
        let rate = bucket(settings.session.max_calls_per_minute);
        let tool_rates = settings
            .tools
            .iter()
            .filter_map(|(name, b)| bucket(b.max_calls_per_minute).map(|r| (name.clone(), r)))
            .collect();
        Arc::new(Self {
            owner,
            settings,
            state: Mutex::default(),
            rate,
            tool_rates,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admit a call to `tool`, or say which limit refuses it. The permit holds the call's
    /// place among the running ones until it is dropped.
    pub(crate) fn admit(self: &Arc<Self>, tool: &str) -> Result<Permit, Denial> {
        if self.settings.is_unlimited() {
            return Ok(Permit {
                budget: None,
                tool: None,
                lease: None,
            });
        }
        let tool_budget = self.settings.tools.get(tool);
        let mut state = self.state();
        let deny = |limit, tool: Option<&str>, value: u64| Denial {
            owner: self.owner.clone(),
            limit,
            tool: tool.map(str::to_owned),
            value,
            retry_after: None,
        };
        let session = &self.settings.session;
        if let Some(max) = session.max_concurrent_calls_per_session
            && state.session.running >= max.get()
        {
            return Err(deny(Limit::Concurrent, None, max.get().into()));
        }
        if let Some(max) = session.max_calls_per_session
            && state.session.calls >= max
        {
            return Err(deny(Limit::CallsPerSession, None, max));
        }
        if let Some(budget) = tool_budget {
            let counts = state.tools.entry(tool.to_owned()).or_default();
            if let Some(max) = budget.max_concurrent_calls_per_session
                && counts.running >= max.get()
            {
                return Err(deny(Limit::Concurrent, Some(tool), max.get().into()));
            }
            if let Some(max) = budget.max_calls_per_session
                && counts.calls >= max
            {
                return Err(deny(Limit::CallsPerSession, Some(tool), max));
            }
        }
        // Rates last: a token taken cannot be given back.
        let limited = |limiter: &DefaultDirectRateLimiter, per_minute: Option<NonZeroU32>, t| {
            limiter.check().map_err(|not_until| Denial {
                owner: self.owner.clone(),
                limit: Limit::CallsPerMinute,
                tool: t,
                value: per_minute.map_or(0, |n| n.get().into()),
                retry_after: Some(not_until.wait_time_from(DefaultClock::default().now())),
            })
        };
        if let (Some(limiter), Some(budget)) = (self.tool_rates.get(tool), tool_budget) {
            limited(limiter, budget.max_calls_per_minute, Some(tool.to_owned()))?;
        }
        if let Some(limiter) = &self.rate {
            limited(limiter, session.max_calls_per_minute, None)?;
        }
        state.session.calls += 1;
        state.session.running += 1;
        if tool_budget.is_some()
            && let Some(counts) = state.tools.get_mut(tool)
        {
            counts.calls += 1;
            counts.running += 1;
        }
        Ok(Permit {
            budget: Some(self.clone()),
            tool: tool_budget.map(|_| tool.to_owned()),
            lease: None,
        })
    }
}

/// The budgets policy rules give principals (`[[http.principals.rules]]` with `max_calls`,
/// `max_calls_per_minute` or `max_concurrent_calls`): one per rule and subject, counted across
/// every session and stateless request of that subject — on this server, or with `[replicas]`
/// across every replica, in Redis.
///
/// A local entry lives as long as the server (a subject's used budget must not reset when
/// its sessions end); there is one per rule and subject that called, a bounded set in a
/// deployment whose principals an operator names in rules.
#[derive(Debug, Default)]
pub struct PrincipalBudgets {
    budgets: Mutex<HashMap<(String, String), Arc<SessionBudget>>>,
    /// The replicas' shared store, when configured.
    shared: Option<Arc<Cluster>>,
}

impl PrincipalBudgets {
    /// The budgets, counted in `shared` when replicas share a store, else here.
    pub(crate) fn new(shared: Option<Arc<Cluster>>) -> Self {
        Self {
            budgets: Mutex::default(),
            shared,
        }
    }

    /// The replicas' shared store, when configured.
    pub(crate) fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.shared.as_ref()
    }

    /// Admit a call to `tool` by `subject` under each of `rules`' budgets: permits, or the
    /// first refusal (nothing is counted then). Shared budgets are decided by one script in
    /// Redis; while it is away, by the operator's choice (refused, or counted here).
    pub(crate) async fn admit<'a>(
        &self,
        subject: &str,
        rules: impl Iterator<Item = &'a Arc<PolicyRule>>,
        tool: &str,
    ) -> Result<Vec<Permit>, Denial> {
        let rules: Vec<&Arc<PolicyRule>> = rules.collect();
        if rules.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(cluster) = &self.shared {
            let budgets: Vec<cluster::Budget> = rules
                .iter()
                .map(|rule| cluster::Budget {
                    name: format!(
                        "rule:{}:{}",
                        Cluster::key_part(&rule.name),
                        Cluster::key_part(subject)
                    ),
                    max_calls: rule.budget.max_calls,
                    per_minute: rule.budget.max_calls_per_minute,
                    max_running: rule.budget.max_concurrent_calls,
                })
                .collect();
            match cluster.admit(&budgets).await {
                Ok(lease) => return Ok(vec![Permit::shared(lease)]),
                Err(Refused::Over(refusal)) => {
                    let rule = rules[refusal.index.min(rules.len() - 1)];
                    let limits = rule.budget;
                    let limit = Limit::of(refusal.limit);
                    let value = match limit {
                        Limit::CallsPerSession => limits.max_calls.unwrap_or(0),
                        Limit::CallsPerMinute => limits.max_calls_per_minute.unwrap_or(0).into(),
                        Limit::Concurrent | Limit::StoreAway => {
                            limits.max_concurrent_calls.unwrap_or(0).into()
                        }
                    };
                    return Err(Denial {
                        owner: Owner::Rule(rule.name.clone()),
                        limit,
                        tool: None,
                        value,
                        retry_after: refusal.retry_after,
                    });
                }
                Err(Refused::Away(away)) => {
                    cluster.decided_without_store(&away);
                    if cluster.when_away() == WhenAway::Refuse {
                        return Err(Denial {
                            owner: Owner::Rule(rules[0].name.clone()),
                            limit: Limit::StoreAway,
                            tool: None,
                            value: 0,
                            retry_after: Some(cluster::RETRY_WHEN_AWAY),
                        });
                    }
                }
            }
        }
        self.admit_local(subject, &rules, tool)
    }

    /// [`PrincipalBudgets::admit`] on this server alone.
    fn admit_local(
        &self,
        subject: &str,
        rules: &[&Arc<PolicyRule>],
        tool: &str,
    ) -> Result<Vec<Permit>, Denial> {
        let mut permits = Vec::new();
        for rule in rules {
            let budget = {
                let mut budgets = self
                    .budgets
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                budgets
                    .entry((rule.name.clone(), subject.to_owned()))
                    .or_insert_with(|| {
                        let limits = rule.budget;
                        let settings = BudgetSettings {
                            session: Budget {
                                max_calls_per_session: limits.max_calls,
                                max_calls_per_minute: limits
                                    .max_calls_per_minute
                                    .and_then(NonZeroU32::new),
                                max_concurrent_calls_per_session: limits
                                    .max_concurrent_calls
                                    .and_then(NonZeroU32::new),
                            },
                            tools: BTreeMap::new(),
                        };
                        SessionBudget::owned(Arc::new(settings), Owner::Rule(rule.name.clone()))
                    })
                    .clone()
            };
            match budget.admit(tool) {
                Ok(permit) => permits.push(permit),
                Err(denial) => {
                    for permit in &permits {
                        permit.refund();
                    }
                    return Err(denial);
                }
            }
        }
        Ok(permits)
    }
}

/// An admitted call's place in its session's budget: running until dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    /// `None` when no limit is set.
    budget: Option<Arc<SessionBudget>>,
    /// The tool, when it has limits of its own.
    tool: Option<String>,
    /// Its place in budgets shared through Redis (given back when dropped).
    lease: Option<Lease>,
}

impl Permit {
    /// A call admitted by the shared store.
    fn shared(lease: Lease) -> Self {
        Self {
            budget: None,
            tool: None,
            lease: Some(lease),
        }
    }

    /// The call was not really made (the client will retry it with the user's answer to a
    /// confirmation question): give its count back, so the retry is the one that counts.
    /// (A rate token taken stays taken.)
    pub(crate) fn refund(&self) {
        if let Some(lease) = &self.lease {
            lease.refund();
        }
        if let Some(budget) = &self.budget {
            let mut state = budget.state();
            state.session.calls = state.session.calls.saturating_sub(1);
            if let Some(counts) = self.tool.as_ref().and_then(|t| state.tools.get_mut(t)) {
                counts.calls = counts.calls.saturating_sub(1);
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            let mut state = budget.state();
            state.session.running = state.session.running.saturating_sub(1);
            if let Some(counts) = self.tool.as_ref().and_then(|t| state.tools.get_mut(t)) {
                counts.running = counts.running.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(toml: &str) -> Arc<BudgetSettings> {
        let file: FileLimits = toml::from_str(toml).unwrap();
        Arc::new(BudgetSettings::load(&file).unwrap())
    }

    #[test]
    fn every_budget_key_of_the_section_is_read() {
        // `[tools.x]` last: after a table header every key belongs to the table.
        let text = "max_calls_per_session = 1\nmax_calls_per_minute = 2\n\
                    max_concurrent_calls_per_session = 3\n[tools.x]\nmax_calls_per_minute = 1";
        let settings = settings(text);
        assert_eq!(
            (
                settings.session.max_calls_per_session,
                settings.session.max_calls_per_minute.map(NonZeroU32::get),
                settings
                    .session
                    .max_concurrent_calls_per_session
                    .map(NonZeroU32::get)
            ),
            (Some(1), Some(2), Some(3))
        );
        assert!(settings.tools.contains_key("x"));
        assert!(toml::from_str::<FileLimits>("max_calls = 1").is_err());
    }

    #[test]
    fn zero_and_huge_values_are_refused_with_the_key() {
        let file: FileLimits = toml::from_str("max_calls_per_minute = 0").unwrap();
        let error = BudgetSettings::load(&file).unwrap_err();
        assert_eq!(error.key, "limits.max_calls_per_minute");
        let file: FileLimits =
            toml::from_str("[tools.execute_command]\nmax_concurrent_calls_per_session = 0")
                .unwrap();
        let error = BudgetSettings::load(&file).unwrap_err();
        assert_eq!(
            error.key,
            "limits.tools.execute_command.max_concurrent_calls_per_session"
        );
    }

    #[test]
    fn the_session_total_trips_at_its_value() {
        let budget = SessionBudget::new(settings("max_calls_per_session = 2"));
        drop(budget.admit("a").unwrap());
        drop(budget.admit("b").unwrap());
        let denial = budget.admit("a").unwrap_err();
        assert_eq!(denial.limit, Limit::CallsPerSession);
        assert_eq!(denial.value, 2);
        assert!(
            denial
                .to_string()
                .contains("limits.max_calls_per_session = 2")
        );
    }

    #[test]
    fn a_refund_gives_the_count_back() {
        let budget = SessionBudget::new(settings("max_calls_per_session = 1"));
        budget.admit("a").unwrap().refund();
        drop(budget.admit("a").unwrap());
        assert!(budget.admit("a").is_err());
    }

    #[test]
    fn concurrency_counts_running_calls_only() {
        let budget = SessionBudget::new(settings("max_concurrent_calls_per_session = 1"));
        let first = budget.admit("a").unwrap();
        let denial = budget.admit("b").unwrap_err();
        assert_eq!(denial.limit, Limit::Concurrent);
        assert!(denial.to_string().contains("retry when one"));
        drop(first);
        drop(budget.admit("b").unwrap());
    }

    #[test]
    fn a_tools_limit_applies_to_that_tool_only() {
        let budget = SessionBudget::new(settings(
            "[tools.execute_command]\nmax_calls_per_session = 1\nmax_calls_per_minute = 5",
        ));
        drop(budget.admit("execute_command").unwrap());
        let denial = budget.admit("execute_command").unwrap_err();
        assert_eq!(denial.tool.as_deref(), Some("execute_command"));
        assert!(
            denial
                .to_string()
                .contains("limits.tools.execute_command.max_calls_per_session = 1")
        );
        for _ in 0..10 {
            drop(budget.admit("read_file").unwrap());
        }
    }

    #[test]
    fn the_rate_refuses_past_the_burst_and_says_when_to_retry() {
        let budget = SessionBudget::new(settings("max_calls_per_minute = 3"));
        for _ in 0..3 {
            drop(budget.admit("a").unwrap());
        }
        let denial = budget.admit("a").unwrap_err();
        assert_eq!(denial.limit, Limit::CallsPerMinute);
        let wait = denial.retry_after.unwrap();
        // One call every 20 s refills.
        assert!(wait > Duration::from_secs(15) && wait <= Duration::from_secs(20));
        assert!(denial.to_string().contains("retry in"), "{denial}");
        // A refused call consumed nothing: the counts stay at 3.
        assert_eq!(budget.state().session.calls, 3);
    }

    #[test]
    fn no_limits_means_no_bookkeeping() {
        let budget = SessionBudget::new(Arc::default());
        let permit = budget.admit("a").unwrap();
        assert!(permit.budget.is_none());
    }
}
