//! The HTTP server: one axum router carrying both HTTP transports, behind one security gate.
//! This folder is the HTTP feature whole, one file per concern:
//! - [`gate`]: the security gate (Host, Origin, bearer token, declared body size), and the
//!   parsing of its rules; the one file a security review of HTTP starts with;
//! - [`streamable`]: `/mcp`, Streamable HTTP, rmcp's `StreamableHttpService` (stateful
//!   sessions by default, stateless with `--stateless`; 2026-07-28 requests are always
//!   served statelessly), plus the session cap and disconnect cancellation;
//! - [`sse`]: `/sse` + `/message`, the legacy 2024-11-05 HTTP+SSE transport;
//! - [`sessions`]: what both transports share: the session cap, the session ids (which name
//!   their replica), the bounded body reader;
//! - [`forwarded`]: `[http] trusted_proxies`, and the client a trusted proxy names;
//! - [`refusal`]: the JSON-RPC error body of every answer the HTTP layer gives itself;
//! - [`settings`]: the `--http` flags and the `[http]` section, validated into
//!   [`HttpSettings`];
//! - [`oauth`]: `[http.oauth]`, toolport as an OAuth 2.1 resource server: access tokens
//!   checked for the gate, the RFC 9728 metadata (outside the gate), the 401/403 challenges;
//! - [`internal`]: `/internal/jobs`, where other replicas forward requests for this one's
//!   jobs and tasks (outside the gate: signed with the replicas' internal secret);
//! - [`ready`]: `/readyz` (outside the gate: whether this replica can take calls, which with
//!   `[replicas]` depends on Redis) and `/replicas` (behind it: the replica registry);
//! - here: [`router`] (the endpoints behind the gate, `/healthz` and `/readyz` outside it,
//!   revealing nothing else) and [`serve`] (listen, print the address, shut down in bounds).
//!
//! The transports import from `gate`, `sessions`, `refusal` and `settings`, never from each other or
//! from this file. `tests.rs` drives [`router`] in process, one gate rule at a time.

pub(crate) mod forwarded;
pub(crate) mod gate;
mod internal;
pub(crate) mod oauth;
mod ready;
mod refusal;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod sse;
pub(crate) mod streamable;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::routing::get;
use axum::serve::ListenerExt;
use tokio_util::sync::CancellationToken;
use toolport_tools::host::secret::{Secret, random_token};

use self::gate::Gate;
use self::oauth::OAuth;
use self::sessions::{SessionIds, SessionSlots};
use self::settings::{AuthMode, GENERATED_TOKEN_BYTES, HttpSettings};
use crate::server::Shared;

/// How long shutdown waits for connections to finish after cancelling every call. Cancelled
/// commands get SIGTERM, then SIGKILL after a sub-second grace; 5 s covers that with room,
/// and a client that keeps its connection open cannot hold the process longer.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the HTTP server could not run.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// `serve_http` was called without an address.
    #[error("no --http address is configured")]
    NoAddress,
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address from `--http`.
        addr: SocketAddr,
        /// What the operating system said (in use, not permitted, …).
        source: std::io::Error,
    },
    /// The operating system's random generator failed (needed for a token).
    #[error("cannot generate a token: {0}")]
    Random(String),
    /// The server failed while running.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
    /// The OAuth resource server cannot be set up (its HTTP client).
    #[error("cannot set up OAuth: {0}")]
    OAuth(String),
}

/// The media type of the `prometheus-client` text exposition (Prometheus scrapes it).
const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

async fn healthz() -> &'static str {
    "ok"
}

async fn not_found() -> axum::response::Response {
    refusal::refusal(
        StatusCode::NOT_FOUND,
        refusal::REFUSED,
        "not found: MCP is served at /mcp (Streamable HTTP) and /sse (legacy HTTP+SSE)",
    )
}

