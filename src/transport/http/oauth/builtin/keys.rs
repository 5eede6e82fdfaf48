//! The built-in server's signing key: Ed25519 (JWS `EdDSA`), made on first start and kept in
//! the state folder (`signing-key.ed25519.pk8`, PKCS#8, 0600), so tokens issued before a
//! restart stay valid after it.
//!
//! Ed25519 because it is the smallest and fastest of the algorithms the resource server
//! accepts, with no parameters to get wrong; aws-lc-rs (already the crypto under rustls and
//! jsonwebtoken here) generates it, and jsonwebtoken signs with it. The public half is the
//! key the resource server checks tokens against in process ([`super::Builtin::key_set`]) and
//! that `/oauth/jwks` publishes. The key id is derived from the public key (a hash), so it
//! names this key and no other.
//!
//! **With replicas** each replica signs with its own key (in its own state folder: a private
//! key never leaves its server, so reading Redis gives no one the power to sign), and publishes
//! the public half in the shared store each time before it signs, valid until that token has
//! expired ([`super::Builtin::publish_key`]; a key is never made valid for less than before).
//! Every replica checks a token with the key its `kid` names, its own or a published one, and
//! `/oauth/jwks` lists them all. A replica restarted without its folder makes a new key; the
//! tokens its old key signed stay valid on every replica until they expire, since the old
//! public key stays published that long.

use std::path::Path;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;
use serde_json::json;

use super::store::hash;
use super::store::local::write_private;

/// The key file in the state folder.
const KEY_FILE: &str = "signing-key.ed25519.pk8";
/// Characters of the public key's hash used as its `kid`: 64 bits, unique among the few keys
/// one server ever has.
const KID_CHARS: usize = 16;
/// The JWT `typ` of an access token (RFC 9068 §2.1).
const ACCESS_TOKEN_TYPE: &str = "at+jwt";

/// The signing key.
pub(crate) struct Signer {
    kid: String,
    key: EncodingKey,
    jwk: Jwk,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The key in `dir`, made and written there when there is none.
    pub(crate) fn load_or_create(dir: &Path) -> Result<Self, String> {
        let path = dir.join(KEY_FILE);
        let pkcs8 = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let document = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
                    .map_err(|_| "cannot generate a signing key".to_owned())?;
                write_private(&path, document.as_ref())
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                document.as_ref().to_vec()
            }
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let pair = Ed25519KeyPair::from_pkcs8(&pkcs8).map_err(|_| {
            format!(
                "{} is not an Ed25519 PKCS#8 key; move it away and a new key is made (tokens issued with the old one stop working)",
                path.display()
            )
        })?;
        let x = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let kid = hash(&x)[..KID_CHARS].to_owned();
        let jwk: Jwk = serde_json::from_value(json!({
            "kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig",
        }))
        .map_err(|e| format!("cannot describe the signing key as a JWK: {e}"))?;
        Ok(Self {
            kid,
            key: EncodingKey::from_ed_der(&pkcs8),
            jwk,
        })
    }

    /// The public key.
    pub(crate) fn jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// The public key set of this key alone.
    pub(crate) fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: vec![self.jwk.clone()],
        }
    }

    /// A signed access token with `claims`.
    pub(crate) fn sign(&self, claims: &impl Serialize) -> Result<String, String> {
        let header = Header {
            typ: Some(ACCESS_TOKEN_TYPE.to_owned()),
            kid: Some(self.kid.clone()),
            ..Header::new(Algorithm::EdDSA)
        };
        jsonwebtoken::encode(&header, claims, &self.key)
            .map_err(|e| format!("cannot sign an access token: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_kept_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let first = Signer::load_or_create(dir.path()).unwrap();
        let again = Signer::load_or_create(dir.path()).unwrap();
        assert_eq!(first.kid, again.kid);
        assert_eq!(first.jwks().keys, again.jwks().keys);
        std::fs::write(dir.path().join(KEY_FILE), b"garbage").unwrap();
        let err = Signer::load_or_create(dir.path()).unwrap_err();
        assert!(err.contains("not an Ed25519 PKCS#8 key"), "{err}");
    }
}
