//! The built-in server's state in Redis, shared by every replica (`[replicas] redis_url`):
//! through the cluster's one connection ([`Cluster::run`]: every command bounded by
//! `redis_timeout`, away at once after a failure), under the cluster's key prefix:
//!
//! | key | what |
//! |---|---|
//! | `oauth:clients` | hash: client id → client (JSON) |
//! | `oauth:grants` | hash: grant id → grant (JSON; refresh tokens as hashes) |
//! | `oauth:refresh` | hash: refresh-token hash (current or rotated) → grant id |
//! | `oauth:pending` | sorted set: pending approval id → expiry (ms) |
//! | `oauth:pending:ID` | hash: the approval (JSON), its wrong attempts; expires with it |
//! | `oauth:code:HASH` | an authorization code's grant-to-be (JSON), 60 s |
//! | `oauth:keys`, `oauth:jwks` | public signing keys: kid → valid until (ms), kid → JWK |
//!
//! A grant changes by compare-and-set ([`super::scripts::SET_GRANT`]): read it, decide with the
//! one rule ([`super::Grant::present`]), write only if it is still what was read, else read
//! again (at most [`MAX_RACES`] times). Registration's eviction of old clients is a plain delete
//! after the same rule ([`super::evictions`]): two registrations at once may keep one client
//! too many for a moment, which bounds nothing that matters.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::Jwk;
use redis::{FromRedisValue, Script, ToRedisArgs};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::scripts::{
    ADD_PENDING, GRANT_BY_REFRESH, LIVE_KEYS, PUBLISH_KEY, SET_GRANT, WRONG_ATTEMPT,
};
use super::{
    Attempt, CODE_LIFETIME, Client, Grant, Issued, MAX_CLIENTS, PENDING_LIFETIME, Pending,
    Presented, Refresh, StoreError, evictions,
};
use crate::cluster::Cluster;

/// How many times a grant's update is tried again after another replica changed it first:
/// each loss means someone else's write landed, so a few are plenty; past them the request
/// fails (and is retried by its client) rather than spin.
const MAX_RACES: usize = 8;

type Result<T> = std::result::Result<T, StoreError>;
/// A hash as Redis lists it: field, value.
type Pairs = Vec<(String, String)>;

/// The shared home.
#[derive(Debug)]
pub(crate) struct Shared {
    cluster: Arc<Cluster>,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn parse<T: DeserializeOwned>(what: &str, json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| StoreError::Unreadable(format!("{what} ({e})")))
}

fn json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Unreadable(e.to_string()))
}

/// A grant's change: the JSON it must still have, what to write (`None`: delete), index
/// entries to add and to drop.
struct Change {
    id: String,
    expected: String,
    write: Option<String>,
    add: Vec<String>,
    drop: Vec<String>,
}

/// The change that ends `grant` (stored as `stored`): it and every hash it answers to.
fn ending(grant: &Grant, stored: String) -> Change {
    Change {
        id: grant.id.clone(),
        expected: stored,
        write: None,
        add: Vec::new(),
        drop: grant.hashes().cloned().collect(),
    }
}

impl Shared {
    pub(crate) fn new(cluster: Arc<Cluster>) -> Self {
        Self { cluster }
    }

    /// The cluster it runs on (its Redis-away choice, its metrics).
    pub(crate) fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    fn key(&self, rest: &str) -> String {
        self.cluster.key(&format!("oauth:{rest}"))
    }

    /// Run `script` on its two keys with `args` (a value or a tuple of them).
    async fn script<T: FromRedisValue>(
        &self,
        script: &'static Script,
        keys: (String, String),
        args: impl ToRedisArgs,
    ) -> Result<T> {
        let mut call = script.prepare_invoke();
        call.key(keys.0).key(keys.1).arg(args);
        Ok(self
            .cluster
            .run(|mut connection| async move { call.invoke_async(&mut connection).await })
            .await?)
    }

    /// Run command `name` with `args` (a value or a tuple of them).
    async fn command<T: FromRedisValue>(&self, name: &str, args: impl ToRedisArgs) -> Result<T> {
        let mut command = redis::cmd(name);
        command.arg(args);
        Ok(self
            .cluster
            .run(|mut connection| async move { command.query_async(&mut connection).await })
            .await?)
    }

    fn grant_keys(&self) -> (String, String) {
        (self.key("grants"), self.key("refresh"))
    }

    fn pending_keys(&self, id: &str) -> (String, String) {
        (
            self.key("pending"),
            self.key(&format!("pending:{}", Cluster::key_part(id))),
        )
    }

