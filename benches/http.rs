//! HTTP load benchmark: many concurrent Streamable HTTP sessions, each calling a small tool in
//! a loop, against toolport (`read_file` of a 1 KiB file) and, in the same run, the official
//! reference server `@modelcontextprotocol/server-everything` (its `echo` tool), pinned in
//! `benches/node/package.json`. Reports calls/s, p50/p99 latency and the server's peak RSS,
//! and the ratios between the two.
//!
//! Run: `(cd benches/node && npm ci) && cargo bench --bench http`. Knobs (environment):
//! `BENCH_HTTP_SESSIONS` (default 32), `BENCH_HTTP_SECS` (measured seconds per server,
//! default 10), `BENCH_HTTP_NODE` (the node binary, default `node`). Without the npm install
//! the reference is skipped with a note. Under `cargo test --benches` (no `--bench`
//! argument) it runs as a one-second smoke test.
//!
//! Both servers are driven by the same client: plain HTTP/1.1 requests through one reqwest
//! connection pool (one connection per session), reading each call's SSE answer to its end.
//! It is lighter than a full MCP client, so the servers, not the client, are what is
//! measured. Each session does `initialize` + `notifications/initialized` first, as any MCP
//! client does.

// Reporting results on stdout is the point of a benchmark binary.
#![allow(clippy::print_stdout, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Default concurrent sessions: enough to saturate a small machine's cores.
const DEFAULT_SESSIONS: usize = 32;
/// Default measured time per server.
const DEFAULT_SECS: u64 = 10;
/// Unmeasured warm-up per server (connections, JIT for node, caches).
const WARMUP: Duration = Duration::from_secs(2);
/// How often the server's RSS is sampled.
const RSS_TICK: Duration = Duration::from_millis(100);
/// Bytes in the file toolport reads.
const FILE_BYTES: usize = 1024;
/// The bench's bearer token for toolport.
const TOKEN: &str = "bench-token-0123456789abcdef";
/// Clock ticks per second in /proc/PID/stat (USER_HZ, 100 on every mainstream Linux build).
const CLOCK_TICKS: f64 = 100.0;
/// How long a server gets to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(30);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One server under load.
struct Target {
    url: String,
    token: Option<&'static str>,
    tool: &'static str,
    args: serde_json::Value,
    pid: u32,
    /// Stateless Streamable HTTP: no session to open.
    stateless: bool,
}

/// What one run measured.
struct Measured {
    calls: u64,
    errors: u64,
    secs: f64,
    p50: Duration,
    p99: Duration,
    peak_rss_kib: u64,
    /// Server CPU time (user + system) during the measured window.
    server_cpu_secs: f64,
    /// This process's (the load client's) CPU time during the measured window.
    client_cpu_secs: f64,
}

/// User + system CPU seconds of a process, from /proc/PID/stat.
fn cpu_secs(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may contain spaces): state is field 3, utime 14,
    // stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / CLOCK_TICKS
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn request(
    client: &reqwest::Client,
    target: &Target,
    session: Option<&str>,
    body: String,
) -> reqwest::RequestBuilder {
    let mut builder = client
        .post(&target.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some(token) = target.token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    if session.is_some() || target.stateless {
        builder = builder.header("mcp-protocol-version", "2025-06-18");
    }
    builder
}

/// Open a session: `initialize`, then `notifications/initialized`.
async fn open(client: &reqwest::Client, target: &Target) -> Result<Option<String>, BoxError> {
    if target.stateless {
        return Ok(None);
    }
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "toolport-bench", "version": "0"}}});
    let response = request(client, target, None, init.to_string())
        .send()
        .await?;
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await?;
    let session =
        session.ok_or_else(|| format!("initialize answered {status} without a session: {body}"))?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    request(client, target, Some(&session), initialized.to_string())
        .send()
        .await?
        .error_for_status()?;
    Ok(Some(session))
}

