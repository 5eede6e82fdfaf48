//! Issue 16: toolport against its peers, side by side in one run: rust-mcp-filesystem 0.4.5
//! and the official Node filesystem server (`@modelcontextprotocol/server-filesystem`, pinned
//! in `benches/node`). Every server gets the same raw JSON-RPC client on its stdio pipes
//! (`common/stdio.rs`) and the same files in one root.
//!
//! Rows (the figure per server is the median over rounds; each round runs every server in an
//! order that rotates, so load on the machine falls on all of them alike, and drops each
//! server's binary from the page cache first, so every one is read from disk alike:
//! `proc::evict_from_page_cache` says why that changes its resident size):
//! - cold start: spawn → `initialize` result, p50 of [`STARTS`] spawns;
//! - idle RSS (`VmRSS`) and its private part (`RssAnon`: the rest is the pages of the binary
//!   and its libraries, shared and clean): after `initialize` and one `tools/list`;
//! - small read (a 1 KiB file): sequential p50, and calls/s with 8 requests in flight; the
//!   server's peak RSS (VmHWM) after them, before any large read;
//! - 1 MiB read (a 1 MiB text file): sequential calls/s of an unchanged file (toolport
//!   reuses the file's sha256 then: `read_file`'s digest cache), and of a file whose change
//!   time moves before every call (so toolport hashes every read); calls/s and peak RSS
//!   (VmHWM) of a fresh server after [`BIG_PIPELINED`] calls with 8 in flight; bytes on the
//!   wire per call.
//!
//! toolport is the release binary (`CARGO_BIN_EXE_toolport` or `TOOLPORT_BIN`) with
//! `--read-max-bytes` 4 MiB, so the 1 MiB file is one call, and `--payload text`: the form a
//! client whose model reads the text gets (Claude Desktop, Zed, …), the file once in the text
//! block and the metadata in the structured result, as the peers send it. (A client toolport
//! does not know gets both, twice the bytes: README, "What clients get".)
//!
//! Peers: rust-mcp-filesystem is `RUST_MCP_FILESYSTEM`, else `rust-mcp-filesystem` on PATH if
//! it says 0.4.5, else installed with `cargo install rust-mcp-filesystem --version 0.4.5
//! --locked --root target/peers`. The Node server is `benches/node/node_modules/…`, installed
//! with `npm ci` in `benches/node` when missing. A peer that cannot be found or installed is
//! skipped with the reason.
//!
//! Run with `cargo bench --bench peers` (`TOOLPORT_PEERS_ROUNDS` sets the rounds, default 3).
//! `TOOLPORT_PEERS_BASELINE=PATH` adds another toolport binary (say, a build of the previous
//! commit) as one more server, so a change is measured against what it replaces in one run.
//! `TOOLPORT_PEERS_TOOLPORT_ONLY=1` runs toolport (and the baseline) alone, without the peers.
//! `TOOLPORT_PEERS_WRITE=1` also writes the table into BENCHMARKS.md between the
//! `<!-- peers:begin -->` and `<!-- peers:end -->` markers. Under `cargo test --benches` it
//! runs toolport alone, a few calls of each row, as a smoke test; those numbers are not
//! measurements.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::args::bench_mode;
use crate::common::proc::{evict_from_page_cache, mem};
use crate::common::stats::median;
use crate::common::stdio::Server;
use crate::common::toolport_bin;

/// Default rounds.
const DEFAULT_ROUNDS: usize = 3;
/// Spawns per server per round for the cold start.
const STARTS: usize = 20;
/// Sequential small reads per round (the p50 is over these).
const SMALL_SEQUENTIAL: usize = 400;
/// Small reads per round with [`IN_FLIGHT`] outstanding.
const SMALL_PIPELINED: usize = 4000;
/// Sequential 1 MiB reads per round: about a third of a second per row and server, long
/// enough that a scheduling hiccup moves the rate by a few percent (60 moved it by up to 30 %).
const BIG_SEQUENTIAL: usize = 200;
/// 1 MiB reads with [`IN_FLIGHT`] outstanding, on a fresh server, before its peak RSS is read.
const BIG_PIPELINED: usize = 80;
/// Requests outstanding in the concurrent rows.
const IN_FLIGHT: usize = 8;
/// The small file's size.
const SMALL_BYTES: usize = 1024;
/// The large file's size.
const BIG_BYTES: usize = 1024 * 1024;
/// toolport's read limit for the run: above the large file, so it is one call.
const READ_MAX_BYTES: &str = "4194304";
/// How long the files rest between being written and the first server: toolport keeps a
/// file's digest only once its change time is a second old (`read_file`, `SETTLED`), and the
/// unchanged-file rows are about re-reads.
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_millis(1100);
/// The server under test's name in the table.
const TOOLPORT: &str = "toolport";
/// The name of the other toolport binary (`TOOLPORT_PEERS_BASELINE`) in the table.
const BASELINE: &str = "toolport baseline";
/// The peer versions this bench pins.
const RMF_VERSION: &str = "0.4.5";
/// Where the Node server's entry point is, under `benches/node`.
const NODE_SERVER: &str = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";

