//! The Tavily search API: `POST /search` with a JSON body and the key as a bearer token.
//! Tavily signals a used-up plan with its own statuses 432 and 433.

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use serde::Deserialize;
use serde_json::json;

use super::provider::{
    Failure, FailureKind, Hit, Query, SearchProvider, collapse_whitespace, finish, from_json,
    json_error_detail, secret_header,
};
use super::settings::{ProviderId, Secret};

/// The Tavily provider.
#[derive(Debug, Clone)]
pub(crate) struct Tavily {
    base_url: String,
    key: Secret,
}

impl Tavily {
    /// A provider sending to `base_url` with `key`.
    pub(crate) fn new(base_url: String, key: Secret) -> Self {
        Self { base_url, key }
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
    url: String,
    #[serde(default)]
    content: String,
    published_date: Option<String>,
}

impl SearchProvider for Tavily {
    fn id(&self) -> ProviderId {
        ProviderId::Tavily
    }

    fn request(&self, client: &reqwest::Client, query: Query<'_>) -> reqwest::RequestBuilder {
        client
            .post(format!("{}/search", self.base_url))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(
                AUTHORIZATION,
                secret_header(&format!("Bearer {}", self.key.expose())),
            )
            .json(&json!({
                "query": query.text,
                "max_results": query.count,
                "search_depth": "basic",
                "include_answer": false,
            }))
    }

    fn parse(&self, body: &[u8], query: Query<'_>) -> Result<Vec<Hit>, Failure> {
        let response: Response = from_json(self.id(), body)?;
        let hits = response
            .results
            .into_iter()
            .map(|item| Hit {
                title: collapse_whitespace(&item.title),
                url: item.url,
                snippet: collapse_whitespace(&item.content),
                published: item.published_date,
            })
            .collect();
        finish(self.id(), hits, query.count)
    }

    fn explain_status(&self, status: StatusCode, body: &[u8]) -> Failure {
        let code = status.as_u16();
        let suffix = json_error_detail(body)
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        match code {
            401 | 403 => Failure::new(
                self.id(),
                FailureKind::Refused,
                format!("Tavily {code}: check TOOLPORT_TAVILY_API_KEY{suffix}"),
            ),
            432 | 433 => Failure::new(
                self.id(),
                FailureKind::RateLimited,
                format!("Tavily {code}: the plan's credit limit is used up{suffix}"),
            ),
            _ => Failure::new(
                self.id(),
                FailureKind::Status,
                format!("Tavily returned HTTP {code}{suffix}"),
            ),
        }
    }
}
