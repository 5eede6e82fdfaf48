//! toolport as an OAuth 2.1 resource server (`[http.oauth]`): a request's bearer token, when
//! it is not the static token, is an access token from the configured authorization server,
//! checked here and turned into the request's [`Principal`].
//!
//! One concern per file:
//! - [`settings`]: `[http.oauth]`, its flags and variables, validated;
//! - [`metadata`]: the canonical resource URL of a request and the RFC 9728 document;
//! - [`discovery`]: the authorization server's metadata (RFC 8414, OpenID discovery) and the
//!   one bounded fetch every request to it uses;
//! - [`keys`]: its JWKS, cached, fetched again on an unknown `kid` at most once a minute;
//! - [`jwt`]: JWT access tokens (the crate choice and the algorithm rules are there);
//! - [`introspect`]: opaque tokens by RFC 7662, cached by the token's hash;
//! - [`challenge`]: the 401/403 answers with their `WWW-Authenticate` challenges;
//! - [`builtin`]: toolport as its own authorization server (`authorization_server =
//!   "builtin"`): its endpoints, consent page and grants; its tokens come back here and are
//!   checked as any issuer's, with the keys it knows in process (with replicas, also those the
//!   others published in the shared store);
//! - here: [`OAuth`], which ties them together for the gate ([`super::gate`]): check a token
//!   ([`OAuth::authenticate`]) and refuse a `tools/call` outside the token's scopes with 403
//!   ([`OAuth::admit_calls`]) before the call reaches the server, which checks again (a tool
//!   an upstream serves only later is unknown here) and lists a principal only its tools.
//!
//! A token is never logged, stored (only its SHA-256, in the introspection cache), put in an
//! error or passed on: an upstream server gets its own credentials, never the client's.

pub(crate) mod builtin;
pub(crate) mod challenge;
pub(crate) mod discovery;
pub(crate) mod introspect;
pub(crate) mod jwt;
pub(crate) mod keys;
pub(crate) mod metadata;
pub(crate) mod settings;

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{Map, Value};
use toolport_tools::host::LiveRegistry;

use self::builtin::Builtin;
use self::builtin::store::StoreError;
use self::builtin::token::GRANT_CLAIM;
use self::challenge::{Challenge, respond, unavailable};
use self::discovery::Fetcher;
use self::introspect::{IntrospectError, Introspector};
use self::jwt::{Expected, TokenError};
use self::keys::{Keys, KeysUnavailable};
use self::metadata::Resource;
use self::settings::OAuthSettings;
use super::sessions::read_body;
use crate::cluster::{Away, Cluster, WhenAway};
use crate::identity::{Principal, ToolClass};

/// The resource server: the settings, the keys, the introspection client, and the served
/// tools (to know a called tool's class).
#[derive(Debug)]
pub(crate) struct OAuth {
    settings: Arc<OAuthSettings>,
    /// The issuer's keys, fetched (`None` with the built-in server, which has its own).
    keys: Option<Keys>,
    introspector: Option<Introspector>,
    registry: Arc<LiveRegistry>,
    /// Every scope, space-separated (the 401 challenge's `scope`).
    all_scopes: String,
    /// The built-in authorization server, when toolport is its own.
    builtin: Option<Arc<Builtin>>,
}

/// Why a JWT was not accepted.
enum JwtFailure {
    Token(TokenError),
    Keys(KeysUnavailable),
}

impl From<TokenError> for JwtFailure {
    fn from(error: TokenError) -> Self {
        Self::Token(error)
    }
}

impl From<KeysUnavailable> for JwtFailure {
    fn from(error: KeysUnavailable) -> Self {
        Self::Keys(error)
    }
}

