//! The cost of observing calls (issue 12): a small `read_file` over stdio with the audit log,
//! metrics and trace export all on, against the same call with them off. Target: at most
//! 1.10× the latency, with the server's CPU per call reported both ways.
//!
//! Three servers (the release binary, `CARGO_BIN_EXE_toolport` or `TOOLPORT_BIN`) run side by
//! side over stdio, each with its own root holding the same 200-byte file:
//! - `off`: no audit log, no trace export (metrics are always on: they are in-memory counters
//!   with no switch, so they are part of both);
//! - `on`: `--audit-log FILE` (a real file on the same disk) and
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a local OTLP/HTTP sink in this process, which
//!   answers every export with 200 (so the batch exporter really encodes and sends);
//! - `on+limits`: `on` plus every call budget set high enough never to refuse
//!   (`[limits] max_calls_per_session`, `max_calls_per_minute`,
//!   `max_concurrent_calls_per_session` and the same for `read_file`), so the bookkeeping runs
//!   on each call.
//!
//! The client is a raw JSON-RPC writer/reader on the child's pipes (no SDK), one call at a
//! time, so the figure is the server's round trip. Each round runs a block of calls against
//! every server, in an order that rotates each round; a ratio is the median of the per-round
//! ratios of block medians (paired). CPU per call is the server's user + system time over all
//! of its blocks (from `/proc/PID/stat`), divided by its calls; it includes the audit writer
//! thread and the exporter's thread.
//!
//! Run with `cargo bench --bench observe`. Under `cargo test --benches` it runs a few calls
//! against the debug binary as a smoke test; those numbers are not measurements.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::common::args::bench_mode;
use crate::common::proc::cpu_secs;
use crate::common::stats::{median, quantile};
use crate::common::toolport_bin;

/// The file every call reads: small, so the call's fixed costs dominate.
const SMALL_FILE: &str = "small.txt";
const SMALL_FILE_BYTES: usize = 200;

/// One server variant over stdio.
struct Server {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    latencies: Vec<Vec<f64>>,
    calls: u64,
    cpu: f64,
    root: tempfile::TempDir,
}

impl Server {
    fn start(name: &'static str, config: &str, env: &[(&str, String)], audit: bool) -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(
            root.path().join(SMALL_FILE),
            "x".repeat(SMALL_FILE_BYTES - 1) + "\n",
        )
        .unwrap();
        let config_path = root.path().join("toolport.toml");
        std::fs::write(&config_path, config).unwrap();
        let mut cmd = Command::new(toolport_bin());
        cmd.arg("--root")
            .arg(root.path())
            .arg("--config")
            .arg(&config_path)
            .env_remove("RUST_LOG")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("TOOLPORT_AUDIT_LOG")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if audit {
            cmd.arg("--audit-log").arg(root.path().join("audit.log"));
        }
        let mut child = cmd.spawn().expect("start toolport");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Self {
            name,
            child,
            stdin,
            stdout,
            next_id: 0,
            latencies: Vec::new(),
            calls: 0,
            cpu: 0.0,
            root,
        };
        server.request(
            r#""method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#,
        );
        server
            .stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .unwrap();
        server
    }

    /// Send one request (the JSON after `"id":N,`) and read its answer.
    fn request(&mut self, rest: &str) -> String {
        self.next_id += 1;
        // One write per message, as clients send them.
        let line = format!(r#"{{"jsonrpc":"2.0","id":{},{rest}}}"#, self.next_id) + "\n";
        self.stdin.write_all(line.as_bytes()).unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "{} closed stdout",
                self.name
            );
            // Skip notifications and server requests; the answer carries our id.
            if line.contains(&format!(r#""id":{}"#, self.next_id)) && !line.contains("\"method\"") {
                return line;
            }
        }
    }

    fn read_small_file(&mut self) {
        let answer = self.request(&format!(
            r#""method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"{SMALL_FILE}"}}}}"#
        ));
        assert!(
            answer.contains("\"isError\":false") || !answer.contains("isError"),
            "{}: {answer}",
            self.name
        );
    }

    /// A block of `n` calls: their latencies (µs) and the server's CPU over the block.
    fn block(&mut self, n: usize) {
        let pid = self.child.id();
        let cpu_before = cpu_secs(pid).unwrap_or(0.0);
        let mut block = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            self.read_small_file();
            block.push(started.elapsed().as_secs_f64() * 1e6);
        }
        self.cpu += cpu_secs(pid).unwrap_or(0.0) - cpu_before;
        self.calls += n as u64;
        self.latencies.push(block);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A local OTLP/HTTP endpoint that accepts every export (an empty 200 answer is a valid
/// `ExportTraceServiceResponse`) and counts requests and bytes.
fn start_sink() -> (SocketAddr, Arc<AtomicU64>, Arc<AtomicU64>) {
    let requests = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let (r, b) = (requests.clone(), bytes.clone());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    r.fetch_add(1, Ordering::Relaxed);
                    b.fetch_add(body.len() as u64, Ordering::Relaxed);
                    async {
                        (
                            [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                            Vec::<u8>::new(),
                        )
                    }
                }),
            );
            axum::serve(listener, app).await.unwrap();
        });
    });
    (rx.recv().unwrap(), requests, bytes)
}