/// One server under test: how to start it and how it names its read tool.
struct Peer {
    name: String,
    /// A toolport binary (this build or the baseline): started without the caller's config.
    toolport: bool,
    program: PathBuf,
    args: Vec<String>,
    read_tool: &'static str,
}

impl Peer {
    fn command(&self, root: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).arg(root);
        if self.toolport {
            // Only the flags count: no config file or setting from the caller's environment.
            cmd.env("XDG_CONFIG_HOME", root.join(".no-config"))
                .env_remove("RUST_LOG");
            for (key, _) in std::env::vars() {
                if key.starts_with("TOOLPORT_") || key.starts_with("OTEL_") {
                    cmd.env_remove(key);
                }
            }
        }
        cmd
    }

    fn start(&self, root: &Path) -> (Server, f64) {
        let (server, ready) = Server::start(&self.name, self.command(root));
        (server, ready.as_secs_f64())
    }

    fn read_args(&self, path: &Path) -> Value {
        json!({"path": path})
    }
}

/// The figures of one server in one round.
#[derive(Debug, Default, Clone)]
struct Figures {
    cold_start_ms: f64,
    idle_rss_mb: f64,
    idle_anon_mb: f64,
    small_p50_ms: f64,
    small_calls_per_s: f64,
    small_peak_rss_mb: f64,
    big_calls_per_s: f64,
    big_changed_calls_per_s: f64,
    big_pipelined_calls_per_s: f64,
    big_peak_rss_mb: f64,
    big_wire_mb: f64,
}

fn measure(peer: &Peer, root: &Path, quick: bool) -> Figures {
    let scale = |n: usize| if quick { n.min(3) } else { n };
    let small = root.join("small.txt");
    let big = root.join("big.txt");
    let changing = root.join("changing.txt");
    let mut starts = Vec::new();
    for _ in 0..scale(STARTS) {
        let (server, ready) = peer.start(root);
        starts.push(ready * 1e3);
        drop(server);
    }
    let (mut server, _) = peer.start(root);
    server.request("tools/list", &json!({}));
    let idle = mem(server.pid()).unwrap();
    let small_args = peer.read_args(&small);
    let big_args = peer.read_args(&big);
    // One of each first (the large one after the small reads' peak below): a failure shows
    // here, and the first call's one-time work is not counted.
    server.timed_call(peer.read_tool, &small_args);
    let small_times: Vec<f64> = (0..scale(SMALL_SEQUENTIAL))
        .map(|_| server.timed_call(peer.read_tool, &small_args).0 * 1e3)
        .collect();
    let small_rate = server.pipelined(
        peer.read_tool,
        &small_args,
        scale(SMALL_PIPELINED),
        IN_FLIGHT,
    );
    // Before any large read: the peak of a server that has only read small files.
    let small_peak = mem(server.pid()).unwrap();
    server.timed_call(peer.read_tool, &big_args);
    let started = std::time::Instant::now();
    let mut wire = Vec::new();
    for _ in 0..scale(BIG_SEQUENTIAL) {
        wire.push(server.timed_call(peer.read_tool, &big_args).1 as f64);
    }
    let big_rate = scale(BIG_SEQUENTIAL) as f64 / started.elapsed().as_secs_f64();
    let changing_args = peer.read_args(&changing);
    let mode = std::fs::metadata(&changing).unwrap().permissions();
    let started = std::time::Instant::now();
    for _ in 0..scale(BIG_SEQUENTIAL) {
        // The same mode again: only the change time moves (the bytes stay).
        std::fs::set_permissions(&changing, mode.clone()).unwrap();
        server.timed_call(peer.read_tool, &changing_args);
    }
    let big_changed_rate = scale(BIG_SEQUENTIAL) as f64 / started.elapsed().as_secs_f64();
    drop(server);
    let (mut fresh, _) = peer.start(root);
    let big_pipelined_rate =
        fresh.pipelined(peer.read_tool, &big_args, scale(BIG_PIPELINED), IN_FLIGHT);
    let peak = mem(fresh.pid()).unwrap();
    Figures {
        cold_start_ms: median(&starts),
        idle_rss_mb: idle.rss as f64 / 1024.0,
        idle_anon_mb: idle.anon as f64 / 1024.0,
        small_p50_ms: median(&small_times),
        small_calls_per_s: small_rate,
        small_peak_rss_mb: small_peak.hwm as f64 / 1024.0,
        big_calls_per_s: big_rate,
        big_changed_calls_per_s: big_changed_rate,
        big_pipelined_calls_per_s: big_pipelined_rate,
        big_peak_rss_mb: peak.hwm as f64 / 1024.0,
        big_wire_mb: median(&wire) / 1e6,
    }
}

