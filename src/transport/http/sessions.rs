//! What the two HTTP transports share about sessions and bodies: the session cap, the 503
//! that refuses a session over it, the session ids (which name their replica), the 404 for
//! another replica's session, and the bounded body reader.
//!
//! **The cap is a slot counter that transports register into.** A transport opening a
//! session takes a [`Slot`] from the shared [`SessionSlots`] and holds it for the session's
//! life; dropping it frees the place. Taking a slot is one atomic compare-and-swap, so
//! concurrent opens can never pass the cap together (a check of the live count followed by
//! an insert could), and the cap needs to know neither which transports exist nor how they
//! store their sessions:
//! - legacy SSE ([`super::sse`]) holds the slot in the session's stream;
//! - Streamable HTTP ([`super::streamable`]) holds it in [`CappedSessions`], rmcp's
//!   `LocalSessionManager` wrapped so that a slot is taken when rmcp creates a session and
//!   freed when rmcp closes it (on `DELETE`, idle expiry, the end of its worker, shutdown).
//!
//! **A session id names the replica that holds it** ([`SessionIds`]): with `[replicas]`, an
//! id is `REPLICA~RANDOM` (`r1~9f2c…`), so a load balancer routes a pre-2026 client's
//! requests to the replica that holds its session by the id alone, with no table of its own
//! (docs/http.md, "Sessions across replicas", has the haproxy and nginx rules). A request for
//! a session whose id names another replica (the balancer routed it elsewhere, or that replica
//! is gone) is answered `404` ([`foreign_session`]), the answer the spec gives for an unknown
//! session, on which a client starts a new one; the message names both replicas, and the
//! replica logs it, so an operator sees a balancer that does not route by the id. Without
//! `[replicas]` an id is the random part alone. Nothing reads an id's form but this file.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

use super::refusal::{REFUSED, UNKNOWN_SESSION, refusal};

/// How long a client refused by the session cap is told to wait (`Retry-After`, seconds):
/// long enough not to hammer a full server, short enough that an agent retrying after a
/// session closed barely notices.
const RETRY_AFTER_SECS: &str = "5";

/// Random bytes in a session id (hex-encoded): unguessable, so one client cannot use another's
/// session even with the token.
const SESSION_ID_BYTES: usize = 16;
/// Between a replica's id and the random part of a session id: a character no replica id
/// holds (`[replicas] id` is letters, digits, `-`, `_` and `.`), so the replica is everything
/// before the first one; visible ASCII (the spec's rule for a session id) and unreserved in a
/// URL (legacy SSE carries the id in the `sessionId` query parameter, unescaped).
pub(crate) const REPLICA_SEPARATOR: char = '~';

/// How this server names its sessions: the random part, after this replica's id when there are
/// replicas.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionIds {
    /// This replica's id (`[replicas] id`), when there are replicas.
    replica: Option<Arc<str>>,
}

impl SessionIds {
    /// Ids for `replica` (`None`: one server, no prefix).
    pub(crate) fn new(replica: Option<&str>) -> Self {
        Self {
            replica: replica.map(Arc::from),
        }
    }

    /// A new session id.
    pub(crate) fn mint(&self) -> Result<String, String> {
        let random = toolport_tools::host::secret::random_token(SESSION_ID_BYTES)
            .map_err(|e| format!("cannot create a session id: {e}"))?;
        Ok(match &self.replica {
            Some(replica) => format!("{replica}{REPLICA_SEPARATOR}{random}"),
            None => random,
        })
    }

    /// The 404 for `id` when it names another replica than this one (`None`: it is this
    /// replica's, or names none, and the transport looks it up as usual).
    pub(crate) fn foreign(&self, id: &str) -> Option<Response> {
        let this = self.replica.as_deref()?;
        let (owner, _) = id.split_once(REPLICA_SEPARATOR)?;
        if owner == this {
            return None;
        }
        // The owner part is the client's text: shown only when it is a replica id's form.
        let owner = if owner.len() <= 64
            && owner
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            owner
        } else {
            "(not a replica id)"
        };
        tracing::warn!(
            owner,
            replica = this,
            "a request for another replica's session: the load balancer does not route by the session id, or that replica is gone; answered 404 (the client starts a new session)"
        );
        Some(refusal(
            StatusCode::NOT_FOUND,
            UNKNOWN_SESSION,
            format!(
                "unknown session: it was opened on replica {owner:?} and this is replica {this:?}; start a new session (initialize without Mcp-Session-Id). The load balancer should route on the session id's prefix (docs/http.md, \"Sessions across replicas\")"
            ),
        ))
    }
}

/// Live sessions across every transport, against the cap.
#[derive(Debug)]
pub(crate) struct SessionSlots {
    live: AtomicUsize,
    max: usize,
}

/// One session's place under the cap; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<SessionSlots>,
}

