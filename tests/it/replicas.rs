//! Replicas behind a real load balancer with a real Redis: three `toolport serve --http`
//! replicas (stateless) behind `haproxy` (round robin), sharing state through `redis-server`,
//! everything started here on loopback with free ports and temporary folders. Checked: a
//! principal's budget of N calls, spent by three clients at once through the balancer, ends
//! at exactly N; the per-client request rate likewise; Redis stopped → the operator's choice
//! (refused, at once, and `/readyz` says so), started again → calls resume by themselves.
//!
//! `redis-server` and `haproxy` are Debian's packages: `.ci/run` installs them (pinned) and sets
//! `TOOLPORT_REQUIRE_REDIS=1`, which makes a missing one a failure; locally these tests say so
//! and skip.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::common::http::{INIT, Server, TOKEN, authed, http, start};
use crate::common::redis::{Redis, free_port, redis_server, required_program};
use crate::common::{Client, TestClient, call, command, err, ok, tempdir, within};

/// The parts every test here needs, or `None` (skipped).
pub(crate) fn parts() -> Option<(PathBuf, PathBuf)> {
    Some((redis_server()?, required_program("haproxy", "/usr/sbin")?))
}

/// haproxy in front of `backends`, round robin, on a free loopback port.
pub(crate) struct Balancer {
    _child: Child,
    pub(crate) url: String,
    _dir: tempfile::TempDir,
}

impl Balancer {
    async fn start(program: &Path, backends: &[&Server]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let address = s.url.trim_start_matches("http://");
                format!("  server r{i} {address}\n")
            })
            .collect();
        let config = format!(
            "global\n  maxconn 512\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n{servers}"
        );
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = Command::new(program)
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start haproxy");
        // Listening once a connection is accepted (haproxy prints no ready line).
        within(async {
            while tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }
}

/// Three stateless replicas sharing `redis`, configured with `extra` (TOML after
/// `[replicas]`; `{replica}` in it is each replica's id), and haproxy in front of them.
pub(crate) struct Deployment {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pub(crate) replicas: Vec<Server>,
    /// Each replica's config file.
    pub(crate) configs: Vec<String>,
    pub(crate) balancer: Balancer,
}

impl Deployment {
    pub(crate) async fn start(redis: &Redis, haproxy: &Path, extra: &str) -> Self {
        let (dir, root) = tempdir();
        std::fs::write(root.join("hello.txt"), "hi from a replica\n").unwrap();
        let (mut replicas, mut configs) = (Vec::new(), Vec::new());
        for id in ["r1", "r2", "r3"] {
            let config = root.join(format!("{id}.toml"));
            std::fs::write(
                &config,
                // Info lines: a test reads from each replica's log which one took a step.
                format!(
                    "log_level = \"info\"\n[replicas]\nredis_url = \"{}\"\nid = \"{id}\"\nredis_timeout = \"300ms\"\n{}",
                    redis.url(),
                    extra.replace("{replica}", id)
                ),
            )
            .unwrap();
            let config = config.to_str().unwrap().to_owned();
            replicas.push(start(&root, &["--stateless", "--config", &config], Some(TOKEN)).await);
            configs.push(config);
        }
        let balancer = Balancer::start(haproxy, &replicas.iter().collect::<Vec<_>>()).await;
        Self {
            _dir: dir,
            root,
            replicas,
            configs,
            balancer,
        }
    }

    /// Kill replica `i` (a crash, not a goodbye) and start it again with its config, on a new
    /// port: reach it at `replicas[i].url` (the balancer still names the old one).
    pub(crate) async fn restart(&mut self, i: usize) {
        within(self.replicas[i].child.kill()).await.unwrap();
        let config = self.configs[i].clone();
        self.replicas[i] = start(
            &self.root,
            &["--stateless", "--config", &config],
            Some(TOKEN),
        )
        .await;
    }

    /// rmcp's Streamable HTTP client through the balancer.
    async fn client(&self) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", self.balancer.url))
                .auth_header(TOKEN),
        );
        within(TestClient::default().serve(transport))
            .await
            .expect("initialize through the balancer")
    }
}

/// `/readyz` of one replica: status code and body.
async fn readyz(server: &Server) -> (u16, Value) {
    let response = within(http().get(format!("{}/readyz", server.url)).send())
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, within(response.json()).await.unwrap())
}

