//! The security gate of the HTTP server, whole: every rule a request must pass before any
//! endpoint except `/healthz` sees it, and the parsing of the rules' configured values, so a
//! security reviewer reads the whole rule in this one file.
//!
//! [`Gate::check`] applies, in this order:
//! 1. `Host` must be in the allowlist (loopback names and the bound address by default) →
//!    403. Together with 2 this is the DNS-rebinding defence: a hostile web page that makes
//!    its own domain resolve to 127.0.0.1 still sends its own name as `Host`.
//! 2. `Origin`, when present, must match an [`OriginRule`] (loopback pages by default) → 403.
//!    Requests without `Origin` come from non-browser clients and pass.
//! 3. `Authorization: Bearer TOKEN`, compared in constant time, unless the operator chose
//!    `--no-auth` on loopback → 401 with `WWW-Authenticate: Bearer`. The scheme name is
//!    case-insensitive (RFC 9110 §11.1: `bearer` passes too), the token is not. With
//!    `[http.oauth]`, a token that is not the static one (when one is configured) is an OAuth
//!    access token, checked by [`super::oauth`] (401 with the RFC 9728 challenge when it is
//!    missing or bad); the request then carries its [`Principal`] (the static token's holder
//!    is [`Principal::static_token`]), and a `tools/call` outside its scopes is refused with
//!    403 after rule 5.
//! 4. A declared `Content-Length` over the body cap → 413 before anything is read; bodies
//!    without one are capped while they are read (by rmcp on `/mcp`, by
//!    [`super::sessions::read_body`] elsewhere).
//! 5. The per-client request rate (`[http] max_requests_per_minute`, off by default) → 429
//!    with `Retry-After`. A client is its peer address: there is one token, so every client
//!    that passed 3 holds the same one, and the address is what tells them apart. Behind a
//!    proxy in `[http] trusted_proxies`, it is the address the proxy names in
//!    `X-Forwarded-For` ([`super::forwarded`]), which the client cannot choose. Counted
//!    after the token check, so requests without the token cannot use up a client's rate.
//!    With `[replicas]` the rate is one across every replica, decided in Redis
//!    ([`crate::cluster::Cluster::admit`]); while Redis is away, a request is refused with 503
//!    (`when_redis_away = "refuse"`) or counted here (`"local"`).
//!
//! rmcp's own Host check is switched off and its Origin list left empty: this gate applies
//! the same rules to every endpoint, including the legacy ones rmcp knows nothing about, so
//! there is one implementation to review.
//!
//! The bearer check is written by hand, not taken from tower-http: its
//! `ValidateRequestHeaderLayer::bearer` compares `actual == header_value`, which is not
//! constant time (a timing oracle on the token), and it requires the exact `Bearer` case,
//! which RFC 9110 does not. Here the comparison uses `subtle`.
//!
//! Tokens never reach a log line or an error message: the presented token is only compared,
//! and the expected one lives in a masked [`Secret`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::{Serialize, Serializer};
use subtle::ConstantTimeEq;
use toolport_tools::host::secret::Secret;

use super::forwarded::TrustedProxies;
use super::oauth::OAuth;
use super::oauth::challenge::Challenge;
use super::oauth::jwt::TokenError;
use super::refusal::{REFUSED, refusal};
use crate::cluster::{self, Cluster, Refused, WhenAway};
use crate::identity::{Policy, Principal};

/// The gate's rules, built once from the settings.
#[derive(Debug)]
pub(crate) struct Gate {
    /// The expected static bearer token; `None` with `--no-auth` on loopback, or with OAuth
    /// alone.
    token: Option<Secret>,
    /// The OAuth resource server, with `[http.oauth]`.
    oauth: Option<Arc<OAuth>>,
    /// The policy per principal (`[http.principals]`), applied to every principal here.
    policy: Arc<Policy>,
    /// Accepted Host names (normalized); empty: any.
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<OriginRule>,
    max_body_bytes: usize,
    /// Requests per minute per client, when limited.
    rate: Option<ClientRate>,
    /// The replicas' shared store: the rate is counted there, when configured.
    cluster: Option<Arc<Cluster>>,
    /// The proxies whose `X-Forwarded-For` names the client (for the rate).
    trusted_proxies: TrustedProxies,
}

/// The per-client request rate: a token bucket per peer address (GCRA, `governor`).
#[derive(Debug)]
struct ClientRate {
    per_minute: NonZeroU32,
    limiter: DefaultKeyedRateLimiter<IpAddr>,
}

