//! The [`SearchProvider`] trait and what a provider produces: [`Hit`]s, or a [`Failure`] that
//! says in actionable words why it could not.
//!
//! A provider is pure: it builds the HTTP request for a query and parses a response body.
//! Sending, throttling, 429 retries, timeouts and the size cap are shared ([`super::fetch`]),
//! so every provider gets them the same way and the parsers can be tested on fixtures alone.

use reqwest::StatusCode;
use serde_json::Value;

use super::settings::ProviderId;

/// One search result, before ranking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The page title (plain text).
    pub title: String,
    /// The page's URL (the real one, not a redirect).
    pub url: String,
    /// A short extract (plain text; may be empty).
    pub snippet: String,
    /// When the page was published, as the provider gives it (if it does).
    pub published: Option<String>,
}

/// Per provider and outcome (`ok` or a [`FailureKind`]'s name): the web requests counter
/// the metrics expose as `toolport_web_requests_total`.
pub(crate) type RequestCounter = prometheus_client::metrics::family::Family<
    Vec<(String, String)>,
    prometheus_client::metrics::counter::Counter,
>;

/// Why a provider gave no usable results. Every kind leads to failover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// Could not connect or the connection broke.
    Network,
    /// No complete answer within the timeout.
    Timeout,
    /// 429, after the retries allowed.
    RateLimited,
    /// 401/403: the key is wrong, or the provider refuses us.
    Refused,
    /// DuckDuckGo's bot challenge (or another anomaly page).
    Blocked,
    /// The provider answered, with no results.
    Empty,
    /// The body is not what the provider's API or page looks like.
    Parse,
    /// The body is larger than the cap.
    TooLarge,
    /// Any other unsuccessful HTTP status.
    Status,
}

impl FailureKind {
    /// The name, as in the metrics' `outcome` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Network => "network",
            Self::Timeout => "timeout",
            Self::RateLimited => "rate_limited",
            Self::Refused => "refused",
            Self::Blocked => "blocked",
            Self::Empty => "empty",
            Self::Parse => "parse",
            Self::TooLarge => "too_large",
            Self::Status => "status",
        }
    }
}

/// A provider's failure: its kind, and a message naming the provider and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub provider: ProviderId,
    pub kind: FailureKind,
    /// An actionable message that starts with the provider's name, e.g.
    /// "Brave 401: check TOOLPORT_BRAVE_API_KEY". Never contains a key.
    pub message: String,
}

impl Failure {
    /// A failure of `provider`.
    pub(crate) fn new(provider: ProviderId, kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            provider,
            kind,
            message: message.into(),
        }
    }

    /// "could not parse X response: why" (the body changed shape).
    pub(crate) fn parse(provider: ProviderId, why: impl std::fmt::Display) -> Self {
        Self::new(
            provider,
            FailureKind::Parse,
            format!(
                "could not parse {} response: {why}",
                provider.display_name()
            ),
        )
    }

    /// The provider answered but found nothing.
    pub(crate) fn empty(provider: ProviderId) -> Self {
        Self::new(
            provider,
            FailureKind::Empty,
            format!("{}: no results for this query", provider.display_name()),
        )
    }
}

/// What a provider needs to build a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Query<'a> {
    /// The normalised query text.
    pub text: &'a str,
    /// How many results are wanted (1..=10).
    pub count: usize,
}

/// One search backend: how to ask it and how to read its answer.
pub(crate) trait SearchProvider: Send + Sync {
    /// Which provider this is.
    fn id(&self) -> ProviderId;

