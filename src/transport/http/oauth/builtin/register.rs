//! Dynamic client registration (RFC 7591), which claude.ai, mcp-remote, VS Code and the MCP
//! SDKs use to get a client id: open (anyone may register; registering grants nothing, the
//! operator's approval on the consent page does), public clients only.
//!
//! A client is always registered with `token_endpoint_auth_method: "none"`, whatever it asked
//! for (RFC 7591 §3.2.1 lets the server replace a value, and the answer says what holds): a
//! client secret kept by a browser-side or native client protects nothing, PKCE does. The
//! redirect URIs are checked ([`super::redirect`]); the name is trimmed of control characters
//! and shortened (it is shown on the consent page, marked as the client's own claim).
//! Registrations are rate-limited overall and bounded in number ([`super::store::MAX_CLIENTS`]).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::metadata::peer;
use super::store::{Client, StoreError, now};
use super::{Builtin, ID_BYTES, MAX_BODY_BYTES, redirect, secret};
use crate::transport::http::sessions::read_body;

/// Most redirect URIs one client registers: clients register one or two.
const MAX_REDIRECT_URIS: usize = 10;
/// Longest client name kept (characters).
const MAX_NAME_CHARS: usize = 80;
/// Prefix of the client ids this server issues.
const CLIENT_ID_PREFIX: &str = "tp-";

/// What a registration request may say (the rest is ignored, RFC 7591 §2).
#[derive(Debug, Deserialize)]
struct Metadata {
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
}

/// An RFC 7591 error answer.
pub(crate) fn registration_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

fn invalid(description: impl AsRef<str>) -> Response {
    registration_error(
        StatusCode::BAD_REQUEST,
        "invalid_client_metadata",
        description.as_ref(),
    )
}

/// A name fit to show: control characters dropped, trimmed, shortened.
pub(crate) fn clean_name(name: &str) -> Option<String> {
    let cleaned: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS)
        .collect();
    let cleaned = cleaned.trim();
    (!cleaned.is_empty()).then(|| cleaned.to_owned())
}

/// `POST /oauth/register`.
pub(crate) async fn register(State(builtin): State<Arc<Builtin>>, request: Request) -> Response {
    let admitted = if builtin.admit(peer(&request)) {
        builtin.admit_registration().await
    } else {
        Ok(false)
    };
    match admitted {
        Ok(true) => {}
        Ok(false) => {
            return registration_error(
                StatusCode::TOO_MANY_REQUESTS,
                "temporarily_unavailable",
                "too many registrations; try again in a minute",
            );
        }
        Err(error) => return store_failed(&error),
    }
    let body = match read_body(request.into_body(), MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let metadata: Metadata = match serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
    {
        Some(metadata) => metadata,
        None => return invalid("the body is not a JSON registration request (RFC 7591)"),
    };
    let uris = metadata.redirect_uris.unwrap_or_default();
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return registration_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            &format!("register between 1 and {MAX_REDIRECT_URIS} redirect_uris"),
        );
    }
    for uri in &uris {
        if let Err(reason) = redirect::registrable(uri) {
            return registration_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri", &reason);
        }
    }
    let grant_types = metadata
        .grant_types
        .unwrap_or_else(|| vec!["authorization_code".to_owned()]);
    if let Some(other) = grant_types
        .iter()
        .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    {
        return invalid(format!(
            "grant type {other:?} is not offered: only authorization_code and refresh_token"
        ));
    }
    if let Some(other) = metadata
        .response_types
        .iter()
        .flatten()
        .find(|r| r.as_str() != "code")
    {
        return invalid(format!("response type {other:?} is not offered: only code"));
    }
    let id = match secret(ID_BYTES) {
        Ok(id) => format!("{CLIENT_ID_PREFIX}{id}"),
        Err(error) => return server_error(&error),
    };
    let client = Client {
        client_id: id,
        client_name: metadata.client_name.as_deref().and_then(clean_name),
        redirect_uris: uris,
        created: now(),
    };
    if let Err(error) = builtin.store.add_client(client.clone()).await {
        return store_failed(&error);
    }
    tracing::info!(
        client_id = %client.client_id,
        client_name = client.client_name.as_deref().unwrap_or(""),
        "registered an OAuth client"
    );
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": client.client_id,
            "client_id_issued_at": client.created,
            "client_name": client.client_name,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        })),
    )
        .into_response()
}

/// The answer when the state cannot be used: 503 while the shared store is away (retry), else
/// the server's failure.
fn store_failed(error: &StoreError) -> Response {
    match error {
        StoreError::Away(away) => {
            tracing::warn!(%away, "cannot register a client while the shared store is away");
            let mut response = registration_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization server cannot reach its shared store; retry in a moment",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
        other => server_error(&other.to_string()),
    }
}

/// The answer when the server itself failed (logged; the client learns only that).
pub(crate) fn server_error(error: &str) -> Response {
    tracing::error!(%error, "the built-in authorization server failed");
    registration_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the authorization server failed; its log says why",
    )
}
