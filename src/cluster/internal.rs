//! How replicas authenticate the calls they make to each other (a request for another
//! replica's job or task, forwarded to it): every call is signed with HMAC-SHA256 under the
//! operator's internal secret (`[replicas] internal_secret_file`, the same on every replica).
//!
//! Why a signature and not the secret as a bearer token: the secret never crosses the network
//! (a replica's internal address is often plain HTTP inside a private network), and what is
//! signed binds the call to its body, its time, a fresh nonce and the replica it is for, so a
//! call seen on the wire cannot be changed, sent to another replica, or replayed (a nonce is
//! taken once; a call older than [`MAX_SKEW`] is refused). The client's own token is never
//! part of it: a forwarded call carries the owner the first replica authenticated, vouched for
//! by the signature. What the signature does not give is secrecy of the body (a job's output
//! crosses the network as it is): use an `https://` internal URL, or a private network.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::hmac;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use toolport_tools::host::secret::{Secret, random_token};

/// The path replicas call each other on (outside the clients' gate: the signature is its
/// authentication).
pub(crate) const PATH: &str = "/internal/jobs";
/// The header with the signature (base64url of the HMAC-SHA256).
pub(crate) const SIGNATURE: &str = "x-toolport-signature";
/// The header with the signing time (milliseconds since the Unix epoch).
pub(crate) const TIME: &str = "x-toolport-time";
/// The header with the nonce (random, used once).
pub(crate) const NONCE: &str = "x-toolport-nonce";
/// The header naming the replica the call is for.
pub(crate) const TO: &str = "x-toolport-to";
/// How far a call's time may be from the receiver's clock: replicas' clocks are kept by NTP
/// (well within a second); 30 s leaves room for a slow network without keeping nonces long.
const MAX_SKEW: Duration = Duration::from_secs(30);
/// Random bytes in a nonce: unique among every call within [`MAX_SKEW`].
const NONCE_BYTES: usize = 16;
/// The most nonces a replica remembers (those of the last [`MAX_SKEW`]); past that, a call is
/// refused rather than a nonce forgotten early (it is retried by the caller's client).
const MAX_NONCES: usize = 100_000;

/// What is signed: a version tag, the time, the nonce, the replica it is for, the body.
fn message(time: u64, nonce: &str, to: &str, body: &[u8]) -> Vec<u8> {
    let mut message = format!("toolport-internal-v1\n{time}\n{nonce}\n{to}\n").into_bytes();
    message.extend_from_slice(body);
    message
}

fn key(secret: &Secret) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, secret.expose().as_bytes())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The headers of a call to replica `to` with `body`.
pub(crate) fn sign(secret: &Secret, to: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    sign_at(
        secret,
        to,
        body,
        now_ms(),
        &random_token(NONCE_BYTES).unwrap_or_default(),
    )
}

fn sign_at(
    secret: &Secret,
    to: &str,
    body: &[u8],
    time: u64,
    nonce: &str,
) -> Vec<(&'static str, String)> {
    let tag = hmac::sign(&key(secret), &message(time, nonce, to, body));
    vec![
        (SIGNATURE, URL_SAFE_NO_PAD.encode(tag.as_ref())),
        (TIME, time.to_string()),
        (NONCE, nonce.to_owned()),
        (TO, to.to_owned()),
    ]
}

/// The receiving side: checks each call's signature, time, nonce and addressee.
#[derive(Debug)]
pub(crate) struct Verifier {
    key: hmac::Key,
    /// This replica's id: a call for another one is refused.
    here: String,
    /// Nonces taken within [`MAX_SKEW`], with their call's time.
    seen: Mutex<HashMap<String, u64>>,
}

impl Verifier {
    pub(crate) fn new(secret: &Secret, here: &str) -> Self {
        Self {
            key: key(secret),
            here: here.to_owned(),
            seen: Mutex::default(),
        }
    }

    /// Whether the call with these headers (`header(name)`) and `body` was signed by a
    /// replica for this one, now, once. The reason when not (for the log, and a 401's body:
    /// it tells nothing of the secret).
    pub(crate) fn check<'a>(
        &self,
        header: impl Fn(&str) -> Option<&'a str>,
        body: &[u8],
    ) -> Result<(), &'static str> {
        self.check_at(header, body, now_ms())
    }

    fn check_at<'a>(
        &self,
        header: impl Fn(&str) -> Option<&'a str>,
        body: &[u8],
        now: u64,
    ) -> Result<(), &'static str> {
        let (Some(signature), Some(time), Some(nonce), Some(to)) =
            (header(SIGNATURE), header(TIME), header(NONCE), header(TO))
        else {
            return Err("not a signed internal call");
        };
        if to != self.here {
            return Err("the call is for another replica");
        }
        let time: u64 = time.parse().map_err(|_| "its time is not a number")?;
        let skew = u64::try_from(MAX_SKEW.as_millis()).unwrap_or(u64::MAX);
        if time.abs_diff(now) > skew {
            return Err("its time is too far from this replica's clock (replay, or clocks apart)");
        }
        let tag = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| "its signature is not base64url")?;
        hmac::verify(&self.key, &message(time, nonce, to, body), &tag)
            .map_err(|_| "its signature does not match (another internal secret?)")?;
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.retain(|_, at| at.abs_diff(now) <= skew);
        if seen.len() >= MAX_NONCES {
            return Err("too many internal calls at once");
        }
        if seen.insert(nonce.to_owned(), time).is_some() {
            return Err("its nonce was used already (a replay)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'a>(list: &'a [(&'static str, String)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |name| {
            list.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    #[test]
    fn a_signed_call_passes_once_and_nothing_else_does() {
        let secret = Secret::new("0123456789abcdef0123456789abcdef");
        let verifier = Verifier::new(&secret, "r2");
        let now = 1_000_000_000;
        let signed = sign_at(&secret, "r2", b"{\"op\":1}", now, "n1");
        assert_eq!(
            verifier.check_at(headers(&signed), b"{\"op\":1}", now + 5),
            Ok(())
        );
        // The same call again: a replay.
        assert!(
            verifier
                .check_at(headers(&signed), b"{\"op\":1}", now + 6)
                .unwrap_err()
                .contains("replay")
        );
        // Another body under the signature.
        let signed = sign_at(&secret, "r2", b"{\"op\":1}", now, "n2");
        assert!(
            verifier
                .check_at(headers(&signed), b"{\"op\":2}", now)
                .unwrap_err()
                .contains("does not match")
        );
        // Another secret.
        let other = Secret::new("fedcba9876543210fedcba9876543210");
        let signed = sign_at(&other, "r2", b"x", now, "n3");
        assert!(verifier.check_at(headers(&signed), b"x", now).is_err());
        // For another replica.
        let signed = sign_at(&secret, "r3", b"x", now, "n4");
        assert!(
            verifier
                .check_at(headers(&signed), b"x", now)
                .unwrap_err()
                .contains("another replica")
        );
        // Too old.
        let signed = sign_at(&secret, "r2", b"x", now, "n5");
        let late = now + u64::try_from(MAX_SKEW.as_millis()).unwrap() + 1;
        assert!(
            verifier
                .check_at(headers(&signed), b"x", late)
                .unwrap_err()
                .contains("too far")
        );
        // Unsigned.
        assert!(verifier.check_at(|_| None, b"x", now).is_err());
    }
}
