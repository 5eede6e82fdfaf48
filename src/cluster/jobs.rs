//! Jobs and tasks across replicas. A job's id names the replica that runs it and that
//! replica's start (`job_3@r2~1a2b3c4d`: [`Cluster::work_name`]), so any replica knows where
//! a request for it must go:
//!
//! - here: the job tools and `tasks/*` run as on one machine;
//! - another live replica of the same start: the request is forwarded to it
//!   ([`Cluster::forward`], signed as [`super::internal`] says, to its `internal_url`), or,
//!   with `forward_jobs = false`, answered with an error that names the replica;
//! - a replica that stopped beating, left the registry, or restarted since: the job is
//!   **lost** ([`locate`]), never reported as running: it says so with the last output sizes
//!   its replica reported.
//!
//! Each replica tells the others about its jobs at every heartbeat ([`Cluster::publish_jobs`]):
//! one record per job (`job:ID`: its owner's hash and its `job_list` state), in a set per owner
//! (`owner-jobs:HASH`), both expiring [`super::registry::FORGET_AFTER`] after their last
//! write; a job that is gone from its table is taken out. So `job_list` through any replica
//! lists the caller's jobs on every replica ([`Cluster::listed_for`]): its own as they are now,
//! the others' as of their replica's last beat (at most [`super::registry::BEAT_INTERVAL`]
//! old), lost ones marked. Owners are hashed in Redis (a principal's subject is not written
//! there).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use toolport_tools::ToolError;
use toolport_tools::host::{Elsewhere, JobTable, SERVER_SEPARATOR, Session, split_work_id};

use super::Cluster;
use super::internal;
use super::registry::{FORGET_AFTER, Replica, TIME_TO_LIVE};
use super::store::Away;

/// Between a replica's id and its start in work ids: not a character of a replica id.
const INCARNATION_SEPARATOR: char = '~';
/// Random bytes of a replica's start (hex: 8 characters).
pub(super) const INCARNATION_BYTES: usize = 4;
/// The bound on a forwarded request beyond what the request itself may wait (`job_output`'s
/// `wait`): a job_kill waits for the command's grace and its processes' end, a few seconds.
const FORWARD_MARGIN: Duration = Duration::from_secs(15);
/// How often a record that did not change is written again: well within its expiry
/// ([`FORGET_AFTER`]), so a finished job kept longer than that (`exec.job_retention` goes to
/// 24 h) stays listed by the other replicas.
const REWRITE_AFTER: Duration = Duration::from_secs(FORGET_AFTER.as_secs() / 2);
/// Bytes of an owner's SHA-256 kept in keys and records: 128 bits tell owners apart.
const OWNER_HASH_BYTES: usize = 16;

/// A request one replica sends another: a job tool's call or a task's, for an owner the
/// sending replica authenticated.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Forwarded {
    /// A job tool ([`toolport_tools::host::FORWARDED_TOOLS`]) with its arguments.
    Tool {
        owner: String,
        tool: String,
        arguments: Map<String, Value>,
    },
    /// `tasks/get`.
    TaskGet { owner: String, task_id: String },
    /// `tasks/cancel`.
    TaskCancel { owner: String, task_id: String },
    /// `resources/read` of a job's output (`toolport://jobs/ID/stdout`).
    Resource { owner: String, uri: String },
}

/// The answer to a [`Forwarded`] request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// A tool's structured result, a task's state (`null` for a cancel), a resource's
    /// contents.
    Result(Value),
    /// The request failed: a tool error's kind ([`ToolError::kind`]) or `invalid_params` /
    /// `internal_error` for a task, and the message the caller answers with.
    Error { kind: String, message: String },
}

/// Why a request for another replica's work is not forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotForwarded {
    /// Its replica is gone: the work is lost (the message says so, with its last known
    /// output sizes).
    Lost(String),
    /// Forwarding is off, or cannot be done (no internal address, the replica cannot be
    /// reached, the store is away): the message says what to do.
    Refused(String),
}

/// Where a piece of work is, by the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Whereabouts {
    /// On a live replica of the same start, reached at its internal URL (when it gave one).
    Live { url: Option<String> },
    /// Lost, and why (its replica stopped, left or restarted).
    Lost(String),
}

