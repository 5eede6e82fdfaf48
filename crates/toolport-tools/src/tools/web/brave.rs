//! The Brave Search API: `GET /res/v1/web/search?q=…&count=…` with the key in the
//! `X-Subscription-Token` header. Descriptions mark matches with `<strong>`; they are reduced
//! to plain text.

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, HeaderValue};
use serde::Deserialize;

use super::provider::{
    Failure, FailureKind, Hit, Query, SearchProvider, endpoint, finish, from_json,
    json_error_detail, plain_text, secret_header,
};
use super::settings::{ProviderId, Secret};

/// The Brave provider.
#[derive(Debug, Clone)]
pub(crate) struct Brave {
    base_url: String,
    key: Secret,
}

impl Brave {
    /// A provider sending to `base_url` with `key`.
    pub(crate) fn new(base_url: String, key: Secret) -> Self {
        Self { base_url, key }
    }
}

#[derive(Deserialize)]
struct Response {
    /// Always "search"; required so that an unrelated JSON body is a parse error, not "empty".
    #[serde(rename = "type")]
    _kind: String,
    /// Absent when there are no web results.
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    title: String,
    url: String,
    #[serde(default)]
    description: String,
    page_age: Option<String>,
    age: Option<String>,
}

impl SearchProvider for Brave {
    fn id(&self) -> ProviderId {
        ProviderId::Brave
    }

    fn request(&self, client: &reqwest::Client, query: Query<'_>) -> reqwest::RequestBuilder {
        client
            .get(endpoint(
                &self.base_url,
                "/res/v1/web/search",
                &[("q", query.text), ("count", &query.count.to_string())],
            ))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header("X-Subscription-Token", secret_header(self.key.expose()))
    }

    fn parse(&self, body: &[u8], query: Query<'_>) -> Result<Vec<Hit>, Failure> {
        let response: Response = from_json(self.id(), body)?;
        let hits = response
            .web
            .map(|w| w.results)
            .unwrap_or_default()
            .into_iter()
            .map(|item| Hit {
                title: plain_text(&item.title),
                url: item.url,
                snippet: plain_text(&item.description),
                published: item.page_age.or(item.age),
            })
            .collect();
        finish(self.id(), hits, query.count)
    }

    fn explain_status(&self, status: StatusCode, body: &[u8]) -> Failure {
        let detail = json_error_detail(body);
        let code = status.as_u16();
        let suffix = detail
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        // Brave answers an invalid subscription token with 422 as well as 401/403.
        let token_problem = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
            || (status == StatusCode::UNPROCESSABLE_ENTITY
                && detail.as_deref().is_some_and(|d| {
                    let d = d.to_ascii_lowercase();
                    d.contains("token") || d.contains("subscription")
                }));
        if token_problem {
            Failure::new(
                self.id(),
                FailureKind::Refused,
                format!("Brave {code}: check TOOLPORT_BRAVE_API_KEY{suffix}"),
            )
        } else {
            Failure::new(
                self.id(),
                FailureKind::Status,
                format!("Brave returned HTTP {code}{suffix}"),
            )
        }
    }
}
