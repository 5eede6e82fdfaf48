//! toolport as its own OAuth authorization server (`[http.oauth] authorization_server =
//! "builtin"`), through the real binary over HTTP on loopback.
//!
//! The whole flow with a real OAuth client nobody here wrote: the MCP Python SDK's
//! `OAuthClientProvider` (`.ci/oauth/sdk_client.py`) discovers the server from a 401,
//! registers, runs PKCE, is approved on the consent page with the one-time code toolport
//! prints on stderr (the test reads it there and hands it to the script), calls `read_file`,
//! and calls again after its 3-second access token expired (a refresh). `.ci/run` runs it with
//! the frameworks venv (`.ci/venv`) and `TOOLPORT_REQUIRE_OAUTH_CLIENTS=1`; without the venv and
//! that variable the test says it did not run.
//!
//! mcp-remote (npm, pinned in `.ci/mcp-remote`, installed by `.ci/run`), what Claude Desktop users
//! run to reach remote OAuth servers, goes the same way over its stdio, its browser replaced by a
//! script that writes down the URL it is asked to open (`BROWSER`, which the `open` package's
//! xdg-open runs); the test approves the page and follows the redirect to mcp-remote's loopback
//! callback. Required with the same variable.
//!
//! rmcp's own OAuth client (its `auth` feature, a dev-dependency: the upstream side will use it)
//! goes the same way: discovery, registration, PKCE, the callback with `iss` checked, a call,
//! a refresh after expiry.
//!
//! The refusals are driven by a small client written here (reqwest, no redirects followed):
//! a wrong secret (and the attempt rate), PKCE mismatch, `plain` and missing PKCE, a missing or
//! another `resource`, an unregistered redirect URI (a page, no redirect), a code used twice, a
//! rotated refresh token used again (the grant revoked), `toolport auth revoke`, a token signed
//! by the server's own key for another audience; and a restart keeping the grants.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::common::http::{ACCEPT, INIT, Server, start};
use crate::common::process::eventually;
use crate::common::python::{sdk_python, sdk_script};
use crate::common::{command, config_file, tempdir, within};

/// The redirect URI the test client registers (nothing listens: the test reads the
/// `Location` toolport answers with).
pub(crate) const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";
/// The stderr line that carries a one-time code, up to the code.
pub(crate) const CODE_LINE: &str = "to approve, enter the one-time code ";
/// A PKCE pair (RFC 7636 appendix B).
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// A workspace, its state folder, and a toolport serving it with the built-in server.
struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
    config: PathBuf,
}

impl Setup {
    fn new(extra_toml: &str) -> Self {
        let (dir, root) = tempdir();
        std::fs::write(root.join("hello.txt"), "hi from the builtin server\n").unwrap();
        let state = dir.path().join("state");
        // Short, so the Python SDK refreshes within the test.
        let lifetime = if extra_toml.contains("access_token_lifetime") {
            ""
        } else {
            "access_token_lifetime = \"3s\"\n"
        };
        let config = config_file(
            &root,
            &format!(
                "[http.oauth]\nauthorization_server = \"builtin\"\nstate_dir = '{}'\n{lifetime}{extra_toml}",
                state.display()
            ),
        );
        Self {
            _dir: dir,
            root,
            state,
            config,
        }
    }

    async fn serve(&self) -> Server {
        start(
            &self.root,
            &["--config", self.config.to_str().unwrap()],
            None,
        )
        .await
    }

