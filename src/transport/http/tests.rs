//! The gate's rules, in process: [`router`] driven with `tower::ServiceExt::oneshot`, as
//! axum's `examples/testing` does. One rule needs no spawned binary; the end-to-end flows
//! (sessions, SSE, disconnects, shutdown, the session cap) stay in `tests/it/http.rs`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use tokio_util::sync::CancellationToken;
use toolport_tools::host::secret::Secret;
use tower::ServiceExt;

use super::router;
use super::settings::HttpSettings;

const TOKEN: &str = "test-token-0123456789abcdef";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
/// Bound on every await: an in-process request answers in milliseconds.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The router with the default settings (loopback Host and Origin, 4 MiB body cap) and
/// `TOKEN`.
fn app() -> Router {
    let settings = HttpSettings::default();
    // The default configuration: the tools on the current directory.
    let shared = Arc::new(crate::build(&crate::config::Config::default()).unwrap());
    let gate = Arc::new(settings.gate(Some(Secret::new(TOKEN))));
    router(shared, &settings, gate, CancellationToken::new())
}

/// A header map of `pairs` (the gate's and the oauth module's unit tests use it too).
pub(crate) fn headers(pairs: &[(&'static str, &str)]) -> axum::http::HeaderMap {
    let mut map = axum::http::HeaderMap::new();
    for (k, v) in pairs {
        map.insert(*k, v.parse().unwrap());
    }
    map
}

/// A request from a well-behaved client: loopback Host, the token, no Origin.
fn request(method: &str, uri: &str, body: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, "127.0.0.1:8787")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_LENGTH, body.len())
}

/// The three entry points every rule applies to, as (method, path, body).
const ENTRY_POINTS: [(&str, &str, &str); 3] = [
    ("POST", "/mcp", INIT),
    ("GET", "/sse", ""),
    ("POST", "/message?sessionId=0", INIT),
];

async fn send(request: Request<Body>) -> Response {
    tokio::time::timeout(TIMEOUT, app().oneshot(request))
        .await
        .unwrap()
        .unwrap()
}

/// The body of an answer; for a refusal (4xx, 5xx), the message of the JSON-RPC error it
/// must carry (`id: null`, `application/json`, the server-defined code -32000 as on the wire:
/// every refusal read here is one; an unknown session's -32001 is checked where it is made).
async fn text(response: Response) -> String {
    let refused = response.status().is_client_error() || response.status().is_server_error();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t == "application/json");
    let bytes = tokio::time::timeout(TIMEOUT, axum::body::to_bytes(response.into_body(), 1 << 20))
        .await
        .unwrap()
        .unwrap();
    let body = String::from_utf8_lossy(&bytes).into_owned();
    if !refused {
        return body;
    }
    assert!(json, "a refusal is not application/json: {body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&error["jsonrpc"], &error["id"], &error["error"]["code"]),
        (
            &serde_json::json!("2.0"),
            &serde_json::Value::Null,
            &serde_json::json!(-32000)
        ),
        "{body}"
    );
    error["error"]["message"].as_str().unwrap().to_owned()
}

/// Each entry point with one header changed (`None` removes it): the status and the body.
async fn each_entry_point(
    name: header::HeaderName,
    value: Option<&str>,
) -> Vec<(StatusCode, String)> {
    let mut answers = Vec::new();
    for (method, path, body) in ENTRY_POINTS {
        let mut builder = request(method, path, body);
        let headers = builder.headers_mut().unwrap();
        match value {
            Some(value) => headers.insert(&name, value.parse().unwrap()),
            None => headers.remove(&name),
        };
        let response = send(builder.body(Body::from(body)).unwrap()).await;
        answers.push((response.status(), text(response).await));
    }
    answers
}

/// The `WWW-Authenticate` challenge of a request with this `Authorization` (`None`: without
/// one), after checking it is a 401 that does not echo the token.
async fn challenge(authorization: Option<&str>) -> String {
    let mut builder = request("POST", "/mcp", INIT);
    let headers = builder.headers_mut().unwrap();
    headers.remove(header::AUTHORIZATION);
    if let Some(value) = authorization {
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
    }
    let response = send(builder.body(Body::from(INIT)).unwrap()).await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "{authorization:?}"
    );
    let challenge = response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .to_owned();
    let body = text(response).await;
    assert!(body.starts_with("unauthorized: "), "{body}");
    assert!(!body.contains(TOKEN), "the answer leaks the token: {body}");
    challenge
}

#[tokio::test]
async fn a_well_formed_request_passes_the_gate() {
    let response = send(
        request("POST", "/mcp", INIT)
            .body(Body::from(INIT))
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("mcp-session-id"));
}

