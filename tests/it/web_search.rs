//! web_search, fully offline, against the fixture server of [`crate::common::web_fixture`],
//! which plays every provider. Most tests call the tool in-process through the registry; the
//! happy path, the all-fail case and key redaction also go through the real binary over MCP.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::header;
use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use toolport::config::{Cli, Config};
use toolport_tools::{ExecuteError, ToolContext, ToolOutput, ToolRegistry};

use crate::common::web_fixture::{BRAVE_KEY, Fixture, GOOGLE_KEY, TAVILY_KEY};
use crate::common::*;

/// The registry built from a config file, as the binary builds it, and a local context.
struct Harness {
    registry: ToolRegistry,
    ctx: ToolContext,
    _dir: tempfile::TempDir,
}

impl Harness {
    fn new(config_text: &str) -> Self {
        let (dir, path) = tempdir();
        let file = config_file(&path, config_text);
        let cli = <Cli as clap::Parser>::try_parse_from([
            "toolport",
            "--root",
            path.to_str().unwrap(),
            "--config",
            file.to_str().unwrap(),
        ])
        .unwrap();
        let config = Config::load(&cli.global, |_| None).unwrap();
        let shared = toolport::build(&config).unwrap();
        let registry = (*shared.registry.load()).clone();
        let ctx = ToolContext::local(shared.workspace, shared.confirm_fallback);
        Self {
            registry,
            ctx,
            _dir: dir,
        }
    }

    async fn call(&self, args: Value) -> Result<ToolOutput, String> {
        let args = args.as_object().cloned().unwrap();
        match within(self.registry.execute("web_search", args, &self.ctx)).await {
            Ok(out) => Ok(out),
            Err(ExecuteError::Tool(e)) => Err(e.to_string()),
            Err(other) => panic!("not a tool error: {other}"),
        }
    }

    async fn ok(&self, args: Value) -> (Value, String) {
        match self.call(args).await {
            Ok(out) => (out.structured.unwrap(), out.text),
            Err(e) => panic!("expected success, got: {e}"),
        }
    }

    async fn err(&self, args: Value) -> String {
        match self.call(args).await {
            Ok(out) => panic!("expected an error, got: {}", out.text),
            Err(e) => e,
        }
    }
}

async fn harness(providers: &[(&str, &str)], global: &str) -> (Fixture, Harness) {
    let fx = Fixture::start().await;
    let h = Harness::new(&fx.config(providers, global));
    (fx, h)
}

fn q(query: &str) -> Value {
    json!({"query": query})
}

/// The three results every "ok" fixture starts with, as (title, url).
const ASYNC_BOOK: (&str, &str) = (
    "Asynchronous Programming in Rust",
    "https://rust-lang.github.io/async-book/",
);
const TOKIO: (&str, &str) = (
    "Async in depth | Tokio - An asynchronous Rust runtime",
    "https://tokio.rs/tokio/tutorial/async",
);