    /// `toolport auth ARGS` with this config: its status and stdout.
    async fn auth(&self, args: &[&str]) -> (bool, String) {
        let mut all = vec!["--config", self.config.to_str().unwrap(), "auth"];
        all.extend_from_slice(args);
        let out = within(command(&self.root, &all).output()).await.unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

/// An HTTP client that does not follow redirects (the test reads `Location`).
pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The n-th one-time code toolport printed (1-based), waited for.
async fn nth_code(server: &Server, n: usize) -> String {
    eventually("the one-time code on stderr", || {
        server.stderr().matches(CODE_LINE).count() >= n
    })
    .await;
    let stderr = server.stderr();
    let line = stderr.split(CODE_LINE).nth(n).unwrap();
    line.split_whitespace().next().unwrap().to_owned()
}

/// Submit consent page `page` of the server at `base` with `secret`, as the operator does.
pub(crate) async fn approve(base: &str, page: &str, secret: &str) -> reqwest::Response {
    within(
        http()
            .post(format!("{base}/oauth/authorize"))
            .form(&[
                ("request", hidden(page, "request").as_str()),
                ("csrf", hidden(page, "csrf").as_str()),
                ("secret", secret),
                ("decision", "approve"),
            ])
            .send(),
    )
    .await
    .unwrap()
}

/// The value of hidden field `name` on a consent page.
fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {page}"))
        + marker.len();
    page[start..].split('"').next().unwrap().to_owned()
}

/// The query parameters of a redirect's `Location`.
fn location_query(response: &reqwest::Response) -> Vec<(String, String)> {
    let location = response
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("no redirect: {}", response.status()))
        .to_str()
        .unwrap();
    assert!(location.starts_with(REDIRECT_URI), "{location}");
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A client of the built-in server, written for the refusals.
struct Flow<'a> {
    server: &'a Server,
    client_id: String,
    resource: String,
    /// The issuer the server names (`iss`).
    issuer: String,
    /// Consent pages asked for so far (which one-time code is whose).
    pages: usize,
}

impl<'a> Flow<'a> {
    async fn register(server: &'a Server) -> Self {
        let answer: Value = within(
            http()
                .post(format!("{}/oauth/register", server.url))
                .json(&json!({"redirect_uris": [REDIRECT_URI], "client_name": "test <client>", "token_endpoint_auth_method": "client_secret_post"}))
                .send(),
        )
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        assert_eq!(answer["token_endpoint_auth_method"], "none", "{answer}");
        Self {
            server,
            client_id: answer["client_id"].as_str().unwrap().to_owned(),
            resource: format!("{}/mcp", server.url),
            issuer: server.url.clone(),
            pages: 0,
        }
    }

    /// `GET /oauth/authorize` with the usual parameters, `changes` applied (a `None` value
    /// removes the parameter).
    async fn authorize(&self, changes: &[(&str, Option<&str>)]) -> reqwest::Response {
        let mut params = vec![
            ("response_type", Some("code")),
            ("client_id", Some(self.client_id.as_str())),
            ("redirect_uri", Some(REDIRECT_URI)),
            ("state", Some("st-1")),
            ("code_challenge", Some(CHALLENGE)),
            ("code_challenge_method", Some("S256")),
            ("resource", Some(self.resource.as_str())),
            ("scope", Some("tools:read tools:write")),
        ];
        for (name, value) in changes {
            match params.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 = *value,
                None => params.push((name, *value)),
            }
        }
        let params: Vec<(&str, &str)> = params
            .into_iter()
            .filter_map(|(n, v)| v.map(|v| (n, v)))
            .collect();
        let url =
            url::Url::parse_with_params(&format!("{}/oauth/authorize", self.server.url), &params)
                .unwrap();
        within(http().get(url).send()).await.unwrap()
    }

    /// A consent page for a good request: its text and its one-time code.
    async fn consent(&mut self) -> (String, String) {
        let response = self.authorize(&[]).await;
        assert_eq!(response.status(), 200);
        let page = response.text().await.unwrap();
        self.pages += 1;
        let code = nth_code(self.server, self.pages).await;
        (page, code)
    }

    /// Submit a consent page with `secret`.
    async fn decide(&self, page: &str, secret: &str) -> reqwest::Response {
        approve(&self.server.url, page, secret).await
    }

    /// An authorization code, approved with the right secret.
    async fn code(&mut self) -> String {
        let (page, secret) = self.consent().await;
        let response = self.decide(&page, &secret).await;
        assert_eq!(response.status(), 303);
        let query = location_query(&response);
        assert_eq!(param(&query, "state"), Some("st-1"));
        assert_eq!(param(&query, "iss"), Some(self.issuer.as_str()));
        param(&query, "code").unwrap().to_owned()
    }

    /// `POST /oauth/token` with `form`: status and body.
    async fn token(&self, form: &[(&str, &str)]) -> (u16, Value) {
        let response = within(
            http()
                .post(format!("{}/oauth/token", self.server.url))
                .form(form)
                .send(),
        )
        .await
        .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    async fn exchange(&self, code: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &self.client_id),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", VERIFIER),
            ("resource", &self.resource),
        ])
        .await
    }

    async fn refresh(&self, refresh_token: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", &self.client_id),
            ("resource", &self.resource),
        ])
        .await
    }

    /// Access and refresh tokens, through the whole flow.
    async fn tokens(&mut self) -> (String, String) {
        let code = self.code().await;
        let (status, body) = self.exchange(&code).await;
        assert_eq!(status, 200, "{body}");
        (
            body["access_token"].as_str().unwrap().to_owned(),
            body["refresh_token"].as_str().unwrap().to_owned(),
        )
    }
}