/// Wait (bounded) until `/readyz` of `server` answers `status`.
pub(crate) async fn ready_becomes(server: &Server, status: u16) -> Value {
    within(async {
        loop {
            let (got, body) = readyz(server).await;
            if got == status {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

/// The policy that gives every principal (the static token's holder here) `limits`.
fn team_rule(limits: &str) -> String {
    format!(
        "[http.principals]\n[[http.principals.rules]]\nname = \"team\"\nmatch_all = true\n{limits}\n"
    )
}

#[tokio::test]
async fn one_budget_holds_across_three_replicas_behind_a_balancer() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    const BUDGET: usize = 12;
    const PER_CLIENT: usize = 10;
    let redis = Redis::start(redis_server).await;
    let deployment = Deployment::start(
        &redis,
        &haproxy,
        &team_rule(&format!("max_calls = {BUDGET}")),
    )
    .await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    let clients = [
        deployment.client().await,
        deployment.client().await,
        deployment.client().await,
    ];
    // Three clients at once, each making its calls one after another through the balancer,
    // which spreads them over the three replicas.
    let outcomes = futures::future::join_all(clients.iter().map(|client| async move {
        let mut results = Vec::new();
        for _ in 0..PER_CLIENT {
            results.push(call(client, "read_file", json!({"path": "hello.txt"})).await);
        }
        results
    }))
    .await;
    let results: Vec<_> = outcomes.into_iter().flatten().collect();
    let allowed: Vec<_> = results
        .iter()
        .filter(|r| r.is_error != Some(true))
        .collect();
    assert_eq!(allowed.len(), BUDGET, "exactly the budget is allowed");
    for result in &allowed {
        assert_eq!(ok(result)["content"], json!("hi from a replica\n"));
    }
    for refused in results.iter().filter(|r| r.is_error == Some(true)) {
        let message = err(refused);
        assert!(
            message.contains(&format!(
                r#"http.principals.rules["team"].max_calls = {BUDGET}"#
            )),
            "{message}"
        );
    }
    // Every replica served some of them: the budget really was one across them.
    for server in &deployment.replicas {
        let metrics = within(authed(http().get(format!("{}/metrics", server.url))).send())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(metrics.contains("toolport_shared_store_up 1"), "{metrics}");
        assert!(
            metrics.contains(r#"tool="read_file""#),
            "a replica served no call: {metrics}"
        );
    }
    // The registry lists the three, live.
    let listed: Value =
        within(authed(http().get(format!("{}/replicas", deployment.balancer.url))).send())
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let ids: Vec<&str> = listed["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["live"] == json!(true))
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "r2", "r3"], "{listed}");
    for client in clients {
        within(client.cancel()).await.unwrap();
    }
    drop(deployment.root);
}

#[tokio::test]
async fn one_request_rate_holds_across_three_replicas() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    const RATE: usize = 9;
    let redis = Redis::start(redis_server).await;
    let deployment = Deployment::start(
        &redis,
        &haproxy,
        &format!("[http]\nmax_requests_per_minute = {RATE}\n"),
    )
    .await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    // 3 × 8 requests at once: every client is the balancer's address, so one rate for all.
    let url = format!("{}/mcp", deployment.balancer.url);
    let statuses = futures::future::join_all((0..3).map(|_| {
        let url = url.clone();
        async move {
            let mut statuses = Vec::new();
            for _ in 0..8 {
                let response = within(
                    authed(http().post(&url))
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream")
                        .body(INIT)
                        .send(),
                )
                .await
                .unwrap();
                statuses.push(response.status().as_u16());
            }
            statuses
        }
    }))
    .await;
    let statuses: Vec<u16> = statuses.into_iter().flatten().collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        RATE,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| [200, 429].contains(s)),
        "{statuses:?}"
    );
}

#[tokio::test]
async fn redis_away_refuses_at_once_and_recovers_by_itself() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let mut redis = Redis::start(redis_server).await;
    let deployment = Deployment::start(&redis, &haproxy, &team_rule("max_calls = 1000")).await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    let client = deployment.client().await;
    ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);

    redis.stop().await;
    // Every call needs the shared budget: refused, quickly, with the reason and the retry.
    for _ in 0..3 {
        let started = Instant::now();
        let message = err(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "a refusal took {:?}",
            started.elapsed()
        );
        assert!(
            message.contains(r#"when_redis_away = "refuse""#) && message.contains("retry in"),
            "{message}"
        );
    }
    for server in &deployment.replicas {
        let body = ready_becomes(server, 503).await;
        assert_eq!(body["shared_store"], json!("away"), "{body}");
        assert_eq!(body["when_redis_away"], json!("refuse"), "{body}");
    }
    // Liveness is not readiness: the process is fine.
    let health = within(
        http()
            .get(format!("{}/healthz", deployment.replicas[0].url))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(health.status(), 200);

    redis.resume().await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn redis_away_with_local_decisions_keeps_serving() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let mut redis = Redis::start(redis_server).await;
    let deployment = Deployment::start(
        &redis,
        &haproxy,
        &format!(
            "when_redis_away = \"local\"\n{}",
            team_rule("max_calls = 1000")
        ),
    )
    .await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    let client = deployment.client().await;
    redis.stop().await;
    for _ in 0..3 {
        ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
    }
    let body = ready_becomes(&deployment.replicas[0], 200).await;
    let body = if body["status"] == json!("degraded") {
        body
    } else {
        // The replica may not have noticed yet: wait for its heartbeat.
        within(async {
            loop {
                let (_, body) = readyz(&deployment.replicas[0]).await;
                if body["status"] == json!("degraded") {
                    return body;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    };
    assert_eq!(body["when_redis_away"], json!("local"), "{body}");
    let stderr: String = deployment.replicas.iter().map(Server::stderr).collect();
    assert!(stderr.contains("decided by this replica alone"), "{stderr}");
    within(client.cancel()).await.unwrap();
}

/// `toolport config` prints the store with the password's source, never the password; a
/// password in the URL is refused without being echoed. (No Redis needed.)
#[tokio::test]
async fn config_shows_the_store_but_never_its_password() {
    let (_d, root) = tempdir();
    let mut cmd = command(&root, &["config"]);
    cmd.env("TOOLPORT_REDIS_URL", "rediss://cache.internal:6380/1")
        .env("TOOLPORT_REDIS_PASSWORD", "hunter2-secret")
        .env("TOOLPORT_REPLICA_ID", "r7");
    let out = within(cmd.output()).await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    for expected in [
        "[replicas]",
        r#"redis_url = "rediss://cache.internal:6380/1""#,
        r#"id = "r7""#,
        r#"when_redis_away = "refuse""#,
        "set from TOOLPORT_REDIS_PASSWORD (a secret: never printed)",
    ] {
        assert!(stdout.contains(expected), "{expected} in:\n{stdout}");
    }
    assert!(!stdout.contains("hunter2") && !stderr.contains("hunter2"));

    let mut cmd = command(&root, &["config"]);
    cmd.env("TOOLPORT_REDIS_URL", "redis://me:hunter2-secret@cache:6379");
    let out = within(cmd.output()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("replicas.redis_url") && stderr.contains("redis_password_file"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
