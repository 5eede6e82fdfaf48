//! toolport as its own OAuth 2.1 authorization server, for one person (`[http.oauth]
//! authorization_server = "builtin"`, `--oauth builtin`): so a developer can connect claude.ai,
//! ChatGPT, VS Code or mcp-remote to their own toolport through a tunnel, with no identity
//! provider.
//!
//! It lives at the origin of the resource (`public_url`'s, else the request's): its issuer is
//! that origin, and the resource server checks its tokens through the normal JWT path with its
//! key set given in process ([`super::keys::Keys::fixed`]). One concern per file:
//! - [`super::settings::builtin`]: the mode's settings (scopes it may grant, token lifetime, state folder,
//!   how consent is approved);
//! - [`metadata`]: RFC 8414 metadata (and the OpenID discovery path clients also probe);
//! - [`register`]: dynamic client registration (RFC 7591; public clients only);
//! - [`cimd`]: client ID metadata documents (an `https` client id), fetched through
//!   `fetch_url`'s address guard, bounded and cached;
//! - [`redirect`]: which redirect URIs may be registered, and exact matching;
//! - [`pkce`]: S256 only;
//! - [`authorize`]: `/oauth/authorize`: the request checked, the consent page, the code;
//! - [`consent`]: the consent page and the operator's secret (one-time code or passphrase),
//!   attempts limited;
//! - [`token`]: `/oauth/token` (code and refresh grants, refresh tokens rotated, reuse
//!   revoking the grant) and `/oauth/revoke`;
//! - [`store`]: clients, grants, pending approvals and codes behind one interface: the state
//!   folder and memory on one server, Redis with replicas (`[replicas] redis_url`);
//! - [`keys`]: the Ed25519 signing key in the state folder (with replicas, each replica's own,
//!   its public half published through [`store`] so every replica checks every replica's
//!   tokens and serves the same JWKS).
//!
//! **Crates.** jsonwebtoken (the resource server's JOSE crate) signs; aws-lc-rs (already the
//! crypto under rustls and jsonwebtoken) makes the key; getrandom (through
//! [`random_token`]) makes codes, tokens and ids; sha2 hashes what is stored. No OAuth server
//! crate is used: the Rust ones (`oxide-auth`) bring their own web-framework glue and
//! primitives toolport would still have to wrap for PKCE-only, resource-bound, rotating
//! flows; the protocol here is small enough to read whole.
//!
//! **What never leaves.** Authorization codes, tokens and the consent secret are never logged,
//! put in an error page or an error description: logs name the client and the grant.

pub(crate) mod admin;
pub(crate) mod authorize;
pub(crate) mod cimd;
pub(crate) mod consent;
pub(crate) mod keys;
pub(crate) mod metadata;
pub(crate) mod pkce;
pub(crate) mod redirect;
pub(crate) mod register;
pub(crate) mod store;
pub(crate) mod token;

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use jsonwebtoken::jwk::JwkSet;
use toolport_tools::host::secret::random_token;

use self::keys::Signer;
use self::store::{Store, StoreError};
use super::metadata::Resource;
use super::settings::OAuthSettings;
use super::settings::builtin::BuiltinSettings;
use crate::cluster::{Budget, Cluster, Refused};

/// The endpoints' paths.
pub(crate) const AUTHORIZE_PATH: &str = "/oauth/authorize";
pub(crate) const TOKEN_PATH: &str = "/oauth/token";
pub(crate) const REGISTER_PATH: &str = "/oauth/register";
pub(crate) const REVOKE_PATH: &str = "/oauth/revoke";
pub(crate) const JWKS_PATH: &str = "/oauth/jwks";
/// Largest request body these endpoints read: a registration or a token request is well
/// under a kilobyte; 16 KiB leaves room for long redirect URIs and names.
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024;
/// The subject of every grant: the one person this server is for, the operator.
pub(crate) const OPERATOR_SUBJECT: &str = "operator";
/// Bytes of randomness in codes, refresh tokens and the consent form's token (256 bits).
pub(crate) const SECRET_BYTES: usize = 32;
/// Bytes of randomness in client and grant ids (128 bits: unguessable, not secret).
pub(crate) const ID_BYTES: usize = 16;
/// Requests per minute to the open endpoints (registration, token, revocation) from one
/// address: a client makes a handful per connection; a flood is refused before it costs a
/// disk write.
const OPEN_REQUESTS_PER_MINUTE: NonZeroU32 = NonZeroU32::new(60).unwrap();
/// Registrations per minute from everyone: each is written to the state (with replicas, one
/// rate for all of them).
const REGISTRATIONS_PER_MINUTE: NonZeroU32 = NonZeroU32::new(20).unwrap();