#[tokio::test]
async fn a_hostile_host_is_403_on_every_entry_point() {
    for (status, body) in each_entry_point(header::HOST, Some("evil.example:80")).await {
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(
            body.contains(r#"Host "evil.example:80" is not allowed"#),
            "{body}"
        );
    }
    for (status, body) in each_entry_point(header::HOST, None).await {
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(body.contains("no valid Host header"), "{body}");
    }
}

#[tokio::test]
async fn a_hostile_origin_is_403_on_every_entry_point_and_a_loopback_page_passes() {
    for (status, body) in each_entry_point(header::ORIGIN, Some("https://evil.example")).await {
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(
            body.contains(r#"Origin "https://evil.example" is not allowed"#),
            "{body}"
        );
    }
    let response = send(
        request("POST", "/mcp", INIT)
            .header(header::ORIGIN, "http://localhost:6274")
            .body(Body::from(INIT))
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_401_on_every_entry_point() {
    for (status, body) in each_entry_point(header::AUTHORIZATION, None).await {
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    let wrong = format!("Bearer {}X", &TOKEN[..TOKEN.len() - 1]);
    for (status, body) in each_entry_point(header::AUTHORIZATION, Some(&wrong)).await {
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert!(!body.contains(TOKEN), "{body}");
    }
    assert_eq!(challenge(None).await, r#"Bearer realm="toolport""#);
    let invalid_token = r#"Bearer realm="toolport", error="invalid_token""#;
    assert_eq!(challenge(Some(&wrong)).await, invalid_token);
    assert_eq!(challenge(Some("Bearer x")).await, invalid_token);
    // The token itself is compared exactly: its case matters.
    let shouted = format!("Bearer {}", TOKEN.to_uppercase());
    assert_eq!(challenge(Some(&shouted)).await, invalid_token);
    let invalid_request = r#"Bearer realm="toolport", error="invalid_request""#;
    assert_eq!(
        challenge(Some(&format!("Basic {TOKEN}"))).await,
        invalid_request
    );
    assert_eq!(
        challenge(Some(&format!("Token {TOKEN}"))).await,
        invalid_request
    );
    assert_eq!(challenge(Some(TOKEN)).await, invalid_request);
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    // RFC 9110 §11.1; tower-http's bearer layer would refuse these (see gate.rs).
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let response = send(
            request("POST", "/mcp", INIT)
                .header(header::AUTHORIZATION, format!("{scheme} {TOKEN}"))
                .body(Body::from(INIT))
                .unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK, "{scheme}");
    }
}

#[tokio::test]
async fn a_body_over_the_cap_is_413() {
    let max = HttpSettings::default().max_body_bytes;
    // Declared: refused from the headers alone, on every entry point.
    let over = (max + 1).to_string();
    for (status, body) in each_entry_point(header::CONTENT_LENGTH, Some(&over)).await {
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
        assert_eq!(
            body,
            format!("the request body is {over} bytes, over the limit of {max} bytes")
        );
    }
    // Undeclared (streamed): capped while it is read.
    let chunks =
        futures::stream::iter((0..5).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024 * 1024])));
    let mut builder = request("POST", "/mcp", "");
    builder
        .headers_mut()
        .unwrap()
        .remove(header::CONTENT_LENGTH);
    let response = send(builder.body(Body::from_stream(chunks)).unwrap()).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        text(response).await,
        format!("the request body is over the limit of {max} bytes")
    );
}

#[tokio::test]
async fn healthz_needs_nothing_and_says_nothing() {
    let response = send(
        Request::get("/healthz")
            .header(header::HOST, "evil.example")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response).await, "ok");
}

#[tokio::test]
async fn an_unknown_path_behind_the_gate_is_404_naming_the_endpoints() {
    let response = send(request("GET", "/nope", "").body(Body::empty()).unwrap()).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(text(response).await.contains("/mcp"));
    // Without the token, the gate answers first: nothing is revealed.
    let mut builder = request("GET", "/nope", "");
    builder.headers_mut().unwrap().remove(header::AUTHORIZATION);
    let response = send(builder.body(Body::empty()).unwrap()).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn rmcps_own_refusals_carry_json_rpc_errors_too() {
    const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    // No session id on a request that needs one.
    let response = send(
        request("POST", "/mcp", LIST)
            .body(Body::from(LIST))
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("Session ID is required"));
    // A session that does not exist: -32001.
    let response = send(
        request("POST", "/mcp", LIST)
            .header("mcp-session-id", "no-such-session")
            .body(Body::from(LIST))
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = tokio::time::timeout(TIMEOUT, axum::body::to_bytes(response.into_body(), 1 << 20))
        .await
        .unwrap()
        .unwrap();
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], serde_json::json!(-32001), "{error}");
    // An Accept header without the event stream.
    let mut builder = request("POST", "/mcp", INIT);
    builder
        .headers_mut()
        .unwrap()
        .insert(header::ACCEPT, "application/json".parse().unwrap());
    let response = send(builder.body(Body::from(INIT)).unwrap()).await;
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
    assert!(text(response).await.contains("text/event-stream"));
}