fn main() {
    let bench = bench_mode();
    let (rounds, per_block, warm_up) = if bench { (15, 1000, 500) } else { (2, 5, 2) };
    let (sink, exports, export_bytes) = start_sink();
    let otlp = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{sink}")),
        ("OTEL_SERVICE_NAME", "toolport-bench".to_owned()),
    ];
    let limits = "[limits]\nmax_calls_per_session = 1000000000\nmax_calls_per_minute = 60000\n\
                  max_concurrent_calls_per_session = 64\n\
                  [limits.tools.read_file]\nmax_calls_per_session = 1000000000\n\
                  max_calls_per_minute = 60000\n";
    let mut servers = vec![
        Server::start("off", "", &[], false),
        Server::start("on", "", &otlp, true),
        Server::start("on+limits", limits, &otlp, true),
    ];
    // Rates of 60 000 a minute allow 1000 a second on average: keep the limited server under
    // it (its burst is the whole 60 000), so it never refuses during the run.
    assert!(
        (rounds * per_block + warm_up) < 60_000,
        "the rate limit would trip"
    );
    for server in &mut servers {
        for _ in 0..warm_up {
            server.read_small_file();
        }
    }
    for round in 0..rounds {
        let n = servers.len();
        for i in 0..n {
            servers[(round + i) % n].block(per_block);
        }
    }

    println!(
        "\nobserve: small read_file over stdio, {rounds} rounds × {per_block} calls per server, interleaved\n"
    );
    println!(
        "| server | p50 µs | p90 µs | ratio to off (paired, median of rounds) | server CPU µs/call |"
    );
    println!("|---|---|---|---|---|");
    let block_medians: Vec<Vec<f64>> = servers
        .iter()
        .map(|s| s.latencies.iter().map(|b| median(b)).collect())
        .collect();
    for (i, server) in servers.iter().enumerate() {
        let all: Vec<f64> = server.latencies.iter().flatten().copied().collect();
        let ratios: Vec<f64> = block_medians[i]
            .iter()
            .zip(&block_medians[0])
            .map(|(x, off)| x / off)
            .collect();
        println!(
            "| {} | {:.1} | {:.1} | {:.3} | {:.1} |",
            server.name,
            median(&all),
            quantile(&all, 0.9),
            median(&ratios),
            server.cpu / server.calls as f64 * 1e6,
        );
    }
    // The exporter batches (every 5 s by default): a long enough run must have exported.
    println!(
        "\nOTLP sink: {} export requests, {} bytes received during the run",
        exports.load(Ordering::Relaxed),
        export_bytes.load(Ordering::Relaxed)
    );
    let audit_lines = |server: &Server| {
        std::fs::read_to_string(server.root.path().join("audit.log"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    println!(
        "audit records written: on {}, on+limits {}",
        audit_lines(&servers[1]),
        audit_lines(&servers[2])
    );
}
