//! `/oauth/token` and `/oauth/revoke`.
//!
//! **Code exchange** (`authorization_code`): the code is taken out of the map at once, so it
//! is single-use whatever follows; then it must be unexpired, for this client, with the same
//! redirect URI, the PKCE verifier must match its challenge, `resource` must be given and be
//! the one it was issued for (RFC 8707), and the issuer as this request reaches it must be the
//! one that issued it. A grant is made: a refresh token (only its hash kept) and an access
//! token.
//!
//! **Refresh** (`refresh_token`): the token is rotated on every use (the old one dies); a
//! rotated token presented again revokes its whole grant ([`super::store::Refresh::Reused`]):
//! either the client or a thief holds a copy, and the server cannot tell which. `resource`,
//! when given, must be the grant's; scopes are narrowed to what the server may grant now, so
//! lowering `builtin_max_scopes` takes effect at the next refresh.
//!
//! **Access tokens** are JWTs (RFC 9068) signed with the server's key: `iss` (this server),
//! `aud` (the resource), `sub` ([`super::OPERATOR_SUBJECT`]), `client_id`, `scope`, `iat`,
//! `exp` (`access_token_lifetime`), `jti`, and `sid`, the grant, which the resource server
//! checks still stands (a revoked grant's tokens stop at once).
//!
//! **Revocation** (RFC 7009): a refresh token ends its grant; an access token of this server
//! ends its grant too. The answer is 200 whatever the token was (§2.2).
//!
//! Error descriptions never include a code or a token.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;

use super::metadata::peer;
use super::store::{Grant, Refresh, StoreError, hash, now};
use super::{Builtin, ID_BYTES, MAX_BODY_BYTES, OPERATOR_SUBJECT, SECRET_BYTES, pkce, secret};
use crate::transport::http::sessions::read_body;

/// The claim naming the grant a token belongs to.
pub(crate) const GRANT_CLAIM: &str = "sid";

/// The claims of an access token.
#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    client_id: &'a str,
    scope: String,
    iat: u64,
    exp: u64,
    jti: String,
    sid: &'a str,
}

/// An RFC 6749 §5.2 error, before it is an answer.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    code: &'static str,
    description: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(json!({"error": self.code, "error_description": self.description})),
        )
            .into_response();
        no_store(&mut response);
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECONDS),
            );
        }
        response
    }
}

fn error(status: StatusCode, code: &'static str, description: &str) -> Refusal {
    Refusal {
        status,
        code,
        description: description.to_owned(),
    }
}

fn invalid_grant(description: &str) -> Refusal {
    error(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

fn no_store(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

/// The refusal when the state cannot be used: 503 `temporarily_unavailable` while the shared
/// store is away (the client retries; nothing was decided), else 500.
fn state_failed(what: &str, problem: &StoreError) -> Refusal {
    match problem {
        StoreError::Away(away) => {
            tracing::warn!(%away, "the built-in authorization server cannot {what} while its shared store is away");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization server cannot reach its shared store; retry in a moment",
            )
        }
        other => failed(what, &other.to_string()),
    }
}

/// How long a client should wait before it retries a request refused while the shared store
/// is away (the cluster reconnects within a second).
const RETRY_AFTER_SECONDS: &str = "1";

fn failed(what: &str, reason: &str) -> Refusal {
    tracing::error!(reason, "the built-in authorization server cannot {what}");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the authorization server failed; its log says why",
    )
}

/// A request's form parameters.
type Form = HashMap<String, String>;

/// A non-empty parameter.
fn field<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// A form body: each parameter at most once (RFC 6749 §3.2).
async fn form(request: Request) -> Result<Form, Response> {
    let body = read_body(request.into_body(), MAX_BODY_BYTES).await?;
    let mut form = HashMap::new();
    for (name, value) in url::form_urlencoded::parse(&body).into_owned() {
        if form.insert(name.clone(), value).is_some() {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("{name} is given more than once"),
            )
            .into_response());
        }
    }
    Ok(form)
}

