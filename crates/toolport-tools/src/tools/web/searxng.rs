//! A SearXNG instance's JSON API: `GET /search?q=…&format=json`. Instances serve JSON only
//! when `json` is listed in `search.formats` of their settings.yml; otherwise they answer 403,
//! which is explained as such. SearXNG takes no result count, so the list is cut here.

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, HeaderValue};
use serde::Deserialize;

use super::provider::{
    Failure, FailureKind, Hit, Query, SearchProvider, endpoint, finish, from_json, plain_text,
};
use super::settings::ProviderId;

/// The SearXNG provider.
#[derive(Debug, Clone)]
pub(crate) struct Searxng {
    base_url: String,
}

impl Searxng {
    /// A provider sending to the instance at `base_url`.
    pub(crate) fn new(base_url: String) -> Self {
        Self { base_url }
    }
}

#[derive(Deserialize)]
struct Response {
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: String,
    url: Option<String>,
    #[serde(default)]
    content: String,
    #[serde(rename = "publishedDate")]
    published_date: Option<String>,
}

impl SearchProvider for Searxng {
    fn id(&self) -> ProviderId {
        ProviderId::Searxng
    }

    fn request(&self, client: &reqwest::Client, query: Query<'_>) -> reqwest::RequestBuilder {
        client
            .get(endpoint(
                &self.base_url,
                "/search",
                &[("q", query.text), ("format", "json")],
            ))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
    }

    fn parse(&self, body: &[u8], query: Query<'_>) -> Result<Vec<Hit>, Failure> {
        if body.trim_ascii_start().starts_with(b"<") {
            return Err(Failure::parse(
                self.id(),
                "expected JSON but got an HTML page; check that web.searxng.base_url is the instance's address and that json is enabled in search.formats",
            ));
        }
        let response: Response = from_json(self.id(), body)?;
        let hits = response
            .results
            .into_iter()
            .filter_map(|item| {
                Some(Hit {
                    title: plain_text(&item.title),
                    url: item.url?,
                    snippet: plain_text(&item.content),
                    published: item.published_date.filter(|d| !d.is_empty()),
                })
            })
            .collect();
        finish(self.id(), hits, query.count)
    }

    fn explain_status(&self, status: StatusCode, _body: &[u8]) -> Failure {
        let code = status.as_u16();
        match status {
            StatusCode::FORBIDDEN => Failure::new(
                self.id(),
                FailureKind::Refused,
                "SearXNG returned 403: enable json in search.formats (in the instance's settings.yml)",
            ),
            StatusCode::NOT_FOUND => Failure::new(
                self.id(),
                FailureKind::Status,
                "SearXNG returned 404: check that TOOLPORT_SEARXNG_URL (web.searxng.base_url) is the instance's address",
            ),
            _ => Failure::new(
                self.id(),
                FailureKind::Status,
                format!("SearXNG returned HTTP {code}"),
            ),
        }
    }
}