/// How long a published key stays valid past the expiry of the last token it signed (and the
/// resource server's leeway): room for the clocks of Redis and this replica to differ.
const KEY_MARGIN: Duration = Duration::from_secs(60);
/// Published keys a replica keeps at hand besides its own (replicas and their restarts within
/// a token lifetime): past this the cache starts again from its own key.
const MAX_KNOWN_KEYS: usize = 64;

/// The built-in authorization server.
#[derive(Debug)]
pub(crate) struct Builtin {
    pub(crate) oauth: Arc<OAuthSettings>,
    pub(crate) settings: BuiltinSettings,
    pub(crate) store: Store,
    pub(crate) signer: Signer,
    /// Client ID metadata documents, fetched and cached.
    pub(crate) documents: cimd::Documents,
    /// The public keys known here: its own first, then those other replicas published.
    known_keys: Mutex<JwkSet>,
    /// Requests per address to the open endpoints.
    per_address: DefaultKeyedRateLimiter<IpAddr>,
    /// Registrations from everyone.
    registrations: DefaultDirectRateLimiter,
    /// Consent attempts: per client and overall ([`consent`]).
    attempts: consent::AttemptLimits,
}

impl Builtin {
    /// The server of `oauth` (whose `builtin` is set): its key read from (or made in) the state
    /// folder; its grants there too, or in Redis with `cluster` (replicas).
    pub(crate) fn new(
        oauth: Arc<OAuthSettings>,
        settings: BuiltinSettings,
        cluster: Option<Arc<Cluster>>,
    ) -> Result<Self, String> {
        let store = match cluster {
            Some(cluster) => Store::Shared(store::shared::Shared::new(cluster)),
            None => Store::Local(
                store::local::Local::open(&settings.state_dir).map_err(|e| e.to_string())?,
            ),
        };
        if store.is_shared() {
            store::local::private_dir(&settings.state_dir)
                .map_err(|e| format!("cannot create {}: {e}", settings.state_dir.display()))?;
        }
        let signer = Signer::load_or_create(&settings.state_dir)?;
        Ok(Self {
            oauth,
            settings,
            store,
            known_keys: Mutex::new(signer.jwks()),
            signer,
            documents: cimd::Documents::new()?,
            per_address: RateLimiter::keyed(Quota::per_minute(OPEN_REQUESTS_PER_MINUTE)),
            registrations: RateLimiter::direct(Quota::per_minute(REGISTRATIONS_PER_MINUTE)),
            attempts: consent::AttemptLimits::new(),
        })
    }

    /// This replica's id, with replicas.
    pub(crate) fn replica(&self) -> Option<&str> {
        self.cluster().map(|cluster| cluster.id())
    }

    /// The cluster its state is shared through, with replicas.
    pub(crate) fn cluster(&self) -> Option<&Arc<Cluster>> {
        match &self.store {
            Store::Shared(shared) => Some(shared.cluster()),
            Store::Local(_) => None,
        }
    }

    /// The public keys that check a token naming `kid`: its own, and (with replicas) the one
    /// another replica published under that `kid`, fetched once and kept.
    pub(crate) async fn key_set(&self, kid: Option<&str>) -> Result<JwkSet, StoreError> {
        let known = self.known_keys().clone();
        let Some(kid) = kid else {
            return Ok(known);
        };
        if known.find(kid).is_some() || !self.store.is_shared() {
            return Ok(known);
        }
        let found = self.store.published_keys(Some(kid)).await?;
        let mut known = self.known_keys();
        if known.keys.len() + found.len() > MAX_KNOWN_KEYS {
            known.keys.truncate(1);
        }
        for jwk in found {
            if known.find(kid).is_none() {
                known.keys.push(jwk);
            }
        }
        Ok(known.clone())
    }

