//! HTTP load benchmark: many concurrent Streamable HTTP sessions, each calling a small tool in
//! a loop, against toolport (`read_file` of a 1 KiB file, with sessions and `--stateless`)
//! and, in the same run, the official reference server `@modelcontextprotocol/server-everything`
//! (its `echo` tool), pinned in `benches/node/package.json`. Reports calls/s, p50/p99
//! latency, the server's peak RSS and CPU per call, and the ratios between the servers.
//!
//! The three servers run side by side for the whole run. Each round measures every server in
//! turn (new sessions, a warm-up, then the measured window), so a change in the machine's
//! load hits all of them alike; the report gives medians over the rounds (the mean of the
//! middle two for an even count, as in every bench: `common::stats::median`), and each ratio
//! is taken within one round before its median is taken.
//!
//! Run: `(cd benches/node && npm ci) && cargo bench --bench http`. Knobs (environment):
//! `BENCH_HTTP_SESSIONS` (default 32), `BENCH_HTTP_SECS` (measured seconds per server and
//! round, default 5), `BENCH_HTTP_ROUNDS` (default 5), `BENCH_HTTP_NODE` (the node binary,
//! default `node`). Without the npm install the reference is skipped with a note. Under
//! `cargo test --benches` (no `--bench` argument) it runs as a one-second smoke test.
//!
//! All servers are driven by the same client: one HTTP/1.1 connection per session (hyper's
//! connection-level client, TCP_NODELAY), reading each call's answer (JSON or an SSE stream)
//! to its end and checking it holds a non-error result. It is much lighter than a full MCP
//! client, so the servers, not the client, are what is measured. Each session does
//! `initialize` + `notifications/initialized` first and DELETEs its session at the end, as a
//! well-behaved MCP client does.

// Reporting results on stdout is the point of a benchmark binary.
#![allow(clippy::print_stdout, missing_docs)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::http::{self, HeaderValue, Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::proc::{cpu_secs, mem};
use crate::common::stats::median;

/// Default concurrent sessions: enough to saturate a small machine's cores.
const DEFAULT_SESSIONS: usize = 32;
/// Default measured time per server and round.
const DEFAULT_SECS: u64 = 5;
/// Default rounds: each measures every server in turn, so a change in the machine's load
/// hits all servers alike, and ratios are taken within a round.
const DEFAULT_ROUNDS: usize = 5;
/// Unmeasured warm-up per measurement (new sessions; JIT for node, caches on the first).
const WARMUP: Duration = Duration::from_secs(1);
/// How often the server's RSS is sampled.
const RSS_TICK: Duration = Duration::from_millis(100);
/// Bytes in the file toolport reads.
const FILE_BYTES: usize = 1024;
/// The bench's bearer token for toolport.
const TOKEN: &str = "bench-token-0123456789abcdef";
/// How long a server gets to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(30);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// CPU seconds of a process (a pid or `"self"`), 0 once it is gone.
fn cpu(pid: impl std::fmt::Display) -> f64 {
    cpu_secs(pid).unwrap_or(0.0)
}

/// One server under load.
struct Target {
    addr: SocketAddr,
    /// The Host header: `127.0.0.1:PORT`.
    authority: HeaderValue,
    path: &'static str,
    /// `Bearer …`, when the server wants a token.
    authorization: Option<HeaderValue>,
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

/// One session's HTTP/1.1 connection to the server.
type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Open a connection (TCP_NODELAY, as any latency-minded client sets).
async fn connect(target: &Target) -> Result<Sender, BoxError> {
    let stream = tokio::net::TcpStream::connect(target.addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    // Drives the connection; ends when the sender is dropped.
    tokio::spawn(connection);
    Ok(sender)
}

/// POST one JSON-RPC message and read the whole answer (JSON, or an SSE stream to its end).
async fn post(
    sender: &mut Sender,
    target: &Target,
    session: Option<&HeaderValue>,
    body: String,
) -> Result<(StatusCode, http::HeaderMap, Bytes), BoxError> {
    send(sender, target, Method::POST, session, body).await
}

/// Send one request to the MCP endpoint, with the headers an MCP client sends, and read the
/// whole answer.
async fn send(
    sender: &mut Sender,
    target: &Target,
    method: Method,
    session: Option<&HeaderValue>,
    body: String,
) -> Result<(StatusCode, http::HeaderMap, Bytes), BoxError> {
    sender.ready().await?;
    let mut builder = Request::builder()
        .method(method)
        .uri(target.path)
        .header(http::header::HOST, &target.authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, text/event-stream");
    if let Some(token) = &target.authorization {
        builder = builder.header(http::header::AUTHORIZATION, token);
    }
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    if session.is_some() || target.stateless {
        builder = builder.header("mcp-protocol-version", "2025-06-18");
    }
    let response = sender
        .send_request(builder.body(Full::new(Bytes::from(body)))?)
        .await?;
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await?.to_bytes();
    Ok((parts.status, parts.headers, bytes))
}

/// Open a session: `initialize`, then `notifications/initialized`.
async fn open(sender: &mut Sender, target: &Target) -> Result<Option<HeaderValue>, BoxError> {
    if target.stateless {
        return Ok(None);
    }
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "toolport-bench", "version": "0"}}});
    let (status, headers, body) = post(sender, target, None, init.to_string()).await?;
    let session = headers.get("mcp-session-id").cloned().ok_or_else(|| {
        format!(
            "initialize answered {status} without a session: {}",
            String::from_utf8_lossy(&body)
        )
    })?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(sender, target, Some(&session), initialized.to_string()).await?;
    if !status.is_success() {
        return Err(format!("notifications/initialized answered {status}").into());
    }
    Ok(Some(session))
}

