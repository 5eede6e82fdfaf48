//! List changes: `notifications/tools/list_changed` (and `prompts/list_changed`: prompts
//! follow the tools) when a reload changes the listed tools. Pushed to sessions that used
//! `initialize` until they end, and on `subscriptions/listen` streams for 2026-07-28 clients.

use rmcp::service::SubscriptionContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};

use super::ToolportServer;

impl ToolportServer {
    /// Forward every change of the listed tools to this session's client until the session
    /// ends (sessions opened with `initialize`; 2026-07-28 clients use `listen`).
    pub(super) fn forward_list_changes(&self, peer: Peer<RoleServer>) {
        let mut changes = self.shared.registry.changes();
        let ended = self.session_ended.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = ended.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                if peer.is_transport_closed() {
                    return;
                }
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%error, "could not send tools/list_changed; the session has ended");
                    return;
                }
                let _ = peer.notify_prompt_list_changed().await;
            }
        });
    }

    /// 2026-07-28: list changes flow on the client's `subscriptions/listen` stream until it
    /// closes.
    pub(super) async fn listen_for_changes(
        &self,
        context: SubscriptionContext,
    ) -> Result<(), McpError> {
        let mut changes = self.shared.registry.changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => if changed.is_err() { return Ok(()) },
            }
            context
                .sink()
                .notify_tool_list_changed()
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let _ = context.sink().notify_prompt_list_changed().await;
        }
    }
}
