//! Progress over MCP: a call whose request carries a progress token gets
//! `notifications/progress` from the tools that report progress; without a token, nothing.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use toolport_tools::{NoProgress, ProgressSink};

/// Where a call's progress goes: to the client, when the request asked for it.
pub(super) fn sink(context: &RequestContext<RoleServer>) -> Arc<dyn ProgressSink> {
    match context.meta.get_progress_token() {
        Some(token) => Arc::new(McpProgress {
            peer: context.peer.clone(),
            token,
        }),
        None => Arc::new(NoProgress),
    }
}

/// Progress over MCP: `notifications/progress` with the request's token.
struct McpProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

#[async_trait]
impl ProgressSink for McpProgress {
    async fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(message) = message {
            param = param.with_message(message);
        }
        if let Err(error) = self.peer.notify_progress(param).await {
            tracing::debug!(%error, "could not send a progress notification");
        }
    }
}
