//! fetch_url through the real binary over MCP, fully offline: a local axum fixture on
//! 127.0.0.1 serves an article, JSON, an image, redirects, an endless body and a slow page.
//! The fixture is only reachable with `allow_private` (or `allowed_hosts`); the guard tests
//! run with the default settings and check that the fixture saw no request at all.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::process::eventually;
use crate::common::*;

const ARTICLE: &str = include_str!("../../crates/toolport-tools/tests/fixtures/fetch/article.html");

/// Settings that let the fetch reach the fixture, without a throttle.
const OPEN: &str = "[web.fetch]\nallow_private = true\nmin_interval = \"0s\"\n";

/// The fixture server: counts every request it gets.
struct Site {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A redirect to the fixture's article through a URL with credentials in it.
async fn credentialed_redirect(headers: axum::http::HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let to = format!("http://{USER}:{PASSWORD}@{host}/article");
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// The userinfo planted in URLs: neither part may ever be repeated.
const USER: &str = "alice-planted";
const PASSWORD: &str = "s3cretpw-planted";

async fn redirect(Query(q): Query<std::collections::HashMap<String, String>>) -> Response {
    let to = q.get("to").cloned().unwrap_or_else(|| "/article".into());
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

impl Site {
    async fn start() -> Self {
        let hits = Arc::new(AtomicUsize::new(0));
        let app = axum::Router::new()
            .route(
                "/article",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                        ARTICLE,
                    )
                }),
            )
            .route(
                "/data.json",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        r#"{"name":"toolport","tools":["fetch_url","web_search"]}"#,
                    )
                }),
            )
            .route(
                "/notes.txt",
                get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "plain notes\n") }),
            )
            .route(
                "/image.png",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "image/png")],
                        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
                    )
                }),
            )
            .route(
                "/robots.txt",
                get(|| async { "User-agent: *\nDisallow: /private\n" }),
            )
            .route("/private", get(|| async { "private notes" }))
            .route("/redirect", get(redirect))
            .route("/credentialed-redirect", get(credentialed_redirect))
            .route(
                "/loop",
                get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }),
            )
            .route(
                "/missing",
                get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
            )
            .route(
                "/endless",
                get(|| async {
                    // A body that never ends: only a reader that stops at its cap returns.
                    let chunk = bytes::Bytes::from(vec![b'a'; 64 * 1024]);
                    let stream = futures::stream::repeat_with(move || {
                        Ok::<_, std::io::Error>(chunk.clone())
                    });
                    (
                        [(header::CONTENT_TYPE, "text/plain")],
                        Body::from_stream(stream),
                    )
                }),
            )
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(20)).await;
                    "too late"
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                hits.clone(),
                |State(hits): State<Arc<AtomicUsize>>,
                 request: axum::extract::Request,
                 next: axum::middleware::Next| async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    next.run(request).await
                },
            ));
        let listener = within(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, hits, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn server(toml: &str) -> (tempfile::TempDir, Client) {
    let (dir, root) = tempdir();
    let client = connect_configured(&root, toml, TestClient::default()).await;
    (dir, client)
}

async fn fetch(client: &Client, args: Value) -> rmcp::model::CallToolResult {
    call(client, "fetch_url", args).await
}

#[tokio::test]
async fn an_article_comes_back_as_markdown_without_the_boilerplate() {
    let site = Site::start().await;
    let (_dir, client) = server(OPEN).await;
    let out = ok(&fetch(&client, json!({"url": site.url("/article")})).await);
    assert_eq!(
        pick(
            &out,
            &[
                "url",
                "status",
                "content_type",
                "title",
                "next_start_index",
                "truncated",
                "cached"
            ]
        ),
        json!({
            "url": site.url("/article"),
            "status": 200,
            "content_type": "text/html; charset=utf-8",
            "title": "How rivers carve their valleys",
            "next_start_index": null,
            "truncated": false,
            "cached": false
        })
    );
    let md = out["content"].as_str().unwrap();
    for kept in [
        "## Erosion at work",
        "## Meanders and floodplains",
        "Rivers shape the land more than any other force",
        &format!("[sediment transport]({})", site.url("/science/sediment")),
        "[USGS primer](https://www.usgs.gov/rivers)",
    ] {
        assert!(md.contains(kept), "missing {kept:?} in:\n{md}");
    }
    for dropped in [
        "Subscribe now",
        "Sponsored",
        "All rights reserved",
        "Trending",
        "Log in",
    ] {
        assert!(!md.contains(dropped), "kept {dropped:?} in:\n{md}");
    }
    assert_eq!(out["total_length"], json!(md.chars().count()));
    assert!(out["fetched_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn text_html_and_json_formats() {
    let site = Site::start().await;
    let (_dir, client) = server(OPEN).await;
    let text = ok(&fetch(
        &client,
        json!({"url": site.url("/article"), "format": "text"}),
    )
    .await);
    let content = text["content"].as_str().unwrap();
    assert!(content.contains("Rivers shape the land"), "{content}");
    assert!(!content.contains("##") && !content.contains("](") && !content.contains("Sponsored"));

    let html = ok(&fetch(
        &client,
        json!({"url": site.url("/article"), "format": "html"}),
    )
    .await);
    assert_eq!(html["content"], json!(ARTICLE));
    assert_eq!(html["title"], json!("How rivers carve their valleys"));

    let data = ok(&fetch(
        &client,
        json!({"url": site.url("/data.json"), "format": "json"}),
    )
    .await);
    assert_eq!(
        data["content"],
        json!(
            "{\n  \"name\": \"toolport\",\n  \"tools\": [\n    \"fetch_url\",\n    \"web_search\"\n  ]\n}"
        )
    );
    assert_eq!(data["content_type"], json!("application/json"));

    let notes = ok(&fetch(&client, json!({"url": site.url("/notes.txt")})).await);
    assert_eq!(notes["content"], json!("plain notes\n"));

    let e = err(&fetch(
        &client,
        json!({"url": site.url("/article"), "format": "json"}),
    )
    .await);
    assert!(
        e.contains("not valid JSON") && e.contains("text/html"),
        "{e}"
    );
}

#[tokio::test]
async fn pages_reassemble_the_exact_content_and_come_from_the_cache() {
    let site = Site::start().await;
    let (_dir, client) = server(OPEN).await;
    let whole = ok(&fetch(
        &client,
        json!({"url": site.url("/article"), "max_length": 100_000}),
    )
    .await);
    assert_eq!(site.hits(), 1);
    let full = whole["content"].as_str().unwrap().to_owned();
    let total = full.chars().count();
    assert!(total > 1000, "{total}");

    let mut joined = String::new();
    let mut start = 0;
    let mut calls = 0;
    loop {
        let page = ok(&fetch(
            &client,
            json!({"url": site.url("/article"), "start_index": start, "max_length": 700}),
        )
        .await);
        calls += 1;
        assert_eq!(page["cached"], json!(true));
        assert_eq!(page["total_length"], json!(total));
        let content = page["content"].as_str().unwrap();
        assert!(content.chars().count() <= 700);
        joined.push_str(content);
        match page["next_start_index"].as_u64() {
            Some(next) => {
                assert_eq!(page["truncated"], json!(true));
                assert_eq!(next as usize, start + 700);
                start = next as usize;
            }
            None => {
                assert_eq!(page["truncated"], json!(false));
                break;
            }
        }
    }
    assert_eq!(joined, full);
    assert_eq!(calls, total.div_ceil(700));
    assert_eq!(site.hits(), 1, "every page came from the cache");

    let e = err(&fetch(
        &client,
        json!({"url": site.url("/article"), "start_index": total}),
    )
    .await);
    assert!(e.contains("past the end"), "{e}");
    let e = err(&fetch(
        &client,
        json!({"url": site.url("/article"), "max_length": 100_001}),
    )
    .await);
    assert!(e.contains("max_length") && e.contains("100000"), "{e}");
}

#[tokio::test]
async fn the_default_guard_refuses_local_addresses_before_connecting() {
    let site = Site::start().await;
    let (_dir, client) = server("").await;
    let port = site.addr.port();
    for (url, address, rule) in [
        (
            format!("http://127.0.0.1:{port}/article"),
            "127.0.0.1",
            "loopback",
        ),
        (format!("http://[::1]:{port}/article"), "::1", "loopback"),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            "169.254.169.254",
            "link-local",
        ),
        (
            format!("http://0x7f.1:{port}/article"),
            "127.0.0.1",
            "loopback",
        ),
        (
            format!("http://2130706433:{port}/article"),
            "127.0.0.1",
            "loopback",
        ),
        (
            format!("http://127.1:{port}/article"),
            "127.0.0.1",
            "loopback",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/article"),
            "::ffff:127.0.0.1",
            "loopback",
        ),
        (
            "http://100.64.0.1/".into(),
            "100.64.0.1",
            "carrier-grade NAT",
        ),
        ("http://[fc00::1]/".into(), "fc00::1", "unique local"),
        ("http://[fe80::1]/".into(), "fe80::1", "link-local"),
        ("http://224.0.0.1/".into(), "224.0.0.1", "multicast"),
        ("http://10.0.0.1/".into(), "10.0.0.1", "private"),
    ] {
        let e = err(&fetch(&client, json!({"url": url})).await);
        assert!(
            e.contains("permission denied") && e.contains(address) && e.contains(rule),
            "{url}: {e}"
        );
    }
    let e = err(&fetch(
        &client,
        json!({"url": format!("http://localhost:{port}/article")}),
    )
    .await);
    assert!(
        e.contains("localhost") && e.contains("allowed_hosts"),
        "{e}"
    );
    assert_eq!(site.hits(), 0, "no request reached the fixture");
}

#[tokio::test]
async fn schemes_and_credentials_are_refused() {
    let (_dir, client) = server(OPEN).await;
    for (url, expected) in [
        ("file:///etc/passwd", "scheme \"file\""),
        ("ftp://ftp.example.com/file.txt", "scheme \"ftp\""),
        ("http://user:pass@example.com/", "credentials"),
        ("example.com/page", "https://example.com/page"),
    ] {
        let e = err(&fetch(&client, json!({"url": url})).await);
        assert!(e.contains(expected), "{url}: {e}");
    }
}

/// A URL's userinfo (`user:password@`) is never repeated: the refusal shows the URL as
/// `http://***@host/…`, in the client's result and in the audit log, for the URL a call gave
/// and for a redirect's Location alike. (It echoed `refused http://user:s3cretpw@…`.)
#[tokio::test]
async fn credentials_in_a_url_are_never_repeated() {
    let site = Site::start().await;
    let (_d, root) = tempdir();
    let log = root.join("audit.log");
    // The default guard, with only the fixture's own address let through (for the redirect).
    let config = config_file(
        &root,
        "[web.fetch]\nallowed_hosts = [\"127.0.0.1\"]\nmin_interval = \"0s\"\n",
    );
    let client = connect_with(
        &root,
        &[
            "--audit-log",
            log.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        TestClient::default(),
    )
    .await;
    let port = site.addr.port();
    let refusals = [
        // A private address under the default guard.
        (
            format!("http://{USER}:{PASSWORD}@10.0.0.1/admin"),
            "http://***@10.0.0.1/admin",
        ),
        (format!("https://{USER}@10.0.0.1/"), "https://***@10.0.0.1/"),
        (
            format!("https://:{PASSWORD}@10.0.0.1/"),
            "https://***@10.0.0.1/",
        ),
        // A host the guard lets through: refused for its credentials alone.
        (
            format!("http://{USER}:{PASSWORD}@127.0.0.1:{port}/article"),
            "http://***@127.0.0.1:",
        ),
        // A redirect whose Location carries credentials: refused at that hop.
        (site.url("/credentialed-redirect"), "http://***@127.0.0.1:"),
    ];
    for (url, shown) in &refusals {
        let e = err(&fetch(&client, json!({ "url": url })).await);
        assert!(
            e.contains("permission denied") && e.contains("credentials") && e.contains(shown),
            "{url}: {e}"
        );
        assert!(!e.contains(PASSWORD) && !e.contains(USER), "{url}: {e}");
    }
    // A URL that does not parse is quoted in the error: without its userinfo too.
    let e = err(&fetch(
        &client,
        json!({ "url": format!("http://{USER}:{PASSWORD}@[::1/") }),
    )
    .await);
    assert!(
        e.contains("not a valid URL") && e.contains("http://***@[::1/"),
        "{e}"
    );
    assert!(!e.contains(PASSWORD) && !e.contains(USER), "{e}");
    assert_eq!(site.hits(), 1, "only the redirect itself was requested");

    let n = refusals.len() + 1;
    eventually(&format!("{n} audit records"), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
            >= n
    })
    .await;
    let audit = std::fs::read_to_string(&log).unwrap();
    assert!(
        !audit.contains(PASSWORD) && !audit.contains(USER),
        "{audit}"
    );
    assert!(audit.contains("http://***@10.0.0.1/admin"), "{audit}");
}

#[tokio::test]
async fn an_allowed_host_redirecting_to_a_local_address_is_refused_at_that_hop() {
    let site = Site::start().await;
    let (_dir, client) = server(
        "[web.fetch]\nallowed_hosts = [\"127.0.0.1\"]\nmin_interval = \"0s\"\ncache_ttl = \"0s\"\n",
    )
    .await;
    let port = site.addr.port();
    // The allowed host itself is reachable, redirects on it too.
    let out = ok(&fetch(&client, json!({"url": site.url("/redirect?to=/notes.txt")})).await);
    assert_eq!(out["url"], json!(site.url("/notes.txt")));
    assert_eq!(site.hits(), 2);
    for (to, address, rule) in [
        (
            format!("http://127.0.0.2:{port}/article"),
            "127.0.0.2",
            "loopback",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            "169.254.169.254",
            "link-local",
        ),
        (
            format!("http://localhost:{port}/article"),
            "localhost",
            "local machine",
        ),
    ] {
        let before = site.hits();
        let url = format!("{}?to={to}", site.url("/redirect"));
        let e = err(&fetch(&client, json!({"url": url})).await);
        assert!(
            e.contains("permission denied") && e.contains(address) && e.contains(rule),
            "{to}: {e}"
        );
        assert_eq!(
            site.hits(),
            before + 1,
            "only the redirect itself was requested"
        );
    }
}

#[tokio::test]
async fn redirects_are_followed_up_to_five() {
    let site = Site::start().await;
    let (_dir, client) = server(OPEN).await;
    let out = ok(&fetch(&client, json!({"url": site.url("/redirect?to=/data.json")})).await);
    assert_eq!(out["url"], json!(site.url("/data.json")));
    let e = err(&fetch(&client, json!({"url": site.url("/loop")})).await);
    assert!(e.contains("more than 5"), "{e}");
    assert_eq!(
        site.hits(),
        2 + 6,
        "the first request and five redirects, then it stops"
    );
    let e = err(&fetch(&client, json!({"url": site.url("/missing")})).await);
    assert!(e.contains("404") && e.contains("not found"), "{e}");
}

#[tokio::test]
async fn non_text_is_refused_and_a_long_body_is_cut_at_the_cap() {
    let site = Site::start().await;
    let (_dir, client) = server(
        "[web.fetch]\nallow_private = true\nmin_interval = \"0s\"\nmax_response_bytes = 100000\n",
    )
    .await;
    let e = err(&fetch(&client, json!({"url": site.url("/image.png")})).await);
    assert!(e.contains("image/png") && e.contains("not text"), "{e}");

    let out = ok(&fetch(
        &client,
        json!({"url": site.url("/endless"), "max_length": 100_000}),
    )
    .await);
    assert_eq!(out["total_length"], json!(100_000));
    assert_eq!(out["truncated"], json!(true));
    assert_eq!(out["next_start_index"], json!(null));
    assert!(text(&fetch(&client, json!({"url": site.url("/endless")})).await).contains("20000"));
}

#[tokio::test]
async fn a_slow_server_hits_the_timeout() {
    let site = Site::start().await;
    let (_dir, client) =
        server("[web.fetch]\nallow_private = true\nmin_interval = \"0s\"\ntimeout = \"300ms\"\n")
            .await;
    let e = err(&fetch(&client, json!({"url": site.url("/slow")})).await);
    assert!(
        e.contains("timed out") && e.contains("within 300ms (web.fetch.timeout)"),
        "{e}"
    );
}

#[tokio::test]
async fn robots_txt_is_obeyed_only_when_the_operator_asks() {
    let site = Site::start().await;
    let (_dir, client) = server(OPEN).await;
    let out = ok(&fetch(&client, json!({"url": site.url("/private")})).await);
    assert_eq!(out["content"], json!("private notes"));
    assert_eq!(site.hits(), 1, "robots.txt is not read by default");

    let (_dir2, client) =
        server("[web.fetch]\nallow_private = true\nmin_interval = \"0s\"\nrespect_robots = true\n")
            .await;
    ok(&fetch(&client, json!({"url": site.url("/article")})).await);
    assert_eq!(site.hits(), 3, "robots.txt, then the article");
    let e = err(&fetch(&client, json!({"url": site.url("/private")})).await);
    assert!(
        e.contains("robots.txt") && e.contains("disallows") && e.contains("toolport"),
        "{e}"
    );
    // A redirect into a disallowed path is refused at that hop; robots.txt is read once.
    let e = err(&fetch(&client, json!({"url": site.url("/redirect?to=/private")})).await);
    assert!(e.contains("disallows"), "{e}");
    assert_eq!(site.hits(), 4, "only the redirect itself");
}
