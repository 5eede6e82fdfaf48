//! What the built-in authorization server keeps, behind one interface ([`Store`]) with two
//! homes:
//! - [`local`]: one server alone. Clients and grants in the state folder's `grants.json`
//!   (hashes only, 0600, atomic), read again when another process (`toolport auth revoke`)
//!   changed it; pending approvals and codes in this process's memory.
//! - [`shared`]: replicas behind a load balancer (`[replicas] redis_url`). Clients, grants,
//!   pending approvals, codes and the public signing keys in Redis, so any replica validates,
//!   refreshes, revokes, completes an authorization another replica started and serves the
//!   same JWKS.
//!
//! **One copy of the rules.** What a presented refresh token does to its grant (rotated, or
//! reused and the grant revoked: [`Grant::present`]) and which clients make room for a new one
//! ([`evictions`]) are decided here, in Rust, for both homes. The shared home writes a grant's
//! new state only if the grant is still what it read (a compare-and-set script; on a lost race
//! it reads again and decides again), so a refresh token presented twice at once on two
//! replicas is caught exactly as on one: one presentation rotates it, the other then finds it
//! rotated and revokes the grant. The pending approval's attempt count and the single use of a
//! code are atomic in Redis too (a script, an atomic take).
//!
//! **Secrets.** Nothing stored lets anyone act: refresh tokens and codes by their SHA-256, a
//! one-time consent code by the hash of its normal form. The private signing key never leaves
//! its server ([`super::keys`]): only public keys are published.

pub(crate) mod local;
mod scripts;
pub(crate) mod shared;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::Jwk;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cluster::Away;

/// Most registered clients kept: registration is open (that is how claude.ai and mcp-remote
/// register), so the oldest client without a grant is forgotten past this, bounding the state.
pub(crate) const MAX_CLIENTS: usize = 200;
/// Rotated refresh-token hashes kept per grant for reuse detection: a client refreshing every
/// ten minutes for five hours; an older token presented again is then just unknown.
const MAX_ROTATED: usize = 32;

/// How long a consent page (and its one-time code) waits for the operator: long enough to
/// find the terminal, short enough that a forgotten code is dead soon.
pub(crate) const PENDING_LIFETIME: Duration = Duration::from_secs(600);
/// How long an authorization code may wait for its exchange: the client exchanges it at once;
/// a minute covers a slow network and keeps a leaked code's window small.
pub(crate) const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// A consent page waiting for the operator (kept by the store for [`PENDING_LIFETIME`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) client_id: String,
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uri: String,
    /// Shown on the page, and the only origin the form may go on to.
    pub(crate) redirect_host: String,
    pub(crate) redirect_origin: String,
    pub(crate) state: Option<String>,
    pub(crate) challenge: String,
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) granted: Vec<String>,
    pub(crate) withheld: Vec<String>,
    pub(crate) csrf: String,
    /// The hash of this request's one-time code (`consent::one_time_code_hash`), unless a passphrase
    /// approves: what is stored lets no one approve.
    pub(crate) one_time_code: Option<String>,
    /// Wrong secrets so far (counted by the store).
    #[serde(skip)]
    pub(crate) attempts: u32,
    /// The replica that printed the one-time code, with replicas (the page says where to look).
    #[serde(default)]
    pub(crate) replica: Option<String>,
}

/// An authorization code waiting for its exchange (kept by the code's hash, for
/// [`CODE_LIFETIME`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Issued {
    pub(crate) client_id: String,
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uri: String,
    pub(crate) challenge: String,
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) scopes: Vec<String>,
}

/// Why the state cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// The state folder.
    #[error(transparent)]
    File(#[from] local::FileError),
    /// Redis cannot answer now (the caller answers 503: retry).
    #[error("the shared store (Redis) cannot be reached: {0}")]
    Away(Away),
    /// Redis holds something this version cannot read.
    #[error("the shared store holds {0} toolport cannot read")]
    Unreadable(String),
    /// A grant kept changing under a compare-and-set (replicas racing on one grant).
    #[error("a grant kept changing while it was being updated; try again")]
    Busy,
}

