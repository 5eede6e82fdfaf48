//! Opaque access tokens, checked by asking the authorization server (RFC 7662 token
//! introspection) with toolport's own client credentials (HTTP Basic, RFC 7662 §2.1).
//!
//! The answer must say `active: true`, name the configured issuer when it names one, name
//! the canonical resource in `aud` (an answer without an audience is refused: RFC 8707 binds
//! a token to its resource, and a token that does not say which resource it is for could be
//! anyone's), and not be past `exp` / before `nbf` (with the leeway).
//!
//! Answers are cached by the SHA-256 of the token (the token itself is never kept), for at
//! most [`CACHE_TTL`] and never past the token's `exp`, so a busy client costs one request
//! to the authorization server a minute and a revoked token stops working within a minute.
//! Refusals are not cached: they cost the client its session anyway. At most
//! [`MAX_IN_FLIGHT`] introspection requests are open at once, so clients sending made-up
//! tokens (each one a cache miss) cannot turn toolport into a flood against the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::discovery::{FetchError, Fetcher};
use super::jwt::{Expected, TokenError};
use super::settings::Introspection;

/// Longest an answer is reused: a token revoked at the authorization server stops working
/// here within this long.
const CACHE_TTL: Duration = Duration::from_secs(60);
/// Most answers kept; past it, expired ones are dropped first and then all (the cache only
/// saves requests, so losing it costs nothing but those).
const MAX_CACHED: usize = 10_000;
/// Most introspection requests open at once; more wait their turn. An answer takes
/// milliseconds, so 16 keeps up with any real set of clients, and bounds what garbage tokens
/// (each a cache miss, checked before the per-client rate) can make the server bear.
const MAX_IN_FLIGHT: usize = 16;

/// Why an opaque token could not be accepted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IntrospectError {
    /// The token is not good.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The authorization server could not be asked.
    #[error("the token cannot be checked: {0}")]
    Unavailable(#[from] FetchError),
}

struct Cached {
    claims: Arc<Map<String, Value>>,
    until: Instant,
}

/// The introspection client and its cache.
pub(crate) struct Introspector {
    fetcher: Fetcher,
    settings: Introspection,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
    in_flight: tokio::sync::Semaphore,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspector")
            .field("endpoint", &self.settings.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

/// Seconds since the epoch, now.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Introspector {
    pub(crate) fn new(fetcher: Fetcher, settings: Introspection) -> Self {
        Self {
            fetcher,
            settings,
            cache: Mutex::default(),
            in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
        }
    }

    /// The claims of the active token `token`, checked against `expected`.
    pub(crate) async fn check(
        &self,
        token: &str,
        expected: &Expected<'_>,
    ) -> Result<Arc<Map<String, Value>>, IntrospectError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let cached = {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            cache
                .get(&key)
                .filter(|c| c.until > Instant::now())
                .map(|c| c.claims.clone())
        };
        if let Some(claims) = cached {
            check_claims(&claims, expected, unix_now())?;
            return Ok(claims);
        }
        let url = &self.settings.endpoint;
        let request = self.fetcher_request(token);
        // The semaphore is never closed, so acquiring fails never; were it to, asking anyway
        // is what the code did before the bound.
        let _permit = self.in_flight.acquire().await.ok();
        let answer: Map<String, Value> = self.fetcher.send(url, request).await?;
        let now = unix_now();
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Inactive.into());
        }
        check_claims(&answer, expected, now)?;
        let claims = Arc::new(answer);
        let mut ttl = CACHE_TTL;
        if let Some(exp) = claims.get("exp").and_then(Value::as_i64) {
            let left = u64::try_from(exp.saturating_sub(now)).unwrap_or(0);
            ttl = ttl.min(Duration::from_secs(left));
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            let now = Instant::now();
            cache.retain(|_, c| c.until > now);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(
            key,
            Cached {
                claims: claims.clone(),
                until: Instant::now() + ttl,
            },
        );
        Ok(claims)
    }

    fn fetcher_request(&self, token: &str) -> reqwest::RequestBuilder {
        self.fetcher
            .client()
            .post(self.settings.endpoint.clone())
            .basic_auth(
                &self.settings.client_id,
                Some(self.settings.client_secret.expose()),
            )
            .form(&[("token", token), ("token_type_hint", "access_token")])
    }
}

/// The checks of an introspection answer (`now` in seconds since the epoch).
fn check_claims(
    claims: &Map<String, Value>,
    expected: &Expected<'_>,
    now: i64,
) -> Result<(), TokenError> {
    let leeway = i64::try_from(expected.leeway.as_secs()).unwrap_or(0);
    if let Some(iss) = claims.get("iss")
        && iss.as_str() != Some(expected.issuer)
    {
        return Err(TokenError::Issuer);
    }
    let audience_named = match claims.get("aud") {
        Some(Value::String(aud)) => aud == expected.audience,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(expected.audience)),
        Some(_) => false,
        None => return Err(TokenError::MissingClaim("aud".to_owned())),
    };
    if !audience_named {
        return Err(TokenError::Audience(expected.audience.to_owned()));
    }
    if let Some(exp) = claims.get("exp").and_then(Value::as_i64)
        && exp.saturating_add(leeway) < now
    {
        return Err(TokenError::Expired);
    }
    if let Some(nbf) = claims.get("nbf").and_then(Value::as_i64)
        && nbf.saturating_sub(leeway) > now
    {
        return Err(TokenError::NotYetValid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(answer: &Value, now: i64) -> Result<(), TokenError> {
        let expected = Expected {
            issuer: "https://idp.example",
            audience: "https://tools.example/mcp",
            leeway: Duration::from_secs(10),
        };
        check_claims(answer.as_object().unwrap(), &expected, now)
    }

    #[test]
    fn an_answer_must_name_this_resource_and_be_in_time() {
        let good = json!({"active": true, "iss": "https://idp.example", "aud": ["x", "https://tools.example/mcp"], "exp": 1000});
        assert_eq!(check(&good, 900), Ok(()));
        assert_eq!(check(&good, 1005), Ok(()), "within the leeway");
        assert_eq!(
            check(
                &json!({"aud": "https://tools.example/mcp", "exp": 1000}),
                1011
            ),
            Err(TokenError::Expired)
        );
        assert_eq!(
            check(
                &json!({"aud": "https://tools.example/mcp", "nbf": 1000}),
                980
            ),
            Err(TokenError::NotYetValid)
        );
        assert_eq!(
            check(&json!({"aud": "https://other.example"}), 0),
            Err(TokenError::Audience("https://tools.example/mcp".into()))
        );
        assert_eq!(
            check(
                &json!({"iss": "https://evil.example", "aud": "https://tools.example/mcp"}),
                0
            ),
            Err(TokenError::Issuer)
        );
        assert_eq!(
            check(&json!({}), 0),
            Err(TokenError::MissingClaim("aud".into()))
        );
    }
}
