//! A local HTTP server (axum on 127.0.0.1:0) that plays every web search provider, serving
//! recorded-looking responses from `crates/toolport-tools/tests/fixtures/web/` and scripted failures, and recording
//! every request it gets. [`Fixture::config`] writes the `[web]` config that points the
//! providers' base URLs at it, so the production code path (config, registry, schema check,
//! HTTP client, parsers) is what runs, fully offline.
//!
//! The first path segment of a base URL names the scenario the fixture plays for that provider
//! (`/ok`, `/bot`, `/s401`, `/r429once` …); the rest of the path tells the provider apart.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::within;

/// The API keys [`Fixture::config`] gives the keyed providers.
pub(crate) const BRAVE_KEY: &str = "BSA-test-key-7f3a9c";
pub(crate) const GOOGLE_KEY: &str = "AIza-test-key-2b8e41";
pub(crate) const TAVILY_KEY: &str = "tvly-test-key-5d0c77";

/// One request the fixture received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// The provider the path belongs to (`"brave"`, `"duckduckgo"` …).
    pub provider: &'static str,
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

#[derive(Default)]
struct FixtureState {
    requests: Mutex<Vec<Recorded>>,
    /// Requests so far per (scenario, provider), for scenarios that answer a retry
    /// differently.
    seen: Mutex<HashMap<(String, &'static str), usize>>,
    /// Signalled on every request (a permit is kept when nobody waits yet).
    arrived: tokio::sync::Notify,
}

/// The fixture server; stops when dropped.
pub(crate) struct Fixture {
    /// The address it listens on.
    pub addr: SocketAddr,
    state: Arc<FixtureState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fixture {
    /// Start the server on a free port of 127.0.0.1.
    pub(crate) async fn start() -> Self {
        let state = Arc::new(FixtureState::default());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(state.clone());
        let listener = within(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, state, task }
    }

    /// The base URL that plays `scenario`.
    pub(crate) fn url(&self, scenario: &str) -> String {
        format!("http://{}/{scenario}", self.addr)
    }

    /// Every request so far, in the order they arrived.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The requests so far to one provider.
    pub(crate) fn requests_to(&self, provider: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.provider == provider)
            .collect()
    }

    /// Wait (under [`within`]) for a request; one that arrived before the call counts too.
    pub(crate) async fn arrived(&self) {
        within(self.state.arrived.notified()).await;
    }

    /// A `[web]` config: `providers` in order, each with its scenario; `global` adds lines to
    /// `[web]` (they replace the test defaults of the same name).
    pub(crate) fn config(&self, providers: &[(&str, &str)], global: &str) -> String {
        let mut defaults = vec![
            ("timeout", "\"3s\""),
            ("max_retry_wait", "\"2s\""),
            ("cache_ttl", "\"0s\""),
        ];
        defaults.retain(|(k, _)| !global.lines().any(|l| l.trim_start().starts_with(k)));
        let names: Vec<String> = providers.iter().map(|(p, _)| format!("{p:?}")).collect();
        let mut text = format!("[web]\nproviders = [{}]\n", names.join(", "));
        for (k, v) in defaults {
            text.push_str(&format!("{k} = {v}\n"));
        }
        text.push_str(global);
        text.push('\n');
        for (provider, scenario) in providers {
            text.push_str(&format!(
                "[web.{provider}]\nbase_url = {:?}\n",
                self.url(scenario)
            ));
            text.push_str("min_interval = \"0s\"\n");
            match *provider {
                "brave" => text.push_str(&format!("api_key = {BRAVE_KEY:?}\n")),
                "google" => text.push_str(&format!("api_key = {GOOGLE_KEY:?}\ncx = \"test-cx\"\n")),
                "tavily" => text.push_str(&format!("api_key = {TAVILY_KEY:?}\n")),
                _ => {}
            }
        }
        text
    }
}

/// A recorded response from `crates/toolport-tools/tests/fixtures/web/`.
fn fixture(name: &str) -> String {
    let path = format!(
        "{}/crates/toolport-tools/tests/fixtures/web/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Which provider a request is for, by its method and the end of its path.
fn provider_of(method: &Method, path: &str) -> &'static str {
    if path.ends_with("/html/") {
        "duckduckgo"
    } else if path.ends_with("/res/v1/web/search") {
        "brave"
    } else if path.ends_with("/customsearch/v1") {
        "google"
    } else if path.ends_with("/search") && method == Method::POST {
        "tavily"
    } else if path.ends_with("/search") {
        "searxng"
    } else {
        "unknown"
    }
}

fn ok_body(provider: &str) -> Response {
    match provider {
        "duckduckgo" => html(StatusCode::OK, fixture("ddg_results.html")),
        other => json_response(StatusCode::OK, fixture(&format!("{other}.json"))),
    }
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=UTF-8")],
        body,
    )
        .into_response()
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn never_ending() -> Response {
    let first = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"{")) });
    let body = Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn huge() -> Response {
    let chunk = Bytes::from(vec![b' '; 64 * 1024]);
    let chunks =
        futures::stream::iter((0..64).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(chunks),
    )
        .into_response()
}