impl From<Away> for StoreError {
    fn from(away: Away) -> Self {
        Self::Away(away)
    }
}

/// A registered client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Client {
    pub(crate) client_id: String,
    /// What it calls itself (shown on the consent page as its claim, not as a fact).
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
    /// Seconds since the Unix epoch.
    pub(crate) created: u64,
}

/// One approval: what a client may do until it is revoked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) id: String,
    pub(crate) client_id: String,
    pub(crate) client_name: Option<String>,
    pub(crate) subject: String,
    pub(crate) scopes: Vec<String>,
    /// The resource its tokens are for.
    pub(crate) resource: String,
    pub(crate) created: u64,
    pub(crate) last_used: u64,
    /// SHA-256 (hex) of the current refresh token.
    pub(crate) refresh_hash: String,
    /// Hashes of the refresh tokens it replaced, newest last.
    #[serde(default)]
    pub(crate) rotated: Vec<String>,
}

/// What presenting a refresh token did to its grant ([`Grant::present`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Presented {
    /// It was the current token: rotated; `forgotten` is a rotated hash no longer kept.
    Rotated { forgotten: Option<String> },
    /// It was a token the grant already rotated away: the grant must end.
    Reused,
}

impl Grant {
    /// The rule of rotating refresh tokens (OAuth 2.1 §4.3.1): the current token `presented`
    /// (a hash) is replaced by `next` and remembered as rotated; a rotated one presented again
    /// means two parties hold a copy, and the grant ends. `None`: not a token of this grant.
    pub(crate) fn present(&mut self, presented: &str, next: &str) -> Option<Presented> {
        if self.refresh_hash == presented {
            let old = std::mem::replace(&mut self.refresh_hash, next.to_owned());
            self.rotated.push(old);
            let forgotten = (self.rotated.len() > MAX_ROTATED).then(|| self.rotated.remove(0));
            self.last_used = now();
            return Some(Presented::Rotated { forgotten });
        }
        self.rotated
            .iter()
            .any(|h| h == presented)
            .then_some(Presented::Reused)
    }

    /// Every refresh-token hash it answers to (current and rotated).
    pub(crate) fn hashes(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.refresh_hash).chain(&self.rotated)
    }
}

/// What a refresh token turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// The current token of this grant, now rotated: the grant as it is now.
    Rotated(Grant),
    /// A token this grant already rotated away: the grant is revoked.
    Reused(Grant),
    /// Not a token of any grant.
    Unknown,
}

/// What a wrong consent secret did to its pending approval.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// Counted: the approval as it is now (its `attempts` updated).
    Counted(Pending),
    /// The last allowed: the approval is gone, here as it was.
    Ended(Pending),
    /// There was no such approval (expired, or decided meanwhile).
    Gone,
}

