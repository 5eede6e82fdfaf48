//! The Google Custom Search JSON API: `GET /customsearch/v1?cx=…&q=…&num=…`. The key goes in
//! the `X-goog-api-key` header, which every Google API accepts, rather than the usual `key=`
//! query parameter, so that it is never part of a URL (and so of an error or a log line).

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, HeaderValue};
use serde::Deserialize;

use super::provider::{
    Failure, FailureKind, Hit, Query, SearchProvider, collapse_whitespace, endpoint, finish,
    from_json, json_error_detail, secret_header,
};
use super::settings::{ProviderId, Secret};

/// The Google provider.
#[derive(Debug, Clone)]
pub(crate) struct Google {
    base_url: String,
    key: Secret,
    cx: String,
}

impl Google {
    /// A provider sending to `base_url` with `key` for search engine `cx`.
    pub(crate) fn new(base_url: String, key: Secret, cx: String) -> Self {
        Self { base_url, key, cx }
    }
}

#[derive(Deserialize)]
struct Response {
    /// Always "customsearch#search"; required so that unrelated JSON is a parse error.
    #[serde(rename = "kind")]
    _kind: String,
    /// Absent when there are no results.
    #[serde(default)]
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    title: String,
    link: String,
    #[serde(default)]
    snippet: String,
}

impl SearchProvider for Google {
    fn id(&self) -> ProviderId {
        ProviderId::Google
    }

    fn request(&self, client: &reqwest::Client, query: Query<'_>) -> reqwest::RequestBuilder {
        client
            .get(endpoint(
                &self.base_url,
                "/customsearch/v1",
                &[
                    ("cx", self.cx.as_str()),
                    ("q", query.text),
                    ("num", &query.count.to_string()),
                ],
            ))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header("X-goog-api-key", secret_header(self.key.expose()))
    }

    fn parse(&self, body: &[u8], query: Query<'_>) -> Result<Vec<Hit>, Failure> {
        let response: Response = from_json(self.id(), body)?;
        let hits = response
            .items
            .into_iter()
            .map(|item| Hit {
                title: collapse_whitespace(&item.title),
                url: item.link,
                snippet: collapse_whitespace(&item.snippet),
                published: None,
            })
            .collect();
        finish(self.id(), hits, query.count)
    }

    fn explain_status(&self, status: StatusCode, body: &[u8]) -> Failure {
        let code = status.as_u16();
        let suffix = json_error_detail(body)
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        // Google says 400 "API key not valid" as well as 401/403 for key and project problems.
        let key_problem = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
            || (status == StatusCode::BAD_REQUEST && suffix.to_ascii_lowercase().contains("key"));
        if key_problem {
            Failure::new(
                self.id(),
                FailureKind::Refused,
                format!(
                    "Google {code}: check TOOLPORT_GOOGLE_API_KEY and TOOLPORT_GOOGLE_CX, and that the Custom Search API is enabled for the key's project{suffix}"
                ),
            )
        } else {
            Failure::new(
                self.id(),
                FailureKind::Status,
                format!("Google returned HTTP {code}{suffix}"),
            )
        }
    }
}