    /// Write `change` if the grant is still as read; `false` when another replica changed it.
    async fn set_grant(&self, change: Change) -> Result<bool> {
        let args = (
            &change.id,
            &change.expected,
            change.write.as_deref().unwrap_or(""),
            change.add.len(),
            &change.add,
            &change.drop,
        );
        let written: i64 = self.script(&SET_GRANT, self.grant_keys(), args).await?;
        Ok(written == 1)
    }

    pub(super) async fn add_client(&self, client: Client) -> Result<()> {
        let clients = self.key("clients");
        let count: usize = self.command("HLEN", &clients).await?;
        if count + 1 > MAX_CLIENTS {
            let (all_clients, all_grants) = self.everything().await?;
            let gone = evictions(&all_clients, &all_grants);
            if !gone.is_empty() {
                self.command::<i64>("HDEL", (&clients, &gone)).await?;
            }
        }
        let value = json(&client)?;
        self.command::<i64>("HSET", (clients, &client.client_id, value))
            .await?;
        Ok(())
    }

    /// Every client and grant, by id.
    async fn everything(
        &self,
    ) -> Result<(
        std::collections::BTreeMap<String, Client>,
        std::collections::BTreeMap<String, Grant>,
    )> {
        let (clients, grants) = (self.key("clients"), self.key("grants"));
        let (clients, grants): (Pairs, Pairs) = self
            .cluster
            .run(|mut connection| async move {
                redis::pipe()
                    .hgetall(clients)
                    .hgetall(grants)
                    .query_async(&mut connection)
                    .await
            })
            .await?;
        let clients = clients
            .iter()
            .map(|(id, text)| Ok((id.clone(), parse("a client", text)?)))
            .collect::<Result<_>>()?;
        let grants = grants
            .iter()
            .map(|(id, text)| Ok((id.clone(), parse("a grant", text)?)))
            .collect::<Result<_>>()?;
        Ok((clients, grants))
    }

    pub(super) async fn client(&self, client_id: &str) -> Result<Option<Client>> {
        let clients = self.key("clients");
        let found: Option<String> = self.command("HGET", (clients, client_id)).await?;
        found.map(|text| parse("a client", &text)).transpose()
    }

    pub(super) async fn grant_alive(&self, id: &str) -> Result<bool> {
        let (grants, _) = self.grant_keys();
        self.command("HEXISTS", (grants, id)).await
    }

    pub(super) async fn add_grant(&self, grant: Grant) -> Result<()> {
        let write = json(&grant)?;
        let change = Change {
            id: grant.id.clone(),
            expected: String::new(),
            write: Some(write),
            add: vec![grant.refresh_hash.clone()],
            drop: Vec::new(),
        };
        if self.set_grant(change).await? {
            Ok(())
        } else {
            // Ids are 128 random bits: a collision is not a race to retry.
            Err(StoreError::Busy)
        }
    }

    /// The grant refresh-token hash `presented` names (current or rotated), as stored.
    async fn stored_by_refresh(&self, presented: &str) -> Result<Option<(String, Grant)>> {
        let (grants, index) = self.grant_keys();
        let found: Option<String> = self
            .script(&GRANT_BY_REFRESH, (grants, index), presented)
            .await?;
        match found {
            Some(text) => {
                let grant = parse("a grant", &text)?;
                Ok(Some((text, grant)))
            }
            None => Ok(None),
        }
    }

    pub(super) async fn grant_by_refresh(&self, presented: &str) -> Result<Option<Grant>> {
        Ok(self.stored_by_refresh(presented).await?.map(|(_, g)| g))
    }

    pub(super) async fn rotate(&self, presented: &str, next: &str) -> Result<Refresh> {
        for _ in 0..MAX_RACES {
            let Some((stored, mut grant)) = self.stored_by_refresh(presented).await? else {
                return Ok(Refresh::Unknown);
            };
            let (change, outcome) = match grant.present(presented, next) {
                None => return Ok(Refresh::Unknown),
                Some(Presented::Rotated { forgotten }) => {
                    let change = Change {
                        id: grant.id.clone(),
                        expected: stored,
                        write: Some(json(&grant)?),
                        add: vec![next.to_owned()],
                        drop: forgotten.into_iter().collect(),
                    };
                    (change, Refresh::Rotated(grant))
                }
                // Judged on the grant as stored (`present` changed nothing for a reuse).
                Some(Presented::Reused) => (ending(&grant, stored), Refresh::Reused(grant)),
            };
            if self.set_grant(change).await? {
                return Ok(outcome);
            }
        }
        Err(StoreError::Busy)
    }

