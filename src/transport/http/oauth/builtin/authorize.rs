//! `/oauth/authorize`: the authorization request checked, the consent page shown, and on
//! approval the code sent back to the client.
//!
//! **No open redirect.** Until the client is known and the redirect URI is one it registered
//! ([`super::redirect::matches`]), every problem is shown as a page ([`super::consent::error_page`])
//! and nothing redirects. After that, problems go back to the client as RFC 6749 §4.1.2.1
//! errors on its redirect URI (with its `state` and, RFC 9207, this server's `iss`).
//!
//! **What is checked** before the consent page: `response_type=code`; PKCE S256
//! ([`super::pkce`]); `resource` given and equal to the canonical resource (RFC 8707; it is
//! bound into the code and the token's audience); the scopes asked for are scopes this server
//! knows. Granted are the asked-for scopes this server may grant (`builtin_max_scopes`), or
//! all of those when none are asked for; withheld is every other scope. A request that would
//! be granted nothing is refused (`invalid_scope`).
//!
//! **Approval** (`POST`): the pending request named by the form, its CSRF token, the origin
//! (absent, or this server's), the attempt rates, then the secret ([`super::consent`]). The
//! code is single-use and good for [`super::store::CODE_LIFETIME`]; only its hash is kept.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use subtle::ConstantTimeEq;
use url::Url;

use super::super::settings::builtin::Approval;
use super::consent::{self, MAX_ATTEMPTS, ONE_TIME_CODE_BYTES};
use super::metadata::peer;
use super::store::{Attempt, Issued, PENDING_LIFETIME, Pending, StoreError, hash};
use super::{Builtin, ID_BYTES, MAX_BODY_BYTES, SECRET_BYTES, cimd, pkce, redirect, secret};
use crate::transport::http::sessions::read_body;

/// Most consent pages waiting at once: one person approves a few; more is someone flooding
/// the operator's terminal with codes.
const MAX_PENDING: usize = 16;

