//! What `fetch_url` makes of a body: which content types it reads, the body's text (charset),
//! the page in the asked format, and the character pages of it.
//!
//! HTML to markdown goes through `dom_smoothie`, a port of Mozilla's Readability (the
//! algorithm behind Firefox's reader view): it scores the page's blocks, keeps the article and
//! drops navigation, footers, sidebars and ads, makes links absolute, and renders the article
//! as markdown (headings, lists, links, code) with `dom_query`'s serializer. Both parse with
//! html5ever and selectors, the same versions `scraper` already brings, so the choice adds
//! little to the build. When Readability finds no article (a short page, an index), the whole
//! body is converted instead, without its `nav`, `header`, `footer`, `aside` and forms.
//!
//! Everything here is pure and synchronous; the tool runs it on a blocking thread.

use dom_smoothie::{Config, Readability, TextMode};

/// The formats `fetch_url` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
// No doc comments on the variants: schemars would turn them into a `oneOf` instead of a plain
// `enum`, which some clients' schema dialects do not read.
pub(crate) enum Format {
    // The main content as markdown (HTML pages); other text as it is.
    Markdown,
    // The main content as plain text (HTML pages); other text as it is.
    Text,
    // The body as received.
    Html,
    // The body parsed as JSON and pretty-printed.
    Json,
}

/// The kinds of text `fetch_url` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// text/html, application/xhtml+xml.
    Html,
    /// application/json, anything +json.
    Json,
    /// Any other text/*, XML, JavaScript, and a body without a content type that looks like
    /// text.
    Text,
}

/// Tags left out of the whole-body fallback: page chrome, not content.
const CHROME_TAGS: &[&str] = &[
    "script", "style", "meta", "head", "noscript", "template", "nav", "header", "footer", "aside",
    "form", "iframe", "svg", "button",
];

/// Bytes of a body sniffed for a NUL when there is no content type (binary files have them
/// early; text never does).
const SNIFF_BYTES: usize = 1024;

/// The media type (lowercase, without parameters) of a `Content-Type` value.
pub(crate) fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The kind of a media type, or `None` when it is not text (images, PDFs, archives …).
pub(crate) fn kind_of(media_type: &str) -> Option<Kind> {
    let (top, sub) = media_type.split_once('/')?;
    match (top, sub) {
        ("text", "html") | ("application", "xhtml+xml") => Some(Kind::Html),
        ("application", "json") => Some(Kind::Json),
        (_, sub) if sub.ends_with("+json") => Some(Kind::Json),
        ("text", _) => Some(Kind::Text),
        ("application", "xml" | "javascript" | "ecmascript" | "x-javascript" | "toml" | "yaml")
        | ("application", "x-yaml" | "x-toml" | "x-sh" | "markdown" | "x-markdown") => {
            Some(Kind::Text)
        }
        (_, sub) if sub.ends_with("+xml") => Some(Kind::Text),
        _ => None,
    }
}

/// The kind of a body that came without a content type: HTML if it starts like HTML, text if
/// its start has no NUL byte, else not text.
pub(crate) fn sniff(body: &[u8]) -> Option<Kind> {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return None;
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Some(Kind::Html)
    } else {
        Some(Kind::Text)
    }
}

/// The body as text: the charset of the content type, else (HTML) a `<meta charset>` near the
/// start, else UTF-8; a byte-order mark wins over both. Undecodable bytes become U+FFFD.
pub(crate) fn decode(body: &[u8], content_type: &str, kind: Kind) -> String {
    let label = charset_param(content_type).or_else(|| match kind {
        Kind::Html => meta_charset(body),
        _ => None,
    });
    let encoding = label
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_owned())
    })
}

/// The `charset` of a `<meta>` in the first KiB of an HTML body.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(SNIFF_BYTES)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let value: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// A page in the asked format, with its title when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Converted {
    /// The page's title (HTML), if any.
    pub(crate) title: Option<String>,
    /// The content in the asked format.
    pub(crate) content: String,
}

/// Why a body cannot be given in the asked format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConvertError {
    /// `json` asked of a body that is not JSON.
    #[error(
        "the response is not valid JSON ({reason}; content type {content_type}); ask for format \"text\" or \"markdown\" instead"
    )]
    NotJson {
        /// The parser's complaint.
        reason: String,
        /// The response's content type.
        content_type: String,
    },
}