/// A work id's server part: the replica and its start.
fn parse_there(there: &str) -> (&str, Option<&str>) {
    match there.split_once(INCARNATION_SEPARATOR) {
        Some((replica, incarnation)) => (replica, Some(incarnation)),
        None => (there, None),
    }
}

/// The lost rule: work on `there` (`replica~start`) is live only while that replica beats
/// (within [`TIME_TO_LIVE`]) and is the same start; otherwise it is lost, whatever it was
/// doing.
pub(crate) fn locate(there: &str, replicas: &[Replica]) -> Whereabouts {
    let (id, incarnation) = parse_there(there);
    let Some(replica) = replicas.iter().find(|r| r.id == id) else {
        return Whereabouts::Lost(format!(
            "its server, replica {id}, stopped (it is no longer in the replica registry)"
        ));
    };
    if !replica.live {
        return Whereabouts::Lost(format!(
            "its server, replica {id}, stopped (no heartbeat for {} s; a replica counts as stopped after {} s)",
            replica.last_beat_ms_ago / 1000,
            TIME_TO_LIVE.as_secs()
        ));
    }
    if let (Some(wanted), Some(now)) = (incarnation, replica.incarnation.as_deref())
        && wanted != now
    {
        return Whereabouts::Lost(format!(
            "its server, replica {id}, stopped and was started again since: what it ran is gone"
        ));
    }
    Whereabouts::Live {
        url: replica.internal_url.clone(),
    }
}

/// What a lost job's `lost` field says: why, and the last output sizes known of it (from its
/// record's `state`, when there is one).
fn lost_text(why: &str, state: Option<&Value>) -> String {
    let sizes =
        state.and_then(|s| Some((s["stdout_bytes"].as_u64()?, s["stderr_bytes"].as_u64()?)));
    match sizes {
        Some((out, err)) => format!(
            "{why}; it runs no more and its output can no longer be read; last known: stdout_offset {out}, stderr_offset {err}"
        ),
        None => format!(
            "{why}; it runs no more and its output can no longer be read (its replica reported no output sizes)"
        ),
    }
}

/// The hash an owner goes by in Redis.
fn owner_hash(owner: &str) -> String {
    Sha256::digest(owner.as_bytes())[..OWNER_HASH_BYTES]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One job as its replica recorded it.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    owner: String,
    state: Value,
}

/// A tool error of `kind` (as [`ToolError::kind`] names it) with `message`.
fn tool_error(kind: &str, message: String) -> ToolError {
    match kind {
        "invalid_arguments" => ToolError::InvalidArguments(message),
        "not_found" => ToolError::NotFound(message),
        "permission_denied" => ToolError::PermissionDenied(message),
        "timeout" => ToolError::Timeout(message),
        "cancelled" => ToolError::Cancelled(message),
        "unavailable" => ToolError::Unavailable(message),
        _ => ToolError::ExecutionFailed(message),
    }
}

/// What a tool error's message is without the kind's prefix (`not found: …`), so the forwarding
/// replica's own error adds it once.
pub(crate) fn tool_answer(error: &ToolError) -> Answer {
    let text = error.to_string();
    let message = text
        .split_once(": ")
        .map_or(text.as_str(), |(_, rest)| rest)
        .to_owned();
    Answer::Error {
        kind: error.kind().to_owned(),
        message,
    }
}

impl Cluster {
    /// This replica's name in work ids: its id and its start (`r2~1a2b3c4d`).
    pub(crate) fn work_name(&self) -> String {
        format!(
            "{}{INCARNATION_SEPARATOR}{}",
            self.settings.id.value, self.incarnation
        )
    }

    /// Serve `jobs` as this replica's: their ids name it, requests for other replicas' jobs go
    /// there, and the heartbeat tells the others about them.
    pub(crate) fn attach_jobs(self: &Arc<Self>, jobs: &JobTable) {
        let _ = self.jobs.set(jobs.clone());
        jobs.attach(Arc::new(ClusterJobs {
            cluster: Arc::downgrade(self),
            here: self.work_name(),
        }));
    }

    /// The checker of internal calls to this replica, when it has an internal secret.
    pub(crate) fn verifier(&self) -> Option<&internal::Verifier> {
        self.verifier.as_ref()
    }

    fn job_key(&self, id: &str) -> String {
        self.key(&format!("job:{}", Cluster::key_part(id)))
    }