/// The clients to forget so that one more fits within [`MAX_CLIENTS`]: the oldest that no
/// grant names.
pub(crate) fn evictions(
    clients: &BTreeMap<String, Client>,
    grants: &BTreeMap<String, Grant>,
) -> Vec<String> {
    let mut candidates: Vec<&Client> = clients
        .values()
        .filter(|c| !grants.values().any(|g| g.client_id == c.client_id))
        .collect();
    candidates.sort_by_key(|c| (c.created, c.client_id.clone()));
    let over = (clients.len() + 1).saturating_sub(MAX_CLIENTS);
    candidates
        .into_iter()
        .take(over)
        .map(|c| c.client_id.clone())
        .collect()
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// SHA-256 of `secret`, hex: how refresh tokens, codes and one-time codes are kept.
pub(crate) fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The built-in server's state, in its one home.
#[derive(Debug)]
pub(crate) enum Store {
    Local(local::Local),
    Shared(shared::Shared),
}

impl Store {
    /// Register `client`, forgetting the oldest clients without a grant past [`MAX_CLIENTS`].
    pub(crate) async fn add_client(&self, client: Client) -> Result<(), StoreError> {
        match self {
            Self::Local(local) => local.add_client(client),
            Self::Shared(shared) => shared.add_client(client).await,
        }
    }

    /// The client `client_id`, when registered.
    pub(crate) async fn client(&self, client_id: &str) -> Result<Option<Client>, StoreError> {
        match self {
            Self::Local(local) => local.client(client_id),
            Self::Shared(shared) => shared.client(client_id).await,
        }
    }

    /// Whether grant `id` still stands.
    pub(crate) async fn grant_alive(&self, id: &str) -> Result<bool, StoreError> {
        match self {
            Self::Local(local) => local.grant_alive(id),
            Self::Shared(shared) => shared.grant_alive(id).await,
        }
    }

    /// Keep a new grant.
    pub(crate) async fn add_grant(&self, grant: Grant) -> Result<(), StoreError> {
        match self {
            Self::Local(local) => local.add_grant(grant),
            Self::Shared(shared) => shared.add_grant(grant).await,
        }
    }

    /// The grant whose current refresh token has hash `presented`, untouched.
    pub(crate) async fn current_grant(&self, presented: &str) -> Result<Option<Grant>, StoreError> {
        match self {
            Self::Local(local) => local.current_grant(presented),
            Self::Shared(shared) => shared
                .grant_by_refresh(presented)
                .await
                .map(|found| found.filter(|g| g.refresh_hash == presented)),
        }
    }

    /// Present the refresh token whose hash is `presented`, rotating it to `next` (a hash
    /// too) or, reused, revoking its grant ([`Grant::present`]).
    pub(crate) async fn rotate(&self, presented: &str, next: &str) -> Result<Refresh, StoreError> {
        match self {
            Self::Local(local) => local.rotate(presented, next),
            Self::Shared(shared) => shared.rotate(presented, next).await,
        }
    }

    /// End grant `id`; `false` when there is none.
    pub(crate) async fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        match self {
            Self::Local(local) => local.revoke(id),
            Self::Shared(shared) => shared.revoke(id).await,
        }
    }

    /// End the grant a refresh token (current or rotated) with hash `presented` belongs to.
    pub(crate) async fn revoke_by_refresh(&self, presented: &str) -> Result<bool, StoreError> {
        match self {
            Self::Local(local) => local.revoke_by_refresh(presented),
            Self::Shared(shared) => match shared.grant_by_refresh(presented).await? {
                Some(grant) => shared.revoke(&grant.id).await,
                None => Ok(false),
            },
        }
    }

    /// Every grant, oldest first.
    pub(crate) async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        let mut grants = match self {
            Self::Local(local) => local.grants()?,
            Self::Shared(shared) => shared.grants().await?,
        };
        grants.sort_by_key(|g| (g.created, g.id.clone()));
        Ok(grants)
    }

    /// Keep a consent page waiting for approval as `id`; `false` when `max` are waiting.
    pub(crate) async fn add_pending(
        &self,
        id: &str,
        pending: &Pending,
        max: usize,
    ) -> Result<bool, StoreError> {
        match self {
            Self::Local(local) => Ok(local.add_pending(id, pending, max)),
            Self::Shared(shared) => shared.add_pending(id, pending, max).await,
        }
    }

    /// The pending approval `id`.
    pub(crate) async fn pending(&self, id: &str) -> Result<Option<Pending>, StoreError> {
        match self {
            Self::Local(local) => Ok(local.pending(id)),
            Self::Shared(shared) => shared.pending(id).await,
        }
    }

    /// Count a wrong secret for approval `id`; at `max` the approval ends.
    pub(crate) async fn wrong_attempt(&self, id: &str, max: u32) -> Result<Attempt, StoreError> {
        match self {
            Self::Local(local) => Ok(local.wrong_attempt(id, max)),
            Self::Shared(shared) => shared.wrong_attempt(id, max).await,
        }
    }

    /// Take approval `id` out (it is decided): `None` when another request took it first.
    pub(crate) async fn take_pending(&self, id: &str) -> Result<Option<Pending>, StoreError> {
        match self {
            Self::Local(local) => Ok(local.take_pending(id)),
            Self::Shared(shared) => shared.take_pending(id).await,
        }
    }

    /// Keep an authorization code (by its hash) until its exchange.
    pub(crate) async fn add_code(
        &self,
        code_hash: &str,
        issued: &Issued,
    ) -> Result<(), StoreError> {
        match self {
            Self::Local(local) => {
                local.add_code(code_hash, issued);
                Ok(())
            }
            Self::Shared(shared) => shared.add_code(code_hash, issued).await,
        }
    }

    /// Take the code with hash `code_hash` out: used once, whatever the exchange does next.
    pub(crate) async fn take_code(&self, code_hash: &str) -> Result<Option<Issued>, StoreError> {
        match self {
            Self::Local(local) => Ok(local.take_code(code_hash)),
            Self::Shared(shared) => shared.take_code(code_hash).await,
        }
    }

    /// Publish a public signing key, valid for verification for `valid_for` from now (the
    /// local home has only its own key: nothing to publish).
    pub(crate) async fn publish_key(
        &self,
        jwk: &Jwk,
        valid_for: std::time::Duration,
    ) -> Result<(), StoreError> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Shared(shared) => shared.publish_key(jwk, valid_for).await,
        }
    }

    /// The published public keys still valid (`kid`: only that one).
    pub(crate) async fn published_keys(&self, kid: Option<&str>) -> Result<Vec<Jwk>, StoreError> {
        match self {
            Self::Local(_) => Ok(Vec::new()),
            Self::Shared(shared) => shared.published_keys(kid).await,
        }
    }

    /// Whether the state is shared with other replicas.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Self::Shared(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn grant(id: &str, refresh: &str) -> Grant {
        Grant {
            id: id.to_owned(),
            client_id: "c".to_owned(),
            client_name: None,
            subject: "owner".to_owned(),
            scopes: vec!["tools:read".to_owned()],
            resource: "http://127.0.0.1:1/mcp".to_owned(),
            created: 1,
            last_used: 1,
            refresh_hash: hash(refresh),
            rotated: Vec::new(),
        }
    }

    #[test]
    fn a_grant_rotates_forgets_the_oldest_and_knows_a_reuse() {
        let mut g = grant("g", "r0");
        for i in 0..=MAX_ROTATED {
            let presented = hash(&format!("r{i}"));
            let next = hash(&format!("r{}", i + 1));
            let forgotten = (i == MAX_ROTATED).then(|| hash("r0"));
            assert_eq!(
                g.present(&presented, &next),
                Some(Presented::Rotated { forgotten })
            );
        }
        assert_eq!(g.rotated.len(), MAX_ROTATED);
        assert_eq!(g.present(&hash("r5"), &hash("x")), Some(Presented::Reused));
        assert_eq!(g.present(&hash("r0"), &hash("x")), None, "forgotten");
        assert_eq!(g.present(&hash("other"), &hash("x")), None);
    }

    #[test]
    fn room_is_made_from_the_oldest_clients_without_a_grant() {
        let client = |id: &str, created: u64| Client {
            client_id: id.to_owned(),
            client_name: None,
            redirect_uris: Vec::new(),
            created,
        };
        let mut clients = BTreeMap::new();
        for i in 0..MAX_CLIENTS as u64 {
            let id = format!("c{i:03}");
            clients.insert(id.clone(), client(&id, i));
        }
        let mut grants = BTreeMap::new();
        let mut g = grant("g", "r");
        g.client_id = "c000".to_owned();
        grants.insert("g".to_owned(), g);
        assert_eq!(evictions(&clients, &grants), ["c001"]);
        clients.remove("c150");
        assert!(evictions(&clients, &grants).is_empty());
    }
}
