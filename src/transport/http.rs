//! The HTTP server: one axum router carrying both HTTP transports, behind one security gate.
//!
//! Endpoints:
//! - `/mcp`: Streamable HTTP, rmcp's `StreamableHttpService` (stateful sessions by default,
//!   stateless with `--stateless`; 2026-07-28 requests are always served statelessly), with
//!   the session cap and disconnect cancellation of [`super::streamable`];
//! - `/sse` + `/message`: the legacy 2024-11-05 HTTP+SSE transport ([`super::sse`]);
//! - `/healthz`: `ok` for load balancers, outside the gate, revealing nothing.
//!
//! **The gate** ([`guard`]) runs before every endpoint except `/healthz`, in this order:
//! 1. `Host` must be in the allowlist (loopback names and the bound address by default) →
//!    403. Together with 2 this is the DNS-rebinding defence: a hostile web page that makes
//!    its own domain resolve to 127.0.0.1 still sends its own name as `Host`.
//! 2. `Origin`, when present, must be in the allowlist (loopback pages by default) → 403.
//!    Requests without `Origin` come from non-browser clients and pass.
//! 3. `Authorization: Bearer TOKEN`, compared in constant time (`subtle`), unless the
//!    operator chose `--no-auth` on loopback → 401 with `WWW-Authenticate: Bearer`.
//! 4. A declared `Content-Length` over the body cap → 413 before anything is read; bodies
//!    without one are capped while they are read (by rmcp on `/mcp`, by [`super::sse`]).
//!
//! rmcp's own Host check is switched off and its Origin list left empty: this gate applies
//! the same rules to every endpoint, including the legacy ones rmcp knows nothing about, so
//! there is one implementation to review. Tokens never reach a log line or an error message:
//! the presented token is only compared, and the expected one lives in a masked [`Secret`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::http_settings::{
    AuthMode, GENERATED_TOKEN_BYTES, HttpSettings, OriginRule, Secret, normalize_host, random_hex,
};
use super::{sse, streamable};
use crate::server::Shared;

/// How long shutdown waits for connections to finish after cancelling every call. Cancelled
/// commands get SIGTERM, then SIGKILL after a sub-second grace; 5 s covers that with room,
/// and a client that keeps its connection open cannot hold the process longer.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the HTTP server could not run.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// `serve_http` was called without an address.
    #[error("no --http address is configured")]
    NoAddress,
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The operating system's random generator failed (needed for a token).
    #[error("cannot generate a token: {0}")]
    Random(String),
    /// The server failed while running.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// The security rules of the gate, built once from the settings.
#[derive(Debug)]
pub struct Policy {
    /// The expected bearer token; `None` only with `--no-auth` on loopback.
    pub token: Option<Secret>,
    /// Accepted Host names (normalized); empty: any.
    pub allowed_hosts: Vec<String>,
    /// Accepted browser Origins.
    pub allowed_origins: Vec<OriginRule>,
    /// Request body cap.
    pub max_body_bytes: usize,
}