    fn owner_key(&self, hash: &str) -> String {
        self.key(&format!("owner-jobs:{hash}"))
    }

    /// Tell the others where this replica's jobs stand (the heartbeat, once a second): write
    /// the records that changed (or were last written [`REWRITE_AFTER`] ago, so a job kept
    /// long after its end does not outlive its record), take out those of jobs that are gone.
    pub(super) async fn publish_jobs(&self) {
        let Some(jobs) = self.jobs.get() else {
            return;
        };
        let now = Instant::now();
        let current: HashMap<String, (String, String)> = jobs
            .snapshot()
            .into_iter()
            .map(|job| {
                let hash = owner_hash(&job.owner);
                let record = serde_json::to_string(&Record {
                    owner: hash.clone(),
                    state: job.state,
                })
                .unwrap_or_default();
                (job.id, (hash, record))
            })
            .collect();
        let (writes, gone) = {
            let published = self
                .published
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let writes: Vec<(String, String, String)> = current
                .iter()
                .filter(|(id, (hash, record))| {
                    published.get(*id).is_none_or(|(h, r, at)| {
                        h != hash || r != record || now.duration_since(*at) >= REWRITE_AFTER
                    })
                })
                .map(|(id, (hash, record))| (id.clone(), hash.clone(), record.clone()))
                .collect();
            let gone: Vec<(String, String)> = published
                .iter()
                .filter(|(id, _)| !current.contains_key(*id))
                .map(|(id, (hash, _, _))| (id.clone(), hash.clone()))
                .collect();
            (writes, gone)
        };
        if writes.is_empty() && gone.is_empty() {
            return;
        }
        let keep = u64::try_from(FORGET_AFTER.as_millis()).unwrap_or(u64::MAX);
        let mut pipe = redis::pipe();
        for (id, hash, record) in &writes {
            let owner = self.owner_key(hash);
            pipe.cmd("SET")
                .arg(self.job_key(id))
                .arg(record)
                .arg("PX")
                .arg(keep)
                .ignore()
                .sadd(&owner, id)
                .ignore()
                .pexpire(&owner, i64::try_from(keep).unwrap_or(i64::MAX))
                .ignore();
        }
        for (id, hash) in &gone {
            pipe.del(self.job_key(id))
                .ignore()
                .srem(self.owner_key(hash), id)
                .ignore();
        }
        let sent = self
            .store
            .run(|mut connection| {
                let pipe = &pipe;
                async move { pipe.query_async::<()>(&mut connection).await }
            })
            .await;
        if sent.is_ok() {
            let mut published = self
                .published
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            published.retain(|id, _| current.contains_key(id));
            for (id, hash, record) in writes {
                published.insert(id, (hash, record, now));
            }
        }
    }

