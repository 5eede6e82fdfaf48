//! The built-in authorization server on three replicas behind haproxy, its state in
//! redis-server (the harness of `replicas.rs`: Debian's packages, `TOOLPORT_REQUIRE_REDIS` in
//! CI; locally the test says so and skips without them).
//!
//! rmcp's own OAuth client discovers, registers and authorizes through the balancer, the test
//! playing the operator's browser: the consent page, served by one replica, names the replica
//! that printed the one-time code; the approval and the code exchange land on other replicas
//! (asserted from each replica's log). Then: tools called through the balancer with that token
//! on every replica; a refresh; the rotated refresh token replayed on each replica directly,
//! refused everywhere and the grant revoked everywhere; a second grant that survives every
//! replica restarted without its state folder (each makes a new key; the old public keys are
//! shared), refreshed on a restarted replica and checked on the others, listed by `toolport auth
//! list` from the shared store, revoked by RFC 7009 on one replica and refused on all; Redis
//! stopped (503 at once, to be retried) and started again. With `when_redis_away = "local"`, a
//! token the replicas have seen keeps passing while Redis is away, counted as a local decision,
//! and a refresh is still refused. A client's consent attempts are limited across the replicas
//! (its 10 a minute spent over all three).

use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationRequest, OAuthState, OAuthTokenResponse};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::common::http::{Server, TOKEN};
use crate::common::process::eventually;
use crate::common::redis::Redis;
use crate::common::{TestClient, call, command, tempdir, text, within};
use crate::oauth_builtin::{CODE_LINE, REDIRECT_URI, approve, http, initialize_as};
use crate::replicas::{Deployment, parts, ready_becomes};

/// The log lines that say which replica took which step.
const PAGE_SHOWN: &str = "an authorization request waits for the operator's approval";
const APPROVED: &str = "the operator approved an authorization request";
const GRANTED: &str = "granted access";

/// How many times each replica's log holds `needle`.
fn counts(deployment: &Deployment, needle: &str) -> Vec<usize> {
    deployment
        .replicas
        .iter()
        .map(|s| s.stderr().matches(needle).count())
        .collect()
}

/// The replica whose log gained a `needle` line since `before` (waited for).
async fn which(deployment: &Deployment, needle: &str, before: &[usize]) -> usize {
    eventually(needle, || counts(deployment, needle) != before).await;
    let after = counts(deployment, needle);
    let moved: Vec<usize> = (0..after.len())
        .filter(|i| after[*i] > before[*i])
        .collect();
    assert_eq!(moved.len(), 1, "{needle}: {before:?} -> {after:?}");
    moved[0]
}

/// A grant made by rmcp's OAuth client through the balancer; the replicas that showed the
/// consent page, took the approval and exchanged the code.
async fn authorize(deployment: &Deployment) -> (AuthClient<reqwest::Client>, [usize; 3]) {
    let mcp = format!("{}/mcp", deployment.balancer.url);
    let mut state = within(OAuthState::new(mcp.as_str(), None)).await.unwrap();
    within(state.start_authorization(
        AuthorizationRequest::new(REDIRECT_URI).with_client_name("rmcp behind a balancer"),
    ))
    .await
    .unwrap();
    let url = within(state.get_authorization_url()).await.unwrap();

    let before = counts(deployment, PAGE_SHOWN);
    let page = within(http().get(&url).send()).await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let shown = which(deployment, PAGE_SHOWN, &before).await;
    // The page says where the code was printed: on the replica that showed it.
    let printer = format!("replica <code>r{}</code> printed", shown + 1);
    assert!(page.contains(&printer), "{page}");
    let stderr = deployment.replicas[shown].stderr();
    let code = stderr
        .rsplit(CODE_LINE)
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();

    let before = counts(deployment, APPROVED);
    let answer = approve(&deployment.balancer.url, &page, &code).await;
    assert_eq!(answer.status(), 303);
    let approved = which(deployment, APPROVED, &before).await;
    let location = answer.headers()["location"].to_str().unwrap().to_owned();

    let before = counts(deployment, GRANTED);
    // rmcp checks state and iss, then exchanges the code with its PKCE verifier.
    within(state.handle_callback_url(&location)).await.unwrap();
    let granted = which(deployment, GRANTED, &before).await;
    let manager = state.into_authorization_manager().unwrap();
    (
        AuthClient::new(reqwest::Client::default(), manager),
        [shown, approved, granted],
    )
}