/// Clients remembered before idle ones are forgotten: a bucket that has refilled is the same
/// as no bucket, so dropping it loses nothing; this only bounds the memory many addresses
/// could take.
const RATE_KEYS_BEFORE_CLEANUP: usize = 4096;

/// Why the gate refused a request. The messages say what to fix and never echo a token.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No or unparsable `Host` header.
    MissingHost,
    /// `Host` not in the allowlist.
    Host(String),
    /// `Origin` not in the allowlist.
    Origin(String),
    /// No `Authorization` header.
    NoToken,
    /// `Authorization` without the `Bearer` scheme.
    WrongScheme,
    /// A bearer token that is not the server's.
    WrongToken,
    /// `Content-Length` over the cap.
    TooLarge { length: u64, max: usize },
    /// Over the client's request rate.
    TooMany {
        per_minute: NonZeroU32,
        retry_after: Duration,
    },
    /// The rate is shared through Redis, which cannot be reached (`when_redis_away =
    /// "refuse"`).
    StoreAway,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        const HOW: &str = "send `Authorization: Bearer <token>` with the token the server was given (TOOLPORT_TOKEN, --token-file, --token) or printed on its stderr at start-up";
        let (status, message, challenge) = match self {
            Rejection::MissingHost => (
                StatusCode::FORBIDDEN,
                "forbidden: the request has no valid Host header".to_owned(),
                None,
            ),
            Rejection::Host(host) => (
                StatusCode::FORBIDDEN,
                format!(
                    "forbidden: Host {host:?} is not allowed (DNS-rebinding protection); the operator can allow it with --allowed-host"
                ),
                None,
            ),
            Rejection::Origin(origin) => (
                StatusCode::FORBIDDEN,
                format!(
                    "forbidden: Origin {origin:?} is not allowed; the operator can allow it with --allowed-origin"
                ),
                None,
            ),
            Rejection::NoToken => (
                StatusCode::UNAUTHORIZED,
                format!("unauthorized: no bearer token; {HOW}"),
                Some(r#"Bearer realm="toolport""#),
            ),
            Rejection::WrongScheme => (
                StatusCode::UNAUTHORIZED,
                format!("unauthorized: the Authorization header must use the Bearer scheme; {HOW}"),
                Some(r#"Bearer realm="toolport", error="invalid_request""#),
            ),
            Rejection::WrongToken => (
                StatusCode::UNAUTHORIZED,
                format!("unauthorized: wrong bearer token; {HOW}"),
                Some(r#"Bearer realm="toolport", error="invalid_token""#),
            ),
            Rejection::TooLarge { length, max } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is {length} bytes, over the limit of {max} bytes"),
                None,
            ),
            Rejection::TooMany {
                per_minute,
                retry_after,
            } => {
                let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                let mut response = refusal(
                    StatusCode::TOO_MANY_REQUESTS,
                    REFUSED,
                    format!(
                        "too many requests: this client is limited to {per_minute} requests per minute (http.max_requests_per_minute); retry in {seconds} s"
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
                return response;
            }
            Rejection::StoreAway => {
                let seconds = cluster::RETRY_WHEN_AWAY.as_secs().max(1);
                let mut response = refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    REFUSED,
                    format!(
                        "unavailable: this client's request rate is shared by the server's replicas through a store that cannot be reached right now (replicas.when_redis_away = \"refuse\"); retry in {seconds} s"
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
                return response;
            }
        };
        let mut response = refusal(status, REFUSED, message);
        if let Some(challenge) = challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

impl Gate {
    /// Build the gate; the token is the configured one or the one generated at start-up.
    pub(crate) fn new(
        token: Option<Secret>,
        oauth: Option<Arc<OAuth>>,
        policy: Arc<Policy>,
        allowed_hosts: Vec<String>,
        allowed_origins: Vec<OriginRule>,
        max_body_bytes: usize,
        max_requests_per_minute: Option<NonZeroU32>,
    ) -> Self {
        Self {
            token,
            oauth,
            policy,
            allowed_hosts,
            allowed_origins,
            max_body_bytes,
            rate: max_requests_per_minute.map(|per_minute| ClientRate {
                per_minute,
                limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            }),
            cluster: None,
            trusted_proxies: TrustedProxies::default(),
        }
    }

    /// Key the rate by the client a trusted proxy names ([`TrustedProxies::client`]).
    pub(crate) fn with_trusted_proxies(mut self, proxies: TrustedProxies) -> Self {
        self.trusted_proxies = proxies;
        self
    }

    /// Count the request rate in the replicas' shared store.
    pub(crate) fn with_cluster(mut self, cluster: Option<Arc<Cluster>>) -> Self {
        self.cluster = cluster;
        self
    }

    /// The built-in authorization server, when toolport is its own (for its routes).
    pub(crate) fn oauth_builtin(&self) -> Option<Arc<super::oauth::builtin::Builtin>> {
        self.oauth.as_ref().and_then(|oauth| oauth.builtin())
    }

    /// The OAuth settings, when OAuth is on (for the metadata routes).
    pub(crate) fn oauth_settings(&self) -> Option<Arc<super::oauth::settings::OAuthSettings>> {
        self.oauth.as_ref().map(|oauth| oauth.settings())
    }

    /// Rule 5: count a request from `peer` (`None`: an in-process request without an
    /// address) against its client's rate.
    pub(crate) async fn check_rate(&self, peer: Option<IpAddr>) -> Result<(), Rejection> {
        let Some(rate) = &self.rate else {
            return Ok(());
        };
        let peer = peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if let Some(cluster) = &self.cluster {
            let budget = cluster::Budget {
                name: format!("http-rate:{}", Cluster::key_part(&peer.to_string())),
                max_calls: None,
                per_minute: Some(rate.per_minute.get()),
                max_running: None,
            };
            match cluster.admit(&[budget]).await {
                Ok(_counted) => return Ok(()),
                Err(Refused::Over(refusal)) => {
                    return Err(Rejection::TooMany {
                        per_minute: rate.per_minute,
                        retry_after: refusal.retry_after.unwrap_or_default(),
                    });
                }
                Err(Refused::Away(away)) => {
                    cluster.decided_without_store(&away);
                    if cluster.when_away() == WhenAway::Refuse {
                        return Err(Rejection::StoreAway);
                    }
                }
            }
        }
        if rate.limiter.len() > RATE_KEYS_BEFORE_CLEANUP {
            rate.limiter.retain_recent();
        }
        rate.limiter
            .check_key(&peer)
            .map_err(|not_until| Rejection::TooMany {
                per_minute: rate.per_minute,
                retry_after: not_until.wait_time_from(DefaultClock::default().now()),
            })
    }

    /// Apply the rules, in order, to a request's headers (an access token passes here: it
    /// is checked by the middleware, [`gate`]). For the tests and the fuzz target.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        self.credential(headers)?;
        self.check_size(headers)
    }

    /// Rules 1 to 3: Host, Origin, and the credential the request presents.
    fn credential(&self, headers: &HeaderMap) -> Result<Credential, Rejection> {
        self.check_host(headers)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            if !origin_allowed(&origin, &self.allowed_origins) {
                return Err(Rejection::Origin(origin));
            }
        }
        if self.token.is_none() && self.oauth.is_none() {
            return Ok(Credential::Open);
        }
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or(Rejection::NoToken)?
            .as_bytes();
        // The scheme is case-insensitive (RFC 9110 §11.1).
        let presented = match value.split_at_checked(7) {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case(b"bearer ") => rest.trim_ascii(),
            _ => return Err(Rejection::WrongScheme),
        };
        // Constant time in the contents; only a length mismatch returns early.
        if let Some(expected) = &self.token
            && bool::from(presented.ct_eq(expected.expose().as_bytes()))
        {
            return Ok(Credential::StaticToken);
        }
        match (&self.oauth, std::str::from_utf8(presented)) {
            (Some(_), Ok(token)) if !token.is_empty() => {
                Ok(Credential::AccessToken(token.to_owned()))
            }
            _ => Err(Rejection::WrongToken),
        }
    }

    /// Rule 1: the Host allowlist.
    fn check_host(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        if !self.allowed_hosts.is_empty() {
            let raw = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .ok_or(Rejection::MissingHost)?;
            let host = host_of(raw).ok_or(Rejection::MissingHost)?;
            if !self.allowed_hosts.contains(&host) {
                return Err(Rejection::Host(raw.to_owned()));
            }
        }
        Ok(())
    }

    /// Rule 4: the declared body size.
    fn check_size(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        if let Some(length) = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            && length > self.max_body_bytes as u64
        {
            return Err(Rejection::TooLarge {
                length,
                max: self.max_body_bytes,
            });
        }
        Ok(())
    }

    /// The answer to a refused request, logged (without tokens). With OAuth, a missing or
    /// wrong credential is answered with the OAuth challenge.
    fn refuse(&self, rejection: Rejection, request: &Request, peer: Option<IpAddr>) -> Response {
        tracing::warn!(
            method = %request.method(),
            path = %request.uri().path(),
            reason = ?rejection,
            "refused an HTTP request"
        );
        let Some(oauth) = &self.oauth else {
            return rejection.into_response();
        };
        let unreadable = TokenError::Malformed("the bearer token is empty or not text".to_owned());
        let challenge = match rejection {
            Rejection::NoToken => Challenge::Missing,
            Rejection::WrongScheme => Challenge::Scheme,
            Rejection::WrongToken => Challenge::Invalid(&unreadable),
            _ => return rejection.into_response(),
        };
        oauth.challenge(&challenge, request.headers(), peer)
    }
}

/// What a request presents, once rules 1 and 2 passed.
#[derive(Debug, PartialEq, Eq)]
enum Credential {
    /// Nothing is required (`--no-auth`).
    Open,
    /// The static token.
    StaticToken,
    /// Another bearer token: an OAuth access token to check.
    AccessToken(String),
}

/// The gate, as axum middleware: refusals are answered here and logged (without tokens); a
/// request that passes carries its [`Principal`] (when authentication is on).
pub(crate) async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let body_unread = carries_body(request.headers());
    match admit(&gate, request).await {
        Ok(request) => next.run(request).await,
        Err(refusal) => closing_if(body_unread, refusal),
    }
}

/// Whether a request comes with a body (a declared length above zero, or a chunked one).
fn carries_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0")
}

/// A refusal of a request whose body the server does not read says `Connection: close`, so
/// the client opens a new connection for its next request. Without it, hyper drops such a
/// connection after answering (it cannot reuse one with a body left in it) while the client
/// may already be sending its next request on it: the MCP Python SDK's first request after
/// the 401 that starts an OAuth sign-in failed with a read error about one time in five.
fn closing_if(body_unread: bool, mut refusal: Response) -> Response {
    if body_unread {
        refusal
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    refusal
}

/// The gate's rules for one request: the request to serve (with its [`Principal`]), or the
/// refusal to answer.
async fn admit(gate: &Gate, mut request: Request) -> Result<Request, Response> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let credential = match gate.credential(request.headers()) {
        Ok(credential) => credential,
        Err(rejection) => return Err(gate.refuse(rejection, &request, peer)),
    };
    let principal = match (credential, &gate.oauth) {
        (Credential::Open, _) => None,
        (Credential::StaticToken, _) => Some(Principal::static_token()),
        (Credential::AccessToken(token), Some(oauth)) => {
            match oauth.authenticate(&token, request.headers(), peer).await {
                Ok(principal) => Some(principal),
                Err(refusal) => return Err(refusal),
            }
        }
        (Credential::AccessToken(_), None) => {
            return Err(gate.refuse(Rejection::WrongToken, &request, peer));
        }
    }
    // The operator's rules narrow what it may use, once, here.
    .map(|principal| principal.within(&gate.policy));
    let client = gate.trusted_proxies.client(peer, request.headers());
    let checked = match gate.check_size(request.headers()) {
        Ok(()) => gate.check_rate(client).await,
        Err(rejection) => Err(rejection),
    };
    if let Err(rejection) = checked {
        return Err(gate.refuse(rejection, &request, peer));
    }
    if let Some(principal) = principal {
        if let Some(oauth) = &gate.oauth {
            request = match oauth
                .admit_calls(&principal, request, gate.max_body_bytes, peer)
                .await
            {
                Ok(request) => request,
                Err(refusal) => return Err(refusal),
            };
        }
        request.extensions_mut().insert(Arc::new(principal));
    }
    Ok(request)
}

/// The rules for the built-in authorization server's endpoints, which are outside the bearer
/// gate (they are how a client gets a token): rule 1 (Host: DNS rebinding) and rule 4 (the
/// declared size, against their own smaller cap). Not rule 2: a browser-based client calls
/// the token and registration endpoints from its own origin, and the consent form's post is
/// checked against this server's origin where it is handled; not rule 5: the endpoints have
/// their own rates (registrations, consent attempts), which a client's MCP rate should not
/// share.
pub(crate) async fn open_endpoint(
    State(gate): State<Arc<Gate>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(rejection) = gate
        .check_host(request.headers())
        .and_then(|()| gate.check_size(request.headers()))
    {
        tracing::warn!(
            method = %request.method(),
            path = %request.uri().path(),
            reason = ?rejection,
            "refused an HTTP request"
        );
        return closing_if(carries_body(request.headers()), rejection.into_response());
    }
    next.run(request).await
}

/// The host part of a `Host` header value (no port, no IPv6 brackets, no trailing dot),
/// normalized. `None` for a value that is not `host[:port]` or `[v6]` / `[v6]:port`.
fn host_of(value: &str) -> Option<String> {
    let value = value.trim();
    let port_ok = |port: &str| port.bytes().all(|b| b.is_ascii_digit());
    let host = if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(port_ok)) {
            return None;
        }
        inside
    } else {
        match value.rsplit_once(':') {
            Some((host, port)) if port_ok(port) => host,
            _ => value,
        }
    };
    // Brackets left over belong to no valid form (`[[::1]::1]`, `localhost]`); normalizing
    // would strip them and read a loopback name.
    if host.contains(['[', ']']) {
        return None;
    }
    let host = normalize_host(host.trim_end_matches('.'));
    (!host.is_empty()).then_some(host)
}

