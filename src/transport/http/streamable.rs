//! `/mcp`: rmcp's Streamable HTTP service, plus what rmcp leaves to us.
//!
//! rmcp's `StreamableHttpService` does the protocol: sessions (`LocalSessionManager`, idle
//! expiry = `--session-idle-timeout`), stateless mode, 2026-07-28 stateless requests,
//! progress as SSE, 404 for an unknown session, 413 for an oversized body while reading it.
//! What it does not do is added here:
//! - **the session cap** (rmcp has none): sessions live in [`CappedSessions`], which takes a
//!   slot of the shared cap for each, and a middleware in front of rmcp ([`track`]) answers
//!   503 to an `initialize` that would open a session beyond `max_sessions`;
//! - **disconnect cancellation in stateful mode**: when the client drops the SSE response of
//!   a request before its end, the request is cancelled as if the client had sent
//!   `notifications/cancelled`, so a running command is killed. (rmcp already does this in
//!   stateless mode, where the handler lives only as long as the response.) The flip side:
//!   a client cannot resume a dropped POST stream with `Last-Event-ID` and still get the
//!   result; the call is gone, which is what an operator expects of a disconnect.
//!
//! - **`DELETE` answered `204 No Content`**: rmcp ends the session and answers `202
//!   Accepted`, which the MCP Python SDK's client (and so LangChain's adapters, the OpenAI
//!   Agents SDK and Pydantic AI) logs as a warning, "Session termination failed: 202", at the
//!   end of every session; it expects 200 or 204, as the TypeScript SDK accepts too.
//!
//! - **another replica's session** (with `[replicas]`, a session id names its replica:
//!   [`super::sessions`]) is answered `404` by [`track`] before rmcp looks it up, with a
//!   message that names both replicas; rmcp's own 404 covers an unknown session of this one.
//!
//! [`track`] reads the POST body once (bounded by the body cap) to learn the request's
//! id and method, and hands the same bytes on.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use futures::{Stream, StreamExt};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::sessions::{CappedSessions, SessionIds, SessionSlots, read_body, sessions_full};
use super::settings::HttpSettings;
use crate::server::{Shared, ToolportServer};

/// The session header of Streamable HTTP.
const SESSION_HEADER: &str = "mcp-session-id";

/// The `/mcp` route: rmcp's service, with [`track`] in front of it when stateful. Stateless
/// mode still takes a session manager (rmcp needs a manager type) but never opens a session
/// with it, and [`track`] has nothing to do (no session to cap; rmcp cancels a call whose
/// response is dropped), so POST bodies go straight to rmcp instead of being buffered and
/// probed twice.
pub(crate) fn routes(
    shared: Arc<Shared>,
    settings: &HttpSettings,
    slots: Arc<SessionSlots>,
    ids: SessionIds,
    stop: &CancellationToken,
) -> Router {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(settings.session_idle_timeout);
    // A dropped call is cancelled, not resumed (see the module docs), so nothing is kept for
    // a resume: rmcp would otherwise hold every finished call's answer for a minute (memory
    // that grows with the call rate and answer size, and a scan of them all per message),
    // and open each SSE answer with a priming event that invites a reconnect.
    manager.session_config.completed_cache_ttl = Duration::ZERO;
    manager.session_config.sse_retry = None;
    let manager = Arc::new(CappedSessions::new(manager, slots, ids));
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!settings.stateless)
        // Plain JSON answers when a stateless call sends nothing before its result.
        .with_json_response(settings.stateless)
        .with_cancellation_token(stop.child_token())
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_sse_keep_alive(Some(settings.sse_keep_alive))
        .with_sse_retry(None)
        // Host and Origin are checked by the gate (`gate.rs`), for every endpoint alike.
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let transport = if settings.stateless {
        "http-stateless"
    } else {
        "http"
    };
    let service = StreamableHttpService::new(
        move || {
            Ok(ToolportServer::new(shared.clone())
                .with_transport(transport)
                .traced())
        },
        manager.clone(),
        config,
    );
    let router = Router::new().route_service("/mcp", service);
    if settings.stateless {
        return router;
    }
    router.layer(middleware::from_fn_with_state(
        Arc::new(Tracker {
            manager,
            max_body_bytes: settings.max_body_bytes,
        }),
        track,
    ))
}

/// What [`track`] needs.
struct Tracker {
    manager: Arc<CappedSessions>,
    max_body_bytes: usize,
}

/// The id and method of a JSON-RPC message; anything else is left to rmcp.
#[derive(Debug, Default, Deserialize)]
struct Probe {
    id: Option<Value>,
    method: Option<String>,
}

async fn track(State(tracker): State<Arc<Tracker>>, request: Request, next: Next) -> Response {
    if let Some(refusal) = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|id| tracker.manager.ids().foreign(id))
    {
        return refusal;
    }
    if request.method() == Method::DELETE {
        return session_ended(next.run(request).await);
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, tracker.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    // Not a single JSON-RPC object (a batch, garbage): rmcp answers it.
    let probe: Probe = serde_json::from_slice(&bytes).unwrap_or_default();
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if session.is_none()
        && probe.method.as_deref() == Some("initialize")
        && tracker.manager.slots().full()
    {
        let max = tracker.manager.slots().max();
        tracing::warn!(max, "refused a new session: the cap is reached");
        return sessions_full(max);
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let (Some(session), Some(id), Some(_)) = (session, probe.id, probe.method) else {
        return response;
    };
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_stream {
        return response;
    }
    let (parts, body) = response.into_parts();
    let guarded = CancelOnDrop {
        inner: body.into_data_stream(),
        cancel: Some(PendingCall {
            manager: tracker.manager.clone(),
            session,
            id,
        }),
    };
    Response::from_parts(parts, Body::from_stream(guarded))
}

/// rmcp's answer to a `DELETE` that ended the session (`202 Accepted`) as `204 No Content`;
/// any other answer (404 for an unknown session, 400 without one) as it is.
fn session_ended(response: Response) -> Response {
    if response.status() != StatusCode::ACCEPTED {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.status = StatusCode::NO_CONTENT;
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::empty())
}

/// A request whose response stream is still open.
struct PendingCall {
    manager: Arc<CappedSessions>,
    session: String,
    id: Value,
}

/// A response body that cancels its request when dropped before its end (the client went
/// away).
struct CancelOnDrop {
    inner: BodyDataStream,
    /// Cleared when the stream ends: the call is over, there is nothing left to cancel.
    cancel: Option<PendingCall>,
}

impl Stream for CancelOnDrop {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = std::task::ready!(self.inner.poll_next_unpin(cx));
        if item.is_none() {
            self.cancel = None;
        }
        Poll::Ready(item)
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(call) = self.cancel.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let message = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": call.id, "reason": "the client disconnected"},
        });
        let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(message) else {
            return;
        };
        runtime.spawn(async move {
            tracing::info!(request = %call.id, "the client dropped a call's response stream; cancelling the call");
            // The session may be gone already (closed, expired, shutting down): then so is
            // the call.
            let _ = call
                .manager
                .accept_message(&call.session.into(), message)
                .await;
        });
    }
}