/// The root: a 1 KiB file and two 1 MiB files of text lines, rested for [`SETTLE_WAIT`].
fn make_root(dir: &Path) {
    let line = "the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n";
    let text = |bytes: usize| {
        let mut s = line.repeat(bytes / line.len() + 1);
        s.truncate(bytes - 1);
        s.push('\n');
        s
    };
    std::fs::write(dir.join("small.txt"), text(SMALL_BYTES)).unwrap();
    std::fs::write(dir.join("big.txt"), text(BIG_BYTES)).unwrap();
    std::fs::write(dir.join("changing.txt"), text(BIG_BYTES)).unwrap();
    std::thread::sleep(SETTLE_WAIT);
}

fn toolport(name: &str, program: PathBuf) -> Peer {
    Peer {
        name: name.into(),
        toolport: true,
        program,
        args: vec![
            "--read-max-bytes".into(),
            READ_MAX_BYTES.into(),
            "--payload".into(),
            "text".into(),
            "--root".into(),
        ],
        read_tool: "read_file",
    }
}

/// rust-mcp-filesystem 0.4.5: found, or installed; `Err` says why not.
fn rust_mcp_filesystem() -> Result<Peer, String> {
    let says_version = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(RMF_VERSION))
    };
    let peer = |program: PathBuf| Peer {
        name: format!("rust-mcp-filesystem {RMF_VERSION}"),
        toolport: false,
        program,
        args: Vec::new(),
        read_tool: "read_text_file",
    };
    if let Some(program) = std::env::var_os("RUST_MCP_FILESYSTEM") {
        return Ok(peer(program.into()));
    }
    if says_version(Path::new("rust-mcp-filesystem")) {
        return Ok(peer("rust-mcp-filesystem".into()));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peers");
    let installed = root.join("bin/rust-mcp-filesystem");
    if !says_version(&installed) {
        println!(
            "installing rust-mcp-filesystem {RMF_VERSION} into {}",
            root.display()
        );
        let status = Command::new(env!("CARGO"))
            .args([
                "install",
                "--quiet",
                "--locked",
                "rust-mcp-filesystem",
                "--version",
            ])
            .arg(RMF_VERSION)
            .arg("--root")
            .arg(&root)
            .status()
            .map_err(|e| format!("cargo install could not run: {e}"))?;
        if !status.success() || !says_version(&installed) {
            return Err(format!(
                "cargo install rust-mcp-filesystem {RMF_VERSION} failed"
            ));
        }
    }
    Ok(peer(installed))
}

/// The official Node filesystem server, pinned in benches/node; `Err` says why not.
fn node_server() -> Result<Peer, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node");
    let entry = dir.join(NODE_SERVER);
    if !entry.exists() {
        println!("installing the Node filesystem server: npm ci in benches/node");
        let status = Command::new("npm")
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(&dir)
            .status()
            .map_err(|e| format!("npm could not run: {e}"))?;
        if !status.success() || !entry.exists() {
            return Err("npm ci in benches/node failed".into());
        }
    }
    let package: Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("node_modules/@modelcontextprotocol/server-filesystem/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let node = std::env::var_os("TOOLPORT_BENCH_NODE").unwrap_or_else(|| "node".into());
    Ok(Peer {
        name: format!(
            "Node server-filesystem {}",
            package["version"].as_str().unwrap_or("?")
        ),
        toolport: false,
        program: node.into(),
        args: vec![entry.display().to_string()],
        read_tool: "read_text_file",
    })
}

/// One row of the table: its label, how to read it from figures, whether more is better,
/// and its unit's format.
struct Row {
    label: &'static str,
    value: fn(&Figures) -> f64,
    higher_is_better: bool,
    decimals: usize,
}

