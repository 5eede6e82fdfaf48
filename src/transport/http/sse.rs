//! The legacy HTTP+SSE transport (MCP 2024-11-05), for older clients.
//!
//! rmcp 3.9 dropped it (a deliberate non-goal upstream), so it is rebuilt here on rmcp's
//! generic transport: a `(Sink, Stream)` pair of channels per connection, served by the same
//! [`ToolportServer`] as every other transport.
//!
//! - `GET /sse` opens a session: the first event is `endpoint` with
//!   `/message?sessionId=ID`; every server message follows as a `message` event; comment
//!   keep-alives (`[http] sse_keep_alive`, 15 s by default) stop proxies from closing a quiet
//!   stream.
//! - `POST /message?sessionId=ID` hands one JSON-RPC message to the session and answers 202;
//!   the response travels on the SSE stream. Unknown session → 404 (naming the replica that
//!   holds it when its id names another: `sessions.rs`); a body that is not a
//!   JSON-RPC message → 400; over the cap → 413.
//! - The session ends when the SSE stream closes (the client went away: its calls are
//!   cancelled, running commands killed), when the client sends nothing for the idle timeout,
//!   or at shutdown. It is then removed, so later POSTs get 404.
//!
//! Each session holds a [`Slot`] of the shared session cap for its life. Host, Origin and the
//! token are checked by the gate (`gate.rs`) before these handlers run.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::{Stream, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ServerJsonRpcMessage};
use serde::Deserialize;
use tokio::sync::{RwLock, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::{CancellationToken, PollSender};

use super::refusal::{REFUSED, UNKNOWN_SESSION, refusal};
use super::sessions::{SessionIds, SessionSlots, Slot, read_body, sessions_full};
use crate::server::{Shared, ToolportServer};
use crate::transport::serve_until_stopped;

/// Messages queued per direction and session. Small: a POST waits (backpressure) rather
/// than letting a client grow the server's memory.
const QUEUE: usize = 64;

/// The live sessions: id → the sender into that session's server.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: RwLock<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>,
}

/// Removes its session when the SSE stream is dropped, and frees its place under the cap.
struct SessionGuard {
    id: String,
    sessions: Arc<Sessions>,
    _slot: Slot,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let id = std::mem::take(&mut self.id);
        let sessions = self.sessions.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                sessions.map.write().await.remove(&id);
                tracing::debug!(session = %id, "legacy SSE session closed");
            });
        }
    }
}

/// What the handlers share.
#[derive(Clone)]
pub(crate) struct SseState {
    pub(crate) shared: Arc<Shared>,
    /// The live legacy sessions.
    pub(crate) sessions: Arc<Sessions>,
    /// The session cap, shared with Streamable HTTP.
    pub(crate) slots: Arc<SessionSlots>,
    /// How sessions are named (their replica), as on Streamable HTTP.
    pub(crate) ids: SessionIds,
    /// Idle expiry.
    pub(crate) idle: Duration,
    /// Keep-alive comment interval.
    pub(crate) keep_alive: Duration,
    pub(crate) max_body_bytes: usize,
    /// Cancelled at shutdown.
    pub(crate) stop: CancellationToken,
}

/// `GET /sse` and `POST /message`.
pub(crate) fn routes(state: SseState) -> Router {
    Router::new()
        .route("/sse", get(connect))
        .route("/message", post(message))
        .with_state(state)
}

/// The client's messages, ending after `idle` without one.
fn inbound(
    rx: mpsc::Receiver<ClientJsonRpcMessage>,
    idle: Duration,
) -> impl Stream<Item = ClientJsonRpcMessage> + Send + 'static {
    futures::stream::unfold(rx, move |mut rx| async move {
        match tokio::time::timeout(idle, rx.recv()).await {
            Ok(Some(message)) => Some((message, rx)),
            Ok(None) => None,
            Err(_) => {
                tracing::info!(?idle, "closing an idle legacy SSE session");
                None
            }
        }
    })
}

fn event(message: &ServerJsonRpcMessage) -> Option<Result<Event, Infallible>> {
    match serde_json::to_string(message) {
        Ok(data) => Some(Ok(Event::default().event("message").data(data))),
        Err(error) => {
            tracing::error!(%error, "cannot serialize a server message; dropping it");
            None
        }
    }
}

async fn connect(State(state): State<SseState>) -> Response {
    let Some(slot) = state.slots.try_take() else {
        return sessions_full(state.slots.max());
    };
    let id = match state.ids.mint() {
        Ok(id) => id,
        Err(error) => return refusal(StatusCode::INTERNAL_SERVER_ERROR, REFUSED, error),
    };
    let (to_server, from_client) = mpsc::channel::<ClientJsonRpcMessage>(QUEUE);
    let (to_client, from_server) = mpsc::channel::<ServerJsonRpcMessage>(QUEUE);
    state
        .sessions
        .map
        .write()
        .await
        .insert(id.clone(), to_server);

    let transport = (
        PollSender::new(to_client),
        Box::pin(inbound(from_client, state.idle)),
    );
    let server = ToolportServer::new(state.shared.clone())
        .with_transport("sse")
        .traced();
    let stop = state.stop.clone();
    let session = id.clone();
    tokio::spawn(async move {
        let running = match server.serve(transport).await {
            Ok(running) => running,
            Err(error) => {
                tracing::info!(%session, %error, "legacy SSE session ended before initialize");
                return;
            }
        };
        let _ = serve_until_stopped(running, stop.cancelled()).await;
    });

    let guard = SessionGuard {
        id: id.clone(),
        sessions: state.sessions.clone(),
        _slot: slot,
    };
    tracing::debug!(session = %id, "legacy SSE session opened");
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    let messages = ReceiverStream::new(from_server).filter_map(move |message| {
        // The stream owns the guard: dropping the stream (client gone) removes the session.
        let _guard = &guard;
        std::future::ready(event(&message))
    });
    let stream = futures::stream::once(std::future::ready(Ok(endpoint)))
        .chain(messages)
        .take_until(state.stop.cancelled_owned());
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(state.keep_alive))
        .into_response()
}

#[derive(Debug, Deserialize)]
struct MessageQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

async fn message(
    State(state): State<SseState>,
    Query(query): Query<MessageQuery>,
    request: Request,
) -> Response {
    let Some(sender) = state
        .sessions
        .map
        .read()
        .await
        .get(&query.session_id)
        .cloned()
    else {
        return state
            .ids
            .foreign(&query.session_id)
            .unwrap_or_else(unknown_session);
    };
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, state.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let mut message = match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(message) => message,
        Err(error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                ErrorCode::PARSE_ERROR,
                format!("the body is not one JSON-RPC 2.0 message: {error}"),
            );
        }
    };
    // Tools can read the HTTP request parts, as on /mcp.
    message.insert_extension(parts);
    match sender.send(message).await {
        Ok(()) => (StatusCode::ACCEPTED, "Accepted").into_response(),
        Err(_) => unknown_session(),
    }
}

fn unknown_session() -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        UNKNOWN_SESSION,
        "unknown or closed session: open a new one with GET /sse and post to the endpoint it announces",
    )
}