/// Whether `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// One session's loop until `end`; latencies are kept after `measure_from`.
async fn session_loop(
    target: Arc<Target>,
    measure_from: Instant,
    end: Instant,
    errors: Arc<AtomicU64>,
) -> Result<Vec<Duration>, BoxError> {
    let mut sender = connect(&target).await?;
    let session = open(&mut sender, &target).await?;
    let mut latencies = Vec::new();
    let mut id = 1u64;
    while Instant::now() < end {
        id += 1;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": target.tool, "arguments": target.args}});
        let started = Instant::now();
        let ok = match post(&mut sender, &target, session.as_ref(), call.to_string()).await {
            Ok((status, _, body)) => {
                status.is_success()
                    && holds(&body, b"\"result\"")
                    && !holds(&body, b"\"isError\":true")
            }
            // A broken connection: count it and start over on a new one.
            Err(_) => {
                sender = connect(&target).await?;
                false
            }
        };
        let took = started.elapsed();
        if !ok {
            errors.fetch_add(1, Ordering::Relaxed);
        } else if started >= measure_from {
            latencies.push(took);
        }
    }
    // End the session, as a well-behaved client does, so rounds do not pile sessions up.
    if let Some(session) = session {
        send(
            &mut sender,
            &target,
            Method::DELETE,
            Some(&session),
            String::new(),
        )
        .await?;
    }
    Ok(latencies)
}