const ROWS: &[Row] = &[
    Row {
        label: "cold start (spawn → initialize result), p50 ms",
        value: |f| f.cold_start_ms,
        higher_is_better: false,
        decimals: 2,
    },
    Row {
        label: "idle RSS, MB",
        value: |f| f.idle_rss_mb,
        higher_is_better: false,
        decimals: 1,
    },
    Row {
        label: "idle private memory (RssAnon), MB",
        value: |f| f.idle_anon_mb,
        higher_is_better: false,
        decimals: 1,
    },
    Row {
        label: "small read (1 KiB), sequential p50 ms",
        value: |f| f.small_p50_ms,
        higher_is_better: false,
        decimals: 3,
    },
    Row {
        label: "small read, 8 in flight, calls/s",
        value: |f| f.small_calls_per_s,
        higher_is_better: true,
        decimals: 0,
    },
    Row {
        label: "small reads (sequential, then 8 in flight): peak RSS, MB",
        value: |f| f.small_peak_rss_mb,
        higher_is_better: false,
        decimals: 1,
    },
    Row {
        label: "1 MiB read of an unchanged file, sequential, calls/s",
        value: |f| f.big_calls_per_s,
        higher_is_better: true,
        decimals: 0,
    },
    Row {
        label: "1 MiB read of a file changed before each call, sequential, calls/s",
        value: |f| f.big_changed_calls_per_s,
        higher_is_better: true,
        decimals: 0,
    },
    Row {
        label: "1 MiB read, 8 in flight (a fresh server), calls/s",
        value: |f| f.big_pipelined_calls_per_s,
        higher_is_better: true,
        decimals: 0,
    },
    Row {
        label: "1 MiB read, 8 in flight: peak RSS, MB",
        value: |f| f.big_peak_rss_mb,
        higher_is_better: false,
        decimals: 1,
    },
    Row {
        label: "bytes on the wire per 1 MiB read, MB",
        value: |f| f.big_wire_mb,
        higher_is_better: false,
        decimals: 2,
    },
];

/// The table: one column per server, then toolport's advantage over each peer (above 1 is
/// better for toolport, whichever way the row counts).
fn table(peers: &[Peer], results: &[Vec<Figures>]) -> String {
    let mut out = String::from("| row |");
    for peer in peers {
        out.push_str(&format!(" {} |", peer.name));
    }
    for peer in &peers[1..] {
        out.push_str(&format!(" toolport vs {} |", peer.name));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(peers.len() * 2 - 1));
    out.push('\n');
    for row in ROWS {
        let medians: Vec<f64> = results
            .iter()
            .map(|rounds| median(&rounds.iter().map(row.value).collect::<Vec<_>>()))
            .collect();
        out.push_str(&format!("| {} |", row.label));
        for m in &medians {
            out.push_str(&format!(" {:.*} |", row.decimals, m));
        }
        for m in &medians[1..] {
            let advantage = if row.higher_is_better {
                medians[0] / m
            } else {
                m / medians[0]
            };
            out.push_str(&format!(" {advantage:.2}× |"));
        }
        out.push('\n');
    }
    out
}

fn main() {
    let quick = !bench_mode();
    let rounds = if quick {
        1
    } else {
        std::env::var("TOOLPORT_PEERS_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(DEFAULT_ROUNDS)
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    make_root(&root);
    let mut peers = vec![toolport(TOOLPORT, toolport_bin())];
    if !quick {
        if let Some(baseline) = std::env::var_os("TOOLPORT_PEERS_BASELINE") {
            peers.push(toolport(BASELINE, baseline.into()));
        }
        if std::env::var_os("TOOLPORT_PEERS_TOOLPORT_ONLY").is_some() {
            // A before/after run of toolport alone: no peer is found, installed or run.
            println!("peers skipped: TOOLPORT_PEERS_TOOLPORT_ONLY is set");
        } else {
            for found in [rust_mcp_filesystem(), node_server()] {
                match found {
                    Ok(peer) => peers.push(peer),
                    Err(why) => println!("peer skipped: {why}"),
                }
            }
        }
    }
    let mut results = vec![Vec::new(); peers.len()];
    for round in 0..rounds {
        for k in 0..peers.len() {
            let i = (round + k) % peers.len();
            // Every binary read from disk at its round's first start: equal page-cache states.
            if let Err(e) = evict_from_page_cache(&peers[i].program) {
                println!("{}: its pages stay cached ({e})", peers[i].name);
            }
            let figures = measure(&peers[i], &root, quick);
            println!("round {}: {}: {figures:?}", round + 1, peers[i].name);
            results[i].push(figures);
        }
    }
    if quick {
        println!("smoke run (not a measurement): every row ran for toolport");
        return;
    }
    let machine = format!(
        "{} rounds, {} logical CPUs, {}",
        rounds,
        std::thread::available_parallelism().map_or(0, usize::from),
        std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    );
    let table = table(&peers, &results);
    println!("\n{machine}\n\n{table}");
    if std::env::var_os("TOOLPORT_PEERS_WRITE").is_some() {
        write_section(&format!("Run of {machine}:\n\n{table}"));
    }
}

/// Replace the text between the markers in BENCHMARKS.md.
fn write_section(text: &str) {
    const BEGIN: &str = "<!-- peers:begin -->";
    const END: &str = "<!-- peers:end -->";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        println!("BENCHMARKS.md has no {BEGIN} … {END} markers: not written");
        return;
    };
    let updated = format!("{}{BEGIN}\n{text}{}", &doc[..start], &doc[end..]);
    std::fs::write(&path, updated).unwrap();
    println!("written into BENCHMARKS.md");
}
