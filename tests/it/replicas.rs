//! Replicas behind a real load balancer with a real Redis: three `toolport serve --http`
//! replicas (stateless) behind `haproxy` (round robin), sharing state through `redis-server`,
//! everything started here on loopback with free ports and temporary folders. Checked: a
//! principal's budget of N calls, spent by three clients at once through the balancer, ends
//! at exactly N; the per-client request rate likewise; Redis stopped → the operator's choice
//! (refused, at once, and `/readyz` says so), started again → calls resume by themselves.
//! Jobs and tasks across replicas: a job started through the balancer is followed, fed and
//! killed through it whichever replica each call lands on (requests for another replica's job
//! forwarded to it, signed with the internal secret), a task likewise; the replica that runs a
//! job killed → the others report the job lost, within a bound; with forwarding off, the
//! error that names the replica.
//!
//! `redis-server` and `haproxy` are Debian's packages: `.ci/run` installs them (pinned) and sets
//! `TOOLPORT_REQUIRE_REDIS=1`, which makes a missing one a failure; locally these tests say so
//! and skip.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::haproxy::Haproxy;
use crate::common::http::{
    ACCEPT, INIT, Server, TOKEN, authed, call_2026, http, legacy_session_at, post_2026,
    post_message, start, start_at,
};
use crate::common::python::{sdk_python, sdk_script};
use crate::common::redis::{Redis, free_port, redis_server, required_program};
use crate::common::{Client, TasksClient, TestClient, call, command, err, ok, tempdir, within};

/// The parts every test here needs, or `None` (skipped).
pub(crate) fn parts() -> Option<(PathBuf, PathBuf)> {
    Some((redis_server()?, required_program("haproxy", "/usr/sbin")?))
}

/// How haproxy spreads requests over the replicas.
enum Rules {
    /// Round robin, nothing else (stateless replicas).
    RoundRobin,
    /// The documented backend (docs/deploy/haproxy.cfg): round robin, a session's requests to
    /// the replica its id names, the client's address in `X-Forwarded-For`.
    Documented,
}

/// Every line of the `backend` section of docs/deploy/haproxy.cfg but its `server` lines and
/// comments: the rules the docs give, run here in front of the tests' replicas.
fn documented_backend() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy/haproxy.cfg");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut inside = false;
    let mut backend = String::new();
    for line in text.lines() {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            continue;
        }
        if !line.starts_with(' ') {
            inside = rule.starts_with("backend ");
        } else if inside && !rule.starts_with("server ") {
            // The docs' servers are found through Docker's DNS; these are on loopback.
            let rule = rule.replace(" resolvers docker", "");
            backend.push_str(&format!("  {rule}\n"));
        }
    }
    assert!(
        backend.contains("use-server"),
        "{}: {backend}",
        path.display()
    );
    backend
}

/// haproxy in front of `backends` (each named by its replica's id) with `rules`.
async fn balancer(program: &Path, backends: &[(&str, &Server)], rules: Rules) -> Haproxy {
    let servers: String = backends
        .iter()
        .map(|(id, s)| {
            let address = s.url.trim_start_matches("http://");
            // Checked often: a replica stopped by a test is out of the rotation within a
            // second (a refused connection fails a check at once; a slow answer on a busy
            // machine does not, within `timeout check`).
            format!("  server {id} {address} check inter 300ms fall 2 rise 1\n")
        })
        .collect();
    let rules = match rules {
        // A request whose replica refuses the connection (it was killed) goes to another one,
        // as any deployment would configure it.
        Rules::RoundRobin => {
            "  balance roundrobin\n  retries 3\n  option redispatch 1\n".to_owned()
        }
        Rules::Documented => documented_backend(),
    };
    Haproxy::start(program, &format!("{rules}{servers}")).await
}

/// The replicas' ids (haproxy's server names).
const IDS: [&str; 3] = ["r1", "r2", "r3"];

/// The replicas' internal secret (a test value; real ones come from `openssl rand -hex 32`).
const INTERNAL_SECRET: &str = "test-internal-secret-0123456789abcdef";

/// Three replicas `r1`, `r2`, `r3` (haproxy's server names: [`IDS`]) sharing `redis`, each with its internal address
/// and the internal secret, configured with `extra` (TOML after the `[replicas]` keys;
/// `{replica}` in it is each replica's id), and haproxy in front of them.
pub(crate) struct Deployment {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pub(crate) replicas: Vec<Server>,
    /// Each replica's config file.
    pub(crate) configs: Vec<String>,
    /// The flags every replica is served with (beside its config).
    args: Vec<String>,
    pub(crate) balancer: Haproxy,
}