/// An `initialize` to `/mcp` with `token`: status and challenge.
async fn call_with(server: &Server, token: &str) -> (u16, String) {
    initialize_as(http().post(format!("{}/mcp", server.url)), token).await
}

/// An `initialize` sent by `request` (a POST to an `/mcp`) with `token`: status and challenge.
pub(crate) async fn initialize_as(request: reqwest::RequestBuilder, token: &str) -> (u16, String) {
    let response = within(
        request
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .bearer_auth(token)
            .body(INIT)
            .send(),
    )
    .await
    .unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), challenge)
}

/// Whatever secret the stderr or log holds, no code or token leaked anywhere visible.
fn assert_not_leaked(server: &Server, secrets: &[&str]) {
    let stderr = server.stderr();
    for secret in secrets {
        assert!(!stderr.contains(secret), "a secret is in the log: {secret}");
    }
}

#[tokio::test]
async fn metadata_points_at_the_builtin_server_and_it_grants_read_only_by_default() {
    let setup = Setup::new("");
    let server = setup.serve().await;
    let get = |path: &str| {
        let url = format!("{}{path}", server.url);
        async move {
            let response = within(http().get(url).send()).await.unwrap();
            response.json::<Value>().await.unwrap()
        }
    };
    let prm = get("/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(prm["authorization_servers"], json!([server.url]));
    let metadata = get("/.well-known/oauth-authorization-server").await;
    assert_eq!(metadata["issuer"], json!(server.url));
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(metadata["scopes_supported"], json!(["tools:read"]));
    assert_eq!(
        metadata["authorization_response_iss_parameter_supported"],
        json!(true)
    );
    assert_eq!(
        metadata["client_id_metadata_document_supported"],
        json!(true)
    );
    assert_eq!(
        metadata["token_endpoint"],
        json!(format!("{}/oauth/token", server.url))
    );

    let mut flow = Flow::register(&server).await;
    let (page, code) = flow.consent().await;
    // The page: client, scopes granted and withheld, the strict headers; no secret on it.
    assert!(page.contains("test &lt;client&gt;"), "{page}");
    assert!(page.contains(&flow.client_id));
    let granted = &page[page.find("Granted").unwrap()..page.find("Withheld").unwrap()];
    assert!(
        granted.contains("tools:read") && !granted.contains("tools:write"),
        "{granted}"
    );
    let withheld = &page[page.find("Withheld").unwrap()..];
    assert!(
        withheld.contains("tools:write") && withheld.contains("tools:exec"),
        "{withheld}"
    );
    assert!(!page.contains(&code));

    let response = flow.decide(&page, &code).await;
    let query = location_query(&response);
    let (status, body) = flow.exchange(param(&query, "code").unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scope"], "tools:read");
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3);
    let access = body["access_token"].as_str().unwrap();
    assert_eq!(call_with(&server, access).await.0, 200);
    // The claims the resource server relies on.
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(access.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], json!(server.url));
    assert_eq!(claims["aud"], json!(flow.resource));
    assert_eq!(claims["client_id"], json!(flow.client_id));
    assert_eq!(claims["sub"], "operator");
    // A write is outside the grant: 403 insufficient_scope.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}});
    let response = within(
        http()
            .post(format!("{}/mcp", server.url))
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .bearer_auth(access)
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 403);
    assert_not_leaked(
        &server,
        &[access, body["refresh_token"].as_str().unwrap_or("none")],
    );
}