/// One measurement: `sessions` new sessions, [`WARMUP`], then `secs` measured.
async fn run_load(target: &Arc<Target>, sessions: usize, secs: u64) -> Result<Measured, BoxError> {
    let measure_from = Instant::now() + WARMUP;
    let end = measure_from + Duration::from_secs(secs);
    let errors = Arc::new(AtomicU64::new(0));
    let pid = target.pid;
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        let mut cpu_from = None;
        while Instant::now() < end {
            if cpu_from.is_none() && Instant::now() >= measure_from {
                cpu_from = Some((cpu(pid), cpu("self")));
            }
            if let Some(mem) = mem(pid) {
                peak = peak.max(mem.rss);
            }
            tokio::time::sleep(RSS_TICK).await;
        }
        let (server0, client0) = cpu_from.unwrap_or_default();
        (peak, cpu(pid) - server0, cpu("self") - client0)
    });
    let tasks: Vec<_> = (0..sessions)
        .map(|_| {
            tokio::spawn(session_loop(
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

/// A server kept running for all rounds, and what each round measured.
struct Server {
    name: &'static str,
    target: Arc<Target>,
    runs: Vec<Measured>,
    /// Killed on drop.
    _child: Child,
}

async fn toolport(dir: &Path, sessions: usize, stateless: bool) -> Result<Server, BoxError> {
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
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("toolport announced {url:?}, not http://ADDR"))?;
    let target = Target {
        addr,
        authority: HeaderValue::from_str(&addr.to_string())?,
        path: "/mcp",
        authorization: Some(HeaderValue::from_str(&format!("Bearer {TOKEN}"))?),
        tool: "read_file",
        args: json!({"path": "file.txt"}),
        pid: child.id().ok_or("no pid")?,
        stateless,
    };
    Ok(Server {
        name: if stateless {
            "toolport --stateless (read_file, 1 KiB)"
        } else {
            "toolport (read_file, 1 KiB)"
        },
        target: Arc::new(target),
        runs: Vec::new(),
        _child: child,
    })
}

fn everything_js() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

async fn reference() -> Result<Server, BoxError> {
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
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let target = Target {
        addr,
        authority: HeaderValue::from_str(&addr.to_string())?,
        path: "/mcp",
        authorization: None,
        tool: "echo",
        args: json!({"message": "x".repeat(64)}),
        pid: child.id().ok_or("no pid")?,
        stateless: false,
    };
    Ok(Server {
        name: "server-everything (echo)",
        target: Arc::new(target),
        runs: Vec::new(),
        _child: child,
    })
}

/// Calls per second of one run.
fn rate(m: &Measured) -> f64 {
    m.calls as f64 / m.secs
}

/// Server CPU seconds per call of one run.
fn cpu_per_call(m: &Measured) -> f64 {
    m.server_cpu_secs / m.calls.max(1) as f64
}

/// One table row: medians over the rounds, the highest RSS, total calls and errors.
fn row(server: &Server) {
    let runs = &server.runs;
    let of = |f: &dyn Fn(&Measured) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    println!(
        "| {} | {:.0} | {:.2} ms | {:.2} ms | {:.1} MiB | {:.0} µs | {:.0} µs | {} | {} |",
        server.name,
        of(&rate),
        of(&|m| m.p50.as_secs_f64()) * 1e3,
        of(&|m| m.p99.as_secs_f64()) * 1e3,
        runs.iter().map(|m| m.peak_rss_kib).max().unwrap_or(0) as f64 / 1024.0,
        of(&cpu_per_call) * 1e6,
        of(&|m| m.client_cpu_secs / m.calls.max(1) as f64) * 1e6,
        runs.iter().map(|m| m.calls).sum::<u64>(),
        runs.iter().map(|m| m.errors).sum::<u64>(),
    );
}

/// The medians over the rounds of toolport / reference, each ratio taken within one round.
fn ratios(ours: &Server, theirs: &Server) {
    let paired = |f: &dyn Fn(&Measured, &Measured) -> f64| {
        median(
            &ours
                .runs
                .iter()
                .zip(&theirs.runs)
                .map(|(o, t)| f(o, t))
                .collect::<Vec<_>>(),
        )
    };
    let secs = |d: Duration| d.as_secs_f64().max(1e-9);
    println!(
        "| {} | **{:.1}×** | {:.1}× lower | {:.1}× lower | {:.1}× lower | {:.1}× lower |",
        ours.name,
        paired(&|o, t| rate(o) / rate(t).max(1e-9)),
        paired(&|o, t| secs(t.p50) / secs(o.p50)),
        paired(&|o, t| secs(t.p99) / secs(o.p99)),
        paired(&|o, t| t.peak_rss_kib as f64 / o.peak_rss_kib.max(1) as f64),
        paired(&|o, t| cpu_per_call(t) / cpu_per_call(o).max(1e-12)),
    );
}

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), BoxError> {
    let measuring = common::args::bench_mode();
    let (sessions, secs, rounds) = if measuring {
        (
            env_or("BENCH_HTTP_SESSIONS", DEFAULT_SESSIONS),
            env_or("BENCH_HTTP_SECS", DEFAULT_SECS),
            env_or("BENCH_HTTP_ROUNDS", DEFAULT_ROUNDS).max(1),
        )
    } else {
        (2, 1, 1)
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
        let mut servers = vec![
            toolport(dir.path(), sessions, false).await?,
            toolport(dir.path(), sessions, true).await?,
        ];
        let with_reference = everything_js().exists();
        if with_reference {
            match reference().await {
                Ok(server) => servers.push(server),
                Err(error) => {
                    println!("\nreference failed: {error} (is node >= 18 on PATH, or BENCH_HTTP_NODE set?)");
                    return Ok::<_, BoxError>(());
                }
            }
        }
        println!();
        println!(
            "HTTP load: {sessions} concurrent Streamable HTTP sessions; {rounds} rounds, each measuring every server in turn for {}s warm-up + {secs}s{}",
            WARMUP.as_secs(),
            if measuring { "" } else { " (smoke test under `cargo test --benches`, not a measurement)" }
        );
        for round in 1..=rounds {
            let mut line = format!("round {round}:");
            for server in &mut servers {
                let measured = run_load(&server.target, sessions, secs).await?;
                line.push_str(&format!(" {:.0}/s", rate(&measured)));
                server.runs.push(measured);
            }
            println!("{line}");
        }
        println!();
        println!("Medians over the rounds (peak RSS: the highest of all rounds; calls, errors: totals).");
        println!();
        println!("| Server (tool) | calls/s | p50 | p99 | peak RSS | server CPU/call | client CPU/call | calls | errors |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for server in &servers {
            row(server);
        }
        if !with_reference {
            println!();
            println!("reference skipped: run `npm ci` in benches/node to install server-everything");
            return Ok(());
        }
        println!();
        println!("Medians of the ratios to server-everything, each taken within one round.");
        println!();
        println!("| toolport / server-everything | throughput | p50 | p99 | peak RSS | server CPU per call |");
        println!("|---|---:|---:|---:|---:|---:|");
        ratios(&servers[0], &servers[2]);
        ratios(&servers[1], &servers[2]);
        Ok(())
    })?;
    Ok(())
}
