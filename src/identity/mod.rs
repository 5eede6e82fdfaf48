//! Who a request comes from: the [`Principal`] an HTTP request authenticated as, carried from
//! the transport (which puts it in the request's extensions) to the tool call layer (which
//! lists and runs only the tools it may use) and to observation (the audit record and the
//! request's span name it).
//!
//! What a principal may use is an [`Access`]: the tool classes ([`classes`]) its scopes grant
//! through the operator's scope map ([`ScopeMap`]). This is the one place that answers "may
//! this principal use this tool?": the operator's policy per principal ([`policy`], rules by
//! subject, client, group or claim) is applied to it once, when the principal authenticates.
//!
//! The module sits at the bottom of the binary: the transports, the server and `observe` use
//! it; it uses none of them.

pub(crate) mod access;
pub(crate) mod classes;
pub(crate) mod policy;

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Map, Value};

pub(crate) use access::{Access, ScopeMap};
pub(crate) use classes::ToolClass;
pub(crate) use policy::Policy;

/// The subject of a request authenticated by the static bearer token (`--token`,
/// `TOOLPORT_TOKEN`): one holder, who may use every tool, as before OAuth existed.
pub(crate) const STATIC_TOKEN_SUBJECT: &str = "static-token";

/// An authenticated caller: who (`sub`), through which client (`client_id`), with which
/// scopes, the token's other claims, and what that lets it use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Principal {
    /// The token's `sub` (for a client-credentials token: the client itself).
    pub(crate) subject: String,
    /// The OAuth client the token was issued to (`client_id`, or `azp`).
    pub(crate) client_id: Option<String>,
    /// The scopes the token carries.
    pub(crate) scopes: Vec<String>,
    /// Every claim of the token (or introspection answer), for the policy rules to come.
    /// Never logged whole.
    pub(crate) claims: Map<String, Value>,
    /// The tools it may use.
    pub(crate) access: Access,
}

impl Principal {
    /// The holder of the static bearer token: every tool.
    pub(crate) fn static_token() -> Self {
        Self {
            subject: STATIC_TOKEN_SUBJECT.to_owned(),
            client_id: None,
            scopes: Vec::new(),
            claims: Map::new(),
            access: Access::all(),
        }
    }

    /// The principal within the operator's `policy`: its access narrowed by the rules that
    /// match it.
    pub(crate) fn within(mut self, policy: &Policy) -> Self {
        if policy.is_empty() {
            return self;
        }
        let applied = policy.apply(&policy::Presented {
            subject: &self.subject,
            client_id: self.client_id.as_deref(),
            claims: &self.claims,
        });
        self.access = self.access.within(applied);
        self
    }

    /// The principal a request carries: the HTTP transports put it in the request's
    /// extensions, and rmcp hands the request's HTTP parts to the handler. `None` for stdio
    /// and for an HTTP server without authentication (`--no-auth`).
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<Arc<Principal>> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Arc<Principal>>())
            .cloned()
    }
}