#[tokio::test]
async fn requests_that_cannot_be_trusted_are_refused() {
    let setup = Setup::new("");
    let server = setup.serve().await;
    let mut flow = Flow::register(&server).await;

    // Before the redirect URI is known good: a page, never a redirect.
    for changes in [
        vec![("redirect_uri", Some("http://127.0.0.1:9/elsewhere"))],
        vec![("redirect_uri", Some("https://evil.example/callback"))],
        vec![("client_id", Some("tp-unknown"))],
        // A client ID metadata document on a private address: never fetched (the SSRF guard).
        vec![("client_id", Some("https://127.0.0.1/client.json"))],
        vec![("client_id", Some("https://10.1.2.3/client.json"))],
    ] {
        let response = flow.authorize(&changes).await;
        assert_eq!(response.status(), 400, "{changes:?}");
        assert!(response.headers().get("location").is_none(), "{changes:?}");
        assert_eq!(response.headers()["x-frame-options"], "DENY");
    }
    // After it: an error at the redirect URI, with state and iss.
    for (changes, error) in [
        (
            vec![("code_challenge_method", Some("plain"))],
            "invalid_request",
        ),
        (vec![("code_challenge_method", None)], "invalid_request"),
        (vec![("code_challenge", None)], "invalid_request"),
        (vec![("resource", None)], "invalid_target"),
        (
            vec![("resource", Some("http://127.0.0.1:1/mcp"))],
            "invalid_target",
        ),
        (
            vec![("response_type", Some("token"))],
            "unsupported_response_type",
        ),
        (vec![("scope", Some("tools:exec"))], "invalid_scope"),
    ] {
        let response = flow.authorize(&changes).await;
        assert_eq!(response.status(), 303, "{changes:?}");
        let query = location_query(&response);
        assert_eq!(param(&query, "error"), Some(error), "{changes:?}");
        assert_eq!(param(&query, "state"), Some("st-1"));
        assert_eq!(param(&query, "iss"), Some(server.url.as_str()));
    }
    // No consent page was made for any of them.
    assert!(!server.stderr().contains(CODE_LINE));

    // PKCE mismatch: refused, and the code is spent.
    let code = flow.code().await;
    let (status, body) = flow
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &flow.client_id),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", &"x".repeat(43)),
            ("resource", &flow.resource),
        ])
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    let (status, body) = flow.exchange(&code).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );

    // A code is used once.
    let code = flow.code().await;
    assert_eq!(flow.exchange(&code).await.0, 200);
    let (status, body) = flow.exchange(&code).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    assert!(!body.to_string().contains(&code));

    // The resource at the token endpoint must be the code's.
    let code = flow.code().await;
    let (status, body) = flow
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &flow.client_id),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", VERIFIER),
        ])
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_target")),
        "{body}"
    );
    assert_not_leaked(&server, &[&code]);
}

#[tokio::test]
async fn a_wrong_secret_is_refused_and_attempts_are_limited() {
    let setup = Setup::new("");
    let server = setup.serve().await;
    let mut flow = Flow::register(&server).await;

    let (page, code) = flow.consent().await;
    let response = flow.decide(&page, "00000-00000").await;
    assert_eq!(response.status(), 403);
    assert!(response.text().await.unwrap().contains("4 attempts left"));
    // Another request's code does not approve this one.
    let (other_page, other_code) = flow.consent().await;
    assert_eq!(flow.decide(&page, &other_code).await.status(), 403);
    // A forged form (the CSRF token of no request) is refused.
    let forged = page.replace(&hidden(&page, "csrf"), &"0".repeat(64));
    assert_eq!(flow.decide(&forged, &code).await.status(), 400);
    // Three more wrong: the request ends, access_denied at the client.
    for _ in 0..2 {
        assert_eq!(flow.decide(&page, "wrong").await.status(), 403);
    }
    let response = flow.decide(&page, "wrong").await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        param(&location_query(&response), "error"),
        Some("access_denied")
    );
    // Its code is dead with it.
    assert_eq!(flow.decide(&page, &code).await.status(), 400);
    // The client's attempt rate (10 a minute): five more wrong on the other page, then 429.
    for _ in 0..4 {
        assert_eq!(flow.decide(&other_page, "wrong").await.status(), 403);
    }
    let (third, third_code) = flow.consent().await;
    assert_eq!(flow.decide(&third, "wrong").await.status(), 403);
    assert_eq!(flow.decide(&third, &third_code).await.status(), 429);
    let stderr = server.stderr();
    assert!(
        stderr.contains("a wrong consent secret was entered"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong\""), "what was typed is not logged");
}