/// `POST /oauth/token`.
pub(crate) async fn token(State(builtin): State<Arc<Builtin>>, request: Request) -> Response {
    let peer = peer(&request);
    if !builtin.admit(peer) {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "slow_down",
            "too many requests; try again in a minute",
        )
        .into_response();
    }
    let (resource, issuer) = builtin.resource(request.headers(), peer);
    let form = match form(request).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let grant = match field(&form, "grant_type") {
        Some("authorization_code") => exchange(&builtin, &form, &resource.url, &issuer).await,
        Some("refresh_token") => refresh(&builtin, &form, &resource.url).await,
        Some(_) => Err(error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "only authorization_code and refresh_token are offered",
        )),
        None => Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "grant_type is required",
        )),
    };
    match grant {
        Ok((grant, refresh_token)) => answer(&builtin, &grant, &refresh_token, &issuer).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// The grant a code is exchanged for, and its refresh token.
async fn exchange(
    builtin: &Builtin,
    form: &Form,
    resource: &str,
    issuer: &str,
) -> Result<(Grant, String), Refusal> {
    let field = |name| field(form, name);
    let code = field("code").ok_or_else(|| invalid_grant("code is required"))?;
    // Out of the map first: a code is used once, whether this exchange succeeds or not.
    let issued = builtin
        .store
        .take_code(&hash(code))
        .await
        .map_err(|e| state_failed("exchange a code", &e))?
        .ok_or_else(|| invalid_grant("the code is unknown, used or expired"))?;
    let client_id = field("client_id").unwrap_or_default();
    let refuse = |reason: &str| {
        tracing::warn!(client_id = %issued.client_id, reason, "refused a code exchange");
        invalid_grant(reason)
    };
    if client_id != issued.client_id {
        return Err(refuse("the code was issued to another client"));
    }
    if field("redirect_uri") != Some(issued.redirect_uri.as_str()) {
        return Err(refuse(
            "redirect_uri is not the one the code was issued for",
        ));
    }
    if !pkce::verify(
        &issued.challenge,
        field("code_verifier").unwrap_or_default(),
    ) {
        return Err(refuse(
            "code_verifier does not match the code_challenge (PKCE)",
        ));
    }
    match field("resource") {
        Some(asked) if asked == issued.resource && asked == resource => {}
        Some(_) => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource is not the one the code was issued for",
            ));
        }
        None => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource is required (RFC 8707)",
            ));
        }
    }
    if issuer != issued.issuer {
        return Err(refuse(
            "the code was issued by this server under another address",
        ));
    }
    let id = secret(ID_BYTES).map_err(|e| failed("make a grant", &e))?;
    let refresh_token = secret(SECRET_BYTES).map_err(|e| failed("make a grant", &e))?;
    let at = now();
    let grant = Grant {
        id,
        client_id: issued.client_id,
        client_name: issued.client_name,
        subject: OPERATOR_SUBJECT.to_owned(),
        scopes: issued.scopes,
        resource: issued.resource,
        created: at,
        last_used: at,
        refresh_hash: hash(&refresh_token),
        rotated: Vec::new(),
    };
    builtin
        .store
        .add_grant(grant.clone())
        .await
        .map_err(|e| state_failed("keep a grant", &e))?;
    tracing::info!(grant = %grant.id, client_id = %grant.client_id, scopes = %grant.scopes.join(" "), "granted access");
    Ok((grant, refresh_token))
}

/// The grant a refresh token rotates, and its new refresh token.
async fn refresh(
    builtin: &Builtin,
    form: &Form,
    resource: &str,
) -> Result<(Grant, String), Refusal> {
    let field = |name| field(form, name);
    let presented =
        field("refresh_token").ok_or_else(|| invalid_grant("refresh_token is required"))?;
    let presented_hash = hash(presented);
    // Checked before the rotation, so a client's mistake does not kill its token.
    let current = builtin
        .store
        .current_grant(&presented_hash)
        .await
        .map_err(|e| state_failed("read the grants", &e))?;
    if let Some(grant) = current {
        if field("client_id").is_some_and(|id| id != grant.client_id) {
            return Err(invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        if field("resource").is_some_and(|asked| asked != grant.resource)
            || resource != grant.resource
        {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource is not the one the grant is for",
            ));
        }
    }
    let next = secret(SECRET_BYTES).map_err(|e| failed("rotate a refresh token", &e))?;
    let mut grant = match builtin
        .store
        .rotate(&presented_hash, &hash(&next))
        .await
        .map_err(|e| state_failed("rotate a refresh token", &e))?
    {
        Refresh::Rotated(grant) => grant,
        Refresh::Reused(grant) => {
            tracing::warn!(
                grant = %grant.id,
                client_id = %grant.client_id,
                "a rotated refresh token was presented again: the grant is revoked (a copy of it leaked)"
            );
            return Err(invalid_grant(
                "the refresh token was already used; the grant is revoked",
            ));
        }
        Refresh::Unknown => return Err(invalid_grant("the refresh token is unknown or revoked")),
    };
    grant
        .scopes
        .retain(|s| builtin.settings.max_scopes.contains(s));
    if let Some(asked) = field("scope") {
        let asked: Vec<&str> = asked.split_whitespace().collect();
        if asked.iter().any(|s| !grant.scopes.iter().any(|g| g == s)) {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_scope",
                "a refresh may only narrow the grant's scopes",
            ));
        }
        grant.scopes.retain(|s| asked.contains(&s.as_str()));
    }
    Ok((grant, next))
}