/// Whether an `Origin` header value matches one of the rules.
fn origin_allowed(origin: &str, rules: &[OriginRule]) -> bool {
    let parsed = url::Url::parse(origin).ok();
    rules.iter().any(|rule| match rule {
        OriginRule::Any => true,
        OriginRule::Null => origin == "null",
        OriginRule::Site { scheme, host, port } => parsed.as_ref().is_some_and(|url| {
            url.scheme() == scheme
                && url.host_str().map(normalize_host).as_deref() == Some(host.as_str())
                && port.is_none_or(|p| url.port_or_known_default() == Some(p))
        }),
    })
}

/// Lower-case a host name and strip IPv6 brackets, so rules and headers compare equal.
pub(crate) fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// An allowed browser Origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OriginRule {
    /// Any Origin (`*`).
    Any,
    /// The literal `null` origin (sandboxed frames, `file://` pages).
    Null,
    /// A scheme (`http` or `https`) and a lower-case host (IPv6 without brackets), with one
    /// port or any port (`None`).
    Site {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl Serialize for OriginRule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl std::fmt::Display for OriginRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OriginRule::Any => f.write_str("*"),
            OriginRule::Null => f.write_str("null"),
            OriginRule::Site { scheme, host, port } => {
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                match port {
                    Some(port) => write!(f, "{scheme}://{host}:{port}"),
                    None => write!(f, "{scheme}://{host}:*"),
                }
            }
        }
    }
}