    /// The records of `owner`'s jobs on every replica, by id.
    async fn records(&self, owner: &str) -> Result<Vec<(String, Record)>, Away> {
        let hash = owner_hash(owner);
        let index = self.owner_key(&hash);
        let ids: Vec<String> = self
            .store
            .run(|mut connection| {
                let index = &index;
                async move {
                    redis::cmd("SMEMBERS")
                        .arg(index)
                        .query_async(&mut connection)
                        .await
                }
            })
            .await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|id| self.job_key(id)).collect();
        let found: Vec<Option<String>> = self
            .store
            .run(|mut connection| {
                let keys = &keys;
                async move {
                    redis::cmd("MGET")
                        .arg(keys)
                        .query_async(&mut connection)
                        .await
                }
            })
            .await?;
        let mut records: Vec<(String, Record)> = ids
            .into_iter()
            .zip(found)
            .filter_map(|(id, text)| Some((id, serde_json::from_str::<Record>(&text?).ok()?)))
            .filter(|(_, record)| record.owner == hash)
            .collect();
        records.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(records)
    }

    /// `owner`'s jobs on the other replicas (and this replica's earlier starts), as last
    /// recorded: live ones as their replica last reported them, lost ones marked `lost` and
    /// not running.
    pub(crate) async fn listed_for(&self, owner: &str) -> Result<Vec<Value>, Away> {
        let records = self.records(owner).await?;
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let replicas = self.replicas().await?;
        let here = self.work_name();
        Ok(records
            .into_iter()
            .filter_map(|(id, record)| {
                let (_, there) = split_work_id(&id);
                let there = there?;
                if there == here {
                    return None;
                }
                let mut state = record.state;
                if let Whereabouts::Lost(why) = locate(there, &replicas) {
                    let lost = lost_text(&why, Some(&state));
                    state["running"] = Value::Bool(false);
                    state["lost"] = Value::String(lost);
                }
                Some(state)
            })
            .collect())
    }

    /// Where to send a request for work `id` on `there`, or why not: lost, forwarding off, no
    /// way there. `owner`'s record of it gives a lost job's last known output sizes.
    pub(crate) async fn route(
        &self,
        there: &str,
        id: &str,
        owner: &str,
    ) -> Result<(String, String), NotForwarded> {
        let (replica, _) = parse_there(there);
        let replicas = self.replicas().await.map_err(|away| {
            NotForwarded::Refused(format!(
                "cannot tell where {id} runs (on replica {replica}): the replicas' shared store is away ({away}); retry in a second"
            ))
        })?;
        let url = match locate(there, &replicas) {
            Whereabouts::Lost(why) => {
                let records = self.records(owner).await.unwrap_or_default();
                let state = records
                    .iter()
                    .find(|(found, _)| found == id)
                    .map(|(_, record)| &record.state);
                return Err(NotForwarded::Lost(format!(
                    "{id} is lost: {}. Run the command again if you need its result.",
                    lost_text(&why, state)
                )));
            }
            Whereabouts::Live { url } => url,
        };
        if !self.settings.forward_jobs {
            return Err(NotForwarded::Refused(format!(
                "{id} runs on replica {replica}, and this replica ({}) does not forward requests for other replicas' jobs and tasks (replicas.forward_jobs = false): send the request to replica {replica} (a load balancer can route on the replica named after '{SERVER_SEPARATOR}' in the id), or set replicas.forward_jobs = true with the same replicas.internal_secret_file on every replica",
                self.settings.id.value
            )));
        }
        let Some(url) = url else {
            return Err(NotForwarded::Refused(format!(
                "{id} runs on replica {replica}, which gave no internal address: set replicas.internal_url on every replica so the others can forward requests to it"
            )));
        };
        Ok((url, replica.to_owned()))
    }

    /// Send `request` for work `id` on `there` (a work id's server part) and return the
    /// answer; `wait` is how long the request itself may take there (`job_output`'s `wait`).
    pub(crate) async fn forward(
        &self,
        there: &str,
        id: &str,
        request: &Forwarded,
        wait: Duration,
    ) -> Result<Answer, NotForwarded> {
        let owner = match request {
            Forwarded::Tool { owner, .. }
            | Forwarded::TaskGet { owner, .. }
            | Forwarded::TaskCancel { owner, .. }
            | Forwarded::Resource { owner, .. } => owner,
        };
        let (url, replica) = self.route(there, id, owner).await?;
        let Some((secret, _)) = &self.settings.internal_secret else {
            // forward_jobs is on only with a secret (settings.rs).
            return Err(NotForwarded::Refused(
                "no internal secret is set (replicas.internal_secret_file)".into(),
            ));
        };
        let body = serde_json::to_vec(request).unwrap_or_default();
        let mut call = self
            .http
            .post(format!("{}{}", url.trim_end_matches('/'), internal::PATH))
            .timeout(wait + FORWARD_MARGIN)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in internal::sign(secret, &replica, &body) {
            call = call.header(name, value);
        }
        let unreachable = |why: String| {
            tracing::warn!(%replica, %url, %why, "cannot forward a request to another replica");
            NotForwarded::Refused(format!(
                "{id} runs on replica {replica}, which cannot be reached now ({why}); retry shortly: if it has stopped, its jobs are reported lost within {} s",
                TIME_TO_LIVE.as_secs() + 1
            ))
        };
        let response = call
            .body(body)
            .send()
            .await
            .map_err(|e| unreachable(without_url(e)))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(unreachable(format!(
                "it answered HTTP {status}: {}",
                text.chars().take(200).collect::<String>()
            )));
        }
        response
            .json::<Answer>()
            .await
            .map_err(|e| unreachable(format!("its answer cannot be read: {}", without_url(e))))
    }
}

