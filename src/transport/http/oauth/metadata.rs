//! The protected resource toolport is, as clients see it: its canonical URL ([`Resource`])
//! and its RFC 9728 metadata document, served at `/.well-known/oauth-protected-resource` and
//! at the path-suffixed form for `/mcp` (`/.well-known/oauth-protected-resource/mcp`, where a
//! client looks first for a resource with a path).
//!
//! The canonical URL is `public_url` when configured (the URL behind a tunnel or a reverse
//! proxy, which toolport cannot know). Without it, it is read from the request: its `Host`,
//! or `X-Forwarded-Host` and `X-Forwarded-Proto` when the peer is a trusted proxy (never from
//! anyone else: a client could otherwise name any resource and have its token checked against
//! that). A host that is not a plain `name[:port]` is not used (it would land inside the
//! quotes of a challenge).
//!
//! The document is outside the gate, as `/healthz` is: a client fetches it after a 401,
//! without a token, and it holds nothing secret (the issuer's URL and the scope names).

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

use super::settings::OAuthSettings;

/// Where RFC 9728 puts the metadata of a resource.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
/// The path `/mcp` is served at.
const MCP_PATH: &str = "/mcp";
/// Headers a trusted proxy sets.
const FORWARDED_PROTO: &str = "x-forwarded-proto";
const FORWARDED_HOST: &str = "x-forwarded-host";
/// The only token presentation toolport accepts (RFC 6750 §2.1; never a query parameter).
const BEARER_METHODS: [&str; 1] = ["header"];

/// The resource a request is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resource {
    /// The canonical URL of `/mcp`: what a token's audience must name.
    pub(crate) url: String,
    /// Where its metadata document is.
    pub(crate) metadata: String,
}

/// Whether `host` can stand in a URL as it is: a name or address with an optional port.
fn plain_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// The first value of a header that a proxy may have set as a list.
fn first_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)?
        .to_str()
        .ok()?
        .split(',')
        .next()
        .map(str::trim)
}

impl Resource {
    /// The issuer of tokens for this resource: the configured one, or with the built-in
    /// server the origin of the resource (`https://tools.example.com`), where its metadata is.
    pub(crate) fn issuer<'a>(&self, settings: &'a OAuthSettings) -> Cow<'a, str> {
        if settings.builtin.is_some() {
            Cow::Owned(self.origin())
        } else {
            Cow::Borrowed(&settings.issuer)
        }
    }

    /// The origin of the resource URL (`https://tools.example.com`): where the built-in
    /// authorization server is, its issuer.
    pub(crate) fn origin(&self) -> String {
        url::Url::parse(&self.url)
            .map(|url| url.origin().ascii_serialization())
            .unwrap_or_default()
    }

    /// The resource `headers` (from `peer`) are for.
    pub(crate) fn of(settings: &OAuthSettings, headers: &HeaderMap, peer: Option<IpAddr>) -> Self {
        if let Some(url) = &settings.public_url {
            let path = url.path().trim_end_matches('/');
            return Self {
                url: url.as_str().to_owned(),
                metadata: format!("{}{WELL_KNOWN}{path}", url.origin().ascii_serialization()),
            };
        }
        let trusted = settings.trusts(peer);
        let forwarded = |name| {
            trusted
                .then(|| first_value(headers, name))
                .flatten()
                .filter(|v| !v.is_empty())
        };
        let scheme = match forwarded(FORWARDED_PROTO) {
            Some(proto) if proto.eq_ignore_ascii_case("https") => "https",
            _ => "http",
        };
        let host = forwarded(FORWARDED_HOST)
            .or_else(|| first_value(headers, header::HOST.as_str()))
            .filter(|h| plain_host(h))
            .unwrap_or("localhost");
        Self {
            url: format!("{scheme}://{host}{MCP_PATH}"),
            metadata: format!("{scheme}://{host}{WELL_KNOWN}{MCP_PATH}"),
        }
    }
}

/// The metadata routes (outside the gate).
pub(crate) fn routes(settings: Arc<OAuthSettings>) -> Router {
    Router::new()
        .route(WELL_KNOWN, get(document))
        .route(&format!("{WELL_KNOWN}/{{*resource}}"), get(document))
        .with_state(settings)
}

/// The RFC 9728 document of the resource the request is for.
async fn document(
    State(settings): State<Arc<OAuthSettings>>,
    request: Request,
) -> impl IntoResponse {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let resource = Resource::of(&settings, request.headers(), peer);
    let scopes: Vec<&str> = settings.scopes.names().collect();
    Json(json!({
        "resource": resource.url,
        "authorization_servers": [resource.issuer(&settings)],
        "scopes_supported": scopes,
        "bearer_methods_supported": BEARER_METHODS,
        "resource_name": "toolport",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::oauth::settings::OAuthArgs;
    use crate::transport::http::tests::headers;
    use toolport_tools::host::config::FileOAuth;

    fn settings(toml_text: &str) -> OAuthSettings {
        let file: FileOAuth = toml::from_str(toml_text).unwrap();
        OAuthSettings::load(&OAuthArgs::default(), Some(&file))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn the_public_url_wins_over_every_header() {
        let s = settings(
            "issuer = \"https://idp.example\"\npublic_url = \"https://tools.example.com/mcp\"\ntrusted_proxies = [\"127.0.0.1\"]",
        );
        let r = Resource::of(
            &s,
            &headers(&[
                ("host", "evil.example"),
                ("x-forwarded-host", "evil.example"),
            ]),
            Some("127.0.0.1".parse().unwrap()),
        );
        assert_eq!(r.url, "https://tools.example.com/mcp");
        assert_eq!(
            r.metadata,
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let s = settings("issuer = \"https://idp.example\"\ntrusted_proxies = [\"10.0.0.0/8\"]");
        let h = headers(&[
            ("host", "127.0.0.1:8787"),
            ("x-forwarded-host", "tools.example.com, inner"),
            ("x-forwarded-proto", "https"),
        ]);
        let trusted = Resource::of(&s, &h, Some("10.1.1.1".parse().unwrap()));
        assert_eq!(trusted.url, "https://tools.example.com/mcp");
        let other = Resource::of(&s, &h, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(other.url, "http://127.0.0.1:8787/mcp");
        assert_eq!(
            other.metadata,
            "http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp"
        );
        let quoted = Resource::of(&s, &headers(&[("host", "a\"b")]), None);
        assert_eq!(quoted.url, "http://localhost/mcp");
    }
}
