//! OAuth to upstreams, end to end with parts nobody here wrote: the upstream is a toolport in
//! resource-server mode (`[http.oauth]`) whose identity provider is `oidc-provider` (npm,
//! pinned in `.ci/oidc`; `login.mjs` configures it for dynamic registration, PKCE, resource
//! indicators, rotating refresh tokens, 32 s access tokens and client credentials).
//!
//! `toolport upstreams login` runs with its browser replaced by a script (`BROWSER`) that
//! writes down the URL; the test plays the person (follows the URL, logs in on the provider's
//! form, is sent back to the command's loopback redirect). Then the front toolport calls the
//! upstream's tools; the access token is refreshed (the provider's log shows the refresh and
//! its `resource`: without it the provider issues no token the upstream accepts); a restart
//! uses the stored tokens with no new login; a refresh token revoked at the provider marks that
//! upstream, and only it, "needs login" while a second upstream keeps working; a new login
//! brings it back without a restart. Client credentials work with no login at all.
//!
//! The tokens live in the file store in a temporary folder (`token_store = "file"`,
//! `TOOLPORT_TOKEN_DIR`): no test touches a real keyring. Required in CI by
//! `TOOLPORT_REQUIRE_OIDC_PROVIDER=1`, as `oauth.rs`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::http::Server;
use crate::common::reference;
use crate::common::upstreams::until_listed;
use crate::common::{
    Client, TestClient, audit_records, bin, call, command, config_file, ok, spawn_server, tempdir,
    text, within,
};
use crate::oauth::{node, oidc_dir, serve_oauth};

/// The client credentials client `login.mjs` registers.
const CC_ID: &str = "toolport-cc";
const CC_SECRET: &str = "toolport-cc-secret-0123456789";

/// How long rmcp keeps using an access token of `login.mjs` (32 s) before it refreshes it
/// (under 30 s left): waiting this long makes the next request refresh. A wait for time to
/// pass, not for another task.
const TOKEN_FRESH_FOR: Duration = Duration::from_millis(2500);

/// A running `login.mjs`; dropped, it is killed.
struct Provider {
    _child: Child,
    issuer: String,
}

impl Provider {
    async fn start(node: &Path) -> Self {
        Self::start_with(node, None).await
    }

