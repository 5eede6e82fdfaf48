//! The DuckDuckGo result page parser (crates/toolport-tools/src/tools/web/duckduckgo.rs,
//! through its door `fuzz_parse`).
//!
//! Input: one byte choosing the hit count (1..=10, as `web_search` asks), then the page body
//! (any bytes; the parser reads them as lossy UTF-8). Property: no panic; a page that parses
//! gives at most `count` hits, each with a non-empty title and a distinct URL that parses with
//! an http(s) scheme (never a DuckDuckGo ad link).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolport_tools::host::fuzz_duckduckgo;

fuzz_target!(|data: &[u8]| {
    let Some((&count, body)) = data.split_first() else {
        return;
    };
    let count = usize::from(count % 10) + 1;
    let Ok(hits) = fuzz_duckduckgo(body, count) else {
        return;
    };
    assert!(
        hits.len() <= count,
        "{} hits for a count of {count}",
        hits.len()
    );
    let mut seen = std::collections::HashSet::new();
    for (title, url, _snippet) in &hits {
        assert!(!title.is_empty(), "a hit without a title: {url}");
        // As the provider layer defines a web URL (`is_web_url`): it parses, scheme http(s).
        // The text is DuckDuckGo's `uddg` value as given, not re-serialised: `https:*/x` is
        // a URL with host `*` to the parser.
        let parsed = url::Url::parse(url).unwrap_or_else(|e| panic!("{url:?}: {e}"));
        assert!(
            matches!(parsed.scheme(), "http" | "https"),
            "not a web URL: {url:?}"
        );
        assert!(
            !(parsed.host_str() == Some("duckduckgo.com") && parsed.path().starts_with("/y.js")),
            "an ad link: {url}"
        );
        assert!(seen.insert(url.clone()), "a duplicate URL: {url}");
    }
});