/// One session's loop until `end`; latencies are kept after `measure_from`.
async fn session_loop(
    client: reqwest::Client,
    target: Arc<Target>,
    measure_from: Instant,
    end: Instant,
    errors: Arc<AtomicU64>,
) -> Result<Vec<Duration>, BoxError> {
    let session = open(&client, &target).await?;
    let mut latencies = Vec::new();
    let mut id = 1u64;
    while Instant::now() < end {
        id += 1;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": target.tool, "arguments": target.args}});
        let started = Instant::now();
        let ok = match request(&client, &target, session.as_deref(), call.to_string())
            .send()
            .await
        {
            Ok(response) if response.status().is_success() => match response.text().await {
                Ok(body) => body.contains("\"result\"") && !body.contains("\"isError\":true"),
                Err(_) => false,
            },
            _ => false,
        };
        let took = started.elapsed();
        if !ok {
            errors.fetch_add(1, Ordering::Relaxed);
        } else if started >= measure_from {
            latencies.push(took);
        }
    }
    Ok(latencies)
}

async fn run_load(target: Target, sessions: usize, secs: u64) -> Result<Measured, BoxError> {
    let target = Arc::new(target);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(sessions * 2)
        .build()?;
    let measure_from = Instant::now() + WARMUP;
    let end = measure_from + Duration::from_secs(secs);
    let errors = Arc::new(AtomicU64::new(0));
    let pid = target.pid;
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        let mut cpu_from = None;
        while Instant::now() < end {
            if cpu_from.is_none() && Instant::now() >= measure_from {
                cpu_from = Some((cpu_secs(&pid.to_string()), cpu_secs("self")));
            }
            if let Some(rss) = rss_kib(pid) {
                peak = peak.max(rss);
            }
            tokio::time::sleep(RSS_TICK).await;
        }
        let (server0, client0) = cpu_from.unwrap_or_default();
        (
            peak,
            cpu_secs(&pid.to_string()) - server0,
            cpu_secs("self") - client0,
        )
    });
    let tasks: Vec<_> = (0..sessions)
        .map(|_| {
            tokio::spawn(session_loop(
                client.clone(),
                target.clone(),
                measure_from,
                end,
                errors.clone(),
            ))
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    let (peak_rss_kib, server_cpu_secs, client_cpu_secs) = sampler.await?;
    all.sort();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Ok(Measured {
        calls: all.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        secs: secs as f64,
        p50: pick(0.50),
        p99: pick(0.99),
        peak_rss_kib,
        server_cpu_secs,
        client_cpu_secs,
    })
}

/// Spawn a server and wait for `ready(line)` on its output.
async fn spawn(
    mut cmd: Command,
    ready: impl Fn(&str) -> Option<String>,
) -> Result<(Child, String), BoxError> {
    // Both servers announce their port on stderr; node's per-session chatter on stdout is
    // discarded.
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let output = child.stderr.take().ok_or("no stderr")?;
    let mut lines = BufReader::new(output).lines();
    let found = tokio::time::timeout(START_TIMEOUT, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(found) = ready(&line) {
                return Ok::<_, BoxError>(found);
            }
        }
        Err("the server exited before it was ready".into())
    })
    .await
    .map_err(|_| "the server did not start in time")??;
    // Keep draining, so a chatty server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, found))
}

async fn toolport(
    dir: &Path,
    sessions: usize,
    secs: u64,
    stateless: bool,
) -> Result<Measured, BoxError> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolport"));
    if stateless {
        cmd.arg("--stateless");
    }
    cmd.args(["serve", "--http", "127.0.0.1:0", "--root"])
        .arg(dir)
        .env("TOOLPORT_TOKEN", TOKEN)
        .env("XDG_CONFIG_HOME", dir.join(".no-config"))
        .env("RUST_LOG", "warn");
    let toml = dir.join("bench.toml");
    // Room for every bench session plus a few.
    std::fs::write(&toml, format!("[http]\nmax_sessions = {}\n", sessions + 16))?;
    cmd.arg("--config").arg(&toml);
    let (child, url) = spawn(cmd, |line| {
        line.strip_prefix("toolport: listening on ")
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
    })
    .await?;
    let target = Target {
        url: format!("{url}/mcp"),
        token: Some(TOKEN),
        tool: "read_file",
        args: json!({"path": "file.txt"}),
        pid: child.id().ok_or("no pid")?,
        stateless,
    };
    let result = run_load(target, sessions, secs).await;
    drop(child);
    result
}