/// Record the request, then play the scenario its path names.
async fn handle(
    State(state): State<Arc<FixtureState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let scenario = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let provider = provider_of(&method, &path);
    let count = {
        let mut seen = state.seen.lock().unwrap();
        let n = seen.entry((scenario.clone(), provider)).or_default();
        *n += 1;
        *n
    };
    state.requests.lock().unwrap().push(Recorded {
        provider,
        uri: uri.to_string(),
        headers: headers.clone(),
        body,
        at: Instant::now(),
    });
    state.arrived.notify_one();
    let error = |status: StatusCode, message: &str| {
        json_response(status, json!({"error": {"message": message}}).to_string())
    };
    match scenario.as_str() {
        "ok" => ok_body(provider),
        "ads" => html(StatusCode::OK, fixture("ddg_ads.html")),
        "bot" => html(StatusCode::OK, fixture("ddg_challenge.html")),
        "bot403" => html(StatusCode::FORBIDDEN, fixture("ddg_challenge.html")),
        "changed" => html(StatusCode::OK, fixture("ddg_changed.html")),
        "empty" if provider == "duckduckgo" => html(StatusCode::OK, fixture("ddg_no_results.html")),
        "empty" => json_response(StatusCode::OK, fixture(&format!("{provider}_empty.json"))),
        "s401" => error(StatusCode::UNAUTHORIZED, "Unauthorized"),
        "s403" => (StatusCode::FORBIDDEN, "Forbidden").into_response(),
        "s500" => error(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
        // A provider that quotes the credential it got back in its error message.
        "echo" => {
            let sent: Vec<String> = ["x-subscription-token", "x-goog-api-key", "authorization"]
                .iter()
                .filter_map(|h| headers.get(*h)?.to_str().ok().map(String::from))
                .collect();
            error(
                StatusCode::UNAUTHORIZED,
                &format!("invalid credential {}", sent.join(" ")),
            )
        }
        "r429once" if count == 1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            "slow down",
        )
            .into_response(),
        "r429once" => ok_body(provider),
        "r429long" => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "3600")],
            "slow down",
        )
            .into_response(),
        "r429always" => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "0")],
            "slow down",
        )
            .into_response(),
        // A redirect to another host (localhost instead of 127.0.0.1): not followed, since the
        // provider's key header would go along.
        "redirect-away" => {
            let port = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.rsplit(':').next())
                .unwrap_or_default()
                .to_owned();
            let rest = uri.path_and_query().map(|p| p.as_str()).unwrap_or_default();
            let rest = rest.trim_start_matches("/redirect-away");
            (
                StatusCode::FOUND,
                [(
                    header::LOCATION,
                    format!("http://localhost:{port}/ok{rest}"),
                )],
            )
                .into_response()
        }
        // A redirect on the same host (as a SearXNG instance may send): followed.
        "redirect-here" => {
            let rest = uri.path_and_query().map(|p| p.as_str()).unwrap_or_default();
            let rest = rest.trim_start_matches("/redirect-here");
            (
                StatusCode::MOVED_PERMANENTLY,
                [(header::LOCATION, format!("/ok{rest}"))],
            )
                .into_response()
        }
        "hang" => never_ending(),
        "malformed" => json_response(
            StatusCode::OK,
            r#"{"type": "search", "web": {"results": [{"title": "Trunc"#.into(),
        ),
        "wrongshape" => json_response(StatusCode::OK, r#"{"status": "ok", "data": []}"#.into()),
        "huge" => huge(),
        _ => (StatusCode::NOT_FOUND, "no such scenario").into_response(),
    }
}
