//! The authorization server's signing keys (its JWKS), fetched when the first token needs
//! them and kept; fetched again when a token names a key the set does not have (the server
//! rotated its keys), at most once per [`REFETCH_INTERVAL`], so tokens with made-up `kid`s
//! cannot make toolport hammer the server.
//!
//! The JWKS URL is the configured `jwks_uri`, else the one the issuer's metadata names
//! ([`super::discovery`]). Keys that do not parse (an encryption key, an algorithm
//! jsonwebtoken does not know) are skipped, not fatal: the set is read key by key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;
use url::Url;

use super::discovery::{FetchError, Fetcher, discover};

/// Least time between two fetches for an unknown key: providers rotate keys over days, and
/// publish a new key before they sign with it, so once a minute finds a rotation in time.
pub(crate) const REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// Least time between two attempts while the keys cannot be fetched at all: short, so a
/// server that comes back is seen soon, and bounded, so a client retrying hard does not
/// become a flood of requests to it.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Why no key set is at hand.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the authorization server's keys cannot be fetched: {0}")]
pub(crate) struct KeysUnavailable(pub(crate) String);

/// The key set, and when to fetch it again.
#[derive(Debug)]
pub(crate) struct Keys {
    fetcher: Fetcher,
    issuer: String,
    /// The operator's `jwks_uri`, which skips discovery.
    configured: Option<Url>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    jwks_uri: Option<Url>,
    set: Option<Arc<JwkSet>>,
    /// The last fetch for an unknown key.
    refetched: Option<Instant>,
    /// The last failure, and what it was.
    failed: Option<(Instant, String)>,
}

/// A JWKS document, read key by key.
#[derive(Deserialize)]
struct RawSet {
    keys: Vec<Value>,
}

impl Keys {
    pub(crate) fn new(fetcher: Fetcher, issuer: String, configured: Option<Url>) -> Self {
        Self {
            fetcher,
            issuer,
            configured,
            state: Mutex::default(),
        }
    }

    /// The key set, fetched now if it never was.
    pub(crate) async fn current(&self) -> Result<Arc<JwkSet>, KeysUnavailable> {
        let mut state = self.state.lock().await;
        if let Some(set) = &state.set {
            return Ok(set.clone());
        }
        self.fetch(&mut state).await
    }

    /// The key set after a token named `kid`, which the set at hand lacks: fetched again
    /// unless that was done less than [`REFETCH_INTERVAL`] ago (`Ok(None)`: nothing new).
    pub(crate) async fn refreshed_for(
        &self,
        kid: &str,
    ) -> Result<Option<Arc<JwkSet>>, KeysUnavailable> {
        let mut state = self.state.lock().await;
        if let Some(set) = &state.set
            && set.find(kid).is_some()
        {
            // Another request fetched it meanwhile.
            return Ok(Some(set.clone()));
        }
        if state
            .refetched
            .is_some_and(|at| at.elapsed() < REFETCH_INTERVAL)
        {
            return Ok(None);
        }
        state.refetched = Some(Instant::now());
        self.fetch(&mut state).await.map(Some)
    }

    async fn fetch(&self, state: &mut State) -> Result<Arc<JwkSet>, KeysUnavailable> {
        if let Some((at, reason)) = &state.failed
            && at.elapsed() < RETRY_AFTER_FAILURE
        {
            return Err(KeysUnavailable(reason.clone()));
        }
        match self.fetch_set(state).await {
            Ok(set) => {
                let set = Arc::new(set);
                state.set = Some(set.clone());
                state.failed = None;
                Ok(set)
            }
            Err(error) => {
                let reason = error.to_string();
                tracing::warn!(%reason, "cannot fetch the authorization server's keys");
                state.failed = Some((Instant::now(), reason.clone()));
                Err(KeysUnavailable(reason))
            }
        }
    }

    async fn fetch_set(&self, state: &mut State) -> Result<JwkSet, FetchError> {
        let uri = match (&self.configured, &state.jwks_uri) {
            (Some(uri), _) | (None, Some(uri)) => uri.clone(),
            (None, None) => {
                let metadata = discover(&self.fetcher, &self.issuer).await?;
                let text = metadata.jwks_uri.ok_or_else(|| FetchError::Invalid {
                    url: self.issuer.clone(),
                    reason: "its metadata names no jwks_uri (set http.oauth.jwks_uri)".to_owned(),
                })?;
                let uri = Url::parse(&text).map_err(|e| FetchError::Invalid {
                    url: text.clone(),
                    reason: e.to_string(),
                })?;
                state.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let raw: RawSet = self.fetcher.get(&uri).await?;
        let keys: Vec<Jwk> = raw
            .keys
            .into_iter()
            .filter_map(|key| serde_json::from_value(key).ok())
            .collect();
        tracing::debug!(url = %uri, keys = keys.len(), "fetched the authorization server's keys");
        Ok(JwkSet { keys })
    }
}
