//! Client roots: fetched after `initialize` (or before a session's first call) and on
//! `roots/list_changed`, and used to *narrow* the operator's roots ([`Workspace::narrow`]),
//! never to widen them. A call waits for the first `roots/list` (bounded by
//! [`ROOTS_TIMEOUT`]) and for any refresh in progress.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use toolport_tools::Workspace;
use toolport_tools::host::client_root_path;

use super::ToolportServer;
use crate::identity::Principal;

/// How long to wait for the client's answer to `roots/list`. A client that declares roots but
/// never answers must not stall tool calls; after this the operator's roots stay in force.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

impl ToolportServer {
    /// The workspace this session currently uses.
    pub fn workspace(&self) -> Arc<Workspace> {
        match self.workspace.read() {
            Ok(ws) => ws.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The workspace a call of `context` uses: this session's, narrowed by the `roots` of the
    /// policy rules that apply to the request's principal (each in turn: a path must lie
    /// inside every rule's roots). The narrowing opens the rules' roots through the session's
    /// handles, as a client's roots are, so it never reaches outside them.
    pub(crate) fn workspace_for(&self, context: &RequestContext<RoleServer>) -> Arc<Workspace> {
        let workspace = self.workspace();
        let Some(principal) = Principal::of(context) else {
            return workspace;
        };
        let Some(applied) = principal.access.policy() else {
            return workspace;
        };
        let mut narrowed: Option<Workspace> = None;
        for roots in applied.roots() {
            narrowed = Some(narrowed.as_ref().unwrap_or(&workspace).narrow(roots));
        }
        narrowed.map_or(workspace, Arc::new)
    }

    fn set_workspace(&self, ws: Arc<Workspace>) {
        match self.workspace.write() {
            Ok(mut slot) => *slot = ws,
            Err(poisoned) => *poisoned.into_inner() = ws,
        }
    }

    fn client_has_roots(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some())
    }

    /// Ask the client for its roots and narrow this session's workspace to them. A client that
    /// lists no roots (the MCP Inspector CLI does this) leaves the operator's roots in force.
    #[allow(deprecated)] // roots are deprecated by SEP-2577 but every current client uses them
    async fn refresh_roots(&self, peer: &Peer<RoleServer>) {
        if !Self::client_has_roots(peer) {
            return;
        }
        let _refreshing = self.refreshing.lock().await;
        let listed = match tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await {
            Ok(Ok(result)) => result.roots,
            Ok(Err(error)) => {
                tracing::warn!(%error, "roots/list failed; keeping the server's roots");
                return;
            }
            Err(_) => {
                tracing::warn!(
                    "the client did not answer roots/list in time; keeping the server's roots"
                );
                return;
            }
        };
        let operator = &self.shared.workspace;
        if listed.is_empty() {
            self.set_workspace(operator.clone());
            return;
        }
        let paths: Vec<_> = listed
            .iter()
            .filter_map(|root| {
                let path = client_root_path(&root.uri);
                if path.is_none() {
                    tracing::warn!(uri = %root.uri, "ignoring a client root that is not an existing file:// directory");
                }
                path
            })
            .collect();
        let narrowed = operator.narrow(&paths);
        tracing::info!(roots = %narrowed.describe_roots(), "using the client's roots (within the server's)");
        self.set_workspace(Arc::new(narrowed));
    }

    pub(super) async fn ensure_roots(&self, peer: &Peer<RoleServer>) {
        if Self::client_has_roots(peer) {
            self.initial_roots
                .get_or_init(|| self.refresh_roots(peer))
                .await;
        }
    }

    /// `roots/list_changed`: fetch the new roots.
    pub(super) async fn roots_changed(&self, peer: &Peer<RoleServer>) {
        self.refresh_roots(peer).await;
        // The fresh list counts as the first one if no call has fetched roots yet.
        let _ = self.initial_roots.set(());
    }

    /// Before a call runs: the client's first roots are in, and no refresh is under way.
    pub(super) async fn roots_settled(&self, peer: &Peer<RoleServer>) {
        self.ensure_roots(peer).await;
        drop(self.refreshing.lock().await);
    }
}