/// Convert a decoded body of `kind` to `format`. `url` (the final one) makes relative links
/// absolute.
pub(crate) fn convert(
    text: &str,
    kind: Kind,
    format: Format,
    url: &str,
    content_type: &str,
) -> Result<Converted, ConvertError> {
    match (format, kind) {
        (Format::Html, _) => Ok(Converted {
            title: (kind == Kind::Html).then(|| html_title(text)).flatten(),
            content: text.to_owned(),
        }),
        (Format::Json, _) => {
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| ConvertError::NotJson {
                    reason: e.to_string(),
                    content_type: content_type.to_owned(),
                })?;
            Ok(Converted {
                title: None,
                content: serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned()),
            })
        }
        (Format::Markdown, Kind::Html) => Ok(readable(text, url, TextMode::Markdown)),
        (Format::Text, Kind::Html) => Ok(readable(text, url, TextMode::Formatted)),
        (Format::Markdown | Format::Text, Kind::Json) => Ok(Converted {
            title: None,
            // Pretty-printed when it parses: easier to read and page through.
            content: serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| text.to_owned()),
        }),
        (Format::Markdown | Format::Text, Kind::Text) => Ok(Converted {
            title: None,
            content: text.to_owned(),
        }),
    }
}

/// The article of an HTML page in `mode` (markdown or plain text), or the whole body without
/// its chrome when Readability finds no article.
fn readable(html: &str, url: &str, mode: TextMode) -> Converted {
    let config = Config {
        text_mode: mode,
        ..Config::default()
    };
    // A URL Readability does not take (it must be absolute) only costs the link rewriting.
    let reader = Readability::new(html, Some(url), Some(config.clone()))
        .or_else(|_| Readability::new(html, None, Some(config)));
    let Ok(mut reader) = reader else {
        return Converted {
            title: None,
            content: html.to_owned(),
        };
    };
    if let Ok(article) = reader.parse() {
        let content = article.text_content.trim().to_owned();
        if !content.is_empty() {
            let title = article.title.trim();
            return Converted {
                title: (!title.is_empty()).then(|| title.to_owned()),
                content,
            };
        }
    }
    // No article: the whole page, without the chrome (a fresh parse: `parse` changed the tree).
    let whole = dom_smoothie::Readability::new(html, None, None).map(|r| {
        let title = r.get_article_title().trim().to_owned();
        let body = r.doc.select("body");
        let root = if body.exists() {
            body
        } else {
            r.doc.select("html")
        };
        let content = match mode {
            TextMode::Markdown => root
                .nodes()
                .iter()
                .map(|n| n.md(Some(CHROME_TAGS)).to_string())
                .collect::<String>(),
            _ => root.formatted_text().to_string(),
        };
        Converted {
            title: (!title.is_empty()).then_some(title),
            content: content.trim().to_owned(),
        }
    });
    whole.unwrap_or_else(|_| Converted {
        title: None,
        content: html.to_owned(),
    })
}

/// The `<title>` of an HTML page.
fn html_title(html: &str) -> Option<String> {
    let doc = scraper::Html::parse_document(html);
    let selector = scraper::Selector::parse("title").ok()?;
    let title = doc.select(&selector).next()?.text().collect::<String>();
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// One page of a text, by characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// The characters from `start_index`, at most `max_length` of them.
    pub(crate) content: String,
    /// Characters in the whole text.
    pub(crate) total_length: usize,
    /// Where the next page starts, `None` at the end.
    pub(crate) next_start_index: Option<usize>,
}