impl OAuth {
    /// The resource server of `settings`, over the served tools; with `cluster` (replicas) the
    /// built-in server keeps its state in the shared store.
    pub(crate) fn new(
        settings: &OAuthSettings,
        registry: Arc<LiveRegistry>,
        cluster: Option<Arc<Cluster>>,
    ) -> Result<Self, String> {
        let fetcher = Fetcher::new()?;
        let shared = Arc::new(settings.clone());
        let builtin = match &settings.builtin {
            Some(builtin) => Some(Arc::new(Builtin::new(
                shared.clone(),
                builtin.clone(),
                cluster,
            )?)),
            None => None,
        };
        // The built-in server's keys are in process: toolport does not fetch them from itself.
        let keys = builtin.is_none().then(|| {
            Keys::new(
                fetcher.clone(),
                settings.issuer.clone(),
                settings.jwks_uri.clone(),
            )
        });
        Ok(Self {
            keys,
            builtin,
            introspector: settings
                .introspection
                .clone()
                .map(|i| Introspector::new(fetcher, i)),
            all_scopes: settings.scopes.names().collect::<Vec<_>>().join(" "),
            settings: shared,
            registry,
        })
    }

    /// The settings, for the metadata routes.
    pub(crate) fn settings(&self) -> Arc<OAuthSettings> {
        self.settings.clone()
    }

    /// The built-in authorization server, when toolport is its own (its routes).
    pub(crate) fn builtin(&self) -> Option<Arc<Builtin>> {
        self.builtin.clone()
    }

    /// The refusal of a request with `challenge`.
    pub(crate) fn challenge(
        &self,
        challenge: &Challenge<'_>,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Response {
        let resource = Resource::of(&self.settings, headers, peer);
        respond(challenge, &resource, &self.all_scopes)
    }

