//! DuckDuckGo through its HTML endpoint (`POST /html/`, the page served to browsers without
//! JavaScript). No key. The page is parsed with `scraper`:
//! - each result is a `div.result` with an `a.result__a` title link and a `.result__snippet`;
//! - links go through DuckDuckGo's redirect (`//duckduckgo.com/l/?uddg=<real url>`), decoded
//!   here to the real URL;
//! - ads (`.result--ad`, links to `/y.js`) are skipped;
//! - the bot challenge ("anomaly") page is a [`FailureKind::Blocked`] failure, and a page with
//!   neither results nor a "no results" notice is a parse failure (the markup changed), so
//!   failover moves on either way.

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use scraper::{ElementRef, Html, Selector};

use super::provider::{
    Failure, FailureKind, Hit, Query, SearchProvider, collapse_whitespace, finish,
};
use super::settings::ProviderId;

/// Where DuckDuckGo's redirect links are resolved from (they are protocol-relative).
const REDIRECT_BASE: &str = "https://duckduckgo.com/";

/// The elements of DuckDuckGo's bot challenge page.
const CHALLENGE_SELECTOR: &str =
    "form#challenge-form, .anomaly-modal__modal, [data-testid=\"anomaly-modal\"]";

/// Words and names of DuckDuckGo's bot challenge page, lowercase, for pages without results
/// (or error pages) whose markup differs from what [`CHALLENGE_SELECTOR`] knows.
const CHALLENGE_MARKERS: &[&str] = &[
    "anomaly-modal",
    "challenge-form",
    "bots use duckduckgo too",
    "anomaly.js",
];

/// The DuckDuckGo provider.
#[derive(Debug, Clone)]
pub(crate) struct DuckDuckGo {
    base_url: String,
}

impl DuckDuckGo {
    /// A provider sending to `base_url` (e.g. `https://html.duckduckgo.com`).
    pub(crate) fn new(base_url: String) -> Self {
        Self { base_url }
    }
}

fn selector(css: &str) -> Result<Selector, Failure> {
    Selector::parse(css).map_err(|e| Failure::parse(ProviderId::Duckduckgo, e))
}

fn is_challenge(html: &str) -> bool {
    let lower = html.to_ascii_lowercase();
    CHALLENGE_MARKERS.iter().any(|m| lower.contains(m))
}

fn blocked() -> Failure {
    Failure::new(
        ProviderId::Duckduckgo,
        FailureKind::Blocked,
        "DuckDuckGo answered with its bot-challenge page (it suspects automated traffic); it usually clears after a few minutes. For dependable search configure a keyed provider (e.g. TOOLPORT_BRAVE_API_KEY) or a SearXNG instance",
    )
}

/// The real URL behind a result link: `uddg` of a `/l/` redirect, or the link itself.
/// `None` for ads (`/y.js`) and anything that is not a web URL.
pub(crate) fn decode_link(href: &str) -> Option<String> {
    let base = url::Url::parse(REDIRECT_BASE).ok()?;
    let url = base.join(href.trim()).ok()?;
    let on_ddg = url
        .host_str()
        .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"));
    if on_ddg {
        if url.path().starts_with("/y.js") {
            return None;
        }
        if url.path().starts_with("/l/") {
            let target = url
                .query_pairs()
                .find(|(k, _)| k == "uddg")
                .map(|(_, v)| v.into_owned())?;
            return super::provider::is_web_url(&target).then_some(target);
        }
    }
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

fn text_of(element: ElementRef<'_>) -> String {
    collapse_whitespace(&element.text().collect::<String>())
}

impl SearchProvider for DuckDuckGo {
    fn id(&self) -> ProviderId {
        ProviderId::Duckduckgo
    }

    fn request(&self, client: &reqwest::Client, query: Query<'_>) -> reqwest::RequestBuilder {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("q", query.text)
            .append_pair("b", "")
            .finish();
        client
            .post(format!("{}/html/", self.base_url))
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            )
            .header(ACCEPT, HeaderValue::from_static("text/html"))
            .body(form)
    }

    fn parse(&self, body: &[u8], query: Query<'_>) -> Result<Vec<Hit>, Failure> {
        let id = self.id();
        let html = String::from_utf8_lossy(body);
        let doc = Html::parse_document(&html);
        // By its elements, not its words: a result snippet may quote the challenge's text.
        if doc.select(&selector(CHALLENGE_SELECTOR)?).next().is_some() {
            return Err(blocked());
        }
        let result_sel = selector("div.result, div.web-result")?;
        let title_sel = selector("a.result__a")?;
        let snippet_sel = selector(".result__snippet")?;
        let no_results_sel = selector(".no-results, .result--no-result")?;

        let mut seen_results = false;
        let mut hits = Vec::new();
        for result in doc.select(&result_sel) {
            let classes: Vec<&str> = result.value().classes().collect();
            if classes.contains(&"result--no-result") {
                continue;
            }
            seen_results = true;
            if classes.iter().any(|c| c.starts_with("result--ad")) {
                continue;
            }
            let Some(link) = result.select(&title_sel).next() else {
                continue;
            };
            let Some(url) = link.value().attr("href").and_then(decode_link) else {
                continue;
            };
            hits.push(Hit {
                title: text_of(link),
                url,
                snippet: result
                    .select(&snippet_sel)
                    .next()
                    .map(text_of)
                    .unwrap_or_default(),
                published: None,
            });
        }
        if !seen_results {
            if is_challenge(&html) {
                return Err(blocked());
            }
            if doc.select(&no_results_sel).next().is_some() {
                return Err(Failure::empty(id));
            }
            return Err(Failure::parse(
                id,
                "the page has neither results nor a \"no results\" notice; DuckDuckGo's HTML layout may have changed",
            ));
        }
        finish(id, hits, query.count)
    }

    fn explain_status(&self, status: StatusCode, body: &[u8]) -> Failure {
        if is_challenge(&String::from_utf8_lossy(body)) {
            return blocked();
        }
        let code = status.as_u16();
        match status {
            StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => Failure::new(
                ProviderId::Duckduckgo,
                FailureKind::Refused,
                format!(
                    "DuckDuckGo {code}: the request was refused (likely bot detection); it usually clears after a few minutes, or configure another provider"
                ),
            ),
            _ => Failure::new(
                ProviderId::Duckduckgo,
                FailureKind::Status,
                format!("DuckDuckGo returned HTTP {code}"),
            ),
        }
    }
}

