//! The registry of replicas: each replica beats once a second into a sorted set in Redis (its
//! id, scored by when it expires by Redis's clock) with its details beside it (a hash: id →
//! `{"id", "internal_url", "version", "started"}`). A replica is live while its score is in the
//! future: [`TIME_TO_LIVE`] after its last beat. One that stopped beating is kept, marked gone,
//! for [`FORGET_AFTER`] (what it ran can be reported as lost), then forgotten by the next beat
//! of any replica. A replica that stops cleanly takes itself out at once.
//!
//! The beat is also when the store reconnects after an outage and when the calls that ended
//! while Redis was away give their places back ([`super::Cluster::flush`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::scripts::BEAT;
use super::store::Away;

/// How often a replica beats (and reconnects after an outage): recovery follows Redis's
/// return within about this long.
pub(crate) const BEAT_INTERVAL: Duration = Duration::from_secs(1);
/// How long a replica counts as live after its last beat: five missed beats, so a slow beat or
/// two (a busy Redis, a paused container) does not declare it gone.
pub(crate) const TIME_TO_LIVE: Duration = Duration::from_secs(5);
/// How long a gone replica stays listed (as gone) before it is forgotten.
pub(crate) const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// One replica as the registry lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Replica {
    pub(crate) id: String,
    /// How the other replicas reach it (when it said).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) internal_url: Option<String>,
    /// toolport's version on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    /// Whether it beat within [`TIME_TO_LIVE`].
    pub(crate) live: bool,
    /// Milliseconds since its last beat.
    pub(crate) last_beat_ms_ago: u64,
    /// Which start of it this is (random per start): work ids name it, so a replica that
    /// restarted under the same id is told apart from the one that ran the work.
    #[serde(skip)]
    pub(crate) incarnation: Option<String>,
}

/// What a replica writes about itself.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Details {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    internal_url: Option<String>,
    version: String,
    /// Seconds since the Unix epoch when it started.
    started: u64,
    /// Which start of it this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    incarnation: Option<String>,
}

/// What the listing pipeline answers: Redis's time (seconds, microseconds), the ids with their
/// expiry, the details by id.
type Listing = ((u64, u64), Vec<(String, u64)>, Vec<(String, String)>);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Cluster {
    /// The registry's two keys: the sorted set of ids and the hash of details.
    fn registry_keys(&self) -> (String, String) {
        (self.key("replicas"), self.key("replica-details"))
    }

    /// Beat once: this replica is live for another [`TIME_TO_LIVE`].
    pub(super) async fn beat(&self) -> Result<(), Away> {
        let details = serde_json::to_string(&Details {
            id: self.settings.id.value.clone(),
            internal_url: self.settings.internal_url.as_ref().map(ToString::to_string),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            started: self
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            incarnation: Some(self.incarnation.clone()),
        })
        .unwrap_or_default();
        let (ids, info) = self.registry_keys();
        let id = self.settings.id.value.clone();
        self.store
            .run(|mut connection| async move {
                BEAT.key(ids)
                    .key(info)
                    .arg(id)
                    .arg(millis(TIME_TO_LIVE))
                    .arg(details)
                    .arg(millis(FORGET_AFTER))
                    .invoke_async::<i64>(&mut connection)
                    .await
            })
            .await
            .map(|_| ())
    }

    /// Take this replica out of the registry (a clean stop): the calls it counted as running
    /// stop holding their places at once.
    pub(super) async fn leave(&self) {
        let (ids, info) = self.registry_keys();
        let id = self.settings.id.value.clone();
        let result = self
            .store
            .run(|mut connection| async move {
                redis::pipe()
                    .atomic()
                    .zrem(ids, &id)
                    .hdel(info, &id)
                    .query_async::<()>(&mut connection)
                    .await
            })
            .await;
        if let Err(away) = result {
            tracing::debug!(%away, "cannot leave the replica registry; it expires on its own");
        }
    }

    /// The heartbeat, until `stop`: connect when not connected, beat, give back what calls
    /// that ended during an outage held; on `stop`, leave the registry.
    pub(super) fn spawn_heartbeat(self: &Arc<Self>, stop: CancellationToken) {
        let cluster = self.clone();
        tokio::spawn(async move {
            loop {
                if cluster.store.connect().await.is_ok() && cluster.beat().await.is_ok() {
                    cluster.flush().await;
                    cluster.publish_jobs().await;
                }
                tokio::select! {
                    () = tokio::time::sleep(BEAT_INTERVAL) => {}
                    () = stop.cancelled() => break,
                }
            }
            cluster.leave().await;
        });
    }

    /// Every replica the registry knows, live ones first, then by id.
    pub(crate) async fn replicas(&self) -> Result<Vec<Replica>, Away> {
        let (ids, info) = self.registry_keys();
        let (time, scores, details): Listing = self
            .store
            .run(|mut connection| async move {
                redis::pipe()
                    .cmd("TIME")
                    .zrange_withscores(ids, 0, -1)
                    .hgetall(info)
                    .query_async(&mut connection)
                    .await
            })
            .await?;
        let now = time.0 * 1000 + time.1 / 1000;
        let ttl = millis(TIME_TO_LIVE);
        let mut replicas: Vec<Replica> = scores
            .into_iter()
            .map(|(id, expires)| {
                let found = details
                    .iter()
                    .find(|(key, _)| *key == id)
                    .and_then(|(_, json)| serde_json::from_str::<Details>(json).ok());
                Replica {
                    internal_url: found.as_ref().and_then(|d| d.internal_url.clone()),
                    incarnation: found.as_ref().and_then(|d| d.incarnation.clone()),
                    version: found.map(|d| d.version),
                    live: expires >= now,
                    last_beat_ms_ago: (now + ttl).saturating_sub(expires),
                    id,
                }
            })
            .collect();
        replicas.sort_by(|a, b| b.live.cmp(&a.live).then_with(|| a.id.cmp(&b.id)));
        Ok(replicas)
    }
}

/// When this replica started, for its details.
pub(super) fn now() -> SystemTime {
    SystemTime::now()
}