fn titles_and_urls(out: &Value) -> Vec<(String, String)> {
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["title"].as_str().unwrap().to_owned(),
                r["url"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

// ---- happy paths, one per provider -------------------------------------------------------

#[tokio::test]
async fn duckduckgo_happy_path_decodes_redirect_links() {
    let (fx, h) = harness(&[("duckduckgo", "ok")], "").await;
    let (out, text) = h
        .ok(json!({"query": "  rust   async book ", "num_results": 5}))
        .await;
    assert_eq!(
        out,
        json!({
            "query": "rust async book",
            "results": [
                {
                    "title": "Asynchronous Programming in Rust",
                    "url": "https://rust-lang.github.io/async-book/",
                    "snippet": "This book aims to be a comprehensive, up-to-date guide to Rust's async language features and libraries, appropriate for beginners and old hands alike.",
                    "provider": "duckduckgo",
                    "rank": 1,
                    "published": null
                },
                {
                    "title": "Async in depth | Tokio - An asynchronous Rust runtime",
                    "url": "https://tokio.rs/tokio/tutorial/async",
                    "snippet": "At this point, we have completed a fairly comprehensive tour of asynchronous Rust and Tokio. Now we will dig deeper into Rust's asynchronous runtime model.",
                    "provider": "duckduckgo",
                    "rank": 2,
                    "published": null
                },
                {
                    "title": "Fundamentals of Asynchronous Programming: Async, Await, Futures, and Streams - The Rust Programming Language",
                    "url": "https://doc.rust-lang.org/book/ch17-00-async-await.html?highlight=async&x=1",
                    "snippet": "Many operations we ask the computer to do can take a while to finish. It would be nice if we could do something else while we are waiting for those long-running processes to complete.",
                    "provider": "duckduckgo",
                    "rank": 3,
                    "published": null
                }
            ],
            "provider": "duckduckgo",
            "cached": false,
            "failover": []
        })
    );
    assert!(
        text.starts_with("3 results for \"rust async book\" from DuckDuckGo:\n\n1. Asynchronous Programming in Rust\n   https://rust-lang.github.io/async-book/\n"),
        "{text}"
    );
    let sent = fx.requests_to("duckduckgo");
    assert_eq!(sent.len(), 1);
    assert_eq!(
        String::from_utf8_lossy(&sent[0].body),
        "q=rust+async+book&b="
    );
    let agent = sent[0].headers[header::USER_AGENT].to_str().unwrap();
    assert!(agent.starts_with("Mozilla/5.0"), "{agent}");
}

#[tokio::test]
async fn brave_happy_path_sends_the_key_in_its_header() {
    let (fx, h) = harness(&[("brave", "ok")], "").await;
    let (out, _) = h
        .ok(json!({"query": "rust async book", "num_results": 2}))
        .await;
    assert_eq!(out["provider"], "brave");
    assert_eq!(titles_and_urls(&out), pairs(&[ASYNC_BOOK, TOKIO]));
    assert_eq!(
        out["results"][0],
        json!({
            "title": "Asynchronous Programming in Rust",
            "url": "https://rust-lang.github.io/async-book/",
            "snippet": "This book aims to be a comprehensive, up-to-date guide to Rust's async language features and libraries.",
            "provider": "brave",
            "rank": 1,
            "published": "2024-09-12T08:11:04"
        })
    );
    let sent = &fx.requests_to("brave")[0];
    assert_eq!(sent.headers["x-subscription-token"], BRAVE_KEY);
    assert!(
        sent.uri
            .ends_with("/res/v1/web/search?q=rust+async+book&count=2"),
        "{}",
        sent.uri
    );
    let agent = sent.headers[header::USER_AGENT].to_str().unwrap();
    assert!(agent.starts_with("toolport/"), "{agent}");
}

#[tokio::test]
async fn google_happy_path_keeps_the_key_out_of_the_url() {
    let (fx, h) = harness(&[("google", "ok")], "").await;
    let (out, _) = h
        .ok(json!({"query": "rust async book", "num_results": 3}))
        .await;
    assert_eq!(out["provider"], "google");
    assert_eq!(titles_and_urls(&out), pairs(&[ASYNC_BOOK, TOKIO]));
    assert_eq!(
        out["results"][0]["snippet"],
        "This book aims to be a comprehensive, up-to-date guide to Rust's async language features and libraries, appropriate for beginners and old hands alike."
    );
    let sent = &fx.requests_to("google")[0];
    assert_eq!(sent.headers["x-goog-api-key"], GOOGLE_KEY);
    assert!(
        sent.uri
            .ends_with("/customsearch/v1?cx=test-cx&q=rust+async+book&num=3"),
        "{}",
        sent.uri
    );
    assert!(!sent.uri.contains(GOOGLE_KEY));
}

#[tokio::test]
async fn searxng_happy_path_asks_for_json_and_cuts_the_list() {
    let (fx, h) = harness(&[("searxng", "ok")], "").await;
    let (out, _) = h
        .ok(json!({"query": "rust async book", "num_results": 2}))
        .await;
    assert_eq!(out["provider"], "searxng");
    assert_eq!(titles_and_urls(&out), pairs(&[ASYNC_BOOK, TOKIO]));
    assert_eq!(out["results"][1]["published"], "2024-05-02T00:00:00");
    let sent = &fx.requests_to("searxng")[0];
    assert!(
        sent.uri.ends_with("/search?q=rust+async+book&format=json"),
        "{}",
        sent.uri
    );
}

#[tokio::test]
async fn tavily_happy_path_posts_json_with_a_bearer_key() {
    let (fx, h) = harness(&[("tavily", "ok")], "").await;
    let (out, _) = h
        .ok(json!({"query": "rust async book", "num_results": 4}))
        .await;
    assert_eq!(out["provider"], "tavily");
    assert_eq!(titles_and_urls(&out), pairs(&[ASYNC_BOOK, TOKIO]));
    assert_eq!(
        out["results"][1]["published"],
        "Thu, 02 May 2024 00:00:00 GMT"
    );
    let sent = &fx.requests_to("tavily")[0];
    assert_eq!(
        sent.headers[header::AUTHORIZATION],
        format!("Bearer {TAVILY_KEY}").as_str()
    );
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body,
        json!({"query": "rust async book", "max_results": 4, "search_depth": "basic", "include_answer": false})
    );
}

// ---- DuckDuckGo's page variants ----------------------------------------------------------

#[tokio::test]
async fn duckduckgo_ads_are_skipped() {
    let (_fx, h) = harness(&[("duckduckgo", "ads")], "").await;
    let (out, _) = h
        .ok(json!({"query": "rust async book", "num_results": 2}))
        .await;
    assert_eq!(titles_and_urls(&out), pairs(&[ASYNC_BOOK, TOKIO]));
    assert_eq!(out["results"][0]["rank"], 1);
}

#[tokio::test]
async fn duckduckgo_bot_challenge_is_a_failure_that_fails_over() {
    let (_fx, h) = harness(&[("duckduckgo", "bot"), ("searxng", "ok")], "").await;
    let (out, text) = h.ok(q("rust async book")).await;
    assert_eq!(out["provider"], "searxng");
    assert_eq!(out["failover"][0]["provider"], "duckduckgo");
    let why = out["failover"][0]["error"].as_str().unwrap();
    assert!(why.contains("bot-challenge page"), "{why}");
    assert!(
        text.contains(
            "Failover: SearXNG answered after\n- DuckDuckGo answered with its bot-challenge page"
        ),
        "{text}"
    );

    // The same page with a 403 is recognised too.
    let (_fx, h) = harness(&[("duckduckgo", "bot403")], "").await;
    let err = h.err(q("rust async book")).await;
    assert!(err.contains("bot-challenge page"), "{err}");
}

#[tokio::test]
async fn duckduckgo_changed_markup_is_a_parse_failure() {
    let (_fx, h) = harness(&[("duckduckgo", "changed")], "").await;
    let err = h.err(q("rust async book")).await;
    assert!(
        err.contains("could not parse DuckDuckGo response")
            && err.contains("layout may have changed"),
        "{err}"
    );
    assert!(
        err.ends_with("Configure another provider for failover (TOOLPORT_BRAVE_API_KEY, TOOLPORT_TAVILY_API_KEY, TOOLPORT_GOOGLE_API_KEY with TOOLPORT_GOOGLE_CX, or TOOLPORT_SEARXNG_URL)."),
        "with one provider, the error says how to add another: {err}"
    );
}

// ---- failover and failure modes ----------------------------------------------------------

#[tokio::test]
async fn failover_moves_to_the_next_provider_and_says_so() {
    let (fx, h) = harness(
        &[("brave", "s500"), ("google", "s401"), ("duckduckgo", "ok")],
        "",
    )
    .await;
    let (out, text) = h.ok(q("rust async book")).await;
    assert_eq!(out["provider"], "duckduckgo");
    assert_eq!(out["results"][0]["provider"], "duckduckgo");
    assert_eq!(
        out["failover"],
        json!([
            {"provider": "brave", "error": "Brave returned HTTP 500 (internal error)"},
            {"provider": "google", "error": "Google 401: check TOOLPORT_GOOGLE_API_KEY and TOOLPORT_GOOGLE_CX, and that the Custom Search API is enabled for the key's project (Unauthorized)"}
        ])
    );
    assert!(text.contains("- Brave returned HTTP 500"), "{text}");
    assert_eq!(fx.requests().len(), 3);
}

#[tokio::test]
async fn all_providers_failing_lists_each_failure() {
    let (_fx, h) = harness(
        &[
            ("brave", "s401"),
            ("searxng", "s403"),
            ("tavily", "malformed"),
            ("duckduckgo", "changed"),
        ],
        "",
    )
    .await;
    let err = h.err(q("rust async book")).await;
    assert!(
        err.starts_with("unavailable: every search provider failed:\n"),
        "{err}"
    );
    for expected in [
        "- Brave 401: check TOOLPORT_BRAVE_API_KEY (Unauthorized)",
        "- SearXNG returned 403: enable json in search.formats",
        "- could not parse Tavily response: the JSON is not as expected",
        "- could not parse DuckDuckGo response",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in {err}");
    }
}

#[tokio::test]
async fn no_results_anywhere_is_a_not_found_error() {
    let (_fx, h) = harness(
        &[
            ("brave", "empty"),
            ("google", "empty"),
            ("searxng", "empty"),
            ("tavily", "empty"),
            ("duckduckgo", "empty"),
        ],
        "",
    )
    .await;
    let err = h.err(q("zzqxv nothing matches")).await;
    assert!(
        err.starts_with("not found: no results for \"zzqxv nothing matches\""),
        "{err}"
    );
    for name in ["Brave", "Google", "SearXNG", "Tavily", "DuckDuckGo"] {
        assert!(
            err.contains(&format!("- {name}: no results for this query")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_timeout_fails_over() {
    let (_fx, h) = harness(
        &[("brave", "hang"), ("duckduckgo", "ok")],
        "timeout = \"400ms\"",
    )
    .await;
    let started = Instant::now();
    let (out, _) = h.ok(q("rust async book")).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out["provider"], "duckduckgo");
    assert_eq!(
        out["failover"][0]["error"],
        "Brave: no complete answer within 400ms (web.timeout)"
    );
}

#[tokio::test]
async fn the_call_time_budget_bounds_the_whole_search() {
    let (fx, h) = harness(
        &[("brave", "hang"), ("duckduckgo", "ok")],
        "call_timeout = \"500ms\"",
    )
    .await;
    let started = Instant::now();
    let err = h.err(q("rust async book")).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err,
        "unavailable: every search provider failed:\n- Brave: cut off, the call's time budget of 500ms (web.call_timeout) ran out\n- DuckDuckGo: not tried, no time left"
    );
    assert!(
        fx.requests_to("duckduckgo").is_empty(),
        "no time left to ask"
    );
}

#[tokio::test]
async fn a_cancelled_search_stops_at_once() {
    let (fx, h) = harness(&[("brave", "hang")], "timeout = \"30s\"").await;
    let h = Arc::new(h);
    let started = Instant::now();
    let search = tokio::spawn({
        let h = h.clone();
        async move { h.err(q("rust async book")).await }
    });
    fx.arrived().await;
    h.ctx.cancel.cancel();
    let err = within(search).await.unwrap();
    assert_eq!(err, "cancelled: the search was cancelled");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_unreachable_provider_fails_over() {
    let fx = Fixture::start().await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let text = fx
        .config(&[("searxng", "ok"), ("duckduckgo", "ok")], "")
        .replacen(
            &format!("[web.searxng]\nbase_url = \"http://{}", fx.addr),
            &format!("[web.searxng]\nbase_url = \"http://{closed}"),
            1,
        );
    assert!(text.contains(&closed.to_string()));
    let h = Harness::new(&text);
    let (out, _) = h.ok(q("rust async book")).await;
    assert_eq!(out["provider"], "duckduckgo");
    let why = out["failover"][0]["error"].as_str().unwrap();
    assert!(why.starts_with("SearXNG: could not connect ("), "{why}");
    assert!(
        !why.contains(&closed.to_string()),
        "no URL in errors: {why}"
    );
}

#[tokio::test]
async fn an_oversized_body_fails_over() {
    let (_fx, h) = harness(
        &[("brave", "huge"), ("duckduckgo", "ok")],
        "max_response_bytes = 65536",
    )
    .await;
    let (out, _) = h.ok(q("rust async book")).await;
    assert_eq!(
        out["failover"][0]["error"],
        "Brave: the response is larger than 65536 bytes (web.max_response_bytes); not read further"
    );
}

#[tokio::test]
async fn malformed_and_unexpected_json_are_parse_failures() {
    let (_fx, h) = harness(
        &[
            ("brave", "malformed"),
            ("google", "wrongshape"),
            ("duckduckgo", "ok"),
        ],
        "",
    )
    .await;
    let (out, _) = h.ok(q("rust async book")).await;
    let errors: Vec<&str> = out["failover"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["error"].as_str().unwrap())
        .collect();
    assert!(
        errors[0].starts_with("could not parse Brave response: the JSON is not as expected"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("could not parse Google response: the JSON is not as expected"),
        "{errors:?}"
    );
}

#[tokio::test]
async fn forbidden_and_unauthorized_name_what_to_check() {
    let (_fx, h) = harness(
        &[
            ("tavily", "s401"),
            ("searxng", "s403"),
            ("duckduckgo", "s403"),
        ],
        "",
    )
    .await;
    let err = h.err(q("rust async book")).await;
    assert!(
        err.contains("- Tavily 401: check TOOLPORT_TAVILY_API_KEY"),
        "{err}"
    );
    assert!(
        err.contains(
            "- SearXNG returned 403: enable json in search.formats (in the instance's settings.yml)"
        ),
        "{err}"
    );
    assert!(
        err.contains("- DuckDuckGo 403: the request was refused"),
        "{err}"
    );
}

#[tokio::test]
async fn redirects_are_followed_on_the_same_host_only() {
    let (fx, h) = harness(
        &[("brave", "redirect-away"), ("searxng", "redirect-here")],
        "",
    )
    .await;
    let (out, _) = h.ok(q("rust async book")).await;
    assert_eq!(
        out["provider"], "searxng",
        "the same-host redirect was followed"
    );
    assert_eq!(out["failover"][0]["error"], "Brave returned HTTP 302");
    let brave: Vec<String> = fx
        .requests_to("brave")
        .iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(
        brave.len(),
        1,
        "the key did not follow the redirect: {brave:?}"
    );
}

// ---- throttle and 429 --------------------------------------------------------------------

#[tokio::test]
async fn throttle_queues_calls_instead_of_failing_them() {
    let fx = Fixture::start().await;
    let config = fx
        .config(&[("duckduckgo", "ok")], "")
        .replace("min_interval = \"0s\"", "min_interval = \"250ms\"");
    let h = Arc::new(Harness::new(&config));
    let started = Instant::now();
    let calls = (0..3).map(|i| {
        let h = h.clone();
        async move { h.ok(q(&format!("query {i}"))).await }
    });
    let outs = futures::future::join_all(calls).await;
    assert!(outs.iter().all(|(out, _)| out["provider"] == "duckduckgo"));
    let mut times: Vec<Instant> = fx.requests().iter().map(|r| r.at).collect();
    times.sort();
    assert_eq!(times.len(), 3);
    for pair in times.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(200), "requests {gap:?} apart");
    }
    assert!(started.elapsed() >= Duration::from_millis(450));
}

#[tokio::test]
async fn rate_limit_429_honours_retry_after() {
    let (fx, h) = harness(&[("brave", "r429once"), ("duckduckgo", "ok")], "").await;
    let started = Instant::now();
    let (out, _) = h.ok(q("rust async book")).await;
    assert_eq!(out["provider"], "brave", "retried, not failed over");
    assert_eq!(out["failover"], json!([]));
    let sent = fx.requests_to("brave");
    assert_eq!(sent.len(), 2);
    assert!(
        sent[1].at - sent[0].at >= Duration::from_millis(950),
        "waited Retry-After: 1"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn rate_limit_429_with_a_long_retry_after_fails_over_at_once() {
    let (fx, h) = harness(&[("brave", "r429long"), ("duckduckgo", "ok")], "").await;
    let started = Instant::now();
    let (out, _) = h.ok(q("rust async book")).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(out["provider"], "duckduckgo");
    assert_eq!(
        out["failover"][0]["error"],
        "Brave 429: rate limited; it asks to retry after 3600 s, longer than toolport waits (web.max_retry_wait = 2s)"
    );
    assert_eq!(fx.requests_to("brave").len(), 1);
}

#[tokio::test]
async fn rate_limit_429_retries_are_bounded() {
    let (fx, h) = harness(
        &[("tavily", "r429always"), ("duckduckgo", "ok")],
        "max_retries = 2",
    )
    .await;
    let (out, _) = h.ok(q("rust async book")).await;
    assert_eq!(out["provider"], "duckduckgo");
    assert_eq!(
        out["failover"][0]["error"],
        "Tavily 429: rate limited, still after 2 retries (web.max_retries); the plan's quota may be used up"
    );
    assert_eq!(fx.requests_to("tavily").len(), 3);
}

// ---- cache -------------------------------------------------------------------------------

#[tokio::test]
async fn cache_hit_for_the_same_normalised_query_and_count() {
    let (fx, h) = harness(&[("duckduckgo", "ok")], "cache_ttl = \"10m\"").await;
    let (first, _) = h
        .ok(json!({"query": "Rust async  book", "num_results": 3}))
        .await;
    assert_eq!(first["cached"], false);
    let (second, text) = h
        .ok(json!({"query": " rust ASYNC book", "num_results": 3}))
        .await;
    assert_eq!(second["cached"], true);
    assert!(text.contains("from DuckDuckGo (cached):"), "{text}");
    assert_eq!(second["results"], first["results"]);
    assert_eq!(fx.requests().len(), 1, "answered from the cache");
    let (third, _) = h
        .ok(json!({"query": "rust async book", "num_results": 2}))
        .await;
    assert_eq!(third["cached"], false, "another count is another entry");
    assert_eq!(fx.requests().len(), 2);
}

// ---- query limits ------------------------------------------------------------------------

#[tokio::test]
async fn query_limits_are_clear_errors() {
    let (fx, h) = harness(&[("duckduckgo", "ok")], "").await;
    let err = h.err(q("")).await;
    assert!(
        err.contains("`query`") && err.contains("shorter than 1 character"),
        "{err}"
    );
    let err = h.err(q("  \t ")).await;
    assert!(err.contains("`query` is empty"), "{err}");
    let err = h.err(q(&"a".repeat(401))).await;
    assert!(
        err.contains("`query`") && err.contains("longer than 400 characters"),
        "{err}"
    );
    assert!(
        h.call(q(&"é".repeat(400))).await.is_ok(),
        "400 characters (not bytes) are fine"
    );
    let err = h.err(json!({"query": "rust", "num_results": 0})).await;
    assert!(
        err.contains("`num_results`") && err.contains("less than the minimum of 1"),
        "{err}"
    );
    let err = h.err(json!({"query": "rust", "num_results": 11})).await;
    assert!(
        err.contains("`num_results`") && err.contains("greater than the maximum of 10"),
        "{err}"
    );
    let err = h.err(json!({"query": "rust", "api_key": "x"})).await;
    assert!(err.contains("api_key"), "{err}");
    assert_eq!(
        fx.requests().len(),
        1,
        "only the valid call reached a provider"
    );
}

// ---- secrets -----------------------------------------------------------------------------

fn assert_no_keys(what: &str, text: &str) {
    for key in [BRAVE_KEY, GOOGLE_KEY, TAVILY_KEY] {
        assert!(!text.contains(key), "{what} contains the key {key}: {text}");
    }
}

#[tokio::test]
async fn keys_are_redacted_from_results_errors_and_logs() {
    let fx = Fixture::start().await;
    let (_d, root) = tempdir();
    // Every keyed provider echoes its credential back in its error message.
    let config = config_file(
        &root,
        &fx.config(
            &[
                ("brave", "echo"),
                ("google", "echo"),
                ("tavily", "echo"),
                ("duckduckgo", "ok"),
            ],
            "",
        ),
    );
    let mut cmd = command(&root, &["--config", config.to_str().unwrap()]);
    cmd.env("RUST_LOG", "trace");
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = stderr.unwrap();
    let log = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let client = within(TestClient::default().serve(transport))
        .await
        .unwrap();
    let result = call(&client, "web_search", q("rust async book")).await;
    let out = ok(&result);
    assert_eq!(out["provider"], "duckduckgo");
    assert_eq!(
        out["failover"][0]["error"],
        "Brave 401: check TOOLPORT_BRAVE_API_KEY (invalid credential ********)"
    );
    assert_eq!(
        out["failover"][2]["error"],
        "Tavily 401: check TOOLPORT_TAVILY_API_KEY (invalid credential Bearer ********)"
    );
    assert_no_keys("the structured result", &out.to_string());
    assert_no_keys("the text result", &text(&result));

    let config_out =
        within(command(&root, &["--config", config.to_str().unwrap(), "config"]).output())
            .await
            .unwrap();
    let shown = String::from_utf8_lossy(&config_out.stdout);
    assert!(
        shown.contains("#   web.brave.api_key: set in the config file (a secret: never printed;"),
        "{shown}"
    );
    assert_no_keys("`toolport config`", &shown);

    // A clean shutdown closes the server's stderr, which ends the captured log.
    within(client.cancel()).await.unwrap();
    let log = within(log).await.unwrap();
    assert!(
        log.contains("search provider failed"),
        "logs were captured: {log}"
    );
    assert_no_keys("the server's log", &log);
    assert!(
        log.lines()
            .any(|l| l.contains("hyper") || l.contains("reqwest")),
        "the HTTP stack's trace logs were captured too"
    );
    // The keys did reach the fixture, in headers.
    assert_eq!(
        fx.requests_to("google")[0].headers["x-goog-api-key"],
        GOOGLE_KEY
    );
}

// ---- through the real binary over MCP ----------------------------------------------------

async fn connect_web(fx: &Fixture, root: &std::path::Path, providers: &[(&str, &str)]) -> Client {
    connect_configured(root, &fx.config(providers, ""), TestClient::default()).await
}

#[tokio::test]
async fn mcp_web_search_happy_path() {
    let fx = Fixture::start().await;
    let (_d, root) = tempdir();
    let client = connect_web(&fx, &root, &[("duckduckgo", "ok")]).await;
    let tools = within(client.list_all_tools()).await.unwrap();
    let tool = tools.iter().find(|t| t.name == "web_search").unwrap();
    let annotations = serde_json::to_value(tool.annotations.clone().unwrap()).unwrap();
    assert_eq!(
        pick(
            &annotations,
            &["readOnlyHint", "openWorldHint", "destructiveHint"]
        ),
        json!({"readOnlyHint": true, "openWorldHint": true, "destructiveHint": false})
    );
    assert!(tool.output_schema.is_some());

    let result = call(
        &client,
        "web_search",
        json!({"query": "rust async book", "num_results": 2}),
    )
    .await;
    let out = ok(&result);
    assert_eq!(out["provider"], "duckduckgo");
    assert_eq!(out["cached"], false);
    assert_eq!(titles_and_urls(&out), pairs(&[ASYNC_BOOK, TOKIO]));
    assert!(
        text(&result).starts_with("2 results for \"rust async book\" from DuckDuckGo:"),
        "{}",
        text(&result)
    );

    // The provider request is counted in the metrics.
    let metrics = within(
        client.read_resource(rmcp::model::ReadResourceRequestParams::new(
            "toolport://metrics",
        )),
    )
    .await
    .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text: body, .. } =
        &metrics.contents[0]
    else {
        panic!("the metrics resource is text");
    };
    let metrics: Value = serde_json::from_str(body).unwrap();
    assert!(
        metrics["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "toolport_web_requests_total"
                && m["labels"] == json!({"provider": "duckduckgo", "outcome": "ok"})
                && m["value"] == json!(1.0)),
        "{metrics}"
    );
}

#[tokio::test]
async fn mcp_web_search_all_fail_is_an_error_result() {
    let fx = Fixture::start().await;
    let (_d, root) = tempdir();
    let client = connect_web(
        &fx,
        &root,
        &[
            ("brave", "s401"),
            ("searxng", "s403"),
            ("duckduckgo", "bot"),
        ],
    )
    .await;
    let result = call(&client, "web_search", q("rust async book")).await;
    let message = err(&result);
    assert!(
        message.contains("every search provider failed"),
        "{message}"
    );
    assert!(
        message.contains("Brave 401: check TOOLPORT_BRAVE_API_KEY"),
        "{message}"
    );
    assert!(
        message.contains("SearXNG returned 403: enable json in search.formats"),
        "{message}"
    );
    assert!(
        message.contains("DuckDuckGo answered with its bot-challenge page"),
        "{message}"
    );
}