/// A reqwest error's text with its causes, without the URL (internal addresses stay out of
/// clients' answers).
fn without_url(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// The job tools' way to the other replicas ([`Elsewhere`]), over this replica's cluster.
#[derive(Debug)]
struct ClusterJobs {
    /// Weak: the cluster holds the job table, which holds this.
    cluster: Weak<Cluster>,
    here: String,
}

impl ClusterJobs {
    fn cluster(&self) -> Result<Arc<Cluster>, String> {
        self.cluster
            .upgrade()
            .ok_or_else(|| "the server is stopping".to_owned())
    }
}

#[async_trait]
impl Elsewhere for ClusterJobs {
    fn here(&self) -> &str {
        &self.here
    }

    async fn forward(
        &self,
        there: &str,
        owner: &Session,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Value, ToolError> {
        let cluster = self.cluster().map_err(ToolError::Unavailable)?;
        let id = args
            .get("job_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let wait = Duration::from_secs(args.get("wait").and_then(Value::as_u64).unwrap_or(0));
        let request = Forwarded::Tool {
            owner: owner.id.to_string(),
            tool: tool.to_owned(),
            arguments: args,
        };
        match cluster.forward(there, &id, &request, wait).await {
            Ok(Answer::Result(value)) => Ok(value),
            Ok(Answer::Error { kind, message }) => Err(tool_error(&kind, message)),
            Err(NotForwarded::Lost(message)) => Err(ToolError::NotFound(message)),
            Err(NotForwarded::Refused(message)) => Err(ToolError::Unavailable(message)),
        }
    }

    async fn listed_elsewhere(&self, owner: &Session) -> Result<Vec<Value>, String> {
        let cluster = self.cluster()?;
        cluster
            .listed_for(&owner.id)
            .await
            .map_err(|away| format!("the replicas' shared store is away: {away}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(id: &str, live: bool, incarnation: &str) -> Replica {
        Replica {
            id: id.to_owned(),
            internal_url: Some(format!("http://{id}:8080")),
            version: None,
            live,
            last_beat_ms_ago: if live { 300 } else { 9_000 },
            incarnation: Some(incarnation.to_owned()),
        }
    }

    #[test]
    fn work_on_a_live_replica_of_the_same_start_is_live_and_otherwise_lost() {
        let replicas = [replica("r1", true, "aaaa"), replica("r2", false, "bbbb")];
        assert_eq!(
            locate("r1~aaaa", &replicas),
            Whereabouts::Live {
                url: Some("http://r1:8080".into())
            }
        );
        // A replica that stopped beating: lost, never running.
        let Whereabouts::Lost(why) = locate("r2~bbbb", &replicas) else {
            panic!("a stopped replica's work is not lost");
        };
        assert!(
            why.contains("stopped") && why.contains("no heartbeat for 9 s"),
            "{why}"
        );
        // Started again under the same id: what the earlier start ran is gone.
        let Whereabouts::Lost(why) = locate("r1~cccc", &replicas) else {
            panic!("a restarted replica's earlier work is not lost");
        };
        assert!(why.contains("started again"), "{why}");
        // Forgotten by the registry.
        let Whereabouts::Lost(why) = locate("r9~dddd", &replicas) else {
            panic!("an unknown replica's work is not lost");
        };
        assert!(why.contains("no longer in the replica registry"), "{why}");
    }

    #[test]
    fn a_lost_job_says_its_last_known_offsets() {
        let state = serde_json::json!({"stdout_bytes": 120, "stderr_bytes": 7});
        let text = lost_text("its server, replica r2, stopped", Some(&state));
        assert!(
            text.contains("stdout_offset 120, stderr_offset 7") && text.contains("runs no more"),
            "{text}"
        );
        assert!(lost_text("x", None).contains("no output sizes"));
    }

    #[test]
    fn owners_are_hashed_and_errors_keep_their_kind() {
        assert_eq!(owner_hash("stateless:a").len(), OWNER_HASH_BYTES * 2);
        assert_ne!(owner_hash("stateless:a"), owner_hash("stateless:b"));
        let Answer::Error { kind, message } = tool_answer(&ToolError::NotFound("no job".into()))
        else {
            panic!("not an error");
        };
        assert_eq!(kind, "not_found");
        assert_eq!(tool_error(&kind, message).to_string(), "not found: no job");
    }
}