    /// The principal `token` authenticates, or the refusal to answer with.
    pub(crate) async fn authenticate(
        &self,
        token: &str,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Principal, Response> {
        let resource = Resource::of(&self.settings, headers, peer);
        let issuer = resource.issuer(&self.settings);
        let expected = Expected {
            issuer: &issuer,
            audience: self.settings.audience.as_deref().unwrap_or(&resource.url),
            leeway: self.settings.leeway,
        };
        let refused = |error: &TokenError| {
            tracing::warn!(reason = %error, "refused an access token");
            respond(&Challenge::Invalid(error), &resource, &self.all_scopes)
        };
        let claims = if jwt::looks_like_jwt(token) {
            match self.check_jwt(token, &expected).await {
                Ok(claims) => claims,
                Err(JwtFailure::Token(error)) => return Err(refused(&error)),
                Err(JwtFailure::Keys(error)) => return Err(unavailable(&error.to_string())),
            }
        } else if let Some(introspector) = &self.introspector {
            match introspector.check(token, &expected).await {
                Ok(claims) => Map::clone(&claims),
                Err(IntrospectError::Token(error)) => return Err(refused(&error)),
                Err(IntrospectError::Unavailable(error)) => {
                    tracing::warn!(%error, "cannot introspect an access token");
                    return Err(unavailable(&error.to_string()));
                }
            }
        } else {
            return Err(refused(&TokenError::Malformed(
                "it is not a JWT, and no introspection endpoint is configured for opaque tokens"
                    .to_owned(),
            )));
        };
        if let Some(builtin) = &self.builtin {
            // Its tokens stop with their grant (`toolport auth revoke`, a reused refresh token).
            let grant = claims
                .get(GRANT_CLAIM)
                .and_then(Value::as_str)
                .unwrap_or_default();
            match builtin.store.grant_alive(grant).await {
                Ok(true) => {}
                Ok(false) => return Err(refused(&TokenError::Revoked)),
                Err(StoreError::Away(away)) if builtin.cluster().is_some() => {
                    if !grant_unknown_while_away(builtin, &away) {
                        return Err(unavailable(&format!(
                            "whether its grant stands is kept in the shared store, which cannot be reached ({away})"
                        )));
                    }
                }
                Err(error) => {
                    tracing::error!(%error, "cannot read the OAuth grants");
                    return Err(unavailable(&error.to_string()));
                }
            }
        }
        Ok(self.principal(claims))
    }

    /// A JWT's claims, checked with the issuer's keys (fetched again once for an unknown
    /// `kid`: the keys may have rotated), or the built-in server's.
    async fn check_jwt(
        &self,
        token: &str,
        expected: &Expected<'_>,
    ) -> Result<Map<String, Value>, JwtFailure> {
        let header = jwt::header(token)?;
        let Some(keys) = &self.keys else {
            let Some(builtin) = &self.builtin else {
                return Err(KeysUnavailable("no key set is configured".to_owned()).into());
            };
            let kid = header.kid.clone().unwrap_or_default();
            let keys = builtin
                .key_set(header.kid.as_deref())
                .await
                .map_err(|e| KeysUnavailable(e.to_string()))?;
            let jwk = jwt::select(&header, &keys)?.ok_or(TokenError::UnknownKey(kid))?;
            return Ok(jwt::verify(token, &header, jwk, expected)?);
        };
        let keys = keys.current().await?;
        if let Some(jwk) = jwt::select(&header, &keys)? {
            return Ok(jwt::verify(token, &header, jwk, expected)?);
        }
        let kid = header.kid.clone().unwrap_or_default();
        let unknown = || TokenError::UnknownKey(kid.clone());
        let keys = match &self.keys {
            Some(keys) => keys.refreshed_for(&kid).await?.ok_or_else(unknown)?,
            None => return Err(unknown().into()),
        };
        let jwk = jwt::select(&header, &keys)?.ok_or_else(unknown)?;
        Ok(jwt::verify(token, &header, jwk, expected)?)
    }

    /// The principal of checked `claims`: `sub` (else the client), `client_id` (RFC 9068;
    /// else `azp`), the scopes (`scope`, space-separated; else `scp`, as some providers
    /// write them) and what they grant.
    fn principal(&self, claims: Map<String, Value>) -> Principal {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let client_id = text("client_id").or_else(|| text("azp"));
        let scopes: Vec<String> = match claims.get("scope").or_else(|| claims.get("scp")) {
            Some(Value::String(list)) => list.split_whitespace().map(str::to_owned).collect(),
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let subject = text("sub")
            .or_else(|| client_id.clone())
            .unwrap_or_default();
        Principal {
            subject,
            client_id,
            access: self.settings.scopes.access(&scopes),
            scopes,
            claims,
        }
    }

    /// Let `request` on only when every `tools/call` in its body names a tool `principal`
    /// may use: otherwise 403 `insufficient_scope` naming the scope that grants it. The body
    /// is read (bounded by `max_body_bytes`) and handed on as it was. A tool not served now
    /// passes: the server answers it (unknown, or checked there once an upstream serves it).
    pub(crate) async fn admit_calls(
        &self,
        principal: &Principal,
        request: Request,
        max_body_bytes: usize,
        peer: Option<IpAddr>,
    ) -> Result<Request, Response> {
        if principal.access.is_all() || request.method() != Method::POST {
            return Ok(request);
        }
        let (parts, body) = request.into_parts();
        let bytes = read_body(body, max_body_bytes).await?;
        let message: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let messages = match &message {
            Value::Array(batch) => batch.iter().collect(),
            single => vec![single],
        };
        let registry = self.registry.load();
        for message in messages {
            if message.get("method").and_then(Value::as_str) != Some("tools/call") {
                continue;
            }
            let Some(name) = message.pointer("/params/name").and_then(Value::as_str) else {
                continue;
            };
            let Some(tool) = registry.get(name) else {
                continue;
            };
            let class = ToolClass::of(tool.as_ref());
            if !principal.access.allows(&class) {
                tracing::warn!(
                    tool = name,
                    subject = %principal.subject,
                    class = %class,
                    "refused a call outside the token's scopes"
                );
                let needed = self.settings.scopes.scope_for(&class);
                let challenge = Challenge::Scope { tool: name, needed };
                return Err(self.challenge(&challenge, &parts.headers, peer));
            }
        }
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }
}

/// Whether a built-in token whose grant cannot be looked up (the shared store is away) is
/// accepted: with `when_redis_away = "local"` yes, on its signature, audience and expiry alone
/// (a revocation made elsewhere is not seen until Redis is back, at most a token lifetime),
/// with a warning; with `"refuse"` no (503, retry). Counted either way.
fn grant_unknown_while_away(builtin: &Builtin, away: &Away) -> bool {
    let Some(cluster) = builtin.cluster() else {
        return false;
    };
    cluster.decided_without_store(away);
    let local = cluster.when_away() == WhenAway::Local;
    if local {
        tracing::debug!(%away, "accepted a built-in access token without checking its grant: the shared store is away (when_redis_away = \"local\")");
    }
    local
}