/// The token answer for `grant`.
async fn answer(builtin: &Builtin, grant: &Grant, refresh_token: &str, issuer: &str) -> Response {
    let lifetime = builtin.settings.access_token_lifetime.as_secs();
    let at = now();
    let jti = match secret(ID_BYTES) {
        Ok(jti) => jti,
        Err(e) => return failed("sign an access token", &e).into_response(),
    };
    let scope = grant.scopes.join(" ");
    let claims = Claims {
        iss: issuer,
        aud: &grant.resource,
        sub: &grant.subject,
        client_id: &grant.client_id,
        scope: scope.clone(),
        iat: at,
        exp: at + lifetime,
        jti,
        sid: &grant.id,
    };
    // Published before it signs, so every replica can check what it signs.
    if let Err(error) = builtin.publish_key().await {
        return state_failed("publish its signing key", &error).into_response();
    }
    let access_token = match builtin.signer.sign(&claims) {
        Ok(token) => token,
        Err(e) => return failed("sign an access token", &e).into_response(),
    };
    let mut response = Json(json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": lifetime,
        "refresh_token": refresh_token,
        "scope": scope,
    }))
    .into_response();
    no_store(&mut response);
    response
}

/// `POST /oauth/revoke` (RFC 7009).
pub(crate) async fn revoke(State(builtin): State<Arc<Builtin>>, request: Request) -> Response {
    if !builtin.admit(peer(&request)) {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "slow_down",
            "too many requests; try again in a minute",
        )
        .into_response();
    }
    let form = match form(request).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let Some(token) = form.get("token").filter(|t| !t.is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "token is required",
        )
        .into_response();
    };
    let ended = match builtin.store.revoke_by_refresh(&hash(token)).await {
        Ok(true) => Ok(true),
        Ok(false) => match grant_of(&builtin, token).await {
            Ok(Some(id)) => builtin.store.revoke(&id).await,
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let ended = match ended {
        Ok(ended) => ended,
        Err(e) => return state_failed("revoke a grant", &e).into_response(),
    };
    if ended {
        tracing::info!("a client revoked its grant");
    }
    let mut response = StatusCode::OK.into_response();
    no_store(&mut response);
    response
}

/// The grant an access token of this server names (its signature checked, not its expiry:
/// revoking an expired token's grant is still revoking).
async fn grant_of(builtin: &Builtin, token: &str) -> Result<Option<String>, StoreError> {
    let Ok(header) = jsonwebtoken::decode_header(token) else {
        return Ok(None);
    };
    let jwks = builtin.key_set(header.kid.as_deref()).await?;
    let Some(jwk) = (match &header.kid {
        Some(kid) => jwks.find(kid),
        None => jwks.keys.first(),
    }) else {
        return Ok(None);
    };
    let Ok(key) = jsonwebtoken::DecodingKey::from_jwk(jwk) else {
        return Ok(None);
    };
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.set_required_spec_claims::<&str>(&[]);
    let Ok(data) = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
        token,
        &key,
        &validation,
    ) else {
        return Ok(None);
    };
    Ok(data
        .claims
        .get(GRANT_CLAIM)
        .and_then(|v| v.as_str())
        .map(str::to_owned))
}