impl Deployment {
    /// Stateless replicas, round robin.
    pub(crate) async fn start(redis: &Redis, haproxy: &Path, extra: &str) -> Self {
        Self::start_with(redis, haproxy, extra, &["--stateless"], Rules::RoundRobin).await
    }

    /// Replicas served with `args`, behind haproxy with `rules`.
    async fn start_with(
        redis: &Redis,
        haproxy: &Path,
        extra: &str,
        args: &[&str],
        rules: Rules,
    ) -> Self {
        let (dir, root) = tempdir();
        std::fs::write(root.join("hello.txt"), "hi from a replica\n").unwrap();
        // Outside the root: no tool reads it.
        let secret = dir.path().join("internal.secret");
        std::fs::write(&secret, format!("{INTERNAL_SECRET}\n")).unwrap();
        let (mut replicas, mut configs) = (Vec::new(), Vec::new());
        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
        for id in IDS {
            // Chosen first: the replica announces it as its internal address.
            let address = format!("127.0.0.1:{}", free_port());
            let config = root.join(format!("{id}.toml"));
            std::fs::write(
                &config,
                // Info lines: a test reads from each replica's log which one took a step.
                format!(
                    "log_level = \"info\"\n[replicas]\nredis_url = \"{}\"\nid = \"{id}\"\nredis_timeout = \"300ms\"\ninternal_url = \"http://{address}\"\ninternal_secret_file = {:?}\n{}",
                    redis.url(),
                    secret.to_str().unwrap(),
                    extra.replace("{replica}", id)
                ),
            )
            .unwrap();
            let config = config.to_str().unwrap().to_owned();
            let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
            all.extend(["--config", &config]);
            replicas.push(start_at(&root, &address, &all, Some(TOKEN)).await);
            configs.push(config);
        }
        let backends: Vec<_> = IDS.into_iter().zip(&replicas).collect();
        let balancer = balancer(haproxy, &backends, rules).await;
        Self {
            _dir: dir,
            root,
            replicas,
            configs,
            args,
            balancer,
        }
    }