/// Why the gate refused a request. The messages say what to fix and never echo a token.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejection {
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
    TooLarge {
        /// Declared length.
        length: u64,
        /// The cap.
        max: usize,
    },
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        const HOW: &str = "send `Authorization: Bearer <token>` with the token the server was given (TOOLPORT_TOKEN, --token-file, --token) or printed on its stderr at start-up";
        let (status, message, challenge) = match self {
            Rejection::MissingHost => (
                StatusCode::FORBIDDEN,
                "forbidden: the request has no valid Host header".to_string(),
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
        };
        let mut response = (status, message).into_response();
        if let Some(challenge) = challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

/// The host part of a `Host` header value (no port, no IPv6 brackets, no trailing dot),
/// normalized.
fn host_of(value: &str) -> Option<String> {
    let value = value.trim();
    let host = if let Some(rest) = value.strip_prefix('[') {
        rest.split_once(']')?.0
    } else {
        match value.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => value,
        }
    };
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

impl Policy {
    /// Build the policy; the token is the configured one or the one generated at start-up.
    pub fn new(settings: &HttpSettings, token: Option<Secret>) -> Self {
        Self {
            token,
            allowed_hosts: settings.allowed_hosts.clone(),
            allowed_origins: settings.allowed_origins.clone(),
            max_body_bytes: settings.max_body_bytes,
        }
    }

    /// Apply the gate's rules, in order, to a request's headers.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        if !self.allowed_hosts.is_empty() {
            let raw = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .ok_or(Rejection::MissingHost)?;
            let host = host_of(raw).ok_or(Rejection::MissingHost)?;
            if !self.allowed_hosts.contains(&host) {
                return Err(Rejection::Host(raw.to_string()));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            if !origin_allowed(&origin, &self.allowed_origins) {
                return Err(Rejection::Origin(origin));
            }
        }
        if let Some(expected) = &self.token {
            let value = headers
                .get(header::AUTHORIZATION)
                .ok_or(Rejection::NoToken)?
                .as_bytes();
            // The scheme is case-insensitive (RFC 9110 §11.1).
            let presented = match value.split_at_checked(7) {
                Some((scheme, rest)) if scheme.eq_ignore_ascii_case(b"bearer ") => {
                    rest.trim_ascii()
                }
                _ => return Err(Rejection::WrongScheme),
            };
            // Constant time in the contents; only a length mismatch returns early.
            if !bool::from(presented.ct_eq(expected.expose().as_bytes())) {
                return Err(Rejection::WrongToken);
            }
        }
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
}

/// The gate, as axum middleware.
async fn guard(State(policy): State<Arc<Policy>>, request: Request, next: Next) -> Response {
    match policy.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(rejection) => {
            tracing::warn!(
                method = %request.method(),
                path = %request.uri().path(),
                reason = ?rejection,
                "refused an HTTP request"
            );
            rejection.into_response()
        }
    }
}

async fn healthz() -> &'static str {
    "ok"
}

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "not found: MCP is served at /mcp (Streamable HTTP) and /sse (legacy HTTP+SSE)",
    )
}

/// Live sessions across both transports, for the session cap.
#[derive(Debug)]
pub struct SessionCount {
    /// Streamable HTTP sessions (absent when stateless).
    pub streamable:
        Option<Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>>,
    /// Legacy SSE sessions.
    pub sse: Arc<sse::Sessions>,
    /// The cap.
    pub max: usize,
}

impl SessionCount {
    /// How many sessions are live now.
    pub async fn live(&self) -> usize {
        let streamable = match &self.streamable {
            Some(manager) => manager.sessions.read().await.len(),
            None => 0,
        };
        streamable + self.sse.len().await
    }

    /// Whether one more session would exceed the cap.
    pub async fn full(&self) -> bool {
        self.live().await >= self.max
    }
}

/// The 503 answer when the session cap is reached.
pub fn sessions_full(max: usize) -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "too many sessions: the server holds its limit of {max}; close unused sessions or retry later (the operator can raise [http] max_sessions)"
        ),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// Read a request body whole, up to `max` bytes: over it → 413, a broken body → 400. For the
/// handlers that must see a body before rmcp does (`/message`, the `/mcp` tracker); the gate
/// has already refused a declared `Content-Length` over the cap.
pub(crate) async fn read_body(body: Body, max: usize) -> Result<Bytes, Response> {
    axum::body::to_bytes(body, max).await.map_err(|error| {
        let error = error.into_inner();
        if error.is::<http_body_util::LengthLimitError>() {
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is over the limit of {max} bytes"),
            )
                .into_response()
        } else {
            (
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {error}"),
            )
                .into_response()
        }
    })
}

