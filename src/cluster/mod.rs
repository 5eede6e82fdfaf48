//! Replicas behind a load balancer: the state they must share, kept in Redis (`[replicas]
//! redis_url`). One file per concern:
//! - [`settings`]: `[replicas]` and its flags (the URL, the password from a file or the
//!   environment, this replica's id and internal address, the Redis-away choice, the bound on
//!   a command);
//! - [`store`]: the connection, every command under the bound, and the health (up, or away
//!   since when and why) that `/readyz` and the metrics show;
//! - [`scripts`]: the atomic decisions as Lua (a call against budgets, a refund, the heartbeat);
//! - [`registry`]: the live replicas (id, internal address, heartbeat with expiry);
//! - [`jobs`]: jobs and tasks across replicas (ids that name their replica, requests
//!   forwarded to it, a gone replica's jobs reported lost, every replica's jobs listed);
//! - [`internal`]: how replicas sign and check the requests they forward to each other.
//!
//! Here: [`Cluster`], what the rest of the server asks: admit a call against shared budgets
//! ([`Cluster::admit`], giving a [`Lease`] that holds its place among running calls until
//! dropped), and whether calls that need a shared decision are refused or decided locally
//! while Redis is away ([`Cluster::when_away`]); other shared state (the built-in
//! authorization server's) runs its own commands through [`Cluster::run`] under [`Cluster::key`].
//!
//! Without `redis_url` there is no `Cluster`: nothing connects and no task runs. Redis is one
//! server (or a primary behind a fixed address): the scripts touch several keys, which Redis
//! Cluster's slots would split.

pub(crate) mod internal;
pub(crate) mod jobs;
mod registry;
mod scripts;
pub(crate) mod settings;
mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio_util::sync::CancellationToken;
use toolport_tools::host::JobTable;
use toolport_tools::host::secret::random_token;

pub(crate) use self::scripts::SharedLimit;
use self::scripts::{ADMIT, REFUND, Verdict};
pub(crate) use self::settings::{ReplicaArgs, ReplicaSettings, WhenAway};
use self::store::Store;
pub(crate) use self::store::{Away, Health};

/// Calls that ended (or were refunded) while Redis was away, kept to be given back on its
/// return; past this many the oldest are dropped (their places come back when their replica
/// leaves the registry).
const MAX_PENDING: usize = 10_000;

/// When a call refused because Redis is away may be retried: the heartbeat reconnects once a
/// second, so a second later the store may answer again.
pub(crate) const RETRY_WHEN_AWAY: Duration = registry::BEAT_INTERVAL;

/// How often the "deciding locally" warning is repeated during an outage: once would be lost
/// in a long log, every call would flood it.
const LOCAL_WARNING_EVERY: Duration = Duration::from_secs(60);

/// What a key's variable part may not hold: the separator, the escape and control characters.
const KEY_PART: &AsciiSet = &CONTROLS.add(b':').add(b'%').add(b' ').add(b'*');

/// One budget a call must fit in: its name (a part of its keys) and its limits.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    /// The budget's own part of its keys (`rule:NAME:SUBJECT`), from [`Cluster::key_part`].
    pub(crate) name: String,
    pub(crate) max_calls: Option<u64>,
    pub(crate) per_minute: Option<u32>,
    pub(crate) max_running: Option<u32>,
}

/// A shared refusal: which budget (its index among those asked) and which limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) index: usize,
    pub(crate) limit: SharedLimit,
    /// When to retry (rates only).
    pub(crate) retry_after: Option<Duration>,
}

/// Something to give back to Redis once it answers again.
#[derive(Debug)]
enum Pending {
    /// A call that ended: out of these running sets.
    Release { sets: Vec<String>, member: String },
    /// A call that was not really made: these counters down by one.
    Refund { counters: Vec<String> },
}

/// The shared state of the replicas, for this one.
#[derive(Debug)]
pub(crate) struct Cluster {
    settings: ReplicaSettings,
    store: Store,
    /// When this replica started (in its registry details).
    started: SystemTime,
    /// The numbers of this replica's calls (their ids in running sets: `REPLICA/N`).
    calls: AtomicU64,
    pending: Mutex<Vec<Pending>>,
    /// `toolport_shared_store_up`.
    up: Gauge,
    /// `toolport_shared_store_away_decisions` by outcome.
    away: Family<Vec<(String, String)>, Counter>,
    /// When the last "deciding locally" warning was logged.
    last_local_warning: Mutex<Option<std::time::Instant>>,
    /// Which start of this replica this is (random): job ids name it.
    incarnation: String,
    /// This replica's jobs, told to the others at each beat ([`jobs`]).
    jobs: OnceLock<JobTable>,
    /// What the beats told of each job: id → (owner hash, record, when written).
    published: Mutex<HashMap<String, (String, String, std::time::Instant)>>,
    /// The client for requests forwarded to other replicas.
    http: reqwest::Client,
    /// The checker of requests other replicas forward here (with an internal secret).
    verifier: Option<internal::Verifier>,
}

