//! toolport as an OAuth 2.1 resource server, through the real binary, with `oidc-provider`
//! (npm, pinned in `.ci/oidc/`; an OpenID-certified authorization server nobody here wrote)
//! as the external identity provider: `.ci/oidc/provider.mjs` starts it on loopback and issues
//! JWT access tokens for a resource (client credentials + RFC 8707 `resource`).
//!
//! A token for toolport's resource is accepted and a call works through rmcp's Streamable HTTP
//! client; tokens for another audience, from another issuer, expired, with `alg: none`, HMAC
//! over the public key, with an unknown `kid` (and a rotation, fetched again), and without the
//! needed scope are each refused with their status and challenge; the metadata documents and
//! where a challenge points (with `public_url`, and with `X-Forwarded-*` from a trusted and an
//! untrusted peer); opaque tokens through introspection; the static token beside OAuth; the
//! legacy SSE transport with an access token; the search surface under a principal's policy
//! (what the policy refuses is neither found nor called through `call_tool`).
//!
//! `.ci/run` installs the provider and sets `TOOLPORT_REQUIRE_OIDC_PROVIDER=1`: then a
//! missing install fails these tests. Without that variable and without the install (a plain
//! `cargo test` on a fresh checkout) each test says it did not run and passes; install it
//! with `npm ci` in `.ci/oidc` (node >= 20 on PATH) to run them here.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::http::{ACCEPT, Server, TOKEN, start};
use crate::common::process::eventually;
use crate::common::{
    BUILTIN_NAMES, BUILTIN_TOOLS, Client, TestClient, audit_records, call, config_file, err, ok,
    tempdir, text, tool_names, within,
};

/// The client `provider.mjs` registers (and toolport introspects as).
const CLIENT_ID: &str = "toolport-it";
const CLIENT_SECRET: &str = "toolport-it-secret-0123456789";
/// The tools a `tools:read` token may use: the read-only file tools, the first six of the
/// listing.
const READ_TOOLS: &[&str] = BUILTIN_NAMES.split_at(6).0;

/// A running `provider.mjs`; dropped, it is killed.
struct Provider {
    _child: Child,
    issuer: String,
}

/// Where `provider.mjs` and its modules are.
pub(crate) fn oidc_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/oidc")
}

/// `node` on PATH with oidc-provider installed, or `None` (the test does not run) when they
/// are not there and CI does not require them.
pub(crate) fn node() -> Option<PathBuf> {
    let node = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("node"))
            .find(|n| n.is_file())
    });
    let installed = oidc_dir().join("node_modules/oidc-provider/package.json");
    match node {
        Some(node) if installed.is_file() => return Some(node),
        _ => {}
    }
    assert!(
        std::env::var_os("TOOLPORT_REQUIRE_OIDC_PROVIDER").is_none(),
        "node or oidc-provider is missing ({} not installed): .ci/run installs it into .ci/oidc",
        installed.display()
    );
    eprintln!("not run: node or oidc-provider is not installed in .ci/oidc (see this file's docs)");
    None
}