    /// Kill replica `i` (a crash, not a goodbye) and start it again with its config, on a new
    /// port: reach it at `replicas[i].url` (the balancer still names the old one).
    pub(crate) async fn restart(&mut self, i: usize) {
        within(self.replicas[i].child.kill()).await.unwrap();
        let mut all: Vec<&str> = self.args.iter().map(String::as_str).collect();
        all.extend(["--config", &self.configs[i]]);
        self.replicas[i] = start(&self.root, &all, Some(TOKEN)).await;
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

/// The index among `r1`, `r2`, `r3` of the replica a job or task id names (`job_3@r2~…`).
fn runner(id: &str) -> usize {
    let (_, there) = id.rsplit_once('@').expect("an id that names its replica");
    let replica = there.split('~').next().unwrap();
    ["r1", "r2", "r3"]
        .iter()
        .position(|r| *r == replica)
        .unwrap_or_else(|| panic!("{id} names no replica of the deployment"))
}

/// How many calls of `tool` each replica took from clients (its `/metrics`).
async fn calls_taken(deployment: &Deployment, tool: &str) -> Vec<u64> {
    let mut counts = Vec::new();
    for server in &deployment.replicas {
        let metrics = within(authed(http().get(format!("{}/metrics", server.url))).send())
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let prefix = format!("toolport_tool_calls_total{{tool=\"{tool}\"");
        counts.push(
            metrics
                .lines()
                .filter(|line| line.starts_with(&prefix))
                .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
                .sum(),
        );
    }
    counts
}

/// Shell commands allowed (the jobs here are small scripts).
const SHELLS: &str = "[exec]\nallow_shells = true\n";

fn sh(script: &str, extra: Value) -> Value {
    let mut args = json!({"command": "sh", "args": ["-c", script], "background": true});
    if let (Some(a), Value::Object(e)) = (args.as_object_mut(), extra) {
        a.extend(e);
    }
    args
}

/// `/readyz` of one replica: status code and body.
async fn readyz(server: &Server) -> (u16, Value) {
    let response = within(http().get(format!("{}/readyz", server.url)).send())
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, within(response.json()).await.unwrap())
}

/// `/metrics` of one replica.
async fn metrics(server: &Server) -> String {
    let response = within(authed(http().get(format!("{}/metrics", server.url))).send())
        .await
        .unwrap();
    within(response.text()).await.unwrap()
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
        let metrics = metrics(server).await;
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

/// `toolport config` prints the store with the password's and the internal secret's source,
/// never either; a password in the URL is refused without being echoed. (No Redis needed.)
#[tokio::test]
async fn config_shows_the_store_but_never_its_password() {
    let (_d, root) = tempdir();
    let mut cmd = command(&root, &["config"]);
    cmd.env("TOOLPORT_REDIS_URL", "rediss://cache.internal:6380/1")
        .env("TOOLPORT_REDIS_PASSWORD", "hunter2-secret")
        .env("TOOLPORT_REPLICA_ID", "r7")
        .env("TOOLPORT_INTERNAL_SECRET", INTERNAL_SECRET);
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
        "forward_jobs = true",
        "set from TOOLPORT_INTERNAL_SECRET (a secret: never printed)",
    ] {
        assert!(stdout.contains(expected), "{expected} in:\n{stdout}");
    }
    assert!(!stdout.contains("hunter2") && !stderr.contains("hunter2"));
    assert!(!stdout.contains(INTERNAL_SECRET) && !stderr.contains(INTERNAL_SECRET));

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

/// Ready replicas with shells allowed, `extra` added.
async fn job_deployment(redis: &Redis, haproxy: &Path, extra: &str) -> Deployment {
    let deployment = Deployment::start(redis, haproxy, &format!("{extra}{SHELLS}")).await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    deployment
}

#[tokio::test]
async fn a_job_started_through_the_balancer_is_followed_through_any_replica() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let deployment = job_deployment(&redis, &haproxy, "").await;
    let client = deployment.client().await;
    let started = ok(&call(
        &client,
        "execute_command",
        sh(
            "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.3; done",
            json!({}),
        ),
    )
    .await);
    let job = started["job_id"].as_str().unwrap().to_owned();
    let home = runner(&job);
    // Followed to its end through the balancer: each call lands on the next replica.
    let (mut stdout, mut offset, mut calls) = (String::new(), 0, 0);
    let last = within(async {
        loop {
            calls += 1;
            let r = ok(&call(
                &client,
                "job_output",
                json!({"job_id": job, "stdout_offset": offset, "wait": 5}),
            )
            .await);
            stdout.push_str(r["stdout"].as_str().unwrap());
            offset = r["stdout_offset"].as_u64().unwrap();
            if r["running"] == json!(false) && r["more"] == json!(false) {
                return r;
            }
        }
    })
    .await;
    assert_eq!(stdout, "line1\nline2\nline3\nline4\nline5\nline6\n");
    assert_eq!(last["return_code"], json!(0), "{last}");
    // Twice more, so the calls have gone round the three replicas at least once.
    for _ in 0..2 {
        let r = ok(&call(
            &client,
            "job_output",
            json!({"job_id": job, "stdout_offset": offset}),
        )
        .await);
        assert_eq!(r["running"], json!(false), "{r}");
        assert_eq!(r["stdout"], json!(""), "{r}");
    }
    let taken = calls_taken(&deployment, "job_output").await;
    assert_eq!(taken.iter().sum::<u64>(), calls + 2, "{taken:?}");
    assert!(
        taken.iter().filter(|n| **n > 0).count() >= 2,
        "the job_output calls did not land on different replicas: {taken:?}"
    );
    assert!(
        taken.iter().enumerate().any(|(i, n)| i != home && *n > 0),
        "no call landed on a replica other than the job's own (r{}): {taken:?}",
        home + 1
    );
    // Its output resource, linked from the start's result, reads the same through each.
    for _ in 0..3 {
        let read = within(
            client.read_resource(rmcp::model::ReadResourceRequestParams::new(format!(
                "toolport://jobs/{job}/stdout"
            ))),
        )
        .await
        .unwrap();
        match &read.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
                assert_eq!(text, "line1\nline2\nline3\nline4\nline5\nline6\n");
            }
            other => panic!("not text: {other:?}"),
        }
    }
    // job_list through any replica lists it (its own replica's now, the others' as of its
    // replica's last beat).
    for _ in 0..3 {
        let listed = ok(&call(&client, "job_list", json!({})).await);
        let ids: Vec<&str> = listed["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["job_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [job.as_str()], "{listed}");
    }
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn job_input_and_job_kill_reach_the_job_through_any_replica() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let deployment = job_deployment(&redis, &haproxy, "").await;
    let client = deployment.client().await;
    let started = ok(&call(
        &client,
        "execute_command",
        json!({"command": "cat", "background": true, "stdin_open": true}),
    )
    .await);
    let job = started["job_id"].as_str().unwrap().to_owned();
    // Three lines, one call each: round robin sends them to each replica in turn.
    for n in 1..=3 {
        let r = ok(&call(
            &client,
            "job_input",
            json!({"job_id": job, "text": format!("ping {n}\n")}),
        )
        .await);
        assert_eq!(r["written"], json!(7), "{r}");
    }
    let taken = calls_taken(&deployment, "job_input").await;
    assert_eq!(taken, [1, 1, 1], "job_input did not go round the replicas");
    let mut stdout = String::new();
    within(async {
        while stdout != "ping 1\nping 2\nping 3\n" {
            let r = ok(&call(
                &client,
                "job_output",
                json!({"job_id": job, "stdout_offset": stdout.len(), "wait": 5}),
            )
            .await);
            stdout.push_str(r["stdout"].as_str().unwrap());
        }
    })
    .await;
    let killed = ok(&call(&client, "job_kill", json!({"job_id": job})).await);
    assert_eq!(killed["killed"], json!(true), "{killed}");
    assert_eq!(killed["running"], json!(false), "{killed}");
    for _ in 0..3 {
        let r = ok(&call(
            &client,
            "job_output",
            json!({"job_id": job, "stdout_offset": stdout.len()}),
        )
        .await);
        assert_eq!(
            (r["running"].clone(), r["killed"].clone()),
            (json!(false), json!(true)),
            "{r}"
        );
    }
    within(client.cancel()).await.unwrap();
}

