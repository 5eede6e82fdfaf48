//! Benchmark of `fetch_url` (issue 15): fetch and convert a 2 MB HTML page served by a local
//! axum fixture, through the real binary over MCP (stdio, rmcp's client), with the page cache
//! off so every call fetches and converts again.
//!
//! Reported (printed): the p50 and p90 of the `tools/call` round trip for the default
//! `markdown` format (Readability + markdown) and for `html` (fetch and decode only, the
//! baseline: the difference is the conversion), and the server's peak RSS (`VmHWM` of the
//! toolport process) before and after the calls.
//!
//! Run with `cargo bench --bench fetch`. Under `cargo test --benches` each part runs twice as a
//! smoke test (against the debug binary); its numbers are not measurements. Results are in
//! BENCHMARKS.md.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The results are printed: that is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use axum::http::header;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use crate::common::args::bench_mode;
use crate::common::config::config_file;
use crate::common::object;
use crate::common::proc::mem;
use crate::common::stats::{median, quantile};

/// The page size the issue asks for.
const PAGE_BYTES: usize = 2 * 1024 * 1024;
/// Calls per format in a measured run: enough for a stable median at ~100 ms a call.
const ROUNDS: usize = 40;
/// Every await of the bench, so a hung server fails the run instead of stalling it.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A long article page: site chrome around many sections of paragraphs, links and lists.
fn page() -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>A very long article</title></head><body>\
         <header><nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/news\">News</a></li></ul></nav></header>\
         <div class=\"ad\">Sponsored: something</div><main><article><h1>A very long article</h1>",
    );
    let mut section = 0;
    while html.len() < PAGE_BYTES {
        section += 1;
        html.push_str(&format!("<h2>Section {section}</h2>"));
        for p in 0..6 {
            html.push_str(&format!(
                "<p>Paragraph {p} of section {section}: rivers carve valleys by carrying sand and \
                 gravel that grind the bed; see <a href=\"/science/{section}/{p}\">the notes on \
                 sediment</a> and <em>the primer</em> for more. Floodplains form where the \
                 water spreads and drops fine silt, year after year, over the land.</p>"
            ));
        }
        html.push_str("<ul><li>Outer banks erode.</li><li>Inner banks gain bars.</li></ul>");
    }
    html.push_str(
        "</article></main><aside>Trending</aside><footer>All rights reserved.</footer></body></html>",
    );
    html
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(TIMEOUT, f).await.expect("timed out")
}

fn main() {
    let rounds = if bench_mode() { ROUNDS } else { 2 };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(run(rounds));
}

async fn run(rounds: usize) {
    let page = page();
    let size = page.len();
    let app = axum::Router::new().route(
        "/page",
        axum::routing::get(move || {
            let page = page.clone();
            async move { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page) }
        }),
    );
    let listener = within(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .await
        .unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    let fixture = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        "[web.fetch]\nallow_private = true\nmin_interval = \"0s\"\ncache_ttl = \"0s\"\n",
    );
    let mut cmd = tokio::process::Command::new(common::toolport_bin());
    cmd.arg("--root")
        .arg(dir.path())
        .arg("--config")
        .arg(&config);
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolport");
    let pid = transport.id().expect("the server's pid");
    let client = within(().serve(transport)).await.expect("initialize");
    let before = mem(pid).unwrap_or_default();

    println!(
        "fetch_url of a {:.1} MiB HTML page from a local fixture, {rounds} calls per format, cache off",
        size as f64 / (1024.0 * 1024.0)
    );
    for format in ["html", "markdown", "text"] {
        let request = CallToolRequestParams::new("fetch_url")
            .with_arguments(object(json!({"url": url, "format": format})));
        let mut samples = Vec::with_capacity(rounds);
        let mut total_length = 0;
        for _ in 0..rounds {
            let started = Instant::now();
            let result = within(client.call_tool(request.clone()))
                .await
                .expect("a tools/call answer");
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_ne!(result.is_error, Some(true), "{format}: {result:?}");
            total_length = result.structured_content.as_ref().unwrap()["total_length"]
                .as_u64()
                .unwrap();
        }
        println!(
            "  {format:>8}: p50 {:7.1} ms, p90 {:7.1} ms; content {total_length} characters",
            median(&samples),
            quantile(&samples, 0.9)
        );
    }
    let after = mem(pid).unwrap_or_default();
    println!(
        "  server memory: VmRSS {:.1} MiB / VmHWM {:.1} MiB before the calls; VmRSS {:.1} MiB / VmHWM (peak) {:.1} MiB after",
        before.rss as f64 / 1024.0,
        before.hwm as f64 / 1024.0,
        after.rss as f64 / 1024.0,
        after.hwm as f64 / 1024.0
    );
    within(client.cancel()).await.ok();
    fixture.abort();
}