impl Provider {
    async fn start(node: &Path) -> Self {
        let mut child = Command::new(node)
            .arg(oidc_dir().join("provider.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start provider.mjs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = within(lines.next_line())
            .await
            .unwrap()
            .expect("provider.mjs printed its issuer");
        let issuer = serde_json::from_str::<Value>(&line).unwrap()["issuer"]
            .as_str()
            .unwrap()
            .to_owned();
        Self {
            _child: child,
            issuer,
        }
    }

    /// A client-credentials access token for `resource` with `scope`, as the provider issues it.
    async fn token(&self, resource: &str, scope: &str) -> String {
        let answer: Value = within(
            reqwest::Client::new()
                .post(format!("{}/token", self.issuer))
                .basic_auth(CLIENT_ID, Some(CLIENT_SECRET))
                .form(&[
                    ("grant_type", "client_credentials"),
                    ("scope", scope),
                    ("resource", resource),
                ])
                .send(),
        )
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {answer}"))
            .to_owned()
    }

    /// A JWT with `claims`, signed by the provider's key `kid`.
    async fn sign(&self, claims: &Value, kid: &str) -> String {
        let body = json!({"claims": claims, "kid": kid});
        self.test_route(reqwest::Method::POST, "/test/sign", Some(&body))
            .await
    }

    /// The text `provider.mjs` answers on `path` (with a JSON `body`).
    async fn test_route(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> String {
        let mut request = reqwest::Client::new().request(method, format!("{}{path}", self.issuer));
        if let Some(body) = body {
            request = request.json(body);
        }
        within(request.send()).await.unwrap().text().await.unwrap()
    }

    /// The provider's published keys.
    async fn jwks(&self) -> Value {
        serde_json::from_str(&self.test_route(reqwest::Method::GET, "/jwks", None).await).unwrap()
    }
}

/// Seconds since the epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A toolport serving HTTP with `[http.oauth]` `oauth_toml` for `issuer` (plus `extra`
/// arguments), and its resource URL (`http://127.0.0.1:PORT/mcp`, from the Host header).
pub(crate) async fn serve_oauth(
    root: &Path,
    issuer: &str,
    oauth_toml: &str,
    extra: &[&str],
) -> (Server, String) {
    let config = config_file(
        root,
        &format!("[http.oauth]\nissuer = \"{issuer}\"\n{oauth_toml}"),
    );
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = start(root, &args, None).await;
    let resource = format!("{}/mcp", server.url);
    (server, resource)
}

/// rmcp's Streamable HTTP client with `token`.
async fn client(server: &Server, token: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
            .auth_header(token),
    );
    within(TestClient::default().serve(transport))
        .await
        .expect("initialize over HTTP with an access token")
}

/// A raw `tools/call` of `tool` to `/mcp` with `authorization`; the status, the challenge
/// and the body.
async fn raw_call(
    server: &Server,
    authorization: Option<&str>,
    tool: &str,
) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": {"path": "hello.txt"}}});
    let mut request = reqwest::Client::new()
        .post(format!("{}/mcp", server.url))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body.to_string());
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    answer(within(request.send()).await.unwrap()).await
}

async fn answer(response: reqwest::Response) -> (u16, String, Value) {
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, challenge, body)
}

/// Where a server on `url` says its metadata is.
fn metadata_url(url: &str) -> String {
    format!("{url}/.well-known/oauth-protected-resource/mcp")
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = tempdir();
    std::fs::write(root.join("hello.txt"), "hi over oauth\n").unwrap();
    (dir, root)
}

#[tokio::test]
async fn a_token_for_this_resource_is_accepted_and_its_scopes_shape_the_tools() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    let log = root.join("audit.log");
    let (server, resource) = serve_oauth(
        &root,
        &provider.issuer,
        "",
        &["--audit-log", log.to_str().unwrap()],
    )
    .await;

    let token = provider.token(&resource, "tools:read").await;
    let client = client(&server, &token).await;
    let mut names: Vec<String> = within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    let mut read: Vec<String> = READ_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    read.sort();
    assert_eq!(
        names, read,
        "a tools:read token lists the read-only file tools alone"
    );
    let out = ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
    assert_eq!(out["content"], json!("hi over oauth\n"));

    // A call beyond the token's scopes: 403 with the scope that grants it, before it runs.
    let (status, challenge, body) =
        raw_call(&server, Some(&format!("Bearer {token}")), "write_file").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        challenge,
        format!(
            r#"Bearer resource_metadata="{}", error="insufficient_scope", scope="tools:write""#,
            metadata_url(&server.url)
        )
    );
    assert_eq!(body["error"]["code"], json!(-32000), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("needs the scope tools:write"),
        "{body}"
    );

    // Every scope: every built-in tool (each is classed, so a scope grants it).
    let all = provider
        .token(
            &resource,
            "tools:read tools:write tools:exec tools:web tools:upstreams",
        )
        .await;
    let full = client_tools(&server, &all).await;
    assert_eq!(
        full, BUILTIN_TOOLS,
        "every built-in tool has a class a scope grants"
    );

    // The audit record names the principal; the token is nowhere in it.
    eventually("the read_file record", || !audit_records(&log).is_empty()).await;
    let record = &audit_records(&log)[0];
    assert_eq!(record["tool"], json!("read_file"));
    assert_eq!(
        record["principal"],
        json!({"sub": CLIENT_ID, "client_id": CLIENT_ID})
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(&token) && !server.stderr().contains(&token));
    within(client.cancel()).await.unwrap();
}