/// The tokens `auth` holds now.
async fn tokens(auth: &AuthClient<reqwest::Client>) -> OAuthTokenResponse {
    let (_, tokens) = within(async { auth.auth_manager.lock().await.get_credentials().await })
        .await
        .unwrap();
    tokens.expect("tokens after the authorization")
}

/// Its access and refresh tokens (read from its JSON form, RFC 6749 §5.1).
fn secrets(tokens: &OAuthTokenResponse) -> (String, String) {
    let answer = serde_json::to_value(tokens).unwrap();
    let field = |name: &str| answer[name].as_str().unwrap().to_owned();
    (field("access_token"), field("refresh_token"))
}

/// A request to one replica as the balancer passes it on (its `Host`, so the resource and
/// issuer are the balancer's).
fn to(
    deployment: &Deployment,
    replica: &Server,
    method: reqwest::Method,
    path: &str,
) -> reqwest::RequestBuilder {
    let host = deployment.balancer.url.trim_start_matches("http://");
    http()
        .request(method, format!("{}{path}", replica.url))
        .header("host", host)
}

/// An `initialize` with `access` to `replica`: status and challenge.
async fn initialize(deployment: &Deployment, replica: &Server, access: &str) -> (u16, String) {
    initialize_as(
        to(deployment, replica, reqwest::Method::POST, "/mcp"),
        access,
    )
    .await
}

/// `refresh` presented to `replica`: status and answer.
async fn refresh(
    deployment: &Deployment,
    replica: &Server,
    client_id: &str,
    refresh: &str,
) -> (u16, Value) {
    let resource = format!("{}/mcp", deployment.balancer.url);
    let response = within(
        to(deployment, replica, reqwest::Method::POST, "/oauth/token")
            .form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("client_id", client_id),
                ("resource", &resource),
            ])
            .send(),
    )
    .await
    .unwrap();
    let status = response.status().as_u16();
    (status, within(response.json()).await.unwrap())
}

/// A replica's metrics (the static token still works beside OAuth).
async fn metrics(server: &Server) -> String {
    let response = within(
        http()
            .get(format!("{}/metrics", server.url))
            .bearer_auth(TOKEN)
            .send(),
    )
    .await
    .unwrap();
    within(response.text()).await.unwrap()
}

