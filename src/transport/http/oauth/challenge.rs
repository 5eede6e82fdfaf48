//! The answers that send a client to OAuth: 401 and 403 with an RFC 6750 `WWW-Authenticate:
//! Bearer` challenge carrying RFC 9728's `resource_metadata` (where the client learns which
//! authorization server to ask), and the JSON-RPC error body every refusal of the HTTP layer
//! has ([`super::super::refusal`]).
//!
//! - no token: 401, `resource_metadata` and `scope` (every scope the server knows), no
//!   `error` (RFC 6750 §3.1: a request without credentials gets no error code);
//! - not the Bearer scheme: 401 `error="invalid_request"`;
//! - a bad, expired or foreign token: 401 `error="invalid_token"` with a description;
//! - a call outside the token's scopes: 403 `error="insufficient_scope"` and the `scope` that
//!   grants the tool (a client then asks for it: step-up authorization).
//!
//! Quoted values are kept to the characters RFC 6750 allows in them (no `"` or `\`), so no
//! message can break out of its quotes. Nothing here ever holds a token.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::super::refusal::{REFUSED, refusal};
use super::jwt::TokenError;
use super::metadata::Resource;

/// Why the request is refused.
#[derive(Debug)]
pub(crate) enum Challenge<'a> {
    /// No `Authorization` header.
    Missing,
    /// `Authorization` with another scheme than Bearer.
    Scheme,
    /// The token is not good.
    Invalid(&'a TokenError),
    /// The token is good, but its scopes do not grant the tool.
    Scope {
        tool: &'a str,
        /// The scope that would; `None` when no scope grants that tool.
        needed: Option<&'a str>,
    },
}

/// Keep `text` inside a quoted-string of RFC 6750 (`%x20-21 / %x23-5B / %x5D-7E`).
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            c if (' '..='~').contains(&c) => c,
            _ => '?',
        })
        .collect()
}

/// The refusal for `challenge` on `resource`; `all_scopes` is the space-separated list of
/// every scope the server knows.
pub(crate) fn respond(
    challenge: &Challenge<'_>,
    resource: &Resource,
    all_scopes: &str,
) -> Response {
    let metadata = quotable(&resource.metadata);
    let how = format!(
        "get an access token for {} from the authorization server named in {} and send it as `Authorization: Bearer <token>`",
        resource.url, resource.metadata
    );
    let (status, value, message) = match challenge {
        Challenge::Missing => (
            StatusCode::UNAUTHORIZED,
            format!(
                r#"Bearer resource_metadata="{metadata}", scope="{}""#,
                quotable(all_scopes)
            ),
            format!("unauthorized: no bearer token; {how}"),
        ),
        Challenge::Scheme => (
            StatusCode::UNAUTHORIZED,
            format!(r#"Bearer resource_metadata="{metadata}", error="invalid_request""#),
            format!("unauthorized: the Authorization header must use the Bearer scheme; {how}"),
        ),
        Challenge::Invalid(error) => (
            StatusCode::UNAUTHORIZED,
            format!(
                r#"Bearer resource_metadata="{metadata}", error="invalid_token", error_description="{}""#,
                quotable(&error.to_string())
            ),
            format!("unauthorized: {error}; {how}"),
        ),
        Challenge::Scope { tool, needed } => {
            let scope = needed.unwrap_or_default();
            let message = match needed {
                Some(scope) => format!(
                    "forbidden: the token's scopes do not allow {tool}; it needs the scope {scope} (ask the authorization server for a token with it)"
                ),
                None => format!(
                    "forbidden: no scope grants {tool} (the operator's [http.oauth.scopes] names none for its class)"
                ),
            };
            (
                StatusCode::FORBIDDEN,
                format!(
                    r#"Bearer resource_metadata="{metadata}", error="insufficient_scope", scope="{}""#,
                    quotable(scope)
                ),
                message,
            )
        }
    };
    let mut response = refusal(status, REFUSED, message);
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The answer when a token cannot be checked now (the authorization server's keys or its
/// introspection endpoint are out of reach): 503, so a client retries instead of starting
/// a new authorization for a token that may be good.
pub(crate) fn unavailable(reason: &str) -> Response {
    let mut response = refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        REFUSED,
        format!("the access token cannot be checked now: {reason}; retry shortly"),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource() -> Resource {
        Resource {
            url: "https://t.example/mcp".into(),
            metadata: "https://t.example/.well-known/oauth-protected-resource/mcp".into(),
        }
    }

    fn challenge_of(c: &Challenge<'_>) -> (StatusCode, String) {
        let r = respond(c, &resource(), "tools:read tools:write");
        (
            r.status(),
            r.headers()[header::WWW_AUTHENTICATE]
                .to_str()
                .unwrap()
                .to_owned(),
        )
    }

    #[test]
    fn each_refusal_has_its_status_and_challenge() {
        assert_eq!(
            challenge_of(&Challenge::Missing),
            (
                StatusCode::UNAUTHORIZED,
                r#"Bearer resource_metadata="https://t.example/.well-known/oauth-protected-resource/mcp", scope="tools:read tools:write""#.into()
            )
        );
        let (status, value) =
            challenge_of(&Challenge::Invalid(&TokenError::Algorithm("none".into())));
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(value.contains(r#"error="invalid_token""#), "{value}");
        assert!(value.contains("'none'"), "quotes are replaced: {value}");
        assert_eq!(
            challenge_of(&Challenge::Scope {
                tool: "write_file",
                needed: Some("tools:write")
            }),
            (
                StatusCode::FORBIDDEN,
                r#"Bearer resource_metadata="https://t.example/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="tools:write""#.into()
            )
        );
        let (status, value) = challenge_of(&Challenge::Scheme);
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(value.ends_with(r#"error="invalid_request""#), "{value}");
    }
}