/// How many tools a client with `token` is listed.
async fn client_tools(server: &Server, token: &str) -> usize {
    let client = client(server, token).await;
    let count = within(client.list_all_tools()).await.unwrap().len();
    within(client.cancel()).await.unwrap();
    count
}

#[tokio::test]
async fn tokens_not_issued_for_this_server_are_refused_with_a_challenge() {
    let Some(node) = node() else { return };
    let (provider, other) = tokio::join!(Provider::start(&node), Provider::start(&node));
    let (_d, root) = workspace();
    let (server, resource) = serve_oauth(&root, &provider.issuer, "", &[]).await;
    let metadata = metadata_url(&server.url);

    // No token, and the wrong scheme.
    let (status, challenge, body) = raw_call(&server, None, "read_file").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        challenge,
        format!(
            r#"Bearer resource_metadata="{metadata}", scope="tools:exec tools:read tools:upstreams tools:web tools:write""#
        )
    );
    assert_eq!(body["error"]["code"], json!(-32000));
    let (status, challenge, _) = raw_call(&server, Some("Basic dXNlcjpwdw=="), "read_file").await;
    assert_eq!(status, 401);
    assert!(
        challenge.ends_with(r#"error="invalid_request""#),
        "{challenge}"
    );

    let base = json!({"iss": provider.issuer, "aud": resource, "sub": "alice", "client_id": CLIENT_ID, "scope": "tools:read", "exp": now() + 300});
    let with = |extra: Value| {
        let mut claims = base.clone();
        claims
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        claims
    };
    let b64 = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
    // HMAC "signed" with the provider's public key (its JWK as text): key confusion.
    let public = provider.jwks().await["keys"][0].to_string();
    let hmac = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: Some("key-a".into()),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256)
        },
        &base,
        &jsonwebtoken::EncodingKey::from_secret(public.as_bytes()).unwrap(),
    )
    .unwrap();
    let refused = [
        (
            "another audience",
            provider.token("http://127.0.0.1:1/mcp", "tools:read").await,
            "another resource",
        ),
        (
            "another issuer's token",
            other.token(&resource, "tools:read").await,
            "signature does not verify",
        ),
        (
            "another issuer named",
            provider
                .sign(&with(json!({"iss": other.issuer})), "key-a")
                .await,
            "another authorization server",
        ),
        (
            "expired",
            provider
                .sign(
                    &with(json!({"exp": now() - 600, "iat": now() - 900})),
                    "key-a",
                )
                .await,
            "expired",
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "kid": "key-a"})),
                b64(&base)
            ),
            "'none'",
        ),
        ("HMAC over the public key", hmac, "'HS256'"),
        (
            "an unknown kid",
            provider.sign(&base, "key-b").await,
            "does not publish",
        ),
        ("garbage", "not-a-jwt-at-all".to_owned(), "not a JWT"),
    ];
    for (what, token, reason) in refused {
        let (status, challenge, body) =
            raw_call(&server, Some(&format!("Bearer {token}")), "read_file").await;
        assert_eq!(status, 401, "{what}: {body}");
        assert!(
            challenge.starts_with(&format!(
                r#"Bearer resource_metadata="{metadata}", error="invalid_token", error_description=""#
            )) && challenge.contains(reason),
            "{what}: {challenge}"
        );
        assert_eq!(body["error"]["code"], json!(-32000), "{what}");
        assert!(
            !body.to_string().contains(&token),
            "{what}: the token echoed"
        );
        assert!(
            !server.stderr().contains(&token),
            "{what}: the token logged"
        );
    }
    // The good token still passes (the refusals did not poison anything).
    let good = provider.sign(&base, "key-a").await;
    let (status, _, body) = raw_call(&server, Some(&format!("Bearer {good}")), "read_file").await;
    assert_ne!(status, 401, "{body}");
    assert_ne!(status, 403, "{body}");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_again_once_a_minute_at_most() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    let (server, resource) = serve_oauth(&root, &provider.issuer, "", &[]).await;
    let claims = json!({"iss": provider.issuer, "aud": resource, "sub": "bob", "scope": "tools:read", "exp": now() + 300});
    let fetches = || provider.test_route(reqwest::Method::GET, "/test/jwks-fetches", None);

    let first = provider.sign(&claims, "key-a").await;
    assert_eq!(client_tools(&server, &first).await, READ_TOOLS.len());
    assert_eq!(fetches().await, "1");
    // The provider rotates: key-b is published, and a token signed with it names a key
    // toolport has not seen: it fetches the keys again, and accepts it.
    provider
        .test_route(reqwest::Method::POST, "/test/rotate", None)
        .await;
    let rotated = provider.sign(&claims, "key-b").await;
    assert_eq!(client_tools(&server, &rotated).await, READ_TOOLS.len());
    assert_eq!(fetches().await, "2");
    // Another unknown key within the minute: refused without asking the provider again.
    let b64 = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
    let signature = rotated.rsplit('.').next().unwrap();
    let unknown = format!(
        "{}.{}.{signature}",
        b64(&json!({"alg": "RS256", "kid": "key-z"})),
        b64(&claims)
    );
    let (status, challenge, _) =
        raw_call(&server, Some(&format!("Bearer {unknown}")), "read_file").await;
    assert_eq!(status, 401);
    assert!(challenge.contains("key-z"), "{challenge}");
    assert_eq!(fetches().await, "2", "no fetch within the minute");
}