/// Serve MCP over HTTP on `settings.bind` until `shutdown` resolves. Then every call in
/// flight is cancelled (running commands are killed), and connections get [`SHUTDOWN_GRACE`]
/// to finish.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    settings: &HttpSettings,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), HttpError> {
    let bind = settings.bind.ok_or(HttpError::NoAddress)?;
    let token = match &settings.auth {
        AuthMode::Token(token, _) => Some(token.clone()),
        AuthMode::Disabled | AuthMode::OAuth => None,
        AuthMode::Generate => {
            let token = random_token(GENERATED_TOKEN_BYTES)
                .map_err(|e| HttpError::Random(e.to_string()))?;
            // Shown once, to the operator, on stderr: it is the only way to learn it. This is
            // deliberately not a tracing event, so log files never receive it.
            eprintln!(
                "toolport: no token configured; clients must send `Authorization: Bearer {token}` (generated for this run; set TOOLPORT_TOKEN or --token-file to choose one, or --no-auth on loopback)"
            );
            Some(Secret::new(token))
        }
    };
    if let (Some(audit), Some(token)) = (&shared.audit, &token) {
        audit.add_secret(token.clone());
    }
    if token.is_none() && settings.oauth.is_none() {
        tracing::warn!(
            "serving HTTP without authentication (--no-auth): any local process can use the tools"
        );
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| HttpError::Bind { addr: bind, source })?;
    let local = listener.local_addr().map_err(HttpError::Serve)?;

    let stop = CancellationToken::new();
    let cluster = shared.principal_budgets.cluster().cloned();
    let oauth = match &settings.oauth {
        Some(oauth) => {
            if let (Some(audit), Some(introspection)) = (&shared.audit, &oauth.introspection) {
                audit.add_secret(introspection.client_secret.clone());
            }
            let resource = OAuth::new(oauth, shared.registry.clone(), cluster.clone())
                .map_err(HttpError::OAuth)?;
            Some(Arc::new(resource))
        }
        None => None,
    };
    if let Some(builtin) = oauth.as_ref().and_then(|o| o.builtin()) {
        let settings = &builtin.settings;
        eprintln!(
            "toolport: OAuth: toolport is its own authorization server (at the origin of {}); it grants {} ({}); grants are kept in {}; each connection is approved on its consent page with {}",
            settings_public_url(&builtin),
            settings.max_scopes.join(" "),
            if settings.max_scopes.len() == 1 {
                "set http.oauth.builtin_max_scopes to allow more"
            } else {
                "http.oauth.builtin_max_scopes"
            },
            if builtin.cluster().is_some() {
                format!(
                    "the shared store (Redis; this replica's signing key in {})",
                    settings.state_dir.display()
                )
            } else {
                settings.state_dir.display().to_string()
            },
            match settings.approval {
                oauth::settings::builtin::Approval::OneTimeCode =>
                    "a one-time code printed here when the request arrives",
                oauth::settings::builtin::Approval::Passphrase(..) => "the consent passphrase",
            }
        );
    }
    if let Some(cluster) = &cluster {
        cluster.start(stop.clone()).await;
    }
    let gate = Arc::new(settings.gate_with(token, oauth).with_cluster(cluster));
    let app = router(shared, settings, gate, stop.clone());

    // A stable line on stderr: the operator learns the real port (with `:0`), tests read it.
    eprintln!(
        "toolport: listening on http://{local} (Streamable HTTP at /mcp{}, legacy HTTP+SSE at /sse, health at /healthz)",
        if settings.stateless {
            ", stateless"
        } else {
            ""
        }
    );
    // No Nagle delay: an MCP answer is often more than one small write (the SSE headers, then
    // the message event, then the end of the stream), and Nagle plus the client's delayed ACK
    // would hold a write back for ~40 ms, on every call.
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
    });
    // The peer address reaches the gate (the per-client request rate).
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
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

/// Where the built-in authorization server is, as the operator configured it.
fn settings_public_url(builtin: &oauth::builtin::Builtin) -> String {
    builtin.oauth.public_url.as_ref().map_or_else(
        || "the address clients use (set http.oauth.public_url behind a tunnel)".to_owned(),
        ToString::to_string,
    )
}

/// The router: the MCP endpoints behind the gate, `/healthz` outside it. `stop` cancels
/// every session and call (shutdown).
pub(crate) fn router(
    shared: Arc<Shared>,
    settings: &HttpSettings,
    gate: Arc<Gate>,
    stop: CancellationToken,
) -> Router {
    // One cap for both transports.
    let slots = SessionSlots::new(settings.max_sessions);
    let cluster = shared.principal_budgets.cluster().cloned();
    // With replicas, a session id names this one (a balancer routes on it).
    let ids = SessionIds::new(cluster.as_deref().map(|c| c.id()));
    let mcp = streamable::routes(shared.clone(), settings, slots.clone(), ids.clone(), &stop);
    let metrics = shared.metrics.clone();
    let internal = internal::routes(shared.clone(), settings.max_body_bytes);
    let legacy = sse::routes(sse::SseState {
        shared,
        sessions: Arc::default(),
        slots,
        ids,
        idle: settings.session_idle_timeout,
        keep_alive: settings.sse_keep_alive,
        max_body_bytes: settings.max_body_bytes,
        stop,
    });
    let metadata = gate.oauth_settings();
    let builtin = gate.oauth_builtin().map(|builtin| {
        oauth::builtin::routes(builtin).layer(middleware::from_fn_with_state(
            gate.clone(),
            gate::open_endpoint,
        ))
    });
    let router = Router::new()
        .merge(mcp)
        .merge(legacy)
        .route(
            "/metrics",
            get(move || {
                let text = metrics.render_text();
                async move { ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], text) }
            }),
        )
        .merge(ready::replicas_route(cluster.clone()))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(settings.max_body_bytes))
        .layer(middleware::from_fn_with_state(gate, gate::gate))
        .layer(middleware::from_fn(refusal::json_rpc_errors));
    let router = match metadata {
        // Outside the gate: a client reads it after a 401, without a token.
        Some(oauth) => router.merge(oauth::metadata::routes(oauth)),
        None => router,
    };
    // Outside the bearer gate too (they are how a client gets a token), behind the Host rule.
    let router = match builtin {
        Some(builtin) => router.merge(builtin),
        None => router,
    };
    // After the layers, so outside the gate (GET also answers HEAD).
    router
        .route("/healthz", get(healthz))
        .merge(ready::readyz_route(cluster))
        .merge(internal)
}