impl SessionSlots {
    /// No sessions yet, at most `max`.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            live: AtomicUsize::new(0),
            max,
        })
    }

    /// Most sessions open at once (`[http] max_sessions`).
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A place for one more session, or `None` when the cap is reached.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<Slot> {
        self.live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |live| {
                (live < self.max).then_some(live + 1)
            })
            .ok()
            .map(|_| Slot {
                slots: self.clone(),
            })
    }

    /// Whether the cap is reached now. Only for answering early with a 503; the place itself
    /// is taken with [`try_take`](Self::try_take).
    pub(crate) fn full(&self) -> bool {
        self.live.load(Ordering::Acquire) >= self.max
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The 503 answer when the session cap is reached.
pub(crate) fn sessions_full(max: usize) -> Response {
    let mut response = refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        REFUSED,
        format!(
            "too many sessions: the server holds its limit of {max}; close unused sessions or retry later (the operator can raise [http] max_sessions)"
        ),
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    response
}

/// Read a request body whole, up to `max` bytes: over it → 413, a broken body → 400. For the
/// handlers that must see a body before rmcp does (`/message`, the `/mcp` tracker); the gate
/// has already refused a declared `Content-Length` over the cap.
pub(crate) async fn read_body(body: Body, max: usize) -> Result<Bytes, Response> {
    axum::body::to_bytes(body, max).await.map_err(|error| {
        let error = error.into_inner();
        if error.is::<http_body_util::LengthLimitError>() {
            refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                REFUSED,
                format!("the request body is over the limit of {max} bytes"),
            )
        } else {
            refusal(
                StatusCode::BAD_REQUEST,
                REFUSED,
                format!("cannot read the request body: {error}"),
            )
        }
    })
}

/// rmcp's `LocalSessionManager`, with each session holding a [`Slot`] from creation to close.
///
/// rmcp calls [`close_session`](SessionManager::close_session) whenever a session ends
/// (its worker returns after `DELETE`, idle expiry or shutdown), which frees the slot. The
/// `/mcp` tracker answers 503 when the cap is already reached; a client that loses a race
/// for the last place gets rmcp's error for a failed session creation instead, and the cap
/// holds either way.
#[derive(Debug)]
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    slots: Arc<SessionSlots>,
    ids: SessionIds,
    held: Mutex<HashMap<SessionId, Slot>>,
}

/// Why [`CappedSessions`] failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CappedSessionsError {
    #[error("too many sessions: the server holds its limit of {0}")]
    Full(usize),
    #[error("{0}")]
    Id(String),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl CappedSessions {
    /// Wrap `inner`, taking places from `slots`, naming sessions with `ids`.
    pub(crate) fn new(
        inner: LocalSessionManager,
        slots: Arc<SessionSlots>,
        ids: SessionIds,
    ) -> Self {
        Self {
            inner,
            slots,
            ids,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// The cap (for the early 503).
    pub(crate) fn slots(&self) -> &SessionSlots {
        &self.slots
    }

    /// How sessions are named (for the 404 to another replica's session).
    pub(crate) fn ids(&self) -> &SessionIds {
        &self.ids
    }

    /// The slots map; a panic while holding it cannot leave it inconsistent (one insert or
    /// remove), so a poisoned lock is used as is.
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Slot>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionManager for CappedSessions {
    type Error = CappedSessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let slot = self
            .slots
            .try_take()
            .ok_or(CappedSessionsError::Full(self.slots.max()))?;
        // What `LocalSessionManager::create_session` does, with an id of ours: rmcp's is a
        // UUID that cannot name the replica.
        let id = SessionId::from(self.ids.mint().map_err(CappedSessionsError::Id)?);
        let (handle, worker) = create_local_session(id.clone(), self.inner.session_config.clone());
        self.inner.sessions.write().await.insert(id.clone(), handle);
        self.held().insert(id.clone(), slot);
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let slot = self.held().remove(id);
        let closed = self.inner.close_session(id).await;
        drop(slot);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_taken_up_to_the_cap_and_freed_on_drop() {
        let slots = SessionSlots::new(2);
        let a = slots.try_take();
        let b = slots.try_take();
        assert!(a.is_some() && b.is_some());
        assert!(slots.full());
        assert!(slots.try_take().is_none());
        drop(a);
        assert!(!slots.full());
        assert!(slots.try_take().is_some());
    }

    #[tokio::test]
    async fn session_ids_name_their_replica_and_another_replicas_are_refused() {
        let alone = SessionIds::new(None);
        let id = alone.mint().unwrap();
        assert_eq!(id.len(), 2 * SESSION_ID_BYTES);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert!(
            alone.foreign("r2~abc").is_none(),
            "one server owns every id"
        );

        let r1 = SessionIds::new(Some("r1.eu"));
        let id = r1.mint().unwrap();
        let (owner, random) = id.split_once(REPLICA_SEPARATOR).unwrap();
        assert_eq!(owner, "r1.eu");
        assert_eq!(random.len(), 2 * SESSION_ID_BYTES);
        assert_ne!(r1.mint().unwrap(), id);
        assert!(r1.foreign(&id).is_none());
        assert!(
            r1.foreign("0123abcd").is_none(),
            "an id without a replica is looked up"
        );
        assert!(
            r1.foreign("r1.eu~abc~x").is_none(),
            "the replica ends at the first ~"
        );
        for (id, named) in [
            ("r1.e~abc", "\"r1.e\""),
            ("r2~x", "\"r2\""),
            ("<a b>~x", "not a replica id"),
        ] {
            let response = r1.foreign(id).unwrap();
            assert_eq!(response.status(), StatusCode::NOT_FOUND);
            let body = axum::body::to_bytes(response.into_body(), 4096)
                .await
                .unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["error"]["code"], -32001);
            let message = body["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(named) && message.contains("\"r1.eu\""),
                "{message}"
            );
            assert!(message.contains("start a new session"), "{message}");
        }
    }
}