#[tokio::test]
async fn the_metadata_and_challenges_follow_the_public_url_and_trusted_proxies() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    let get = |url: String, headers: Vec<(&'static str, &'static str)>| async move {
        let mut request = reqwest::Client::new().get(url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        within(request.send()).await.unwrap()
    };

    // With public_url: the document and every challenge name it, whatever the headers say.
    let (server, _) = serve_oauth(
        &root,
        &provider.issuer,
        "public_url = \"https://tools.example.com/mcp\"\ntrusted_proxies = [\"127.0.0.1\"]",
        &[],
    )
    .await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = get(format!("{}{path}", server.url), vec![]).await;
        assert_eq!(response.status(), 200, "{path}");
        let document: Value = response.json().await.unwrap();
        assert_eq!(
            document,
            json!({
                "resource": "https://tools.example.com/mcp",
                "authorization_servers": [provider.issuer],
                "scopes_supported": ["tools:exec", "tools:read", "tools:upstreams", "tools:web", "tools:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "toolport",
            }),
            "{path}"
        );
    }
    let (status, challenge, _) = raw_call(&server, None, "read_file").await;
    assert_eq!(status, 401);
    assert!(
        challenge.starts_with(
            r#"Bearer resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp""#
        ),
        "{challenge}"
    );
    // The public host is an allowed Host (a tunnel forwards it as it is).
    let response = get(
        format!("{}/mcp", server.url),
        vec![("host", "tools.example.com")],
    )
    .await;
    assert_eq!(response.status(), 401, "the public Host passes the gate");
    drop(server);

    // Without it: X-Forwarded-* from a trusted proxy (this test is 127.0.0.1), and ignored
    // from any other peer. Each time the 401's challenge and the document agree.
    for (proxies, public) in [("127.0.0.0/8", true), ("10.0.0.1", false)] {
        let (server, resource) = serve_oauth(
            &root,
            &provider.issuer,
            &format!("trusted_proxies = [\"{proxies}\"]"),
            &[],
        )
        .await;
        let (resource, metadata) = if public {
            (
                "https://tools.example.com/mcp".to_owned(),
                metadata_url("https://tools.example.com"),
            )
        } else {
            (resource, metadata_url(&server.url))
        };
        let forwarded = vec![
            ("x-forwarded-host", "tools.example.com"),
            ("x-forwarded-proto", "https"),
        ];
        let response = get(format!("{}/mcp", server.url), forwarded.clone()).await;
        let (status, challenge, _) = answer(response).await;
        assert_eq!(status, 401, "{proxies}");
        assert!(
            challenge.starts_with(&format!(r#"Bearer resource_metadata="{metadata}""#)),
            "{proxies}: {challenge}"
        );
        let document: Value = get(metadata_url(&server.url), forwarded)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(document["resource"], json!(resource), "{proxies}");
    }
}

#[tokio::test]
async fn opaque_tokens_are_introspected_and_the_static_token_still_works() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    // Opaque tokens for the resource ".../opaque" (provider.mjs issues them so); toolport is
    // told that audience, and introspects as the provider's client.
    let audience = "http://127.0.0.1:1/opaque";
    let secret = root.join("client.secret");
    std::fs::write(&secret, CLIENT_SECRET).unwrap();
    let toml = format!(
        "audience = \"{audience}\"\nintrospection_endpoint = \"{}/token/introspection\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_file = '{}'",
        provider.issuer,
        secret.display()
    );
    let config = config_file(
        &root,
        &format!("[http.oauth]\nissuer = \"{}\"\n{toml}", provider.issuer),
    );
    let server = start(&root, &["--config", config.to_str().unwrap()], Some(TOKEN)).await;

    let opaque = provider.token(audience, "tools:read").await;
    assert!(!opaque.contains('.'), "an opaque token: {opaque}");
    assert_eq!(client_tools(&server, &opaque).await, READ_TOOLS.len());
    let (status, challenge, _) = raw_call(
        &server,
        Some(&format!("Bearer {opaque}")),
        "execute_command",
    )
    .await;
    assert_eq!(status, 403);
    assert!(challenge.contains(r#"scope="tools:exec""#), "{challenge}");
    // A token for another audience is refused by the introspection answer's `aud`.
    let foreign = provider
        .token("http://127.0.0.1:2/opaque", "tools:read")
        .await;
    let (status, challenge, _) =
        raw_call(&server, Some(&format!("Bearer {foreign}")), "read_file").await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );

    // The static token beside OAuth: every tool, as before.
    assert_eq!(client_tools(&server, TOKEN).await, BUILTIN_TOOLS);
    let stderr = server.stderr();
    assert!(!stderr.contains(CLIENT_SECRET) && !stderr.contains(&opaque));
}

#[tokio::test]
async fn the_legacy_sse_transport_takes_access_tokens_and_their_scopes_too() {
    use futures::StreamExt;

    use crate::common::http::{INIT, SseReader};

    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    let (server, resource) = serve_oauth(&root, &provider.issuer, "", &[]).await;
    // The legacy transport's resource is still the server's `/mcp` URL: one resource.
    let token = provider.token(&resource, "tools:read").await;
    let bearer = format!("Bearer {token}");
    let http = reqwest::Client::new();
    let response = within(
        http.get(format!("{}/sse", server.url))
            .header("authorization", &bearer)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let mut reader = SseReader {
        stream: response.bytes_stream().boxed(),
        buffer: String::new(),
    };
    let (_, endpoint) = reader.next().await;
    let endpoint = format!("{}{endpoint}", server.url);
    let post = |body: String| {
        let request = http
            .post(&endpoint)
            .header("authorization", &bearer)
            .body(body);
        async move { within(request.send()).await.unwrap() }
    };
    let init = INIT.replace("2025-06-18", "2024-11-05");
    assert_eq!(post(init).await.status(), 202);
    reader.message().await;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post(initialized.to_owned()).await.status(), 202);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert_eq!(post(list.to_owned()).await.status(), 202);
    let listed = reader.message().await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, READ_TOOLS, "{listed}");
    let write = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}});
    let (status, challenge, _) = answer(post(write.to_string()).await).await;
    assert_eq!(status, 403);
    assert!(challenge.contains(r#"scope="tools:write""#), "{challenge}");
    assert!(!root.join("x.txt").exists());
}

/// The policy per principal (`[http.principals]`): two principals with every scope get what
/// their rules give them — different tools listed and callable, different roots, a budget
/// counted across sessions — a principal no rule matches gets nothing (`unmatched =
/// "nothing"`), and every audit record names its principal.
#[tokio::test]
async fn each_principal_gets_what_its_rules_give_it() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    std::fs::create_dir(root.join("alice")).unwrap();
    std::fs::write(root.join("alice/mine.txt"), "alice's\n").unwrap();
    let log = root.join("audit.log");
    let (server, resource) = serve_oauth(
        &root,
        &provider.issuer,
        &format!(
            r#"
[http.principals]
unmatched = "nothing"

[[http.principals.rules]]
name = "alice"
subjects = ["alice"]
allow_classes = ["read"]
roots = ["{}"]
max_calls = 3

[[http.principals.rules]]
name = "bob"
subjects = ["bob"]
read_only = true
deny_tools = ["grep", "web_*"]
"#,
            root.join("alice").display()
        ),
        &["--audit-log", log.to_str().unwrap()],
    )
    .await;
    let token = |sub: &'static str| {
        let claims = json!({"iss": provider.issuer, "aud": resource, "sub": sub, "client_id": CLIENT_ID, "scope": "tools:read tools:write tools:exec tools:web", "exp": now() + 300});
        let provider = &provider;
        async move { provider.sign(&claims, "key-a").await }
    };
    let (alice_token, bob_token, carol_token) =
        tokio::join!(token("alice"), token("bob"), token("carol"));

    let alice = client(&server, &alice_token).await;
    let bob = client(&server, &bob_token).await;
    let (alice_tools, bob_tools) = (tool_names(&alice).await, tool_names(&bob).await);
    let mut read: Vec<String> = READ_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    read.sort();
    let mut sorted = alice_tools.clone();
    sorted.sort();
    assert_eq!(sorted, read, "alice: the read classes alone");
    assert!(bob_tools.contains(&"read_file".to_owned()), "{bob_tools:?}");
    for refused in ["grep", "web_search", "write_file", "execute_command"] {
        assert!(
            !bob_tools.iter().any(|t| t == refused),
            "bob is listed {refused}"
        );
    }

    // alice's roots are her folder: her relative paths start there, the rest is outside.
    let out = ok(&call(&alice, "read_file", json!({"path": "mine.txt"})).await);
    assert_eq!(out["content"], json!("alice's\n"));
    let outside = root.join("hello.txt").display().to_string();
    let message = err(&call(&alice, "read_file", json!({"path": outside})).await);
    assert!(message.contains("outside"), "{message}");
    // bob keeps the server's roots; grep is refused by his rule, whatever his scopes say.
    let out = ok(&call(&bob, "read_file", json!({"path": "hello.txt"})).await);
    assert_eq!(out["content"], json!("hi over oauth\n"));
    let message = err(&call(&bob, "grep", json!({"pattern": "hi"})).await);
    assert!(
        message.contains(r#"rule "bob" denies the tool grep"#),
        "{message}"
    );
    // A name no tool has: the error lists what bob may use, never the tools denied to him.
    let unknown = within(bob.call_tool(CallToolRequestParams::new("no_such_tool")))
        .await
        .expect_err("an unknown tool is a protocol error")
        .to_string();
    assert!(unknown.contains("read_file"), "{unknown}");
    for hidden in ["grep", "web_search", "write_file", "execute_command"] {
        assert!(
            !unknown.contains(hidden),
            "bob is told of {hidden}: {unknown}"
        );
    }

    // alice's budget (3 calls) holds across her sessions: two made, one more in a new one.
    let again = client(&server, &alice_token).await;
    ok(&call(&again, "read_file", json!({"path": "mine.txt"})).await);
    let message = err(&call(&again, "read_file", json!({"path": "mine.txt"})).await);
    assert!(
        message.contains(r#"http.principals.rules["alice"].max_calls = 3"#),
        "{message}"
    );

    // carol: no rule matches her, and unmatched principals get nothing.
    let carol = client(&server, &carol_token).await;
    assert!(tool_names(&carol).await.is_empty());
    let message = err(&call(&carol, "read_file", json!({"path": "hello.txt"})).await);
    assert!(message.contains("no rule"), "{message}");

    // Every record names its principal.
    eventually("the records", || audit_records(&log).len() >= 7).await;
    let records = audit_records(&log);
    for record in &records {
        let sub = record["principal"]["sub"].as_str().unwrap_or_default();
        assert!(["alice", "bob", "carol"].contains(&sub), "{record}");
    }
    assert!(
        records
            .iter()
            .any(|r| r["principal"]["sub"] == json!("bob") && r["outcome"] == json!("denied")),
        "bob's refused grep is recorded as denied"
    );
    for client in [alice, bob, again, carol] {
        within(client.cancel()).await.unwrap();
    }
}

#[tokio::test]
async fn the_search_surface_finds_and_calls_only_what_a_principals_policy_allows() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_d, root) = workspace();
    let log = root.join("audit.log");
    let (server, resource) = serve_oauth(
        &root,
        &provider.issuer,
        r#"
[[http.principals.rules]]
name = "bob"
subjects = ["bob"]
read_only = true
deny_tools = ["grep", "web_*"]
"#,
        &["--audit-log", log.to_str().unwrap(), "--surface", "search"],
    )
    .await;
    let claims = json!({"iss": provider.issuer, "aud": resource, "sub": "bob", "client_id": CLIENT_ID, "scope": "tools:read tools:write tools:exec tools:web", "exp": now() + 300});
    let bob = client(&server, &provider.sign(&claims, "key-a").await).await;
    // The pinned tools his rule allows (read-only: no edit_file, no execute_command; no grep).
    assert_eq!(
        tool_names(&bob).await,
        ["read_file", "glob", "search_tools", "call_tool"]
    );
    // What his rule refuses is not found, even by its exact name.
    for query in [
        "grep",
        "search the contents of files for a regex",
        "web_search",
        "write a file",
    ] {
        let found = call(&bob, "search_tools", json!({"query": query, "limit": 20})).await;
        let answer: Value = serde_json::from_str(&text(&found)).unwrap();
        let names: Vec<&str> = answer["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        for refused in ["grep", "web_search", "write_file", "execute_command"] {
            assert!(
                !names.contains(&refused),
                "{query:?} found {refused}: {names:?}"
            );
        }
    }
    // Nor called through call_tool; what it allows is.
    let message = err(&call(
        &bob,
        "call_tool",
        json!({"name": "grep", "arguments": {"pattern": "hi"}}),
    )
    .await);
    assert!(
        message.contains(r#"rule "bob" denies the tool grep"#),
        "{message}"
    );
    let read = call(
        &bob,
        "call_tool",
        json!({"name": "read_file", "arguments": {"path": "hello.txt"}}),
    )
    .await;
    assert_eq!(ok(&read)["content"], json!("hi over oauth\n"));
    eventually("the calls' records", || audit_records(&log).len() >= 6).await;
    let records = audit_records(&log);
    let grep = records.iter().find(|r| r["tool"] == "grep").unwrap();
    assert_eq!(grep["outcome"], "denied");
    assert_eq!(grep["via"], "call_tool");
    assert_eq!(grep["principal"]["sub"], "bob");
}