impl OriginRule {
    /// Parse `*`, `null`, `scheme://host`, `scheme://host:port` or `scheme://host:*`. A rule
    /// without a port matches the scheme's default port only (as browsers send it).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text {
            "*" => return Ok(OriginRule::Any),
            "null" => return Ok(OriginRule::Null),
            _ => {}
        }
        let (base, any_port) = match text.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (text, false),
        };
        let url = url::Url::parse(base).map_err(|e| {
            format!(
                "{text:?} is not an origin like https://app.example.com or http://localhost:* ({e})"
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{text:?}: only http and https origins exist"));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "{text:?}: an origin is scheme://host[:port], without a path"
            ));
        }
        let host = url
            .host_str()
            .ok_or_else(|| format!("{text:?} has no host"))?;
        Ok(OriginRule::Site {
            scheme: url.scheme().to_owned(),
            host: normalize_host(host),
            port: if any_port {
                None
            } else {
                url.port_or_known_default()
            },
        })
    }
}

/// The fuzz target `http_gate`'s door to [`OriginRule::parse`] (fuzz/; only with `--cfg
/// fuzzing`): `Ok` with the rule as `toolport config` prints it.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_origin_rule(text: &str) -> Result<String, String> {
    OriginRule::parse(text).map(|rule| rule.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::tests::headers;

    fn gate(token: Option<&str>) -> Gate {
        crate::transport::http::settings::HttpSettings::default().gate(token.map(Secret::new))
    }

    #[test]
    fn host_parsing() {
        assert_eq!(host_of("LocalHost:8787").as_deref(), Some("localhost"));
        assert_eq!(host_of("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(host_of("127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_of("localhost.").as_deref(), Some("localhost"));
        assert_eq!(host_of("[::1").as_deref(), None);
        // Found by fuzz/fuzz_targets/http_gate.rs: malformed values whose leftover brackets
        // normalizing stripped, reading `::1` or `localhost`.
        for malformed in [
            "[[::1]::1]:87:7",
            "[::1]::1",
            "[::1]x",
            "localhost]",
            "[[localhost]]",
        ] {
            assert_eq!(host_of(malformed), None, "{malformed}");
        }
        assert_eq!(host_of("[::1]").as_deref(), Some("::1"));
    }

    #[test]
    fn the_gate_checks_host_origin_token_in_order() {
        let p = gate(Some("0123456789abcdef"));
        let good = [
            ("host", "127.0.0.1:9"),
            ("authorization", "Bearer 0123456789abcdef"),
        ];
        assert_eq!(p.check(&headers(&good)), Ok(()));
        assert_eq!(
            p.check(&headers(&[("host", "evil.example:9")])),
            Err(Rejection::Host("evil.example:9".into()))
        );
        let mut h = headers(&good);
        h.insert("origin", "http://evil.example".parse().unwrap());
        assert!(matches!(p.check(&h), Err(Rejection::Origin(_))));
        // Origin before the token, the token before the body size.
        h.remove("authorization");
        assert!(matches!(p.check(&h), Err(Rejection::Origin(_))));
        let mut h = headers(&[("host", "localhost"), ("content-length", "99999999")]);
        assert_eq!(p.check(&h), Err(Rejection::NoToken));
        h.insert("host", "evil.example".parse().unwrap());
        assert!(matches!(p.check(&h), Err(Rejection::Host(_))));
        // A local Origin (the Inspector's) passes.
        let mut h = headers(&good);
        h.insert("origin", "http://localhost:6274".parse().unwrap());
        assert_eq!(p.check(&h), Ok(()));
        assert_eq!(
            p.check(&headers(&[("host", "localhost")])),
            Err(Rejection::NoToken)
        );
        assert_eq!(
            p.check(&headers(&[
                ("host", "localhost"),
                ("authorization", "Basic 0123456789abcdef")
            ])),
            Err(Rejection::WrongScheme)
        );
        assert_eq!(
            p.check(&headers(&[
                ("host", "localhost"),
                ("authorization", "bearer 0123456789abcdeX")
            ])),
            Err(Rejection::WrongToken)
        );
        let mut h = headers(&good);
        h.insert("content-length", "99999999".parse().unwrap());
        assert!(matches!(p.check(&h), Err(Rejection::TooLarge { .. })));
        assert_eq!(gate(None).check(&headers(&[("host", "localhost")])), Ok(()));
    }

    #[tokio::test]
    async fn the_rate_is_per_client_and_says_when_to_retry() {
        let gate = Gate::new(
            None,
            None,
            Arc::default(),
            Vec::new(),
            Vec::new(),
            1024,
            NonZeroU32::new(2),
        );
        let a = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let b = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
        assert_eq!(gate.check_rate(a).await, Ok(()));
        assert_eq!(gate.check_rate(a).await, Ok(()));
        let Err(Rejection::TooMany { retry_after, .. }) = gate.check_rate(a).await else {
            panic!("the third request in a minute passed");
        };
        // Two a minute: one more every 30 s.
        assert!(retry_after > Duration::from_secs(25) && retry_after <= Duration::from_secs(30));
        assert_eq!(
            gate.check_rate(b).await,
            Ok(()),
            "another client has its own bucket"
        );
        let response = Rejection::TooMany {
            per_minute: NonZeroU32::MIN,
            retry_after: Duration::from_millis(1500),
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }

    #[test]
    fn origin_rules_parse() {
        assert_eq!(
            OriginRule::parse("https://App.example.com").unwrap(),
            OriginRule::Site {
                scheme: "https".into(),
                host: "app.example.com".into(),
                port: Some(443)
            }
        );
        assert_eq!(
            OriginRule::parse("http://[::1]:*").unwrap().to_string(),
            "http://[::1]:*"
        );
        assert!(OriginRule::parse("app.example.com").is_err());
        assert!(OriginRule::parse("https://a.example/path").is_err());
    }
}