/// `redirect_uri` with the query parameters `pairs` added.
fn redirect_with(redirect_uri: &str, pairs: &[(&str, &str)]) -> Response {
    let Ok(mut url) = Url::parse(redirect_uri) else {
        return consent::error_page(StatusCode::BAD_REQUEST, "The redirect URI is not a URL.");
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in pairs {
            query.append_pair(name, value);
        }
    }
    let mut response = Redirect::to(url.as_str()).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// An RFC 6749 §4.1.2.1 error sent back to a validated redirect URI.
fn error_redirect(
    redirect_uri: &str,
    state: Option<&str>,
    issuer: &str,
    error: &str,
    description: &str,
) -> Response {
    let mut pairs = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    pairs.push(("iss", issuer));
    redirect_with(redirect_uri, &pairs)
}

/// The error a pending request's client is sent to its (validated) redirect URI.
fn answer_pending(pending: &Pending, error: &str, description: &str) -> Response {
    error_redirect(
        &pending.redirect_uri,
        pending.state.as_deref(),
        &pending.issuer,
        error,
        description,
    )
}

/// `GET /oauth/authorize`.
pub(crate) async fn start(
    State(builtin): State<Arc<Builtin>>,
    Query(query): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    let param = |name: &str| {
        query
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let (resource, issuer) = builtin.resource(request.headers(), peer(&request));

    // Before the redirect URI is trusted: pages only.
    let Some(client_id) = param("client_id") else {
        return consent::error_page(StatusCode::BAD_REQUEST, "The request names no client_id.");
    };
    let client = if cimd::is_document_url(client_id) {
        match builtin.documents.client(client_id).await {
            Ok(client) => client,
            Err(reason) => {
                tracing::warn!(client_id, %reason, "refused a client metadata document");
                return consent::error_page(StatusCode::BAD_REQUEST, &reason);
            }
        }
    } else {
        match builtin.store.client(client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => {
                return consent::error_page(
                    StatusCode::BAD_REQUEST,
                    "The client is not registered with this server (register it first, RFC 7591).",
                );
            }
            Err(error) => return state_failed(&error),
        }
    };
    let redirect_uri = match param("redirect_uri") {
        Some(uri) if redirect::matches(&client.redirect_uris, uri) => uri.to_owned(),
        Some(_) => {
            tracing::warn!(
                client_id,
                "refused an authorization request: unregistered redirect URI"
            );
            return consent::error_page(
                StatusCode::BAD_REQUEST,
                "The redirect URI is not one this client registered; nothing is sent to it.",
            );
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return consent::error_page(
                StatusCode::BAD_REQUEST,
                "The request names no redirect_uri and the client registered several.",
            );
        }
    };

    // From here on the client hears of problems at its redirect URI.
    let state = param("state");
    let fail = |error: &str, description: &str| {
        tracing::warn!(
            client_id,
            error,
            description,
            "refused an authorization request"
        );
        error_redirect(&redirect_uri, state, &issuer, error, description)
    };
    if param("response_type") != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is offered",
        );
    }
    let challenge =
        match pkce::check_challenge(param("code_challenge"), param("code_challenge_method")) {
            Ok(challenge) => challenge,
            Err(error) => return fail("invalid_request", &error.to_string()),
        };
    match param("resource") {
        Some(asked) if asked == resource.url => {}
        Some(_) => {
            return fail(
                "invalid_target",
                "resource is not this server's resource (RFC 8707)",
            );
        }
        None => {
            return fail(
                "invalid_target",
                "resource is required: name this server's resource (RFC 8707)",
            );
        }
    }
    let known: Vec<String> = builtin.oauth.scopes.names().map(str::to_owned).collect();
    let asked: Vec<String> = match param("scope") {
        Some(text) => text.split_whitespace().map(str::to_owned).collect(),
        None => builtin.settings.max_scopes.clone(),
    };
    if let Some(unknown) = asked.iter().find(|s| !known.contains(s)) {
        return fail(
            "invalid_scope",
            &format!("{unknown:?} is not a scope of this server"),
        );
    }
    let max = &builtin.settings.max_scopes;
    let granted: Vec<String> = known
        .iter()
        .filter(|s| asked.contains(s) && max.contains(s))
        .cloned()
        .collect();
    let withheld: Vec<String> = known
        .iter()
        .filter(|s| !granted.contains(s))
        .cloned()
        .collect();
    if granted.is_empty() {
        return fail(
            "invalid_scope",
            &format!(
                "none of the scopes asked for may be granted by this server (it grants {})",
                max.join(" ")
            ),
        );
    }

    let (id, csrf) = match (secret(ID_BYTES), secret(SECRET_BYTES)) {
        (Ok(id), Ok(csrf)) => (id, csrf),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, "cannot make an authorization request's secrets");
            return fail("server_error", "the authorization server failed");
        }
    };
    let one_time_code = match &builtin.settings.approval {
        Approval::Passphrase(..) => None,
        Approval::OneTimeCode => match secret(ONE_TIME_CODE_BYTES) {
            Ok(code) => Some(code),
            Err(error) => {
                tracing::error!(%error, "cannot make a one-time code");
                return fail("server_error", "the authorization server failed");
            }
        },
    };
    let parsed = Url::parse(&redirect_uri).ok();
    let redirect_host = parsed
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| redirect_uri.clone());
    let redirect_origin = parsed.map_or_else(String::new, |u| match u.origin() {
        origin @ url::Origin::Tuple(..) => origin.ascii_serialization(),
        url::Origin::Opaque(_) => format!("{}:", u.scheme()),
    });
    let pending = Pending {
        client_id: client.client_id.clone(),
        client_name: client.client_name,
        redirect_uri: redirect_uri.clone(),
        redirect_host,
        redirect_origin,
        state: state.map(str::to_owned),
        challenge,
        resource: resource.url,
        issuer: issuer.clone(),
        granted,
        withheld,
        csrf,
        one_time_code: one_time_code.as_deref().map(consent::one_time_code_hash),
        attempts: 0,
        replica: builtin.replica().map(str::to_owned),
    };
    let page = consent::page(&id, &pending, None, StatusCode::OK);
    match builtin.store.add_pending(&id, &pending, MAX_PENDING).await {
        Ok(true) => announce(&pending, one_time_code.as_deref()),
        Ok(false) => {
            return consent::error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many connection requests are waiting for approval; try again later.",
            );
        }
        Err(error) => return state_failed(&error),
    }
    tracing::info!(
        client_id,
        "an authorization request waits for the operator's approval"
    );
    page
}

/// The page when the state cannot be read or written: 503 when the shared store is away (try
/// again), else 500; the log says why.
fn state_failed(error: &StoreError) -> Response {
    tracing::error!(%error, "the built-in authorization server cannot use its state");
    match error {
        StoreError::Away(_) => consent::error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The authorization server cannot reach its shared store right now; try again in a moment.",
        ),
        _ => consent::error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The authorization server cannot read its state; its log says why.",
        ),
    }
}

/// Tell the operator, on stderr, that a request waits, and (with one-time codes) its code.
/// Deliberately not a tracing event, so a log file never holds the code.
fn announce(pending: &Pending, one_time_code: Option<&str>) {
    let who = format!(
        "client {:?} (client_id {}, answer to {}) asks for {}",
        pending.client_name.as_deref().unwrap_or("(no name)"),
        pending.client_id,
        pending.redirect_host,
        pending.granted.join(" "),
    );
    match one_time_code {
        Some(code) => eprintln!(
            "toolport: OAuth authorization request: {who}; to approve, enter the one-time code {} on its consent page (valid {} minutes; ignore it if you did not start this)",
            consent::grouped(code),
            PENDING_LIFETIME.as_secs() / 60
        ),
        None => eprintln!(
            "toolport: OAuth authorization request: {who}; approve it with the consent passphrase on its consent page"
        ),
    }
}

