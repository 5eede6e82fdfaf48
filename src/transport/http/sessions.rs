//! What the two HTTP transports share about sessions and bodies: the session cap, the 503
//! that refuses a session over it, and the bounded body reader.
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

use super::refusal::{REFUSED, refusal};

/// How long a client refused by the session cap is told to wait (`Retry-After`, seconds):
/// long enough not to hammer a full server, short enough that an agent retrying after a
/// session closed barely notices.
const RETRY_AFTER_SECS: &str = "5";

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
    held: Mutex<HashMap<SessionId, Slot>>,
}

/// Why [`CappedSessions`] failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CappedSessionsError {
    #[error("too many sessions: the server holds its limit of {0}")]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl CappedSessions {
    /// Wrap `inner`, taking places from `slots`.
    pub(crate) fn new(inner: LocalSessionManager, slots: Arc<SessionSlots>) -> Self {
        Self {
            inner,
            slots,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// The cap (for the early 503).
    pub(crate) fn slots(&self) -> &SessionSlots {
        &self.slots
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
        let (id, transport) = self.inner.create_session().await?;
        self.held().insert(id.clone(), slot);
        Ok((id, transport))
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
}