fn everything_js() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

async fn reference(sessions: usize, secs: u64) -> Result<Measured, BoxError> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let node = std::env::var("BENCH_HTTP_NODE").unwrap_or_else(|_| "node".into());
    let mut cmd = Command::new(node);
    cmd.arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let (child, _) = spawn(cmd, |line| {
        line.contains("listening on port").then(String::new)
    })
    .await?;
    let target = Target {
        url: format!("http://127.0.0.1:{port}/mcp"),
        token: None,
        tool: "echo",
        args: json!({"message": "x".repeat(64)}),
        pid: child.id().ok_or("no pid")?,
        stateless: false,
    };
    let result = run_load(target, sessions, secs).await;
    drop(child);
    result
}

fn row(name: &str, m: &Measured) {
    let calls = m.calls.max(1) as f64;
    println!(
        "| {name} | {:.0} | {:.2} ms | {:.2} ms | {:.1} MiB | {:.0} µs | {:.0} µs | {} | {} |",
        m.calls as f64 / m.secs,
        m.p50.as_secs_f64() * 1e3,
        m.p99.as_secs_f64() * 1e3,
        m.peak_rss_kib as f64 / 1024.0,
        m.server_cpu_secs / calls * 1e6,
        m.client_cpu_secs / calls * 1e6,
        m.calls,
        m.errors
    );
}

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), BoxError> {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (sessions, secs) = if measuring {
        (
            env_or("BENCH_HTTP_SESSIONS", DEFAULT_SESSIONS),
            env_or("BENCH_HTTP_SECS", DEFAULT_SECS),
        )
    } else {
        (2, 1)
    };
    let dir = tempfile::tempdir()?;
    let line = "toolport http bench line, 64 bytes of plain ASCII text ........\n";
    std::fs::write(
        dir.path().join("file.txt"),
        line.repeat(FILE_BYTES / line.len()),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!();
        println!(
            "HTTP load: {sessions} concurrent Streamable HTTP sessions, {}s warm-up + {secs}s measured per server{}",
            WARMUP.as_secs(),
            if measuring { "" } else { " (smoke test under `cargo test --benches`, not a measurement)" }
        );
        println!();
        println!("| Server (tool) | calls/s | p50 | p99 | peak RSS | server CPU/call | client CPU/call | calls | errors |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let ours = toolport(dir.path(), sessions, secs, false).await?;
        row("toolport (read_file, 1 KiB)", &ours);
        let stateless = toolport(dir.path(), sessions, secs, true).await?;
        row("toolport --stateless (read_file, 1 KiB)", &stateless);
        if !everything_js().exists() {
            println!();
            println!("reference skipped: run `npm ci` in benches/node to install server-everything");
            return Ok::<_, BoxError>(());
        }
        match reference(sessions, secs).await {
            Ok(theirs) => {
                row("server-everything (echo)", &theirs);
                println!();
                for (name, ours) in [("toolport", &ours), ("toolport --stateless", &stateless)] {
                    let cpu = |m: &Measured| m.server_cpu_secs / m.calls.max(1) as f64;
                    println!(
                        "ratios {name} / server-everything: throughput {:.1}x, p50 {:.1}x lower, p99 {:.1}x lower, peak RSS {:.1}x lower, server CPU per call {:.1}x lower",
                        ours.calls as f64 / theirs.calls.max(1) as f64,
                        theirs.p50.as_secs_f64() / ours.p50.as_secs_f64().max(1e-9),
                        theirs.p99.as_secs_f64() / ours.p99.as_secs_f64().max(1e-9),
                        theirs.peak_rss_kib as f64 / ours.peak_rss_kib.max(1) as f64,
                        cpu(&theirs) / cpu(ours).max(1e-12),
                    );
                }
            }
            Err(error) => println!("\nreference failed: {error} (is node >= 18 on PATH, or BENCH_HTTP_NODE set?)"),
        }
        Ok(())
    })?;
    Ok(())
}