/// `POST /oauth/authorize`: the operator's decision on a consent page.
pub(crate) async fn decide(State(builtin): State<Arc<Builtin>>, request: Request) -> Response {
    let (_, issuer) = builtin.resource(request.headers(), peer(&request));
    // The form posts from this server's own page: a browser sends that origin (or none, or
    // "null" for a page with a strict referrer policy). Another origin is a cross-site post.
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && origin.as_bytes() != issuer.as_bytes()
        && origin.as_bytes() != b"null"
    {
        return consent::error_page(
            StatusCode::FORBIDDEN,
            "The approval was sent from another site's page.",
        );
    }
    let body = match read_body(request.into_body(), MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    let id = field("request");

    let pending = match builtin.store.pending(id).await {
        Ok(Some(pending)) => pending,
        Ok(None) => {
            return consent::error_page(
                StatusCode::BAD_REQUEST,
                "This approval request is unknown or has expired.",
            );
        }
        Err(error) => return state_failed(&error),
    };
    if !bool::from(pending.csrf.as_bytes().ct_eq(field("csrf").as_bytes())) {
        return consent::error_page(
            StatusCode::BAD_REQUEST,
            "The form does not belong to this approval request.",
        );
    }
    if field("decision") == "deny" {
        return match builtin.store.take_pending(id).await {
            Ok(Some(pending)) => {
                tracing::info!(client_id = %pending.client_id, "the operator denied an authorization request");
                answer_pending(&pending, "access_denied", "the operator denied the request")
            }
            Ok(None) => gone(),
            Err(error) => state_failed(&error),
        };
    }
    match builtin.admit_attempt(&pending.client_id).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(client_id = %pending.client_id, "consent attempts over their rate");
            return consent::too_many();
        }
        Err(error) => return state_failed(&error),
    }
    let right = match (&pending.one_time_code, &builtin.settings.approval) {
        (Some(kept), _) => consent::one_time_code_matches(kept, field("secret")),
        (None, Approval::Passphrase(secret, _)) => {
            consent::passphrase_matches(secret.expose(), field("secret"))
        }
        (None, Approval::OneTimeCode) => false,
    };
    if !right {
        let pending = match builtin.store.wrong_attempt(id, MAX_ATTEMPTS).await {
            Ok(Attempt::Counted(pending)) => pending,
            Ok(Attempt::Ended(pending)) => {
                tracing::warn!(client_id = %pending.client_id, attempts = pending.attempts, "a wrong consent secret was entered; the request is refused");
                return answer_pending(
                    &pending,
                    "access_denied",
                    "too many wrong approval attempts",
                );
            }
            Ok(Attempt::Gone) => return gone(),
            Err(error) => return state_failed(&error),
        };
        tracing::warn!(
            client_id = %pending.client_id,
            attempts = pending.attempts,
            "a wrong consent secret was entered"
        );
        let left = MAX_ATTEMPTS - pending.attempts;
        return consent::page(
            id,
            &pending,
            Some(&format!("That is not the secret; {left} attempts left.")),
            StatusCode::FORBIDDEN,
        );
    }
    // Taken out once: an approval sent twice (or to two replicas at once) makes one code.
    let pending = match builtin.store.take_pending(id).await {
        Ok(Some(pending)) => pending,
        Ok(None) => return gone(),
        Err(error) => return state_failed(&error),
    };
    let code = match secret(SECRET_BYTES) {
        Ok(code) => code,
        Err(error) => {
            tracing::error!(%error, "cannot make an authorization code");
            return answer_pending(&pending, "server_error", "the authorization server failed");
        }
    };
    let issued = Issued {
        client_id: pending.client_id.clone(),
        client_name: pending.client_name.clone(),
        redirect_uri: pending.redirect_uri.clone(),
        challenge: pending.challenge.clone(),
        resource: pending.resource.clone(),
        issuer: pending.issuer.clone(),
        scopes: pending.granted.clone(),
    };
    if let Err(error) = builtin.store.add_code(&hash(&code), &issued).await {
        tracing::error!(%error, "cannot keep an authorization code");
        return answer_pending(
            &pending,
            "temporarily_unavailable",
            "the authorization server cannot keep the code now; start again",
        );
    }
    tracing::info!(
        client_id = %pending.client_id,
        scopes = %pending.granted.join(" "),
        "the operator approved an authorization request"
    );
    let mut pairs = vec![("code", code.as_str())];
    if let Some(state) = pending.state.as_deref() {
        pairs.push(("state", state));
    }
    pairs.push(("iss", &pending.issuer));
    redirect_with(&pending.redirect_uri, &pairs)
}

/// The page for an approval that is no longer there.
fn gone() -> Response {
    consent::error_page(StatusCode::BAD_REQUEST, "This approval request is gone.")
}