    fn known_keys(&self) -> std::sync::MutexGuard<'_, JwkSet> {
        self.known_keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Its public keys, for `/oauth/jwks`: its own and (with replicas) every key a replica
    /// published that may still check a token.
    pub(crate) async fn jwks(&self) -> Result<JwkSet, StoreError> {
        let mut set = self.signer.jwks();
        for jwk in self.store.published_keys(None).await? {
            if set
                .find(jwk.common.key_id.as_deref().unwrap_or_default())
                .is_none()
            {
                set.keys.push(jwk);
            }
        }
        Ok(set)
    }

    /// With replicas, publish its key before it signs, valid until the token it is about to
    /// sign has expired. Every time: a token is signed once per access-token lifetime per
    /// client, and a Redis that lost its data (restarted without persistence) has the key
    /// again at the next token.
    pub(crate) async fn publish_key(&self) -> Result<(), StoreError> {
        let valid_for = self.settings.access_token_lifetime + self.oauth.leeway + KEY_MARGIN;
        self.store.publish_key(self.signer.jwk(), valid_for).await
    }

    /// The resource a request is for, and the issuer (this server) as that request reaches it.
    pub(crate) fn resource(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> (Resource, String) {
        let resource = Resource::of(&self.oauth, headers, peer);
        let issuer = resource.issuer(&self.oauth).into_owned();
        (resource, issuer)
    }

    /// Whether `peer` may make another request to an open endpoint.
    pub(crate) fn admit(&self, peer: Option<IpAddr>) -> bool {
        let peer = peer.unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        self.per_address.check_key(&peer).is_ok()
    }

    /// Whether another client may register now (with replicas, counted across all of them).
    pub(crate) async fn admit_registration(&self) -> Result<bool, StoreError> {
        let rates = [("registrations".to_owned(), REGISTRATIONS_PER_MINUTE)];
        self.within_rates(|| self.registrations.check().is_ok(), &rates)
            .await
    }

    /// Whether another consent attempt for `client_id` may be checked now: the rates of
    /// [`consent`], per client and overall (with replicas, counted across all of them).
    pub(crate) async fn admit_attempt(&self, client_id: &str) -> Result<bool, StoreError> {
        let rates = [
            (
                format!("consent:{}", Cluster::key_part(client_id)),
                consent::ATTEMPTS_PER_CLIENT_PER_MINUTE,
            ),
            ("consent".to_owned(), consent::ATTEMPTS_PER_MINUTE),
        ];
        self.within_rates(|| self.attempts.admit(client_id), &rates)
            .await
    }

    /// Whether one more event fits `rates` (a name, per minute): `local` decides on one server;
    /// with replicas the shared store does, with the cluster's admit script (the same GCRA
    /// as the principals' rates), so N replicas never allow N times a rate.
    async fn within_rates(
        &self,
        local: impl FnOnce() -> bool,
        rates: &[(String, NonZeroU32)],
    ) -> Result<bool, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(local());
        };
        let budgets: Vec<Budget> = rates
            .iter()
            .map(|(name, per_minute)| Budget {
                name: format!("oauth:{name}"),
                max_calls: None,
                per_minute: Some(per_minute.get()),
                max_running: None,
            })
            .collect();
        match cluster.admit(&budgets).await {
            // Nothing to hold: a rate alone has no running set to leave.
            Ok(_lease) => Ok(true),
            Err(Refused::Over(_)) => Ok(false),
            Err(Refused::Away(away)) => Err(StoreError::Away(away)),
        }
    }
}

/// A fresh random secret (hex).
pub(crate) fn secret(bytes: usize) -> Result<String, String> {
    random_token(bytes).map_err(|e| format!("the system's random generator failed: {e}"))
}

/// The routes, outside the bearer gate (they are how a client gets a token); the HTTP layer
/// wraps them with its Host rule ([`super::super::gate::open_endpoint`]).
pub(crate) fn routes(builtin: Arc<Builtin>) -> Router {
    Router::new()
        .route(metadata::WELL_KNOWN, get(metadata::document))
        .route(metadata::OPENID_WELL_KNOWN, get(metadata::document))
        .route(JWKS_PATH, get(metadata::jwks))
        .route(
            AUTHORIZE_PATH,
            get(authorize::start).post(authorize::decide),
        )
        .route(TOKEN_PATH, post(token::token))
        .route(REGISTER_PATH, post(register::register))
        .route(REVOKE_PATH, post(token::revoke))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(builtin)
}