/// Serve MCP over HTTP on the configured address until `shutdown` resolves. Then every call
/// in flight is cancelled (running commands are killed), and connections get
/// [`SHUTDOWN_GRACE`] to finish.
pub async fn serve(
    shared: Arc<Shared>,
    settings: HttpSettings,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), HttpError> {
    let bind = settings.bind.ok_or(HttpError::NoAddress)?;
    let token = match &settings.auth {
        AuthMode::Token(token) => Some(token.clone()),
        AuthMode::Disabled => None,
        AuthMode::Generate => {
            let token =
                random_hex(GENERATED_TOKEN_BYTES).map_err(|e| HttpError::Random(e.to_string()))?;
            // Shown once, to the operator, on stderr: it is the only way to learn it. This is
            // deliberately not a tracing event, so log files never receive it.
            eprintln!(
                "toolport: no token configured; clients must send `Authorization: Bearer {token}` (generated for this run; set TOOLPORT_TOKEN or --token-file to choose one, or --no-auth on loopback)"
            );
            Some(Secret::new(token))
        }
    };
    if token.is_none() {
        tracing::warn!(
            "serving HTTP without authentication (--no-auth): any local process can use the tools"
        );
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| HttpError::Bind { addr: bind, source })?;
    let local = listener.local_addr().map_err(HttpError::Serve)?;

    let stop = CancellationToken::new();
    let policy = Arc::new(Policy::new(&settings, token));
    let app = router(shared, &settings, policy, stop.clone());

    // A stable line on stderr: the operator learns the real port (with `:0`), tests read it.
    eprintln!(
        "toolport: listening on http://{local} (Streamable HTTP at /mcp{}, legacy HTTP+SSE at /sse, health at /healthz)",
        if settings.stateless {
            ", stateless"
        } else {
            ""
        }
    );
    // No Nagle delay: an MCP answer is a few small SSE writes (priming event, message, end of
    // stream), and Nagle plus the client's delayed ACK would add ~40 ms to every call.
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
    });
    let server = axum::serve(listener, app).with_graceful_shutdown({
        let stop = stop.clone();
        async move { stop.cancelled().await }
    });
    let server = server.into_future();
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result.map_err(HttpError::Serve),
        () = shutdown => {
            tracing::info!("stopping: cancelling calls in flight");
            stop.cancel();
            match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
                Ok(result) => result.map_err(HttpError::Serve),
                Err(_) => {
                    tracing::warn!(grace = ?SHUTDOWN_GRACE, "connections still open after the shutdown grace; exiting anyway");
                    Ok(())
                }
            }
        }
    }
}

/// The router: the MCP endpoints behind the gate, `/healthz` outside it.
pub fn router(
    shared: Arc<Shared>,
    settings: &HttpSettings,
    policy: Arc<Policy>,
    stop: CancellationToken,
) -> Router {
    let sse_sessions = Arc::new(sse::Sessions::default());
    let (mcp, manager) = streamable::service(shared.clone(), settings, stop.clone());
    let count = Arc::new(SessionCount {
        streamable: manager,
        sse: sse_sessions.clone(),
        max: settings.max_sessions,
    });
    let mcp = streamable::routes(mcp, count.clone(), settings.max_body_bytes);
    let legacy = sse::routes(sse::SseState {
        shared,
        sessions: sse_sessions,
        count,
        idle: settings.session_idle_timeout,
        keep_alive: settings.sse_keep_alive,
        max_body_bytes: settings.max_body_bytes,
        stop,
    });
    Router::new()
        .merge(mcp)
        .merge(legacy)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(settings.max_body_bytes))
        .layer(middleware::from_fn_with_state(policy, guard))
        // After the layers, so outside the gate (GET also answers HEAD).
        .route("/healthz", get(healthz))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(token: Option<&str>) -> Policy {
        let settings = HttpSettings::default();
        Policy::new(&settings, token.map(|t| Secret::new(t.into())))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    #[test]
    fn host_parsing() {
        assert_eq!(host_of("LocalHost:8787").as_deref(), Some("localhost"));
        assert_eq!(host_of("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(host_of("127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_of("localhost.").as_deref(), Some("localhost"));
        assert_eq!(host_of("[::1").as_deref(), None);
    }

    #[test]
    fn the_gate_checks_host_origin_token_in_order() {
        let p = policy(Some("0123456789abcdef"));
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
        assert_eq!(
            policy(None).check(&headers(&[("host", "localhost")])),
            Ok(())
        );
    }
}
