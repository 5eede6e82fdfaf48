//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; the MCP
//! specification's preferred way to know a client): a `client_id` that is an `https` URL names
//! a JSON document, served by the client's owner, that says what the client is — its name and
//! redirect URIs. No registration happens; the document is the registration.
//!
//! Fetching a URL a stranger names is how servers are made to reach their own network (SSRF),
//! so the fetch goes through `fetch_url`'s guard ([`public_only`], [`check_public_url`]):
//! private, loopback, link-local and reserved addresses are refused, by the URL's host and at
//! resolution, with no proxy; no redirects are followed; it is bounded in time
//! ([`FETCH_TIMEOUT`]) and size ([`MAX_DOCUMENT_BYTES`]); documents are cached
//! ([`CACHE_TTL`], at most [`MAX_CACHED`]) so a client cannot make toolport fetch on every
//! request.
//!
//! **The document must** name itself (`client_id` equal to the URL, character for character),
//! list `redirect_uris` this server accepts ([`super::redirect::registrable`]), and be a public
//! client (`token_endpoint_auth_method` absent or `none`). The URL must be `https` with a path,
//! no fragment, no credentials, and be in its normal form (no `..`, no default port spelled out).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde::Deserialize;
use toolport_tools::host::guard::{check_public_url, public_only};
use url::Url;

use super::redirect;
use super::register::clean_name;
use super::store::{Client, now};

/// Largest document read: a name and a few redirect URIs are well under a kilobyte.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// How long a fetch may take: the client waits on it, behind a consent page.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a fetched document is trusted: long enough that a connection's requests reuse it,
/// short enough that its owner's changes are seen the same day.
pub(crate) const CACHE_TTL: Duration = Duration::from_secs(600);
/// Most documents cached (a client naming many URLs cannot grow the cache).
const MAX_CACHED: usize = 64;
/// Most redirect URIs taken from a document.
const MAX_REDIRECT_URIS: usize = 10;

/// What a document says (the rest is ignored).
#[derive(Debug, Deserialize)]
struct Document {
    client_id: Option<String>,
    client_name: Option<String>,
    redirect_uris: Option<Vec<String>>,
    token_endpoint_auth_method: Option<String>,
}

/// Whether `client_id` names a metadata document (rather than a registered client).
pub(crate) fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

/// The URL a `client_id` names, checked: `https`, a path, no fragment or credentials, in
/// normal form, and a host the guard lets through.
pub(crate) fn document_url(client_id: &str) -> Result<Url, String> {
    let url = Url::parse(client_id).map_err(|e| format!("the client_id is not a URL ({e})"))?;
    if url.scheme() != "https" || url.path() == "/" || url.fragment().is_some() {
        return Err("a client_id URL must be https with a path and no fragment".to_owned());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a client_id URL must not carry credentials".to_owned());
    }
    if url.as_str() != client_id {
        return Err("the client_id URL is not in its normal form".to_owned());
    }
    check_public_url(&url)?;
    Ok(url)
}

/// The client `bytes` (the document fetched from `client_id`) describes.
pub(crate) fn client_of(client_id: &str, bytes: &[u8]) -> Result<Client, String> {
    let document: Document = serde_json::from_slice(bytes).map_err(|e| {
        format!("the client's metadata document is not JSON of the expected shape ({e})")
    })?;
    if document.client_id.as_deref() != Some(client_id) {
        return Err("the client's metadata document does not name itself as client_id".to_owned());
    }
    if document
        .token_endpoint_auth_method
        .as_deref()
        .is_some_and(|m| m != "none")
    {
        return Err(
            "the client's metadata document asks for client authentication; this server serves public clients only (token_endpoint_auth_method \"none\")".to_owned(),
        );
    }
    let uris = document.redirect_uris.unwrap_or_default();
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return Err(format!(
            "the client's metadata document must list 1 to {MAX_REDIRECT_URIS} redirect_uris"
        ));
    }
    for uri in &uris {
        redirect::registrable(uri)?;
    }
    Ok(Client {
        client_id: client_id.to_owned(),
        client_name: document.client_name.as_deref().and_then(clean_name),
        redirect_uris: uris,
        created: now(),
    })
}