    /// Started with the private_key_jwt client's key written to `key_file`.
    async fn start_with(node: &Path, key_file: Option<&Path>) -> Self {
        let mut command = Command::new(node);
        if let Some(file) = key_file {
            command.env("CLIENT_KEY_FILE", file);
        }
        let mut child = command
            .arg(oidc_dir().join("login.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start login.mjs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = within(lines.next_line()).await.unwrap().unwrap();
        let issuer = serde_json::from_str::<Value>(&line).unwrap()["issuer"]
            .as_str()
            .unwrap()
            .to_owned();
        Self {
            _child: child,
            issuer,
        }
    }

    /// Every token request the provider answered: grant type, resource, status.
    async fn token_requests(&self) -> Vec<Value> {
        within(async {
            reqwest::get(format!("{}/test/token-requests", self.issuer))
                .await
                .unwrap()
                .json::<Vec<Value>>()
                .await
                .unwrap()
        })
        .await
    }

    fn count(requests: &[Value], grant: &str) -> usize {
        requests.iter().filter(|r| r["grant_type"] == grant).count()
    }
}

/// An upstream toolport in resource-server mode for `issuer`, serving `under/upstream` (made,
/// with a file in it); its resource URL.
async fn upstream(under: &Path, issuer: &str) -> (Server, String) {
    let root = under.join("upstream");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("note.txt"), "from the protected upstream\n").unwrap();
    serve_oauth(&root, issuer, "", &[]).await
}

/// A front toolport's config: `remote` (OAuth, `auth_toml`) at `resource`, and `local`, a
/// stdio toolport serving `local_root`.
fn front_toml(resource: &str, auth_toml: &str, local_root: &Path) -> String {
    std::fs::create_dir_all(local_root).unwrap();
    std::fs::write(local_root.join("local.txt"), "from the local upstream\n").unwrap();
    format!(
        "[[upstreams]]\nname = \"remote\"\nurl = \"{resource}\"\n{auth_toml}\n\n\
         [[upstreams]]\nname = \"local\"\ncommand = '{}'\nargs = [\"--root\", '{}']\nenv = {{ XDG_CONFIG_HOME = '{}' }}\n",
        bin(),
        local_root.display(),
        local_root.join(".no-config").display(),
    )
}

/// The front toolport's command for `args`, its tokens in `tokens`.
fn front(root: &Path, tokens: &Path, args: &[&str]) -> Command {
    let mut cmd = command(root, args);
    cmd.env("TOOLPORT_TOKEN_DIR", tokens);
    cmd
}

/// A front toolport over stdio with `config`, auditing to `root/audit.log`.
async fn serve_front(root: &Path, tokens: &Path, config: &Path) -> Client {
    let log = root.join("audit.log");
    let cmd = front(
        root,
        tokens,
        &[
            "--config",
            config.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
    );
    within(TestClient::default().serve(spawn_server(cmd)))
        .await
        .unwrap()
}

/// `toolport://upstreams`, by name.
async fn upstream_states(client: &Client) -> Value {
    let read = within(client.read_resource(ReadResourceRequestParams::new("toolport://upstreams")))
        .await
        .unwrap();
    let text = match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    };
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    all.into_iter()
        .map(|s| (s["name"].as_str().unwrap().to_owned(), s))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Wait until `remote`'s state in the resource is `state`; the states then.
async fn until_state(client: &Client, state: &str) -> Value {
    within(async {
        loop {
            let states = upstream_states(client).await;
            if states["remote"]["state"] == state {
                return states;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// A cookie jar for the provider's pages (its interaction cookies), as a browser keeps one.
#[derive(Default)]
struct Browser {
    cookies: std::collections::BTreeMap<String, String>,
    client: Option<reqwest::Client>,
}

impl Browser {
    fn client(&mut self) -> reqwest::Client {
        self.client
            .get_or_insert_with(|| {
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap()
            })
            .clone()
    }

    /// Send `request` with the jar's cookies; keep the ones it sets.
    async fn send(&mut self, request: reqwest::RequestBuilder) -> reqwest::Response {
        let cookie = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let response = within(request.header("cookie", cookie).send())
            .await
            .unwrap();
        for set in response.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            if let Some((name, value)) = pair.split_once('=') {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        response
    }

    /// Where `response` redirects, absolute (against `base`).
    fn location(response: &reqwest::Response, base: &str) -> String {
        assert!(
            response.status().is_redirection(),
            "expected a redirect, got {}",
            response.status()
        );
        let location = response.headers()["location"].to_str().unwrap();
        url::Url::parse(base)
            .unwrap()
            .join(location)
            .unwrap()
            .to_string()
    }

    /// Log in as `who` at the authorization URL `url`: the provider's form, then back to the
    /// loopback redirect; that page's text.
    async fn log_in(&mut self, url: &str, who: &str) -> String {
        let client = self.client();
        let mut next = {
            let response = self.send(client.get(url)).await;
            Self::location(&response, url)
        };
        // The provider's pages: the login, then the consent (the same form).
        for _ in 0..2 {
            if next.contains("/callback?") {
                break;
            }
            let interaction = next;
            let page = self
                .send(client.get(&interaction))
                .await
                .text()
                .await
                .unwrap();
            assert!(page.contains("name=\"login\""), "{page}");
            let resume = {
                let response = self
                    .send(
                        client
                            .post(format!("{interaction}/login"))
                            .form(&[("login", who)]),
                    )
                    .await;
                Self::location(&response, &interaction)
            };
            let response = self.send(client.get(&resume)).await;
            next = Self::location(&response, &resume);
        }
        let callback = next;
        assert!(
            callback.starts_with("http://127.0.0.1:") && callback.contains("/callback?"),
            "{callback}"
        );
        let query: Vec<(String, String)> = url::Url::parse(&callback)
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect();
        for name in ["code", "state", "iss"] {
            assert!(query.iter().any(|(k, _)| k == name), "{name} in {callback}");
        }
        within(client.get(&callback).send())
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

/// `toolport upstreams login remote` with `config`, its browser a script that writes the URL
/// to a file; the test logs in as `who`. Asserts it succeeded; its stderr.
async fn login(root: &Path, tokens: &Path, config: &Path, who: &str) -> String {
    let opened = root.join("opened-url");
    let _ = std::fs::remove_file(&opened);
    let browser = root.join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut child = front(
        root,
        tokens,
        &[
            "--config",
            config.to_str().unwrap(),
            "upstreams",
            "login",
            "remote",
        ],
    )
    .env("BROWSER", &browser)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stderr = String::new();
    // The URL, on stderr.
    let url = within(async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the login printed its URL");
            stderr.push_str(&line);
            stderr.push('\n');
            if let Some(url) = line.trim().strip_prefix("http") {
                return format!("http{url}");
            }
        }
    })
    .await;
    let page = Browser::default().log_in(&url, who).await;
    assert!(page.contains("Logged in"), "{page}");
    while let Some(line) = within(lines.next_line()).await.unwrap() {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap(),
        url,
        "the browser ($BROWSER) was given the URL"
    );
    stderr
}

/// The stored credentials of `remote`.
fn stored(tokens: &Path) -> Value {
    let text = std::fs::read_to_string(tokens.join("remote.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn login_refresh_restart_and_a_revoked_refresh_token() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_dir, root) = tempdir();
    let (upstream_server, resource) = upstream(&root, &provider.issuer).await;
    let tokens = root.join("tokens");
    // The official reference server `everything` as a third upstream, when it is installed
    // (`.ci/upstreams`; CI requires it): a server nobody here wrote keeps working too.
    let everything = reference::servers().map(|s| {
        reference::upstream(
            "everything",
            &s.node,
            &[s.everything.to_str().unwrap(), "stdio"],
            "",
        )
    });
    let config = config_file(
        &root,
        &format!(
            "{}\n{}",
            front_toml(
                &resource,
                "auth = \"oauth\"\ntoken_store = \"file\"",
                &root.join("local"),
            ),
            everything.as_deref().unwrap_or_default()
        ),
    );

    // Before any login: only `remote` needs one, and says how.
    let status = within(
        front(
            &root,
            &tokens,
            &[
                "--config",
                config.to_str().unwrap(),
                "upstreams",
                "status",
                "--json",
            ],
        )
        .output(),
    )
    .await
    .unwrap();
    assert_eq!(status.status.code(), Some(1));
    let states: Vec<Value> = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(states[0]["state"], "needs_login", "{states:?}");
    assert!(
        states[0]["error"]
            .as_str()
            .unwrap()
            .contains("toolport upstreams login remote"),
        "{states:?}"
    );
    assert_eq!(states[1]["state"], "ready", "{states:?}");

    // The login: discovery from the upstream's 401, dynamic registration, PKCE, `resource`.
    let said = login(&root, &tokens, &config, "alice").await;
    assert!(said.contains("logged in to upstream remote"), "{said}");
    let saved = stored(&tokens);
    assert_eq!(saved["url"], resource.as_str());
    let access = saved["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(tokens.join("remote.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let requests = provider.token_requests().await;
    assert_eq!(Provider::count(&requests, "authorization_code"), 1);
    assert!(
        requests
            .iter()
            .all(|r| r["resource"] == resource.as_str() && r["status"] == 200),
        "{requests:?}"
    );

    // Calls through the front toolport.
    let client = serve_front(&root, &tokens, &config).await;
    until_listed(&client, &["remote__read_file", "local__read_file"]).await;
    let read = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    assert!(
        ok(&read)["content"]
            .as_str()
            .unwrap()
            .contains("protected upstream")
    );
    let states = upstream_states(&client).await;
    assert_eq!(states["remote"]["auth"], "oauth");
    assert!(
        states["remote"]["token_store"]
            .as_str()
            .unwrap()
            .contains("remote.json"),
        "{states}"
    );

    // The access token ages past rmcp's margin: the next call refreshes it, with `resource`.
    tokio::time::sleep(TOKEN_FRESH_FOR).await;
    let read = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    assert!(read.is_error != Some(true), "{read:?}");
    let requests = provider.token_requests().await;
    let refreshes: Vec<&Value> = requests
        .iter()
        .filter(|r| r["grant_type"] == "refresh_token")
        .collect();
    assert!(!refreshes.is_empty(), "{requests:?}");
    for refresh in &refreshes {
        assert_eq!(refresh["resource"], resource.as_str(), "{requests:?}");
        assert_eq!(refresh["status"], 200, "{requests:?}");
    }
    assert_ne!(
        stored(&tokens)["credentials"]["token_response"]["access_token"],
        access.as_str(),
        "the refreshed token was stored"
    );

    // A restart uses the stored tokens: no new login.
    drop(client);
    let client = serve_front(&root, &tokens, &config).await;
    until_listed(&client, &["remote__read_file", "local__read_file"]).await;
    let read = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    assert!(read.is_error != Some(true), "{read:?}");
    assert_eq!(
        Provider::count(&provider.token_requests().await, "authorization_code"),
        1
    );

    // Two toolports sharing the login (two clients, each starting its own): their refreshes
    // take turns (the lock file) and each continues the other's rotated refresh token, so the
    // provider never sees one used twice (which would end the grant).
    let other_root = root.join("other");
    std::fs::create_dir_all(&other_root).unwrap();
    let other = serve_front(&other_root, &tokens, &config).await;
    until_listed(&other, &["remote__read_file"]).await;
    tokio::time::sleep(TOKEN_FRESH_FOR).await;
    let (one, two) = tokio::join!(
        call(&client, "remote__read_file", json!({"path": "note.txt"})),
        call(&other, "remote__read_file", json!({"path": "note.txt"})),
    );
    assert!(
        one.is_error != Some(true) && two.is_error != Some(true),
        "{one:?} {two:?}"
    );
    assert!(tokens.join("remote.lock").exists());
    let requests = provider.token_requests().await;
    assert!(
        requests.iter().all(|r| r["status"] == 200),
        "a refresh token was used twice: {requests:?}"
    );
    drop(other);

    // The refresh token revoked at the provider (its grant with it): the next refresh is
    // refused, `remote` needs a login, `local` keeps working.
    let saved = stored(&tokens);
    let refresh_token = saved["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let client_id = saved["credentials"]["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoked = within(
        reqwest::Client::new()
            .post(format!("{}/token/revocation", provider.issuer))
            .form(&[
                ("token", refresh_token.as_str()),
                ("token_type_hint", "refresh_token"),
                ("client_id", client_id.as_str()),
            ])
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(revoked.status(), 200);
    tokio::time::sleep(TOKEN_FRESH_FOR).await;
    let _ = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    let states = until_state(&client, "needs_login").await;
    assert!(
        states["remote"]["error"]
            .as_str()
            .unwrap()
            .contains("toolport upstreams login remote"),
        "{states}"
    );
    assert_eq!(states["local"]["state"], "ready", "{states}");
    let read = call(&client, "local__read_file", json!({"path": "local.txt"})).await;
    assert!(
        ok(&read)["content"]
            .as_str()
            .unwrap()
            .contains("local upstream")
    );
    if everything.is_some() {
        assert_eq!(states["everything"]["state"], "ready", "{states}");
        let echo = call(
            &client,
            "everything__echo",
            json!({"message": "still here"}),
        )
        .await;
        assert!(text(&echo).contains("still here"), "{echo:?}");
    }

    // A new login: the running server connects again, no restart.
    login(&root, &tokens, &config, "alice").await;
    until_state(&client, "ready").await;
    until_listed(&client, &["remote__read_file"]).await;
    let read = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    assert!(read.is_error != Some(true), "{read:?}");

    // No token in the audit log or the upstream's log.
    let now = stored(&tokens);
    let secrets = [
        access.clone(),
        refresh_token,
        now["credentials"]["token_response"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    ];
    let audit = std::fs::read_to_string(root.join("audit.log")).unwrap();
    assert!(!audit_records(&root.join("audit.log")).is_empty());
    for secret in &secrets {
        assert!(!audit.contains(secret.as_str()));
        assert!(!upstream_server.stderr().contains(secret.as_str()));
    }
    drop(client);

    // Logout forgets them.
    let out = within(
        front(
            &root,
            &tokens,
            &[
                "--config",
                config.to_str().unwrap(),
                "upstreams",
                "logout",
                "remote",
            ],
        )
        .output(),
    )
    .await
    .unwrap();
    assert!(out.status.success());
    assert!(!tokens.join("remote.json").exists());
}

#[tokio::test]
async fn client_credentials_need_no_login_and_the_secret_is_never_printed() {
    let Some(node) = node() else { return };
    let provider = Provider::start(&node).await;
    let (_dir, root) = tempdir();
    let (_upstream, resource) = upstream(&root, &provider.issuer).await;
    let tokens = root.join("tokens");
    let config = config_file(
        &root,
        &front_toml(
            &resource,
            &format!(
                "auth = \"client_credentials\"\nclient_id = \"{CC_ID}\"\nclient_secret_env = \"CC_SECRET\"\nscopes = [\"tools:read\"]"
            ),
            &root.join("local"),
        ),
    );
    let mut cmd = front(&root, &tokens, &["--config", config.to_str().unwrap()]);
    cmd.env("CC_SECRET", CC_SECRET);
    let client = within(TestClient::default().serve(spawn_server(cmd)))
        .await
        .unwrap();
    until_listed(&client, &["remote__read_file"]).await;
    let read = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    assert!(
        ok(&read)["content"]
            .as_str()
            .unwrap()
            .contains("protected upstream")
    );
    let requests = provider.token_requests().await;
    let cc: Vec<&Value> = requests
        .iter()
        .filter(|r| r["grant_type"] == "client_credentials")
        .collect();
    assert!(!cc.is_empty(), "{requests:?}");
    assert!(
        cc.iter()
            .all(|r| r["resource"] == resource.as_str() && r["status"] == 200)
    );
    assert!(
        !tokens.exists(),
        "client credentials tokens are kept in memory only"
    );

    // `toolport config` names where the secret is, never the secret.
    let mut printed = front(
        &root,
        &tokens,
        &["--config", config.to_str().unwrap(), "config"],
    );
    printed.env("CC_SECRET", CC_SECRET);
    let out = within(printed.output()).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("client_secret_env = \"CC_SECRET\""), "{text}");
    assert!(text.contains("auth = \"client_credentials\""), "{text}");
    assert!(!text.contains(CC_SECRET), "{text}");

    // `login` is refused for it, saying why.
    let out = within(
        front(
            &root,
            &tokens,
            &[
                "--config",
                config.to_str().unwrap(),
                "upstreams",
                "login",
                "remote",
                "--no-browser",
            ],
        )
        .output(),
    )
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs no login"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn client_credentials_with_private_key_jwt() {
    let Some(node) = node() else { return };
    let (_dir, root) = tempdir();
    let key = root.join("client-key.pem");
    let provider = Provider::start_with(&node, Some(&key)).await;
    let (_upstream, resource) = upstream(&root, &provider.issuer).await;
    let tokens = root.join("tokens");
    let config = config_file(
        &root,
        &front_toml(
            &resource,
            &format!(
                "auth = \"client_credentials\"\nclient_id = \"toolport-jwt\"\nprivate_key_file = '{}'\nprivate_key_alg = \"RS256\"\nscopes = [\"tools:read\"]",
                key.display()
            ),
            &root.join("local"),
        ),
    );
    let client = serve_front(&root, &tokens, &config).await;
    until_listed(&client, &["remote__read_file"]).await;
    let read = call(&client, "remote__read_file", json!({"path": "note.txt"})).await;
    assert!(
        ok(&read)["content"]
            .as_str()
            .unwrap()
            .contains("protected upstream")
    );
    let requests = provider.token_requests().await;
    assert!(
        requests
            .iter()
            .any(|r| r["grant_type"] == "client_credentials"
                && r["resource"] == resource.as_str()
                && r["status"] == 200),
        "{requests:?}"
    );
}
