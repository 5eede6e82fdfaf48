//! PKCE (RFC 7636), S256 only: OAuth 2.1 and the MCP authorization spec require it, and
//! `plain` (the verifier sent in the clear as the challenge) protects nothing against an
//! attacker who sees the authorization request; a request without a challenge, or with
//! `plain`, is refused before any consent is asked.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The one method accepted.
pub(crate) const S256: &str = "S256";
/// A verifier's length bounds (RFC 7636 §4.1).
const VERIFIER_LENGTHS: std::ops::RangeInclusive<usize> = 43..=128;
/// An S256 challenge is a base64url SHA-256: 43 characters.
const CHALLENGE_LENGTH: usize = 43;

/// Why an authorization request's PKCE parameters are refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PkceError {
    #[error("code_challenge is required (PKCE with S256)")]
    Missing,
    #[error("code_challenge_method must be S256 (plain is not accepted)")]
    Method,
    #[error("code_challenge is not a base64url SHA-256 (43 characters)")]
    Challenge,
}

fn base64url(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Check an authorization request's `code_challenge` and `code_challenge_method`.
pub(crate) fn check_challenge(
    challenge: Option<&str>,
    method: Option<&str>,
) -> Result<String, PkceError> {
    let challenge = challenge
        .filter(|c| !c.is_empty())
        .ok_or(PkceError::Missing)?;
    // RFC 7636 defaults a missing method to plain, which is refused.
    if method != Some(S256) {
        return Err(PkceError::Method);
    }
    if challenge.len() != CHALLENGE_LENGTH || !base64url(challenge) {
        return Err(PkceError::Challenge);
    }
    Ok(challenge.to_owned())
}

/// Whether `verifier` is the one `challenge` was made from.
pub(crate) fn verify(challenge: &str, verifier: &str) -> bool {
    let shaped = VERIFIER_LENGTHS.contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    shaped && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn s256_only_and_the_verifier_must_match() {
        assert_eq!(
            check_challenge(Some(CHALLENGE), Some("S256")).unwrap(),
            CHALLENGE
        );
        assert_eq!(check_challenge(None, Some("S256")), Err(PkceError::Missing));
        assert_eq!(
            check_challenge(Some(CHALLENGE), Some("plain")),
            Err(PkceError::Method)
        );
        assert_eq!(
            check_challenge(Some(CHALLENGE), None),
            Err(PkceError::Method)
        );
        assert_eq!(
            check_challenge(Some("short"), Some("S256")),
            Err(PkceError::Challenge)
        );
        assert!(verify(CHALLENGE, VERIFIER));
        assert!(!verify(CHALLENGE, &VERIFIER.replace('d', "e")));
        // The challenge itself as the verifier (a `plain` client) fails.
        assert!(!verify(CHALLENGE, CHALLENGE));
    }
}