/// A call to a replica's internal path signed with `secret`, as another replica makes it.
async fn internal_call(server: &Server, secret: &str, to: &str, body: &Value) -> reqwest::Response {
    use base64::Engine as _;
    let body = body.to_string();
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    let nonce = format!("{:x}", rand_nonce());
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret.as_bytes());
    let message = format!("toolport-internal-v1\n{time}\n{nonce}\n{to}\n{body}");
    let tag = aws_lc_rs::hmac::sign(&key, message.as_bytes());
    within(
        http()
            .post(format!("{}/internal/jobs", server.url))
            .header("content-type", "application/json")
            .header(
                "x-toolport-signature",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref()),
            )
            .header("x-toolport-time", time)
            .header("x-toolport-nonce", nonce)
            .header("x-toolport-to", to)
            .body(body)
            .send(),
    )
    .await
    .unwrap()
}

/// A nonce for [`internal_call`]: the time in nanoseconds is unique enough within one test.
fn rand_nonce() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[tokio::test]
async fn only_the_jobs_owner_reaches_it_and_the_internal_path_takes_no_client_token() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let deployment = job_deployment(&redis, &haproxy, "").await;
    let client = deployment.client().await;
    let started = ok(&call(&client, "execute_command", sh("sleep 30", json!({}))).await);
    let job = started["job_id"].as_str().unwrap().to_owned();
    let index = runner(&job);
    let home = &deployment.replicas[index];
    let replica = format!("r{}", index + 1);
    let kill = |owner: &str| json!({"op": "tool", "owner": owner, "tool": "job_kill", "arguments": {"job_id": job}});
    // The client's token is no key to the internal path.
    let unsigned = within(
        authed(http().post(format!("{}/internal/jobs", home.url)))
            .header("content-type", "application/json")
            .body(kill("x").to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(unsigned.status(), 401);
    // Another secret: refused.
    let forged = internal_call(
        home,
        "another-secret-0123456789abcdef0123",
        &replica,
        &kill("x"),
    )
    .await;
    assert_eq!(forged.status(), 401);
    // Signed, for another owner: that owner has no such job.
    let answer: Value = within(
        internal_call(
            home,
            INTERNAL_SECRET,
            &replica,
            &kill("stateless:\"someone-else\":\"\""),
        )
        .await
        .json(),
    )
    .await
    .unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no job"), "{answer}");
    // Still running for its owner, through any replica.
    for _ in 0..3 {
        let r = ok(&call(&client, "job_output", json!({"job_id": job})).await);
        assert_eq!(r["running"], json!(true), "{r}");
    }
    ok(&call(&client, "job_kill", json!({"job_id": job})).await);
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_killed_replicas_job_is_reported_lost_through_the_others() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let mut deployment = job_deployment(&redis, &haproxy, "").await;
    let client = deployment.client().await;
    let started = ok(&call(
        &client,
        "execute_command",
        sh("echo started; sleep 60", json!({})),
    )
    .await);
    let job = started["job_id"].as_str().unwrap().to_owned();
    // Its output, read once through its replica's record (published at the next beat).
    within(async {
        loop {
            let r = ok(&call(&client, "job_output", json!({"job_id": job, "wait": 5})).await);
            if r["stdout"] == json!("started\n") || r["stdout_offset"] == json!(8) {
                return;
            }
        }
    })
    .await;
    let home = runner(&job);
    // Its replica's beat has published the output size (a beat a second): three listings in
    // a row, one through each replica, show it.
    within(async {
        let mut in_a_row = 0;
        while in_a_row < 3 {
            let listed = ok(&call(&client, "job_list", json!({})).await);
            if listed["jobs"][0]["stdout_bytes"] == json!(8) {
                in_a_row += 1;
            } else {
                in_a_row = 0;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    })
    .await;
    let killed_at = Instant::now();
    within(deployment.replicas[home].child.kill())
        .await
        .unwrap();
    // Through the balancer (which sends the dead replica's share to the others), the job is
    // lost within its replica's time to live (5 s) and a beat: never running meanwhile.
    let message = within(async {
        loop {
            let r = call(&client, "job_output", json!({"job_id": job})).await;
            if r.is_error == Some(true) {
                let message = err(&r);
                if message.contains(" is lost: ") {
                    return message;
                }
                assert!(message.contains("cannot be reached now"), "{message}");
            } else {
                panic!("a dead replica's job answered: {:?}", r.structured_content);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(
        killed_at.elapsed() < Duration::from_secs(10),
        "reported lost only after {:?}",
        killed_at.elapsed()
    );
    assert!(
        message.contains(&format!("replica r{}, stopped", home + 1))
            && message.contains("stdout_offset 8, stderr_offset 0"),
        "{message}"
    );
    // job_list through the survivors: lost, not running, with its last known sizes.
    for _ in 0..2 {
        let listed = ok(&call(&client, "job_list", json!({})).await);
        let entry = &listed["jobs"][0];
        assert_eq!(entry["job_id"], json!(job), "{listed}");
        assert_eq!(entry["running"], json!(false), "{listed}");
        assert!(
            entry["lost"].as_str().unwrap().contains("stopped"),
            "{listed}"
        );
    }
    let killed = err(&call(&client, "job_kill", json!({"job_id": job})).await);
    assert!(killed.contains("lost"), "{killed}");
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn without_forwarding_another_replicas_job_gets_an_error_that_names_it() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let deployment = job_deployment(&redis, &haproxy, "forward_jobs = false\n").await;
    let client = deployment.client().await;
    let started = ok(&call(&client, "execute_command", sh("sleep 30", json!({}))).await);
    let job = started["job_id"].as_str().unwrap().to_owned();
    let home = runner(&job);
    let (mut answered, mut refused) = (0, 0);
    for _ in 0..3 {
        let r = call(&client, "job_output", json!({"job_id": job})).await;
        if r.is_error == Some(true) {
            let message = err(&r);
            assert!(
                message.contains(&format!("runs on replica r{}", home + 1))
                    && message.contains("replicas.forward_jobs = false"),
                "{message}"
            );
            refused += 1;
        } else {
            assert_eq!(ok(&r)["running"], json!(true));
            answered += 1;
        }
    }
    assert_eq!(
        (answered, refused),
        (1, 2),
        "round robin over three replicas"
    );
    // Its own replica still ends it (round robin comes back to it).
    within(async {
        loop {
            let r = call(&client, "job_kill", json!({"job_id": job})).await;
            if r.is_error != Some(true) {
                return;
            }
        }
    })
    .await;
    within(client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_task_started_through_the_balancer_is_followed_and_cancelled_through_any_replica() {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, ProtocolVersion,
        TaskPayload, TaskStatus,
    };
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let mut deployment = job_deployment(&redis, &haproxy, "").await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", deployment.balancer.url))
            .auth_header(TOKEN),
    );
    let client = within(TasksClient.serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    ))
    .await
    .expect("discover through the balancer");
    let start = |script: &str| {
        CallToolRequestParams::new("execute_command")
            .with_arguments(sh(script, json!({})).as_object().cloned().unwrap())
    };
    let get = |id: String| {
        let peer = client.peer().clone();
        async move {
            within(peer.get_task(GetTaskParams::new(id)))
                .await
                .map(|r| r.task)
        }
    };
    let CallToolResponse::Task(created) =
        within(client.call_tool_once(start("echo start; sleep 1; echo done")))
            .await
            .unwrap()
    else {
        panic!("expected a task");
    };
    let id = created.task.task_id.clone();
    runner(&id);
    // Followed to its end: each tasks/get lands on the next replica.
    let done = within(async {
        loop {
            let task = get(id.clone()).await.unwrap();
            if task.status().is_terminal() {
                return task;
            }
            assert_eq!(task.status(), TaskStatus::Working);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    // Three in a row, one through each replica: the same result.
    for _ in 0..3 {
        let again = get(id.clone()).await.unwrap();
        let TaskPayload::Completed { result } = again.payload else {
            panic!("not completed through every replica: {again:?}");
        };
        assert_eq!(
            result["structuredContent"]["stdout"],
            json!("start\ndone\n")
        );
    }
    // Another, cancelled through the balancer (whichever replica that lands on).
    let CallToolResponse::Task(created) = within(client.call_tool_once(start("sleep 30")))
        .await
        .unwrap()
    else {
        panic!("expected a task");
    };
    let id = created.task.task_id.clone();
    within(client.peer().cancel_task(CancelTaskParams::new(id.clone())))
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            get(id.clone()).await.unwrap().status(),
            TaskStatus::Cancelled
        );
    }
    // Its replica killed: the task is failed, saying it is lost, through the others.
    within(deployment.replicas[runner(&id)].child.kill())
        .await
        .unwrap();
    let lost = within(async {
        loop {
            match get(id.clone()).await {
                Ok(task) if task.status() == TaskStatus::Failed => return task,
                Ok(task) => assert_eq!(task.status(), TaskStatus::Cancelled, "{task:?}"),
                // Forwarded to the dead replica before its heartbeat expired.
                Err(error) => assert!(
                    error.to_string().contains("cannot be reached now"),
                    "{error}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let message = lost.task.status_message.clone().unwrap_or_default();
    assert!(
        message.contains("is lost") && message.contains("stopped"),
        "{message}"
    );
    within(client.cancel()).await.unwrap();
}

// ---------------------------------------------------------------- sessions of older clients

/// The `initialize` of a 2025-11-25 client (sessions: `Mcp-Session-Id`).
const INIT_2025_11_25: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// A `tools/call` of read_file on hello.txt, with request id `id`.
fn read_hello(id: u32) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "read_file", "arguments": {"path": "hello.txt"}}})
    .to_string()
}

/// A POST of `body` to `{url}/mcp` with the token, on `session` when given.
async fn post_mcp_at(url: &str, session: Option<&str>, body: &str) -> reqwest::Response {
    let mut request = authed(http().post(format!("{url}/mcp")))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body.to_owned());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    within(request.send()).await.unwrap()
}

/// Open a session through `url` (initialize, then initialized) and return its id.
async fn open_session(url: &str) -> String {
    let response = post_mcp_at(url, None, INIT_2025_11_25).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answer = within(response.text()).await.unwrap();
    assert!(
        answer.contains(r#""protocolVersion":"2025-11-25""#),
        "{answer}"
    );
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = post_mcp_at(url, Some(&session), initialized).await;
    assert_eq!(response.status(), 202);
    session
}

/// The replica a session id names (the part before `~`).
fn owner(session: &str) -> &str {
    session
        .split_once('~')
        .unwrap_or_else(|| panic!("{session:?} names no replica"))
        .0
}

/// rmcp's client through the balancer; `recover`: its re-initialization on a 404 (on by
/// default; off, a request that reached another replica than its session's fails its call).
async fn session_client(url: &str, recover: bool) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"))
            .auth_header(TOKEN)
            .reinit_on_expired_session(recover),
    );
    within(TestClient::default().serve(transport))
        .await
        .expect("initialize through the balancer")
}

/// Stateful replicas (sessions, as a 2025-11-25 client uses them) behind the documented
/// haproxy backend.
async fn stateful_deployment(redis: &Redis, haproxy: &Path) -> Deployment {
    let deployment = Deployment::start_with(redis, haproxy, "", &[], Rules::Documented).await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    deployment
}

#[tokio::test]
async fn older_clients_sessions_follow_their_id_to_their_replica() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let deployment = stateful_deployment(&redis, &haproxy).await;
    let url = deployment.balancer.url.as_str();

    // Three sessions opened one after another: round robin puts one on each replica, and each
    // id names its own.
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(open_session(url).await);
    }
    let mut owners: Vec<&str> = sessions.iter().map(|s| owner(s)).collect();
    owners.sort_unstable();
    assert_eq!(owners, IDS, "{sessions:?}");
    // Calls on each, interleaved: every one reaches its session's replica (another would
    // answer 404).
    for round in 0..4 {
        for session in &sessions {
            let response = post_mcp_at(url, Some(session), &read_hello(10 + round)).await;
            assert_eq!(response.status(), 200, "{session}");
            let answer = within(response.text()).await.unwrap();
            assert!(answer.contains("hi from a replica"), "{answer}");
        }
    }

    // rmcp's client (its handshake, its GET stream, its DELETE at the end), without its
    // recovery: three clients at once, many calls each, none misrouted.
    let clients = [
        session_client(url, false).await,
        session_client(url, false).await,
        session_client(url, false).await,
    ];
    futures::future::join_all(clients.iter().map(|client| async move {
        for _ in 0..8 {
            let result = call(client, "read_file", json!({"path": "hello.txt"})).await;
            assert_eq!(ok(&result)["content"], json!("hi from a replica\n"));
        }
    }))
    .await;
    for client in clients {
        within(client.cancel()).await.unwrap();
    }

    // Legacy SSE: the stream and the posts meet on one replica by the sessionId parameter.
    let (mut reader, endpoint) = legacy_session_at(url).await;
    let (_, id) = endpoint.split_once("sessionId=").unwrap();
    assert!(IDS.contains(&owner(id)), "{endpoint}");
    for round in 0..4 {
        assert_eq!(
            post_message(&endpoint, &read_hello(20 + round))
                .await
                .status(),
            202
        );
        let answer = reader.message().await;
        assert_eq!(answer["id"], json!(20 + round), "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["content"],
            json!("hi from a replica\n"),
            "{answer}"
        );
    }

    // A 2026-07-28 client needs no affinity: any replica answers, stateful or not, and its
    // Mcp-Method / Mcp-Name headers are there for the balancer to route on.
    for id in 40..43 {
        let call = call_2026(id, "read_file", &json!({"path": "hello.txt"}));
        let response = post_2026(url, &call, "tools/call", Some("read_file")).await;
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("mcp-session-id").is_none());
        let answer = within(response.text()).await.unwrap();
        assert!(answer.contains("hi from a replica"), "{answer}");
    }

    // A replica asked for another's session answers 404 (on which a client starts a new
    // session), naming both.
    let (index, other) = IDS
        .iter()
        .enumerate()
        .find(|(_, r)| **r != owner(&sessions[0]))
        .unwrap();
    let response = post_mcp_at(
        &deployment.replicas[index].url,
        Some(&sessions[0]),
        &read_hello(30),
    )
    .await;
    assert_eq!(response.status(), 404);
    let body: Value = within(response.json()).await.unwrap();
    assert_eq!(body["error"]["code"], json!(-32001), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    for named in [owner(&sessions[0]), other, "start a new session"] {
        assert!(message.contains(named), "{named} in {message}");
    }
    let legacy = endpoint.replace(url, &deployment.replicas[index].url);
    if owner(id) != *other {
        let response = post_message(&legacy, &read_hello(31)).await;
        assert_eq!(response.status(), 404);
        let body: Value = within(response.json()).await.unwrap();
        assert!(
            body["error"]["message"].as_str().unwrap().contains(other),
            "{body}"
        );
    }
    // The replica logged it for the operator.
    assert!(
        deployment.replicas[index]
            .stderr()
            .contains("another replica's session"),
        "{}",
        deployment.replicas[index].stderr()
    );
}

#[tokio::test]
async fn a_client_whose_replica_is_gone_starts_a_new_session_on_another() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    let redis = Redis::start(redis_server).await;
    let mut deployment = stateful_deployment(&redis, &haproxy).await;
    let url = deployment.balancer.url.clone();

    // rmcp's client, as users get it (recovery on).
    let client = session_client(&url, true).await;
    ok(&call(&client, "read_file", json!({"path": "hello.txt"})).await);
    // Its replica is the one that served the call.
    let mut served = Vec::new();
    for server in &deployment.replicas {
        served.push(metrics(server).await.contains(r#"tool="read_file""#));
    }
    let holder = served.iter().position(|s| *s).unwrap();
    assert_eq!(served.iter().filter(|s| **s).count(), 1, "{served:?}");
    within(deployment.replicas[holder].child.kill())
        .await
        .unwrap();
    // The next calls reach another replica (haproxy redispatches), which answers 404; the
    // client opens a new session there and repeats the call.
    for _ in 0..3 {
        let result = call(&client, "read_file", json!({"path": "hello.txt"})).await;
        assert_eq!(ok(&result)["content"], json!("hi from a replica\n"));
    }
    within(client.cancel()).await.unwrap();

    // The MCP Python SDK: the call on the lost session fails ("Session terminated", its answer
    // to a 404) and a new session works.
    let Some(python) = sdk_python("TOOLPORT_REQUIRE_REDIS") else {
        return;
    };
    let args = [
        format!("{url}/mcp").into(),
        deployment.root.join("hello.txt").into_os_string(),
    ];
    let mut child = sdk_script(&python, ".ci/replicas/sdk_session.py", args)
        .env("TOOLPORT_TOKEN", TOKEN)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = within(lines.next_line()).await.unwrap().expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let first = next().await;
    assert_eq!(first["texts"][0], json!("hi from a replica\n"), "{first}");
    let session = first["session"].as_str().unwrap().to_owned();
    let holder = IDS.iter().position(|id| *id == owner(&session)).unwrap();
    within(deployment.replicas[holder].child.kill())
        .await
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    within(stdin.write_all(b"go\n")).await.unwrap();
    let lost = next().await;
    assert_eq!(lost["terminated"], json!("Session terminated"), "{lost}");
    let again = next().await;
    let new_session = again["session"].as_str().unwrap();
    assert_ne!(owner(new_session), owner(&session), "{again}");
    assert_eq!(again["texts"][0], json!("hi from a replica\n"), "{again}");
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
}

// ---------------------------------------------------------------- the client behind the balancer

#[tokio::test]
async fn behind_a_trusted_balancer_each_client_has_its_own_rate() {
    let Some((redis_server, haproxy)) = parts() else {
        return;
    };
    const RATE: usize = 4;
    let redis = Redis::start(redis_server).await;
    // haproxy reaches the replicas from 127.0.0.1 and names each client in X-Forwarded-For
    // (`option forwardfor` in the documented backend); the clients come from 127.0.0.2.. .
    let deployment = Deployment::start_with(
        &redis,
        &haproxy,
        &format!("[http]\nmax_requests_per_minute = {RATE}\ntrusted_proxies = [\"127.0.0.1\"]\n"),
        &["--stateless"],
        Rules::Documented,
    )
    .await;
    for server in &deployment.replicas {
        ready_becomes(server, 200).await;
    }
    let url = format!("{}/mcp", deployment.balancer.url);
    // `count` initialize requests from `source`, with `extra` headers: their statuses.
    let send = async |source: &str, count: usize, extra: &[(&str, &str)]| {
        let client = reqwest::Client::builder()
            .local_address(Some(source.parse().unwrap()))
            .build()
            .unwrap();
        let mut statuses = Vec::new();
        for _ in 0..count {
            let mut request = authed(client.post(&url))
                .header("content-type", "application/json")
                .header("accept", ACCEPT)
                .body(INIT);
            for (name, value) in extra {
                request = request.header(*name, *value);
            }
            statuses.push(within(request.send()).await.unwrap().status().as_u16());
        }
        statuses
    };
    // One client spends its rate (across the three replicas: one count in Redis).
    let first = send("127.0.0.2", RATE + 2, &[]).await;
    assert_eq!(first, [200, 200, 200, 200, 429, 429], "{first:?}");
    // Another has its own.
    assert_eq!(send("127.0.0.3", RATE, &[]).await, [200; RATE]);
    // A client that names a spent one as itself is still itself: what it wrote is left of
    // the address haproxy appends.
    let forged = [("x-forwarded-for", "127.0.0.2")];
    assert_eq!(send("127.0.0.4", RATE, &forged).await, [200; RATE]);
    let forged = send("127.0.0.4", 1, &[("x-forwarded-for", "127.0.0.5")]).await;
    assert_eq!(forged, [429], "a new name does not buy a new rate");
}