/// The fuzz target `duckduckgo_html`'s door (fuzz/; `fuzzing` feature only): parse a result
/// page for `count` hits as `web_search` does. `Ok`: each hit as (title, URL, snippet); `Err`:
/// the failure's message.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_parse(body: &[u8], count: usize) -> Result<Vec<(String, String, String)>, String> {
    let query = Query {
        text: "fuzz",
        count,
    };
    let hits = DuckDuckGo::new("http://unused".into())
        .parse(body, query)
        .map_err(|e| e.message)?;
    Ok(hits
        .into_iter()
        .map(|h| (h.title, h.url, h.snippet))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(html: &str, count: usize) -> Result<Vec<Hit>, Failure> {
        DuckDuckGo::new("http://unused".into()).parse(
            html.as_bytes(),
            Query {
                text: "rust async book",
                count,
            },
        )
    }

    const RESULTS: &str = include_str!("../../../tests/fixtures/web/ddg_results.html");

    #[test]
    fn a_results_page_parses_into_hits_up_to_the_count() {
        let hits = parse(RESULTS, 2).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].title, "Asynchronous Programming in Rust");
        assert_eq!(hits[0].url, "https://rust-lang.github.io/async-book/");
        assert!(hits[0].snippet.starts_with("This book aims to be"));
    }

    #[test]
    fn ads_are_skipped_and_the_challenge_is_recognised() {
        let ads = include_str!("../../../tests/fixtures/web/ddg_ads.html");
        let hits = parse(ads, 10).unwrap();
        assert_eq!(hits.len(), 3);
        assert!(hits.iter().all(|h| !h.url.contains("y.js")));
        let challenge = include_str!("../../../tests/fixtures/web/ddg_challenge.html");
        assert_eq!(parse(challenge, 5).unwrap_err().kind, FailureKind::Blocked);
    }

    /// A result that quotes the challenge's words is a result, not a challenge.
    #[test]
    fn a_snippet_quoting_the_challenge_text_is_not_a_challenge() {
        let page = RESULTS.replace(
            "This book aims to be",
            "Unfortunately, bots use DuckDuckGo too. This book aims to be",
        );
        assert_eq!(parse(&page, 5).unwrap().len(), 3);
    }

    #[test]
    fn no_results_is_empty_and_unknown_markup_is_a_parse_error() {
        let none = include_str!("../../../tests/fixtures/web/ddg_no_results.html");
        assert_eq!(parse(none, 5).unwrap_err().kind, FailureKind::Empty);
        let changed = include_str!("../../../tests/fixtures/web/ddg_changed.html");
        assert_eq!(parse(changed, 5).unwrap_err().kind, FailureKind::Parse);
        assert_eq!(parse("", 5).unwrap_err().kind, FailureKind::Parse);
        assert_eq!(
            parse("\u{0}<<<>>>not html at all", 5).unwrap_err().kind,
            FailureKind::Parse
        );
    }

    #[test]
    fn redirect_links_decode_to_the_real_url() {
        assert_eq!(
            decode_link("//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn%3Fa%3D1%26b%3D2&rut=abc")
                .as_deref(),
            Some("https://www.rust-lang.org/learn?a=1&b=2")
        );
        assert_eq!(
            decode_link("/l/?uddg=https%3A%2F%2Fexample.org%2F").as_deref(),
            Some("https://example.org/")
        );
        assert_eq!(
            decode_link("https://example.org/x").as_deref(),
            Some("https://example.org/x")
        );
        assert_eq!(
            decode_link("//duckduckgo.com/y.js?ad_domain=shop.example&u3=x"),
            None
        );
        assert_eq!(
            decode_link("//duckduckgo.com/l/?uddg=javascript%3Aalert(1)"),
            None
        );
        assert_eq!(decode_link("//duckduckgo.com/l/?rut=abc"), None);
    }
}