    pub(super) async fn revoke(&self, id: &str) -> Result<bool> {
        let (grants, _) = self.grant_keys();
        for _ in 0..MAX_RACES {
            let stored: Option<String> = self.command("HGET", (&grants, id)).await?;
            let Some(stored) = stored else {
                return Ok(false);
            };
            let grant: Grant = parse("a grant", &stored)?;
            if self.set_grant(ending(&grant, stored)).await? {
                return Ok(true);
            }
        }
        Err(StoreError::Busy)
    }

    pub(super) async fn grants(&self) -> Result<Vec<Grant>> {
        let (grants, _) = self.grant_keys();
        let all: Vec<String> = self.command("HVALS", grants).await?;
        all.iter().map(|text| parse("a grant", text)).collect()
    }

    pub(super) async fn add_pending(
        &self,
        id: &str,
        pending: &Pending,
        max: usize,
    ) -> Result<bool> {
        let (index, key) = self.pending_keys(id);
        let value = json(pending)?;
        let kept: i64 = self
            .script(
                &ADD_PENDING,
                (index, key),
                (id, value, millis(PENDING_LIFETIME), max),
            )
            .await?;
        Ok(kept == 1)
    }

    pub(super) async fn pending(&self, id: &str) -> Result<Option<Pending>> {
        let (_, key) = self.pending_keys(id);
        let (text, attempts): (Option<String>, Option<u32>) =
            self.command("HMGET", (key, "json", "attempts")).await?;
        let Some(text) = text else {
            return Ok(None);
        };
        let mut pending: Pending = parse("a pending approval", &text)?;
        pending.attempts = attempts.unwrap_or(0);
        Ok(Some(pending))
    }

    pub(super) async fn wrong_attempt(&self, id: &str, max: u32) -> Result<Attempt> {
        let (index, key) = self.pending_keys(id);
        let (attempts, text): (i64, String) =
            self.script(&WRONG_ATTEMPT, (index, key), (id, max)).await?;
        let Ok(attempts) = u32::try_from(attempts) else {
            return Ok(Attempt::Gone);
        };
        let mut pending: Pending = parse("a pending approval", &text)?;
        pending.attempts = attempts;
        Ok(if attempts >= max {
            Attempt::Ended(pending)
        } else {
            Attempt::Counted(pending)
        })
    }

    pub(super) async fn take_pending(&self, id: &str) -> Result<Option<Pending>> {
        let (index, key) = self.pending_keys(id);
        let (text, attempts, _, _): (Option<String>, Option<u32>, i64, i64) = self
            .cluster
            .run(|mut connection| async move {
                redis::pipe()
                    .atomic()
                    .hget(&key, "json")
                    .hget(&key, "attempts")
                    .del(&key)
                    .zrem(index, id)
                    .query_async(&mut connection)
                    .await
            })
            .await?;
        let Some(text) = text else {
            return Ok(None);
        };
        let mut pending: Pending = parse("a pending approval", &text)?;
        pending.attempts = attempts.unwrap_or(0);
        Ok(Some(pending))
    }

    pub(super) async fn add_code(&self, code_hash: &str, issued: &Issued) -> Result<()> {
        let key = self.key(&format!("code:{code_hash}"));
        let value = json(issued)?;
        self.command::<()>("SET", (key, value, "PX", millis(CODE_LIFETIME)))
            .await?;
        Ok(())
    }

    pub(super) async fn take_code(&self, code_hash: &str) -> Result<Option<Issued>> {
        let key = self.key(&format!("code:{}", Cluster::key_part(code_hash)));
        let (text, _): (Option<String>, i64) = self
            .cluster
            .run(|mut connection| async move {
                redis::pipe()
                    .atomic()
                    .get(&key)
                    .del(&key)
                    .query_async(&mut connection)
                    .await
            })
            .await?;
        text.map(|t| parse("an authorization code", &t)).transpose()
    }

    pub(super) async fn publish_key(&self, jwk: &Jwk, valid_for: Duration) -> Result<()> {
        let (keys, jwks) = (self.key("keys"), self.key("jwks"));
        let kid = jwk.common.key_id.clone().unwrap_or_default();
        let value = json(jwk)?;
        self.script::<i64>(&PUBLISH_KEY, (keys, jwks), (kid, value, millis(valid_for)))
            .await?;
        Ok(())
    }

    pub(super) async fn published_keys(&self, kid: Option<&str>) -> Result<Vec<Jwk>> {
        let (keys, jwks) = (self.key("keys"), self.key("jwks"));
        let found: Vec<String> = self
            .script(&LIVE_KEYS, (keys, jwks), kid.unwrap_or(""))
            .await?;
        found
            .iter()
            .map(|text| parse("a signing key", text))
            .collect()
    }
}

#[cfg(test)]
mod tests;