/// The page of `text` that starts at character `start` and holds at most `max` characters
/// (`max` ≥ 1). `None` when `start` is past the end (an empty text has one empty page at 0).
pub(crate) fn page(text: &str, start: usize, max: usize) -> Option<Page> {
    let total_length = text.chars().count();
    if start > total_length || (start == total_length && total_length > 0) {
        return None;
    }
    let mut chars = text.char_indices().skip(start);
    let from = chars.next().map_or(text.len(), |(at, _)| at);
    let to = text
        .char_indices()
        .nth(start + max)
        .map_or(text.len(), |(at, _)| at);
    let end = start + max;
    Some(Page {
        content: text[from..to].to_owned(),
        total_length,
        next_start_index: (end < total_length).then_some(end),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A news article wrapped in a site's navigation, ads, sidebar and footer.
    pub(crate) const ARTICLE: &str = include_str!("../../../tests/fixtures/fetch/article.html");

    #[test]
    fn content_types_are_sorted_into_text_and_not_text() {
        for (ct, kind) in [
            ("text/html; charset=utf-8", Some(Kind::Html)),
            ("application/xhtml+xml", Some(Kind::Html)),
            ("application/json", Some(Kind::Json)),
            ("application/ld+json", Some(Kind::Json)),
            ("text/plain", Some(Kind::Text)),
            ("text/markdown", Some(Kind::Text)),
            ("application/xml", Some(Kind::Text)),
            ("application/rss+xml", Some(Kind::Text)),
            ("image/png", None),
            ("application/pdf", None),
            ("application/zip", None),
            ("application/octet-stream", None),
            ("video/mp4", None),
        ] {
            assert_eq!(kind_of(&media_type(ct)), kind, "{ct}");
        }
        assert_eq!(sniff(b"<!DOCTYPE html><html>"), Some(Kind::Html));
        assert_eq!(sniff(b"hello"), Some(Kind::Text));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), None);
    }

    #[test]
    fn bodies_are_decoded_by_their_charset() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode(latin1, "text/plain; charset=ISO-8859-1", Kind::Text),
            "café"
        );
        let html = b"<html><head><meta charset=\"windows-1252\"></head><body>caf\xe9</body>";
        assert!(decode(html, "text/html", Kind::Html).contains("café"));
        assert_eq!(decode("café".as_bytes(), "text/plain", Kind::Text), "café");
    }

    #[test]
    fn an_article_becomes_markdown_without_the_boilerplate() {
        let out = convert(
            ARTICLE,
            Kind::Html,
            Format::Markdown,
            "https://news.example/2026/rivers",
            "text/html",
        )
        .unwrap();
        assert_eq!(out.title.as_deref(), Some("How rivers carve their valleys"));
        let md = &out.content;
        for kept in [
            "## Erosion at work",
            "## Meanders and floodplains",
            "Rivers shape the land",
            "[sediment transport](https://news.example/science/sediment)",
            "[USGS primer](https://www.usgs.gov/rivers)",
        ] {
            assert!(md.contains(kept), "missing {kept:?} in:\n{md}");
        }
        for dropped in [
            "Subscribe now",
            "Sponsored",
            "All rights reserved",
            "Home",
            "Trending",
        ] {
            assert!(!md.contains(dropped), "kept {dropped:?} in:\n{md}");
        }
        let text = convert(
            ARTICLE,
            Kind::Html,
            Format::Text,
            "https://news.example/",
            "text/html",
        )
        .unwrap()
        .content;
        assert!(text.contains("Rivers shape the land"), "{text}");
        assert!(!text.contains("##") && !text.contains("]("), "{text}");
    }

    #[test]
    fn a_short_page_keeps_its_heading_and_links() {
        let html = "<html><head><title>Index</title></head><body><nav>Menu</nav><h1>Files</h1><ul><li><a href=\"/a\">a.txt</a></li></ul><footer>Foot</footer></body></html>";
        let out = convert(
            html,
            Kind::Html,
            Format::Markdown,
            "https://x.example/",
            "text/html",
        )
        .unwrap();
        assert!(out.content.contains("Files"), "{}", out.content);
        assert!(
            out.content.contains("[a.txt](https://x.example/a)"),
            "{}",
            out.content
        );
        assert!(!out.content.contains("Foot"), "{}", out.content);
        assert_eq!(out.title.as_deref(), Some("Index"));
    }

    #[test]
    fn json_is_pretty_printed_and_non_json_is_refused_for_json() {
        let out = convert(
            "{\"a\":[1,2]}",
            Kind::Json,
            Format::Json,
            "https://x/",
            "application/json",
        )
        .unwrap();
        assert_eq!(out.content, "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
        let err = convert(
            "<p>no</p>",
            Kind::Html,
            Format::Json,
            "https://x/",
            "text/html",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("not valid JSON") && err.contains("text/html"),
            "{err}"
        );
        let raw = convert(
            "<p>raw</p>",
            Kind::Html,
            Format::Html,
            "https://x/",
            "text/html",
        )
        .unwrap();
        assert_eq!(raw.content, "<p>raw</p>");
    }

    #[test]
    fn pages_reassemble_the_text_with_no_gap_or_overlap() {
        let text = "héllo wörld, ünïcode ✓ and more";
        let total = text.chars().count();
        for max in [1, 3, 7, total, total + 5] {
            let mut start = 0;
            let mut joined = String::new();
            loop {
                let p = page(text, start, max).unwrap();
                assert_eq!(p.total_length, total);
                assert!(p.content.chars().count() <= max);
                joined.push_str(&p.content);
                match p.next_start_index {
                    Some(next) => start = next,
                    None => break,
                }
            }
            assert_eq!(joined, text, "max {max}");
        }
        assert_eq!(page(text, total, 5), None);
        assert_eq!(page(text, total + 1, 5), None);
        assert_eq!(
            page("", 0, 5),
            Some(Page {
                content: String::new(),
                total_length: 0,
                next_start_index: None
            })
        );
    }
}
