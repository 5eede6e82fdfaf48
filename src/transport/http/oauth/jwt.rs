//! JWT access tokens (RFC 9068) checked against the authorization server's keys: the
//! signature, `iss`, `aud`, `exp` and `nbf`.
//!
//! **The crate.** `jsonwebtoken` (Keats/jsonwebtoken) does the JOSE work: the most used JWT
//! crate in Rust, maintained, with JWK → key conversion and the registered-claim checks,
//! and backed here by aws-lc-rs, which rustls already brings (no second crypto stack). The
//! alternatives were weighed: `jwt-simple` is well kept too but would add its own pure-Rust
//! crypto beside aws-lc-rs; `jwt-authorizer` and `oauth-resource-server` are whole axum
//! layers with their own challenge and discovery rules, where toolport needs its gate's
//! order, its refusal bodies and a scope check on the JSON-RPC body; rmcp's `auth` feature is
//! client-side only.
//!
//! **The rules**, each checked before the signature is looked at:
//! - the header's `alg` must be RS256, ES256 or EdDSA ([`ALGORITHMS`]): never `none`, and
//!   never an HMAC algorithm (HS256 …). An HMAC token "signed" with the server's *public* key
//!   as the secret is the classic key-confusion forgery: a verifier that lets the token pick
//!   the algorithm would check it with the public key as an HMAC secret, which anyone has;
//! - the key is the one the header's `kid` names in the JWKS (or the only key, when there is
//!   one and no `kid`); a symmetric (`oct`) key is never used, a key whose own `alg` or
//!   family differs from the header's is refused, and one marked for encryption too;
//! - `iss` must be the configured issuer exactly; `aud` must contain the canonical resource
//!   (RFC 8707: a token issued for another server is not for this one); `exp` is required,
//!   `exp` and `nbf` are checked with the configured leeway.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::{Map, Value};

/// The signature algorithms accepted: the asymmetric ones identity providers sign access
/// tokens with. PS*, RS384/512 and ES384 could be added when a provider needs them; HS* and
/// `none` never.
pub(crate) const ALGORITHMS: [Algorithm; 3] =
    [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// Why a token was refused. The messages never contain the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    #[error("the token is not a JWT toolport can read ({0})")]
    Malformed(String),
    #[error(
        "the token is signed with {0:?}, which toolport does not accept (RS256, ES256 and EdDSA only)"
    )]
    Algorithm(String),
    #[error("the token names the key {0:?}, which the authorization server does not publish")]
    UnknownKey(String),
    #[error("the token names no key (kid) and the authorization server publishes several")]
    NoKeyId,
    #[error("the key {kid:?} cannot verify a {alg:?} signature")]
    KeyMismatch { kid: String, alg: String },
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the token was issued by another authorization server (iss)")]
    Issuer,
    #[error("the token was issued for another resource: its audience (aud) does not name {0}")]
    Audience(String),
    #[error("the token lacks the {0} claim")]
    MissingClaim(String),
    #[error("the authorization server says the token is not active")]
    Inactive,
    #[error("the grant the token belongs to was revoked")]
    Revoked,
}

/// Whether `token` has the shape of a JWS compact serialization (three base64url parts);
/// anything else is an opaque token, for introspection.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3
        && parts[..2].iter().all(|p| !p.is_empty())
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// What the token's header says, read before anything is trusted.
pub(crate) struct Header {
    pub(crate) alg: Algorithm,
    pub(crate) kid: Option<String>,
}

/// Read the header and refuse any algorithm but [`ALGORITHMS`] (by its name, so `none` and
/// `HS256` are reported as such rather than as an unreadable header).
pub(crate) fn header(token: &str) -> Result<Header, TokenError> {
    let encoded = token.split('.').next().unwrap_or_default();
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| TokenError::Malformed("its header is not base64url".to_owned()))?;
    let raw: Map<String, Value> = serde_json::from_slice(&bytes)
        .map_err(|_| TokenError::Malformed("its header is not a JSON object".to_owned()))?;
    let name = raw.get("alg").and_then(Value::as_str).unwrap_or_default();
    let alg = ALGORITHMS
        .into_iter()
        .find(|a| format!("{a:?}") == name)
        .ok_or_else(|| TokenError::Algorithm(name.to_owned()))?;
    let parsed = decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
    if parsed.alg != alg {
        return Err(TokenError::Algorithm(name.to_owned()));
    }
    Ok(Header {
        alg,
        kid: parsed.kid,
    })
}