#[tokio::test]
async fn refresh_tokens_rotate_and_reuse_or_revocation_ends_the_grant() {
    let setup = Setup::new("");
    let server = setup.serve().await;
    let mut flow = Flow::register(&server).await;

    let (access, first) = flow.tokens().await;
    let (status, body) = flow.refresh(&first).await;
    assert_eq!(status, 200, "{body}");
    let second = body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    // The rotated token again: refused, and the whole grant with it.
    let (status, body) = flow.refresh(&first).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    let (status, _) = flow.refresh(&second).await;
    assert_eq!(status, 400, "the grant is revoked");
    let (status, challenge) = call_with(&server, &access).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("revoked"), "{challenge}");

    // `toolport auth list` and `revoke` on a fresh grant.
    let (access, refresh) = flow.tokens().await;
    assert_eq!(call_with(&server, &access).await.0, 200);
    let (ok, listed) = setup.auth(&["list", "--json"]).await;
    assert!(ok);
    let grants: Vec<Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(grants.len(), 1, "{listed}");
    assert_eq!(grants[0]["client_id"], json!(flow.client_id));
    assert_eq!(grants[0]["scopes"], json!(["tools:read"]));
    assert!(!listed.contains(&refresh));
    let id = grants[0]["id"].as_str().unwrap();
    let (ok, said) = setup.auth(&["revoke", id]).await;
    assert!(ok, "{said}");
    assert_eq!(call_with(&server, &access).await.0, 401);
    assert_eq!(flow.refresh(&refresh).await.0, 400);
    let (ok, _) = setup.auth(&["revoke", id]).await;
    assert!(!ok, "revoking twice says there is no such grant");
}

#[tokio::test]
async fn a_token_signed_by_the_server_for_another_audience_is_refused() {
    let setup = Setup::new("");
    let server = setup.serve().await;
    let mut flow = Flow::register(&server).await;
    let (access, _) = flow.tokens().await;
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(access.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    let mut claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(access.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    claims["aud"] = json!("http://127.0.0.1:1/mcp");
    let key = std::fs::read(setup.state.join("signing-key.ed25519.pk8")).unwrap();
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: header["kid"].as_str().map(str::to_owned),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA)
        },
        &claims,
        &jsonwebtoken::EncodingKey::from_ed_der(&key),
    )
    .unwrap();
    let (status, challenge) = call_with(&server, &forged).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("another resource"), "{challenge}");
}

#[tokio::test]
async fn a_restart_keeps_the_key_and_the_grants() {
    // A fixed public URL, so the resource and the issuer are the same after the restart
    // (which listens on another port).
    const PUBLIC: &str = "http://127.0.0.1:1";
    let setup = Setup::new(&format!(
        "public_url = \"{PUBLIC}/mcp\"\naccess_token_lifetime = \"10m\""
    ));
    let server = setup.serve().await;
    let mut flow = Flow::register(&server).await;
    flow.resource = format!("{PUBLIC}/mcp");
    flow.issuer = PUBLIC.to_owned();
    let (access, refresh) = flow.tokens().await;
    let client_id = flow.client_id.clone();
    drop(flow);
    drop(server);

    let server = setup.serve().await;
    assert_eq!(
        call_with(&server, &access).await.0,
        200,
        "the key and grant survived"
    );
    let mut flow = Flow::register(&server).await;
    flow.client_id = client_id;
    flow.resource = format!("{PUBLIC}/mcp");
    let (status, body) = flow.refresh(&refresh).await;
    assert_eq!(status, 200, "{body}");
    let (ok, listed) = setup.auth(&["list"]).await;
    assert!(ok && listed.contains("test <client>"), "{listed}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&setup.state), 0o700);
        assert_eq!(mode(&setup.state.join("grants.json")), 0o600);
        assert_eq!(mode(&setup.state.join("signing-key.ed25519.pk8")), 0o600);
    }
}

