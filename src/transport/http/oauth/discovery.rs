//! Talking to the authorization server: its metadata (RFC 8414 at
//! `/.well-known/oauth-authorization-server`, then OpenID Connect Discovery at
//! `/.well-known/openid-configuration`), and the one bounded JSON fetch every request to it
//! goes through ([`Fetcher`]).
//!
//! Every fetch has a time limit, reads at most [`MAX_DOCUMENT_BYTES`], follows no redirect
//! (a document is where the configuration says, or it is not there), and goes only to an
//! `https` URL or one on a loopback host (a discovered `jwks_uri` too: the metadata is
//! checked as the configured URLs are). The metadata's `issuer` must be the configured one
//! exactly (RFC 8414 §3.3), so a document served elsewhere cannot name other keys.

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::settings::is_loopback;

/// Time limit of one request to the authorization server: its documents are small and a
/// token check waits on it, so a slow server must fail the check, not hang the client.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Time limit to connect: well under [`FETCH_TIMEOUT`], so an unreachable host says so.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most bytes read of a document: a JWKS of a dozen RSA keys, or a metadata document,
/// is a few KiB; 1 MiB leaves room and bounds what a hostile server can make toolport hold.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// Why the authorization server could not be asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} answered with more than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url} answered with a document toolport cannot read: {reason}")]
    Invalid { url: String, reason: String },
    #[error(
        "the authorization server's metadata names the issuer {found:?}, not the configured {expected:?}"
    )]
    WrongIssuer { expected: String, found: String },
    #[error("{url} is neither https nor on a loopback host")]
    Insecure { url: String },
    #[error("no metadata found for the issuer {issuer} (tried {tried})")]
    NoMetadata { issuer: String, tried: String },
}

/// The HTTP client every request to the authorization server uses.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
}

impl Fetcher {
    pub(crate) fn new() -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolport/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { client })
    }

    /// The client, for a request [`send`](Self::send) then sends.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// GET `url` as JSON.
    pub(crate) async fn get<T: DeserializeOwned>(&self, url: &Url) -> Result<T, FetchError> {
        self.send(url, self.client.get(url.clone())).await
    }

    /// Send `request` (to `url`) and read the answer as JSON, bounded.
    pub(crate) async fn send<T: DeserializeOwned>(
        &self,
        url: &Url,
        request: reqwest::RequestBuilder,
    ) -> Result<T, FetchError> {
        let shown = url.to_string();
        if !(url.scheme() == "https" || (url.scheme() == "http" && is_loopback(url))) {
            return Err(FetchError::Insecure { url: shown });
        }
        let unreachable = |e: reqwest::Error| FetchError::Unreachable {
            url: shown.clone(),
            reason: e.without_url().to_string(),
        };
        let mut response = request
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(unreachable)?;
        if !response.status().is_success() {
            return Err(FetchError::Status {
                url: shown,
                status: response.status().as_u16(),
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(FetchError::TooLarge { url: shown });
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| FetchError::Invalid {
            url: shown,
            reason: e.to_string(),
        })
    }
}

/// What toolport reads of the authorization server's metadata.
#[derive(Debug, Deserialize)]
pub(crate) struct ServerMetadata {
    issuer: String,
    pub(crate) jwks_uri: Option<String>,
}

/// The metadata URLs of `issuer`, in the order tried: RFC 8414's (the well-known path
/// inserted before the issuer's path), then OpenID Connect Discovery's (appended to it).
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut rfc8414 = issuer.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut oidc = issuer.clone();
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    for url in [&mut rfc8414, &mut oidc] {
        url.set_query(None);
        url.set_fragment(None);
    }
    vec![rfc8414, oidc]
}

/// The authorization server's metadata, from the first well-known URL that has it.
pub(crate) async fn discover(
    fetcher: &Fetcher,
    issuer: &str,
) -> Result<ServerMetadata, FetchError> {
    let parsed = Url::parse(issuer).map_err(|e| FetchError::Invalid {
        url: issuer.to_owned(),
        reason: e.to_string(),
    })?;
    let urls = metadata_urls(&parsed);
    for url in &urls {
        match fetcher.get::<ServerMetadata>(url).await {
            Ok(metadata) if metadata.issuer == issuer => return Ok(metadata),
            Ok(metadata) => {
                return Err(FetchError::WrongIssuer {
                    expected: issuer.to_owned(),
                    found: metadata.issuer,
                });
            }
            // Not there: try the next form.
            Err(FetchError::Status { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    Err(FetchError::NoMetadata {
        issuer: issuer.to_owned(),
        tried: urls.iter().map(Url::as_str).collect::<Vec<_>>().join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_rfc_8414_then_oidc() {
        let urls = |issuer: &str| -> Vec<String> {
            metadata_urls(&Url::parse(issuer).unwrap())
                .into_iter()
                .map(String::from)
                .collect()
        };
        assert_eq!(
            urls("https://idp.example"),
            [
                "https://idp.example/.well-known/oauth-authorization-server",
                "https://idp.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://idp.example/realms/dev/"),
            [
                "https://idp.example/.well-known/oauth-authorization-server/realms/dev",
                "https://idp.example/realms/dev/.well-known/openid-configuration"
            ]
        );
    }
}
