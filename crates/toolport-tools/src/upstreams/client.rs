//! toolport as the client of one upstream: what it declares (elicitation, so an upstream may
//! ask the user through toolport), and where what the upstream sends goes — progress to the
//! call it belongs to (by its progress token), a question for the user to the one call in
//! flight (which asks its own client from its own task: the request that question belongs to
//! is that call's, so over HTTP it goes out on that call's stream), `tools/list_changed` to
//! the upstream's supervisor, log messages to toolport's log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorData as McpError, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::tool::ProgressSink;

/// A question for the user an upstream sent during a call, and where its answer goes.
pub(crate) struct Question {
    pub(crate) request: ElicitRequestParams,
    pub(crate) answer: oneshot::Sender<Result<ElicitResult, String>>,
}

/// The calls in flight on one upstream: where each one's progress and questions go.
#[derive(Default)]
pub(crate) struct Routes {
    calls: Mutex<HashMap<ProgressToken, Route>>,
}

/// Where one call's progress and questions go.
struct Route {
    progress: Arc<dyn ProgressSink>,
    /// The call's own task, which asks its client; `None` when its client cannot answer.
    questions: Option<mpsc::Sender<Question>>,
}

/// A call's place in [`Routes`], given up when dropped (the call ended, however).
pub(crate) struct Routed {
    routes: Arc<Routes>,
    token: ProgressToken,
}

impl Drop for Routed {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

impl Routes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, Route>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Route what comes for the request of `token` to this call until the guard drops.
    pub(crate) fn add(
        self: &Arc<Self>,
        token: ProgressToken,
        progress: Arc<dyn ProgressSink>,
        questions: Option<mpsc::Sender<Question>>,
    ) -> Routed {
        self.lock().insert(
            token.clone(),
            Route {
                progress,
                questions,
            },
        );
        Routed {
            routes: self.clone(),
            token,
        }
    }

    fn progress(&self, token: &ProgressToken) -> Option<Arc<dyn ProgressSink>> {
        self.lock().get(token).map(|route| route.progress.clone())
    }

    /// Who answers a question now: the client of the one call in flight. An elicitation
    /// request does not say which request it is about, so with several calls in flight
    /// nobody can be picked safely.
    fn asker(&self) -> Result<mpsc::Sender<Question>, String> {
        let calls = self.lock();
        let mut routes = calls.values();
        match (routes.next(), routes.next()) {
            (None, _) => Err("no call of toolport's is in flight on this server".into()),
            (Some(route), None) => route.questions.clone().ok_or_else(|| {
                "the client of the call cannot answer questions during a call (it declared no elicitation support, or speaks a protocol version without server-to-client requests)".into()
            }),
            (Some(_), Some(_)) => Err(
                "several calls are in flight on this server, and the question does not say which one it is about".into(),
            ),
        }
    }
}

/// The client handler of one upstream connection.
#[derive(Clone)]
pub(crate) struct UpstreamClient {
    /// The upstream's name, for the log.
    pub(crate) name: Arc<str>,
    pub(crate) routes: Arc<Routes>,
    /// Notified when the upstream says its tools changed.
    pub(crate) tools_changed: Arc<Notify>,
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(
            capabilities,
            Implementation::new("toolport", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(sink) = self.routes.progress(&params.progress_token) {
            sink.report(params.progress, params.total, params.message)
                .await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    // MCP logging is deprecated (SEP-2577), but servers still send it: it goes to the log.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(upstream = %self.name, level = ?params.level, data = %params.data, "upstream log message");
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let refused = |why: String| {
            tracing::info!(upstream = %self.name, "refusing the upstream's question for the user: {why}");
            McpError::invalid_request(
                format!("toolport cannot put this question to the user: {why}"),
                None,
            )
        };
        let asker = self.routes.asker().map_err(refused)?;
        let (answer, answered) = oneshot::channel();
        asker
            .send(Question { request, answer })
            .await
            .map_err(|_| refused("the call it belongs to has ended".into()))?;
        answered
            .await
            .map_err(|_| refused("the call it belongs to has ended".into()))?
            .map_err(refused)
    }
}