#[tokio::test]
async fn the_python_sdk_connects_is_approved_calls_and_refreshes() {
    let Some(python) = sdk_python("TOOLPORT_REQUIRE_OAUTH_CLIENTS") else {
        return;
    };
    let setup = Setup::new("");
    let server = setup.serve().await;
    let url = format!("{}/mcp", server.url);
    let mut child = sdk_script(
        &python,
        ".ci/oauth/sdk_client.py",
        [url.as_str(), "hello.txt"],
    )
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    while let Some(line) = within(lines.next_line()).await.unwrap() {
        let step: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{line}"));
        if step["need"] == "secret" {
            let code = nth_code(&server, 1).await;
            within(stdin.write_all(format!("{code}\n").as_bytes()))
                .await
                .unwrap();
            continue;
        }
        said.push(step);
    }
    let status = within(child.wait()).await.unwrap();
    assert!(
        status.success(),
        "the SDK client failed: {said:?}\n{}",
        server.stderr()
    );
    assert_eq!(said[0], json!({"approved": true}));
    assert_eq!(said[1]["read"], "hi from the builtin server\n", "{said:?}");
    assert_eq!(said[1]["error"], false);
    assert_eq!(said[1]["scope"], "tools:read");
    assert_eq!(
        said[1]["tools"],
        json!([
            "glob",
            "grep",
            "list_directory",
            "path_info",
            "read_file",
            "read_many_files"
        ])
    );
    assert_eq!(said[2]["read_after_expiry"], "hi from the builtin server\n");
    assert_eq!(said[2]["access_token_changed"], true, "refreshed: {said:?}");
    assert_eq!(said[2]["refresh_token_rotated"], true);
    assert_eq!(said[3]["done"], true);
}

#[tokio::test]
async fn rmcps_own_auth_client_connects_calls_and_refreshes() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::auth::{AuthClient, AuthorizationRequest, OAuthState};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let setup = Setup::new("");
    let server = setup.serve().await;
    let mcp = format!("{}/mcp", server.url);
    let mut state = within(OAuthState::new(mcp.as_str(), None)).await.unwrap();
    within(state.start_authorization(
        AuthorizationRequest::new(REDIRECT_URI).with_client_name("rmcp auth client"),
    ))
    .await
    .unwrap();
    let url = within(state.get_authorization_url()).await.unwrap();
    // The operator's browser: the page, the code from stderr, the redirect.
    let page = within(http().get(&url).send()).await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("rmcp auth client"), "{page}");
    let code = nth_code(&server, 1).await;
    let answer = approve(&server.url, &page, &code).await;
    assert_eq!(answer.status(), 303);
    let location = answer.headers()["location"].to_str().unwrap().to_owned();
    // rmcp checks state and the RFC 9207 iss, then exchanges the code with its verifier.
    within(state.handle_callback_url(&location)).await.unwrap();
    let manager = state.into_authorization_manager().unwrap();
    let transport = StreamableHttpClientTransport::with_client(
        AuthClient::new(reqwest::Client::default(), manager),
        StreamableHttpClientTransportConfig::with_uri(mcp.as_str()),
    );
    let client = within(crate::common::TestClient::default().serve(transport))
        .await
        .expect("initialize with rmcp's OAuth client");
    let read = || async {
        let result = within(
            client.call_tool(
                rmcp::model::CallToolRequestParams::new("read_file")
                    .with_arguments(json!({"path": "hello.txt"}).as_object().unwrap().clone()),
            ),
        )
        .await
        .unwrap();
        result.content[0].as_text().unwrap().text.clone()
    };
    assert_eq!(read().await, "hi from the builtin server\n");
    // Past the 3 s access token: rmcp refreshes it before the next request.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert_eq!(read().await, "hi from the builtin server\n");
    within(client.cancel()).await.unwrap();
}