    /// The request for `query`, on `client` (which carries the timeouts and User-Agent). Called
    /// again for each retry. Keys go in headers, never in the URL, so no error or log line that
    /// shows a URL can show a key.
    fn request(&self, client: &reqwest::Client, query: Query<'_>) -> reqwest::RequestBuilder;

    /// Read a successful (2xx) body into hits, at most `query.count`. No results is
    /// [`Failure::empty`]; a body of the wrong shape is [`Failure::parse`].
    fn parse(&self, body: &[u8], query: Query<'_>) -> Result<Vec<Hit>, Failure>;

    /// What to tell the operator about an unsuccessful status (not 429, which is retried).
    /// `body` is what came with it (possibly empty); the default quotes the provider's own
    /// error message from a JSON body.
    fn explain_status(&self, status: StatusCode, body: &[u8]) -> Failure {
        let id = self.id();
        let name = id.display_name();
        let code = status.as_u16();
        let detail = json_error_detail(body)
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        match (status, id.key_env()) {
            (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, Some(var)) => Failure::new(
                id,
                FailureKind::Refused,
                format!("{name} {code}: check {var}{detail}"),
            ),
            (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, None) => Failure::new(
                id,
                FailureKind::Refused,
                format!("{name} {code}: the request was refused{detail}"),
            ),
            _ => Failure::new(
                id,
                FailureKind::Status,
                format!("{name} returned HTTP {code}{detail}"),
            ),
        }
    }
}

/// Most characters of a provider's own error message quoted in ours.
const MAX_DETAIL_CHARS: usize = 200;

/// The error message in a JSON error body, in the shapes the providers use
/// (`{"error": {"message"}}`, `{"error": "…"}`, `{"message"}`, `{"detail": …}`), shortened.
pub(crate) fn json_error_detail(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let candidates = [
        value.pointer("/error/message"),
        value.pointer("/error/detail"),
        value.pointer("/error"),
        value.pointer("/message"),
        value.pointer("/detail/error"),
        value.pointer("/detail"),
    ];
    let text = candidates
        .into_iter()
        .flatten()
        .find_map(Value::as_str)?
        .trim();
    if text.is_empty() {
        return None;
    }
    let mut short: String = text.chars().take(MAX_DETAIL_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    Some(short)
}

/// Plain text from an HTML fragment (Brave and SearXNG mark matches with `<strong>`), entities
/// decoded and whitespace collapsed.
pub(crate) fn plain_text(fragment: &str) -> String {
    let text: String = if fragment.contains('<') || fragment.contains('&') {
        scraper::Html::parse_fragment(fragment)
            .root_element()
            .text()
            .collect()
    } else {
        fragment.to_owned()
    };
    collapse_whitespace(&text)
}

/// Runs of whitespace become one space; ends trimmed.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A header value carrying a key, marked sensitive so that HTTP libraries never log it. A key
/// that is not a valid header value (a control character) is sent empty, which the provider
/// answers with 401 (and the message names the variable to check).
pub(crate) fn secret_header(value: &str) -> reqwest::header::HeaderValue {
    let mut header = reqwest::header::HeaderValue::from_str(value)
        .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
    header.set_sensitive(true);
    header
}

/// `base` + `path` + `?` + the URL-encoded `pairs`.
pub(crate) fn endpoint(base: &str, path: &str, pairs: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.extend_pairs(pairs);
    format!("{base}{path}?{}", query.finish())
}

/// Whether a URL is one a model can open (absolute http/https).
pub(crate) fn is_web_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// Parse a JSON body into `T`, as a parse failure naming the provider.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    provider: ProviderId,
    body: &[u8],
) -> Result<T, Failure> {
    serde_json::from_slice(body)
        .map_err(|e| Failure::parse(provider, format!("the JSON is not as expected ({e})")))
}

/// Longest title kept, in characters: real titles are under 100; this bounds a broken one.
const MAX_TITLE_CHARS: usize = 300;
/// Longest snippet kept, in characters: search snippets are 150-300 characters, but Tavily's
/// `content` can run to paragraphs, and ten of those would flood a model's context.
const MAX_SNIPPET_CHARS: usize = 600;

/// `text` cut to `max` characters, with an ellipsis when cut.
fn shorten(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text,
    }
}

/// Keep hits with a title and a web URL, each URL once, at most `count`, with titles and
/// snippets of bounded length; none left is [`Failure::empty`].
pub(crate) fn finish(
    provider: ProviderId,
    hits: Vec<Hit>,
    count: usize,
) -> Result<Vec<Hit>, Failure> {
    let mut seen = std::collections::HashSet::new();
    let hits: Vec<Hit> = hits
        .into_iter()
        .filter(|h| !h.title.is_empty() && is_web_url(&h.url) && seen.insert(h.url.clone()))
        .take(count)
        .map(|h| Hit {
            title: shorten(h.title, MAX_TITLE_CHARS),
            snippet: shorten(h.snippet, MAX_SNIPPET_CHARS),
            ..h
        })
        .collect();
    if hits.is_empty() {
        Err(Failure::empty(provider))
    } else {
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_strips_tags_and_entities() {
        assert_eq!(
            plain_text("The <strong>Rust</strong> &amp; more\n  text"),
            "The Rust & more text"
        );
        assert_eq!(plain_text("  plain  "), "plain");
    }

    fn hit(title: &str, url: &str, snippet: &str) -> Hit {
        Hit {
            title: title.into(),
            url: url.into(),
            snippet: snippet.into(),
            published: None,
        }
    }

    #[test]
    fn finish_drops_duplicates_and_non_web_urls_and_bounds_lengths() {
        let long = "é".repeat(MAX_SNIPPET_CHARS + 10);
        let hits = finish(
            ProviderId::Tavily,
            vec![
                hit("A", "https://a.example/", &long),
                hit("A again", "https://a.example/", ""),
                hit("", "https://b.example/", ""),
                hit("Script", "javascript:alert(1)", ""),
                hit("C", "http://c.example/", "c"),
            ],
            5,
        )
        .unwrap();
        let urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(urls, ["https://a.example/", "http://c.example/"]);
        assert_eq!(hits[0].snippet.chars().count(), MAX_SNIPPET_CHARS + 1);
        assert!(hits[0].snippet.ends_with('…'));
        assert_eq!(
            finish(ProviderId::Brave, vec![], 5).unwrap_err().kind,
            FailureKind::Empty
        );
    }

    #[test]
    fn json_error_detail_finds_the_message() {
        assert_eq!(
            json_error_detail(br#"{"error":{"code":400,"message":"API key not valid."}}"#)
                .as_deref(),
            Some("API key not valid.")
        );
        assert_eq!(
            json_error_detail(br#"{"detail":{"error":"Unauthorized"}}"#).as_deref(),
            Some("Unauthorized")
        );
        assert_eq!(json_error_detail(b"<html>"), None);
    }
}
