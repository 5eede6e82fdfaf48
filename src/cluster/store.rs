//! The connection to the shared store (Redis) and its health: one multiplexed connection (every
//! command of this replica pipelined on it), every command under `redis_timeout`, and a state
//! everyone can read — up, or away since when and why.
//!
//! Nothing waits for Redis. A command finds the connection there or fails at once ("away");
//! a command that errs or outlasts its bound drops the connection and marks the store away.
//! Reconnecting is the heartbeat's job ([`super::registry`], once a second), so an outage
//! costs each call nothing but the refusal (or the local decision) and recovery follows
//! within a beat of Redis answering again, without a restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use prometheus_client::metrics::gauge::Gauge;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, IntoConnectionInfo, RedisError};

use super::settings::ReplicaSettings;

/// Why a command did not reach Redis or came back without an answer. The text names the
/// cause (never the password: the URL holds none, and Redis's own errors do not echo it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Away {
    /// No connection (never made, or dropped after a failure and not yet made again).
    #[error("not connected to Redis ({0})")]
    NotConnected(String),
    /// The command outlasted `redis_timeout`.
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    /// Redis (or the network) answered with an error.
    #[error("Redis failed: {0}")]
    Failed(String),
}

/// The store's state, as `/readyz` and the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Health {
    pub(crate) up: bool,
    /// When it last changed.
    pub(crate) since: SystemTime,
    /// Why it is away (`None` while up).
    pub(crate) reason: Option<String>,
}

/// The connection and its health.
pub(crate) struct Store {
    client: Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    timeout: Duration,
    up: AtomicBool,
    health: Mutex<Health>,
    /// `toolport_shared_store_up`: 1 while Redis answers.
    gauge: Gauge,
    /// What a call gets meanwhile, for the log line of an outage.
    when_away: &'static str,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("up", &self.up.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Store {
    /// The store for `settings`, not connected yet (nothing is sent before
    /// [`Store::connect`]).
    pub(crate) fn new(settings: &ReplicaSettings, gauge: Gauge) -> Result<Self, String> {
        let info = settings
            .redis_url
            .as_str()
            .into_connection_info()
            .map_err(|e| format!("replicas.redis_url: {e}"))?;
        let info = match &settings.password {
            Some((password, _)) => {
                let redis = info
                    .redis_settings()
                    .clone()
                    .set_password(password.expose());
                info.set_redis_settings(redis)
            }
            None => info,
        };
        let client = Client::open(info).map_err(|e| format!("replicas.redis_url: {e}"))?;
        Ok(Self {
            client,
            connection: Mutex::new(None),
            timeout: settings.redis_timeout,
            up: AtomicBool::new(false),
            health: Mutex::new(Health {
                up: false,
                since: SystemTime::now(),
                reason: Some("not connected yet".to_owned()),
            }),
            gauge,
            when_away: match settings.when_redis_away {
                super::WhenAway::Refuse => "refused",
                super::WhenAway::Local => "decided by this replica alone",
            },
        })
    }

    fn slot(&self) -> MutexGuard<'_, Option<MultiplexedConnection>> {
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The state, for `/readyz`.
    pub(crate) fn health(&self) -> Health {
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Connect unless connected, within the bound. The heartbeat calls it every beat.
    pub(crate) async fn connect(&self) -> Result<(), Away> {
        if self.slot().is_some() {
            return Ok(());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let made = tokio::time::timeout(
            self.timeout,
            self.client
                .get_multiplexed_async_connection_with_config(&config),
        )
        .await;
        match made {
            Ok(Ok(connection)) => {
                *self.slot() = Some(connection);
                Ok(())
            }
            Ok(Err(error)) => Err(self.lost(Away::Failed(describe(&error)))),
            Err(_) => Err(self.lost(Away::Timeout(self.timeout))),
        }
    }

    /// Run one command (or script, or pipeline) on the connection, within the bound. A
    /// failure drops the connection and marks the store away; a success marks it up.
    pub(crate) async fn run<T, F, Fut>(&self, command: F) -> Result<T, Away>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let Some(connection) = self.slot().clone() else {
            let reason = self.health().reason.unwrap_or_default();
            return Err(Away::NotConnected(reason));
        };
        match tokio::time::timeout(self.timeout, command(connection)).await {
            Ok(Ok(value)) => {
                self.came_back();
                Ok(value)
            }
            Ok(Err(error)) => Err(self.lost(Away::Failed(describe(&error)))),
            Err(_) => Err(self.lost(Away::Timeout(self.timeout))),
        }
    }

    /// Drop the connection and say so once per outage.
    fn lost(&self, away: Away) -> Away {
        *self.slot() = None;
        let was_up = self.up.swap(false, Ordering::Relaxed);
        self.gauge.set(0);
        let mut health = self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if was_up || health.up {
            tracing::warn!(
                reason = %away,
                "the shared store (Redis) cannot be reached: calls that need a shared decision are {} until it is back",
                self.when_away
            );
            health.since = SystemTime::now();
        }
        health.up = false;
        health.reason = Some(away.to_string());
        away
    }

    /// Mark the store up (after a success), saying so when it was away.
    fn came_back(&self) {
        if self.up.swap(true, Ordering::Relaxed) {
            return;
        }
        self.gauge.set(1);
        let mut health = self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if health.reason.as_deref() != Some("not connected yet") {
            tracing::info!("the shared store (Redis) answers again: shared decisions resume");
        }
        *health = Health {
            up: true,
            since: SystemTime::now(),
            reason: None,
        };
    }
}

/// A Redis error as one line: its kind and message.
fn describe(error: &RedisError) -> String {
    if error.is_connection_refusal() {
        return "connection refused".to_owned();
    }
    error.to_string()
}