/// `node` and mcp-remote installed in `.ci/mcp-remote`, or `None` (the test does not run)
/// when they are not and CI does not require them.
fn mcp_remote() -> Option<(PathBuf, PathBuf)> {
    let node = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("node"))
            .find(|n| n.is_file())
    });
    let proxy = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/mcp-remote/node_modules/mcp-remote/dist/proxy.js");
    if let Some(node) = node
        && proxy.is_file()
    {
        return Some((node, proxy));
    }
    assert!(
        std::env::var_os("TOOLPORT_REQUIRE_OAUTH_CLIENTS").is_none(),
        "node or mcp-remote is missing ({} not installed): .ci/run installs it into .ci/mcp-remote",
        proxy.display()
    );
    eprintln!(
        "not run: node or mcp-remote is not installed in .ci/mcp-remote (see this file's docs)"
    );
    None
}

/// A free loopback port (for mcp-remote's callback server).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn mcp_remote_connects_is_approved_calls_and_refreshes() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::TokioChildProcess;

    let Some((node, proxy)) = mcp_remote() else {
        return;
    };
    let setup = Setup::new("");
    let server = setup.serve().await;
    let home = setup.state.with_file_name("mcp-remote-home");
    std::fs::create_dir_all(&home).unwrap();
    // Its browser: a script that writes down the URL it is asked to open (mcp-remote opens it
    // with the `open` package, whose xdg-open runs $BROWSER); the test plays the operator.
    let opened = home.join("opened.txt");
    let browser = home.join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
            opened.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cmd = Command::new(node);
    cmd.arg(proxy)
        .arg(format!("{}/mcp", server.url))
        .arg(free_port().to_string())
        .arg("--allow-http")
        .env("HOME", &home)
        .env("MCP_REMOTE_CONFIG_DIR", home.join("auth"))
        .env("BROWSER", &browser)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("XDG_CURRENT_DESKTOP")
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let transport = TokioChildProcess::new(cmd).unwrap();

    // The operator: the page mcp-remote opened, the code from stderr, then the redirect to
    // mcp-remote's loopback callback, as the browser would follow it.
    let operator = async {
        eventually("mcp-remote opens the authorization URL", || {
            std::fs::read_to_string(&opened).is_ok_and(|t| t.contains("/oauth/authorize"))
        })
        .await;
        let url = std::fs::read_to_string(&opened).unwrap();
        let page = within(http().get(url.trim()).send()).await.unwrap();
        assert_eq!(page.status(), 200);
        let page = page.text().await.unwrap();
        let code = nth_code(&server, 1).await;
        let answer = approve(&server.url, &page, &code).await;
        assert_eq!(answer.status(), 303);
        let callback = answer.headers()["location"].to_str().unwrap().to_owned();
        assert!(
            callback.starts_with("http://localhost:") || callback.starts_with("http://127.0.0.1:"),
            "{callback}"
        );
        let done = within(http().get(&callback).send()).await.unwrap();
        assert!(done.status().is_success(), "{}", done.status());
    };
    let (client, ()) = tokio::join!(
        async {
            within(crate::common::TestClient::default().serve(transport))
                .await
                .expect("initialize through mcp-remote")
        },
        operator
    );
    let read = || async {
        let result = within(
            client.call_tool(
                rmcp::model::CallToolRequestParams::new("read_file")
                    .with_arguments(json!({"path": "hello.txt"}).as_object().unwrap().clone()),
            ),
        )
        .await
        .unwrap();
        result.content[0].as_text().unwrap().text.clone()
    };
    assert_eq!(read().await, "hi from the builtin server\n");
    // Past the 3 s access token: mcp-remote refreshes it.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert_eq!(read().await, "hi from the builtin server\n");
    within(client.cancel()).await.unwrap();
}