/// `toolport auth ARGS` with replica `i`'s config (the shared store): success, and stdout
/// followed by stderr.
async fn auth_command(deployment: &Deployment, i: usize, args: &[&str]) -> (bool, String) {
    let (_dir, root) = tempdir();
    let mut all = vec!["--config", deployment.configs[i].as_str(), "auth"];
    all.extend_from_slice(args);
    let out = within(command(&root, &all).output()).await.unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Three replicas of the built-in server sharing `redis`, ready, with `replicas` (more of
/// `[replicas]`); each has its own state folder (its own signing key) in the folder returned.
async fn start(
    redis: &Redis,
    haproxy: &std::path::Path,
    replicas: &str,
) -> (Deployment, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let extra = format!(
        "{replicas}[http.oauth]\nauthorization_server = \"builtin\"\nstate_dir = '{}/{{replica}}'\n",
        state.path().display()
    );
    let deployment = Deployment::start(redis, haproxy, &extra).await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    (deployment, state)
}

#[tokio::test]
async fn three_replicas_share_the_builtin_authorization_server() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let mut redis = within(Redis::start(redis_server)).await;
    let (mut deployment, state) = start(&redis, &haproxy, "").await;

    // Registered, approved and exchanged through the balancer, each step on another replica
    // than the one before (round robin).
    let (auth, [shown, approved, granted]) = authorize(&deployment).await;
    assert_ne!(shown, approved, "approved on another replica than the page");
    assert_ne!(
        approved, granted,
        "exchanged on another replica than the approval"
    );
    let client_id = client_id_of(&auth).await;
    let (access, first_refresh) = secrets(&tokens(&auth).await);

    // Tools through the balancer with that token, on every replica.
    let mcp = format!("{}/mcp", deployment.balancer.url);
    let transport = StreamableHttpClientTransport::with_client(
        auth.clone(),
        StreamableHttpClientTransportConfig::with_uri(mcp.as_str()),
    );
    let client = within(TestClient::default().serve(transport))
        .await
        .expect("initialize with rmcp's OAuth client through the balancer");
    for _ in 0..6 {
        let result = call(&client, "read_file", json!({"path": "hello.txt"})).await;
        assert_eq!(text(&result), "hi from a replica\n");
    }
    for server in &deployment.replicas {
        let metrics = metrics(server).await;
        assert!(
            metrics.contains(r#"tool="read_file""#),
            "a replica served no call: {metrics}"
        );
        assert_eq!(initialize(&deployment, server, &access).await.0, 200);
    }
    within(client.cancel()).await.unwrap();

    // A refresh through the balancer; the new token works on every replica.
    within(async { auth.auth_manager.lock().await.refresh_token().await })
        .await
        .unwrap();
    let (access, second_refresh) = secrets(&tokens(&auth).await);
    assert_ne!(second_refresh, first_refresh, "rotated");
    for server in &deployment.replicas {
        assert_eq!(initialize(&deployment, server, &access).await.0, 200);
    }
    // The rotated token replayed: refused wherever it lands, and the grant ends everywhere.
    for (i, server) in deployment.replicas.iter().enumerate() {
        let (status, body) = refresh(&deployment, server, &client_id, &first_refresh).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"], "invalid_grant", "{body}");
        if i == 0 {
            let said = body["error_description"].as_str().unwrap();
            assert!(said.contains("already used"), "{said}");
        }
    }
    for server in &deployment.replicas {
        let (status, challenge) = initialize(&deployment, server, &access).await;
        assert_eq!(status, 401);
        assert!(challenge.contains("revoked"), "{challenge}");
        assert_eq!(
            refresh(&deployment, server, &client_id, &second_refresh)
                .await
                .0,
            400
        );
    }

    // A second grant; then every replica is restarted without its state folder (a new key
    // each): the tokens signed before still pass everywhere (the old public keys are shared).
    let (auth, _) = authorize(&deployment).await;
    let (access, refresh_token) = secrets(&tokens(&auth).await);
    for i in 0..deployment.replicas.len() {
        std::fs::remove_dir_all(state.path().join(format!("r{}", i + 1))).unwrap();
        deployment.restart(i).await;
        ready_becomes(&deployment.replicas[i], 200).await;
    }
    for server in &deployment.replicas {
        assert_eq!(initialize(&deployment, server, &access).await.0, 200);
    }
    let jwks: Value = within(
        to(
            &deployment,
            &deployment.replicas[2],
            reqwest::Method::GET,
            "/oauth/jwks",
        )
        .send(),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert!(
        jwks["keys"].as_array().unwrap().len() >= 2,
        "an old key and the replica's new one: {jwks}"
    );
    // Refreshed on one restarted replica (signed with its new key), checked on the others.
    let client_id = client_id_of(&auth).await;
    let (status, body) = refresh(
        &deployment,
        &deployment.replicas[0],
        &client_id,
        &refresh_token,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let access = body["access_token"].as_str().unwrap().to_owned();
    let refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
    for server in &deployment.replicas {
        assert_eq!(initialize(&deployment, server, &access).await.0, 200);
    }

    // The operator's view, from the shared store.
    let (ok, listed) = auth_command(&deployment, 1, &["list", "--json"]).await;
    assert!(ok, "{listed}");
    let grants: Vec<Value> = listed
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(grants.len(), 1, "the first grant was revoked: {listed}");
    assert_eq!(grants[0]["client_name"], "rmcp behind a balancer");
    assert!(!listed.contains(&refresh_token));

    // Revoked (RFC 7009) on one replica: refused on every one.
    let revoked = within(
        to(
            &deployment,
            &deployment.replicas[1],
            reqwest::Method::POST,
            "/oauth/revoke",
        )
        .form(&[("token", refresh_token.as_str())])
        .send(),
    )
    .await
    .unwrap();
    assert_eq!(revoked.status(), 200);
    for server in &deployment.replicas {
        let (status, challenge) = initialize(&deployment, server, &access).await;
        assert_eq!(status, 401);
        assert!(challenge.contains("revoked"), "{challenge}");
    }
    let (ok, listed) = auth_command(&deployment, 2, &["list"]).await;
    assert!(
        ok && listed.starts_with("no grants (the shared store"),
        "{listed}"
    );
    let id = grants[0]["id"].as_str().unwrap();
    let (ok, _) = auth_command(&deployment, 0, &["revoke", id]).await;
    assert!(!ok, "already revoked");

    // Redis away (when_redis_away = "refuse", the default): a token's check and the token
    // endpoint answer 503 at once, to be retried; back by themselves when it returns.
    within(redis.stop()).await;
    for server in &deployment.replicas {
        let started = Instant::now();
        let (status, challenge) = initialize(&deployment, server, &access).await;
        assert_eq!(status, 503, "{challenge}");
        let (status, body) = refresh(&deployment, server, &client_id, &refresh_token).await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["error"], "temporarily_unavailable", "{body}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
    within(redis.resume()).await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    let registered = within(
        to(
            &deployment,
            &deployment.replicas[0],
            reqwest::Method::POST,
            "/oauth/register",
        )
        .json(&json!({"redirect_uris": [REDIRECT_URI]}))
        .send(),
    )
    .await
    .unwrap();
    assert_eq!(registered.status(), 201);

    // Nothing secret in any replica's log.
    for server in &deployment.replicas {
        let log = server.stderr();
        for secret in [&access, &refresh_token, &first_refresh, &second_refresh] {
            assert!(!log.contains(secret.as_str()), "a token is in a log");
        }
    }
}

/// The client id `auth` is registered as.
async fn client_id_of(auth: &AuthClient<reqwest::Client>) -> String {
    within(async { auth.auth_manager.lock().await.get_credentials().await })
        .await
        .unwrap()
        .0
}

#[tokio::test]
async fn with_local_decisions_a_known_token_passes_while_redis_is_away() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let mut redis = within(Redis::start(redis_server)).await;
    let (deployment, _state) = start(&redis, &haproxy, "when_redis_away = \"local\"\n").await;
    let (auth, _) = authorize(&deployment).await;
    let client_id = client_id_of(&auth).await;
    let (access, refresh_token) = secrets(&tokens(&auth).await);
    // Each replica has seen the token's key (its own, or fetched once from Redis).
    for server in &deployment.replicas {
        assert_eq!(initialize(&deployment, server, &access).await.0, 200);
    }
    within(redis.stop()).await;
    for server in &deployment.replicas {
        // Checked on its signature, audience and expiry alone: calls go on.
        assert_eq!(initialize(&deployment, server, &access).await.0, 200);
        // Nothing about grants is decided alone.
        let (status, body) = refresh(&deployment, server, &client_id, &refresh_token).await;
        assert_eq!(status, 503, "{body}");
        let metrics = metrics(server).await;
        assert!(
            metrics.contains(r#"toolport_shared_store_away_decisions_total{outcome="local"}"#),
            "{metrics}"
        );
    }
}

#[tokio::test]
async fn consent_attempts_are_limited_across_replicas() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = within(Redis::start(redis_server)).await;
    let (deployment, _state) = start(&redis, &haproxy, "").await;
    let mcp = format!("{}/mcp", deployment.balancer.url);
    let mut flow = within(OAuthState::new(mcp.as_str(), None)).await.unwrap();
    within(flow.start_authorization(AuthorizationRequest::new(REDIRECT_URI)))
        .await
        .unwrap();
    let url = within(flow.get_authorization_url()).await.unwrap();
    let mut pages = Vec::new();
    for _ in 0..3 {
        let page = within(http().get(&url).send()).await.unwrap();
        assert_eq!(page.status(), 200);
        pages.push(page.text().await.unwrap());
    }
    let wrong = |page| approve(&deployment.balancer.url, page, "0000000000");
    // Two pages take their 5 wrong attempts each, spread over the replicas by the balancer:
    // the client's 10 a minute are spent, counted across the replicas.
    let mut statuses = Vec::new();
    for page in &pages[..2] {
        for _ in 0..5 {
            statuses.push(wrong(page).await.status().as_u16());
        }
    }
    assert_eq!(
        statuses,
        [403, 403, 403, 403, 303, 403, 403, 403, 403, 303],
        "four wrong secrets, then the request ends"
    );
    // The third page's first attempt is one too many for this client, whichever replica.
    let over = wrong(&pages[2]).await;
    assert_eq!(over.status(), 429);
    assert_eq!(over.headers()["retry-after"], "60");
}