/// Fetched documents, cached.
#[derive(Debug)]
pub(crate) struct Documents {
    http: reqwest::Client,
    cache: Mutex<HashMap<String, (Instant, Client)>>,
}

impl Documents {
    pub(crate) fn new() -> Result<Self, String> {
        let http = public_only(reqwest::Client::builder())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| {
                format!("cannot build the HTTP client for client metadata documents: {e}")
            })?;
        Ok(Self {
            http,
            cache: Mutex::default(),
        })
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Client)>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client `client_id` (a document URL) describes: cached, or fetched now.
    pub(crate) async fn client(&self, client_id: &str) -> Result<Client, String> {
        if let Some((at, client)) = self.cache().get(client_id)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(client.clone());
        }
        let url = document_url(client_id)?;
        let bytes = self.fetch(url).await?;
        let client = client_of(client_id, &bytes)?;
        let mut cache = self.cache();
        cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(client_id.to_owned(), (Instant::now(), client.clone()));
        Ok(client)
    }

    async fn fetch(&self, url: Url) -> Result<Vec<u8>, String> {
        let failed =
            |e: reqwest::Error| format!("cannot fetch the client's metadata document: {e}");
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(failed)?;
        if !response.status().is_success() {
            return Err(format!(
                "the client's metadata document answered {}",
                response.status()
            ));
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk.map_err(failed)?);
            if body.len() > MAX_DOCUMENT_BYTES {
                return Err(format!(
                    "the client's metadata document is over {MAX_DOCUMENT_BYTES} bytes"
                ));
            }
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "https://app.example.com/oauth/client.json";

    #[test]
    fn the_url_must_be_https_normal_and_public() {
        document_url(ID).unwrap();
        for bad in [
            "http://app.example.com/client.json",
            "https://app.example.com/",
            "https://app.example.com/a#f",
            "https://u:p@app.example.com/a",
            "https://app.example.com/a/../client.json",
            "https://app.example.com:443/client.json",
            "https://127.0.0.1/client.json",
            "https://10.0.0.7/client.json",
            "https://localhost/client.json",
            "https://[::1]/client.json",
        ] {
            assert!(document_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_document_must_name_itself_list_redirects_and_be_public() {
        let doc = |v: serde_json::Value| v.to_string().into_bytes();
        let client = client_of(
            ID,
            &doc(serde_json::json!({"client_id": ID, "client_name": "App\u{7}", "redirect_uris": ["https://app.example.com/cb"]})),
        )
        .unwrap();
        assert_eq!(client.client_name.as_deref(), Some("App"));
        assert_eq!(client.redirect_uris, vec!["https://app.example.com/cb"]);
        for bad in [
            serde_json::json!({"client_id": "https://other.example/c.json", "redirect_uris": ["https://app.example.com/cb"]}),
            serde_json::json!({"redirect_uris": ["https://app.example.com/cb"]}),
            serde_json::json!({"client_id": ID, "redirect_uris": []}),
            serde_json::json!({"client_id": ID, "redirect_uris": ["http://evil.example/cb"]}),
            serde_json::json!({"client_id": ID, "redirect_uris": ["https://app.example.com/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
        ] {
            assert!(client_of(ID, &doc(bad.clone())).is_err(), "{bad}");
        }
        assert!(client_of(ID, b"not json").is_err());
    }

    #[tokio::test]
    async fn a_private_address_is_never_fetched() {
        let documents = Documents::new().unwrap();
        let err = documents
            .client("https://127.0.0.1/client.json")
            .await
            .unwrap_err();
        assert!(err.contains("127.0.0.1"), "{err}");
    }
}