/// The key that verifies a token with `header`: `Ok(None)` when its `kid` is not in `keys`
/// (the caller may fetch the set again).
pub(crate) fn select<'a>(header: &Header, keys: &'a JwkSet) -> Result<Option<&'a Jwk>, TokenError> {
    match &header.kid {
        Some(kid) => Ok(keys.find(kid)),
        None => match keys.keys.as_slice() {
            [only] => Ok(Some(only)),
            [] => Ok(None),
            _ => Err(TokenError::NoKeyId),
        },
    }
}

/// What a token is checked against.
pub(crate) struct Expected<'a> {
    pub(crate) issuer: &'a str,
    pub(crate) audience: &'a str,
    pub(crate) leeway: Duration,
}

/// Verify `token` (whose header is `header`) with `jwk` and check its claims; its claims
/// when it passes.
pub(crate) fn verify(
    token: &str,
    header: &Header,
    jwk: &Jwk,
    expected: &Expected<'_>,
) -> Result<Map<String, Value>, TokenError> {
    let kid = jwk.common.key_id.clone().unwrap_or_default();
    let mismatch = || TokenError::KeyMismatch {
        kid: kid.clone(),
        alg: format!("{:?}", header.alg),
    };
    let family_fits = match (&jwk.algorithm, header.alg) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256) => true,
        (AlgorithmParameters::EllipticCurve(_), Algorithm::ES256) => true,
        (AlgorithmParameters::OctetKeyPair(_), Algorithm::EdDSA) => true,
        // `oct` (a shared secret) and anything else: never.
        _ => false,
    };
    let alg_fits = jwk
        .common
        .key_algorithm
        .is_none_or(|declared| declared.to_string() == format!("{:?}", header.alg));
    let use_fits = !matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    );
    if !(family_fits && alg_fits && use_fits)
        || jwk.common.key_algorithm == Some(KeyAlgorithm::UNKNOWN_ALGORITHM)
    {
        return Err(mismatch());
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|_| mismatch())?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = expected.leeway.as_secs();
    validation.validate_nbf = true;
    validation.set_issuer(&[expected.issuer]);
    validation.set_audience(&[expected.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    decode::<Map<String, Value>>(token, &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.into_kind() {
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::ImmatureSignature => TokenError::NotYetValid,
            ErrorKind::InvalidIssuer => TokenError::Issuer,
            ErrorKind::InvalidAudience => TokenError::Audience(expected.audience.to_owned()),
            ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim),
            ErrorKind::InvalidSignature => TokenError::Signature,
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidKeyFormat => mismatch(),
            other => TokenError::Malformed(format!("{other:?}")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header as JwtHeader, encode};
    use serde_json::json;

    /// A P-256 key pair for the tests (generated once with `openssl ecparam -genkey -name
    /// prime256v1 | openssl pkcs8 -topk8 -nocrypt`; the PKCS#8 DER, base64), only used here.
    const EC_PRIVATE: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg99L3f6eTMRAJ0eBE\
xJdIvpQ84STqoDy4/9TByjD7dVChRANCAAQKwoMcgLsblRqfNEQmBvpNIaV3zAwO\
z8R4XT+D47DsK9Mc5C9Vd0t8akaUehDLvFBzWFC3tpn12KJ7XU9kMPNg";
    const EC_X: &str = "CsKDHIC7G5UanzREJgb6TSGld8wMDs_EeF0_g-Ow7Cs";
    const EC_Y: &str = "0xzkL1V3S3xqRpR6EMu8UHNYULe2mfXYontdT2Qw82A";

    const ISSUER: &str = "https://idp.example";
    const RESOURCE: &str = "https://tools.example/mcp";

    fn jwks() -> JwkSet {
        serde_json::from_value(json!({"keys": [
            {"kty": "EC", "crv": "P-256", "x": EC_X, "y": EC_Y, "kid": "ec1", "alg": "ES256", "use": "sig"},
            {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQ", "kid": "hmac"}
        ]}))
        .unwrap()
    }

    fn now() -> i64 {
        jsonwebtoken::get_current_timestamp() as i64
    }

    fn claims(extra: &Value) -> Value {
        let mut base = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 300, "scope": "tools:read"});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    }

    fn signed(claims: &Value) -> String {
        let mut header = JwtHeader::new(Algorithm::ES256);
        header.kid = Some("ec1".into());
        let der = base64::engine::general_purpose::STANDARD
            .decode(EC_PRIVATE)
            .unwrap();
        let key = EncodingKey::from_ec_der(&der);
        encode(&header, claims, &key).unwrap()
    }

    fn check(token: &str, leeway: u64) -> Result<Map<String, Value>, TokenError> {
        let header = header(token)?;
        let keys = jwks();
        let jwk = select(&header, &keys)?.ok_or(TokenError::UnknownKey(String::new()))?;
        verify(
            token,
            &header,
            jwk,
            &Expected {
                issuer: ISSUER,
                audience: RESOURCE,
                leeway: Duration::from_secs(leeway),
            },
        )
    }

    fn b64(value: &Value) -> String {
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    #[test]
    fn a_token_for_this_resource_passes() {
        let claims = check(&signed(&claims(&json!({}))), 0).unwrap();
        assert_eq!(claims["sub"], "alice");
        let many = claims_with_aud(&json!(["https://other.example", RESOURCE]));
        assert!(check(&signed(&many), 0).is_ok());
    }

    fn claims_with_aud(aud: &Value) -> Value {
        claims(&json!({"aud": aud}))
    }

    #[test]
    fn audience_issuer_and_times_are_checked() {
        assert_eq!(
            check(
                &signed(&claims_with_aud(&json!("https://other.example/mcp"))),
                0
            ),
            Err(TokenError::Audience(RESOURCE.into()))
        );
        assert_eq!(
            check(&signed(&claims(&json!({"iss": "https://evil.example"}))), 0),
            Err(TokenError::Issuer)
        );
        assert_eq!(
            check(&signed(&claims(&json!({"exp": now() - 20}))), 0),
            Err(TokenError::Expired)
        );
        // Within the leeway, an expired token still passes; past it, not.
        assert!(check(&signed(&claims(&json!({"exp": now() - 20}))), 60).is_ok());
        assert_eq!(
            check(&signed(&claims(&json!({"nbf": now() + 120}))), 60),
            Err(TokenError::NotYetValid)
        );
        let mut no_aud = claims(&json!({}));
        no_aud.as_object_mut().unwrap().remove("aud");
        assert_eq!(
            check(&signed(&no_aud), 0),
            Err(TokenError::MissingClaim("aud".into()))
        );
        let mut no_exp = claims(&json!({}));
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(
            check(&signed(&no_exp), 0),
            Err(TokenError::MissingClaim("exp".into()))
        );
    }

    #[test]
    fn none_and_hmac_are_refused_by_name() {
        let body = b64(&claims(&json!({})));
        let none = format!("{}.{body}.", b64(&json!({"alg": "none", "kid": "ec1"})));
        assert_eq!(check(&none, 0), Err(TokenError::Algorithm("none".into())));
        // HS256 with the HMAC key the set (wrongly) holds, and with the public key's text as
        // the secret: both refused before any key is used.
        for secret in [&b"secret-secret-secret"[..], EC_X.as_bytes()] {
            let mut header = JwtHeader::new(Algorithm::HS256);
            header.kid = Some("hmac".into());
            let forged = encode(
                &header,
                &claims(&json!({})),
                &EncodingKey::from_secret(secret).unwrap(),
            )
            .unwrap();
            assert_eq!(
                check(&forged, 0),
                Err(TokenError::Algorithm("HS256".into()))
            );
        }
    }

    #[test]
    fn a_tampered_token_or_the_wrong_key_fails() {
        let token = signed(&claims(&json!({})));
        let (head, rest) = token.split_once('.').unwrap();
        let (_, signature) = rest.split_once('.').unwrap();
        let tampered = format!(
            "{head}.{}.{signature}",
            b64(&claims(&json!({"sub": "mallory"})))
        );
        assert_eq!(check(&tampered, 0), Err(TokenError::Signature));
        // An ES256 header naming the `oct` key: refused, never verified with it.
        let header_json = json!({"alg": "ES256", "kid": "hmac"});
        let confused = format!("{}.{}", b64(&header_json), token.split_once('.').unwrap().1);
        assert!(matches!(
            check(&confused, 0),
            Err(TokenError::KeyMismatch { .. })
        ));
        assert!(matches!(check("a.b", 0), Err(TokenError::Malformed(_))));
    }

    #[test]
    fn jwt_shape() {
        assert!(looks_like_jwt("eyJh.eyJi.c2ln"));
        assert!(looks_like_jwt("eyJh.eyJi."));
        assert!(!looks_like_jwt("opaque-token-value"));
        assert!(!looks_like_jwt("a.b.c.d"));
        assert!(!looks_like_jwt("a b.c.d"));
    }
}
