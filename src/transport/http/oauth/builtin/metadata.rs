//! The built-in server's RFC 8414 metadata, at `/.well-known/oauth-authorization-server` and
//! (the same document) at `/.well-known/openid-configuration`, which OpenID-minded clients
//! probe first; and its key set at `/oauth/jwks`.
//!
//! The URLs are the issuer's (the resource's origin as this request reaches it), so the
//! document a client reads through the tunnel names the tunnel's URLs. It advertises exactly
//! what is implemented: the code flow, PKCE S256, public clients (`none`), the RFC 9207 `iss`
//! parameter, and the scopes this server may grant.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{AUTHORIZE_PATH, Builtin, JWKS_PATH, REGISTER_PATH, REVOKE_PATH, TOKEN_PATH, pkce};

/// Where RFC 8414 puts the metadata of an issuer without a path.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
/// Where OpenID Connect Discovery puts it.
pub(crate) const OPENID_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The peer address axum recorded for a request.
pub(crate) fn peer(request: &Request) -> Option<IpAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())
}

/// The metadata document.
pub(crate) async fn document(
    State(builtin): State<Arc<Builtin>>,
    request: Request,
) -> impl IntoResponse {
    let (_, issuer) = builtin.resource(request.headers(), peer(&request));
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{AUTHORIZE_PATH}"),
        "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
        "registration_endpoint": format!("{issuer}{REGISTER_PATH}"),
        "revocation_endpoint": format!("{issuer}{REVOKE_PATH}"),
        "jwks_uri": format!("{issuer}{JWKS_PATH}"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": [pkce::S256],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": builtin.settings.max_scopes,
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
        "subject_types_supported": ["public"],
    }))
}

/// The public key set (with replicas, every replica's that may still check a token).
pub(crate) async fn jwks(State(builtin): State<Arc<Builtin>>) -> Response {
    match builtin.jwks().await {
        Ok(set) => Json(set).into_response(),
        Err(error) => {
            tracing::warn!(%error, "cannot list the signing keys");
            let mut response = (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"error": "temporarily_unavailable", "error_description": "the key set cannot be read now; retry in a moment"})),
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}