impl Cluster {
    /// The cluster for `settings`, not connected yet ([`Cluster::start`] connects).
    pub(crate) fn new(settings: ReplicaSettings) -> Result<Arc<Self>, String> {
        let up = Gauge::default();
        let store = Store::new(&settings, up.clone())?;
        let incarnation = random_token(jobs::INCARNATION_BYTES)
            .map_err(|e| format!("cannot draw this replica's start id: {e}"))?;
        // Internal calls go straight to the replica: no proxy from the environment, no
        // redirect followed.
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the client for forwarded requests: {e}"))?;
        let verifier = settings
            .internal_secret
            .as_ref()
            .map(|(secret, _)| internal::Verifier::new(secret, &settings.id.value));
        Ok(Arc::new(Self {
            settings,
            store,
            started: registry::now(),
            calls: AtomicU64::new(0),
            pending: Mutex::new(Vec::new()),
            up,
            away: Family::default(),
            last_local_warning: Mutex::new(None),
            incarnation,
            jobs: OnceLock::new(),
            published: Mutex::default(),
            http,
            verifier,
        }))
    }

    /// Its metrics, for the registry: whether Redis is up, and the decisions taken while it
    /// was away by outcome.
    pub(crate) fn metrics(&self) -> (Gauge, Family<Vec<(String, String)>, Counter>) {
        (self.up.clone(), self.away.clone())
    }

    /// Count a decision Redis was away for: `refused`, or `local` (taken by this replica
    /// alone), and warn about a local one (at most every [`LOCAL_WARNING_EVERY`]).
    pub(crate) fn decided_without_store(&self, away: &Away) {
        let outcome = self.settings.when_redis_away.name();
        let outcome = if outcome == "refuse" {
            "refused"
        } else {
            outcome
        };
        self.away
            .get_or_create(&vec![("outcome".to_owned(), outcome.to_owned())])
            .inc();
        if self.settings.when_redis_away == WhenAway::Local {
            let now = std::time::Instant::now();
            let mut last = self
                .last_local_warning
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_none_or(|t| now.duration_since(t) >= LOCAL_WARNING_EVERY) {
                *last = Some(now);
                tracing::warn!(
                    %away,
                    "deciding budgets and rates on this replica alone while Redis is away (when_redis_away = \"local\"): each replica may allow a whole budget meanwhile"
                );
            }
        }
    }

    /// Connect and start the heartbeat, until `stop`. Serving does not wait for Redis: a
    /// replica whose Redis is away starts, says so, and catches up when it answers.
    pub(crate) async fn start(self: &Arc<Self>, stop: CancellationToken) {
        match self.store.connect().await {
            Ok(()) => tracing::info!(
                replica = %self.settings.id.value,
                "sharing state with the other replicas through Redis"
            ),
            Err(away) => tracing::warn!(
                replica = %self.settings.id.value,
                %away,
                "Redis cannot be reached at start; retrying every second"
            ),
        }
        if self.settings.forward_jobs && self.settings.internal_url.is_none() {
            tracing::warn!(
                replica = %self.settings.id.value,
                "replicas.internal_url is not set: the other replicas cannot forward requests for this replica's jobs and tasks to it"
            );
        } else if !self.settings.forward_jobs {
            tracing::info!(
                "requests for other replicas' jobs and tasks are answered with an error naming the replica (replicas.forward_jobs is off, or no replicas.internal_secret_file is set)"
            );
        }
        self.spawn_heartbeat(stop);
    }

    /// Connect without joining the registry or beating (a one-shot command, `toolport auth`).
    pub(crate) async fn connect(&self) -> Result<(), Away> {
        self.store.connect().await
    }

    /// This replica's id.
    pub(crate) fn id(&self) -> &str {
        &self.settings.id.value
    }

    /// What calls that need a shared decision get while Redis is away.
    pub(crate) fn when_away(&self) -> WhenAway {
        self.settings.when_redis_away
    }

    /// The store's state.
    pub(crate) fn health(&self) -> Health {
        self.store.health()
    }

    /// A key under the prefix.
    pub(crate) fn key(&self, rest: &str) -> String {
        format!("{}:{rest}", self.settings.key_prefix)
    }

    /// Run one command (or script, or atomic pipeline) on the shared store, bounded like every
    /// other: the door for state kept there by others than the budgets (the built-in
    /// authorization server's grants and keys, `transport/http/oauth/builtin/store/`).
    pub(crate) async fn run<T, F, Fut>(&self, command: F) -> Result<T, Away>
    where
        F: FnOnce(redis::aio::MultiplexedConnection) -> Fut,
        Fut: Future<Output = Result<T, redis::RedisError>>,
    {
        self.store.run(command).await
    }

    /// A variable part of a key (a rule's name, a subject, an address), escaped so it cannot
    /// reach into another key's space.
    pub(crate) fn key_part(text: &str) -> String {
        utf8_percent_encode(text, KEY_PART).to_string()
    }

    /// Admit one call against `budgets`, atomically across every replica: all admit (and
    /// count it), or the first that refuses is named and nothing is counted.
    pub(crate) async fn admit(self: &Arc<Self>, budgets: &[Budget]) -> Result<Lease, Refused> {
        let member = format!(
            "{}/{}",
            self.settings.id.value,
            self.calls.fetch_add(1, Ordering::Relaxed)
        );
        let keys: Vec<[String; 3]> = budgets
            .iter()
            .map(|b| {
                let base = self.key(&format!("budget:{}", b.name));
                [
                    format!("{base}:calls"),
                    format!("{base}:rate"),
                    format!("{base}:running"),
                ]
            })
            .collect();
        let live = self.key("replicas");
        let answer: Vec<i64> = {
            let (keys, budgets, member) = (&keys, budgets, member.clone());
            self.store
                .run(|mut connection| async move {
                    let mut call = ADMIT.prepare_invoke();
                    for triple in keys {
                        call.key(&triple[0]).key(&triple[1]).key(&triple[2]);
                    }
                    call.key(live).arg(budgets.len()).arg(member);
                    for b in budgets {
                        call.arg(b.max_calls.unwrap_or(0))
                            .arg(b.per_minute.unwrap_or(0))
                            .arg(b.max_running.unwrap_or(0));
                    }
                    call.invoke_async(&mut connection).await
                })
                .await
                .map_err(Refused::Away)?
        };
        match Verdict::read(&answer).map_err(|e| Refused::Away(Away::Failed(e)))? {
            Verdict::Admitted => Ok(Lease {
                cluster: self.clone(),
                counters: budgets
                    .iter()
                    .zip(&keys)
                    .filter(|(b, _)| b.max_calls.is_some())
                    .map(|(_, k)| k[0].clone())
                    .collect(),
                running: budgets
                    .iter()
                    .zip(&keys)
                    .filter(|(b, _)| b.max_running.is_some())
                    .map(|(_, k)| k[2].clone())
                    .collect(),
                member,
            }),
            Verdict::Refused {
                index,
                limit,
                retry_after_ms,
            } => Err(Refused::Over(Refusal {
                index,
                limit,
                retry_after: (limit == SharedLimit::Rate)
                    .then(|| Duration::from_millis(retry_after_ms.max(1))),
            })),
        }
    }

    /// Give back to Redis, in the background, what a call held or counted.
    fn give_back(self: &Arc<Self>, pending: Pending) {
        let cluster = self.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            cluster.keep(pending);
            return;
        };
        runtime.spawn(async move {
            if let Err(pending) = cluster.send(pending).await {
                cluster.keep(pending);
            }
        });
    }

    fn keep(&self, pending: Pending) {
        let mut list = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if list.len() >= MAX_PENDING {
            list.remove(0);
        }
        list.push(pending);
    }

    async fn send(&self, pending: Pending) -> Result<(), Pending> {
        let result = match &pending {
            Pending::Release { sets, member } => {
                self.store
                    .run(|mut connection| async move {
                        let mut pipe = redis::pipe();
                        for set in sets {
                            pipe.srem(set, member).ignore();
                        }
                        pipe.query_async::<()>(&mut connection).await
                    })
                    .await
            }
            Pending::Refund { counters } => {
                self.store
                    .run(|mut connection| async move {
                        let mut call = REFUND.prepare_invoke();
                        for key in counters {
                            call.key(key);
                        }
                        call.invoke_async::<i64>(&mut connection).await.map(|_| ())
                    })
                    .await
            }
        };
        result.map_err(|_| pending)
    }

    /// Send what was kept during an outage (the heartbeat, once Redis answers).
    async fn flush(&self) {
        let kept = std::mem::take(
            &mut *self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let mut left = kept.into_iter();
        while let Some(pending) = left.next() {
            if let Err(pending) = self.send(pending).await {
                self.keep(pending);
                left.for_each(|p| self.keep(p));
                return;
            }
        }
    }
}

/// Why a shared admission did not admit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A budget refused the call.
    Over(Refusal),
    /// Redis could not decide.
    Away(Away),
}

/// An admitted call's place in the shared budgets, given back when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    cluster: Arc<Cluster>,
    /// The totals it counted in (for a refund).
    counters: Vec<String>,
    /// The running sets it is a member of.
    running: Vec<String>,
    member: String,
}

impl Lease {
    /// The call was not really made: its totals go back down by one.
    pub(crate) fn refund(&self) {
        if !self.counters.is_empty() {
            self.cluster.give_back(Pending::Refund {
                counters: self.counters.clone(),
            });
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.running.is_empty() {
            self.cluster.give_back(Pending::Release {
                sets: std::mem::take(&mut self.running),
                member: std::mem::take(&mut self.member),
            });
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
