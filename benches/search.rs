//! Issue 14: `grep` through MCP across a large tree, against ripgrep (`rg --json`) and
//! rust-mcp-filesystem's `search_files_content`, in one run. Targets: at most 1.5× rg's time,
//! at least 3× faster than rust-mcp-filesystem.
//!
//! The tree is the cargo registry sources (`~/.cargo/registry/src`, hundreds of MB), or
//! `TOOLPORT_SEARCH_TREE`. toolport (the release binary, `CARGO_BIN_EXE_toolport` or
//! `TOOLPORT_BIN`) serves it as its root over stdio, with `--read-max-bytes` at its maximum
//! (64 MiB) and `max_results` at 100000, so the call returns every match (checked:
//! `truncated` must be false) and does the same work as rg, which prints every match.
//! rg runs as `rg --json --no-require-git [-F] -e PATTERN TREE` (toolport honours .gitignore
//! outside git repositories too; both skip hidden and binary files and follow no links); its
//! time includes reading all of its output. rust-mcp-filesystem (when `rust-mcp-filesystem` is
//! on PATH; `cargo install rust-mcp-filesystem --version 0.4.5`) gets
//! `search_files_content {path: TREE, pattern: "*", query, is_regex}`: it always matches
//! case-insensitively and honours no ignore file, so its match count can differ. It cannot
//! search the whole registry (it runs out of file descriptors, see [`RMF_SUBTREE`]), so the
//! three are also compared on one large crate of it.
//!
//! The client is a raw JSON-RPC writer/reader on each server's pipes (`common/stdio.rs`, no
//! SDK; toolport sends the matches in the structured result only, `--payload structured`); a call's time
//! is from writing the request to reading the whole answer. Each round runs every query
//! against every tool in an order that rotates each round; the figure per tool is the median
//! over rounds, and a ratio is the median of the per-round ratios (paired).
//!
//! Run with `cargo bench --bench search` (`TOOLPORT_SEARCH_ROUNDS` sets the rounds, default
//! 5). Under `cargo test --benches` it searches a small generated tree once as a smoke test;
//! those numbers are not measurements.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;

use crate::common::args::bench_mode;
use crate::common::stats::median;
use crate::common::stdio::Server;
use crate::common::toolport_bin;

/// Default rounds: each runs every query on every tool once.
const DEFAULT_ROUNDS: usize = 5;
/// toolport's largest `read_max_bytes`, so the byte budget does not cut the result.
const READ_MAX_BYTES: &str = "67108864";
/// The crate of the registry that rust-mcp-filesystem searches: it keeps every file of a
/// search open until the end (0.4.5), so the whole registry (~28,000 files) fails with "Too
/// many open files" under a 20,000 descriptor limit; this crate is 114 MB in 702 files.
const RMF_SUBTREE: &str = "windows-0.62.2";
/// `grep`'s largest `max_results`.
const MAX_RESULTS: u64 = 100_000;

/// One query, as each tool spells it.
struct Query {
    name: &'static str,
    pattern: &'static str,
    literal: bool,
}

const QUERIES: &[Query] = &[
    Query {
        name: "literal `unsafe impl`",
        pattern: "unsafe impl",
        literal: true,
    },
    Query {
        name: r"regex `pub\s+struct\s+\w+Options`",
        pattern: r"pub\s+struct\s+\w+Options",
        literal: false,
    },
];

/// The tools compared.
enum Tool {
    Toolport(Server),
    Ripgrep,
    RustMcpFilesystem(Server),
}

impl Tool {
    fn name(&self) -> &'static str {
        match self {
            Self::Toolport(_) => "toolport grep (MCP)",
            Self::Ripgrep => "rg --json",
            Self::RustMcpFilesystem(_) => "rust-mcp-filesystem search_files_content (MCP)",
        }
    }

    /// Run `query` over `tree` once: seconds, and the number of matching lines.
    fn run(&mut self, tree: &Path, query: &Query) -> (f64, usize) {
        let started = Instant::now();
        let matches = match self {
            Self::Toolport(server) => {
                let result = server.call(
                    "grep",
                    &json!({
                        "pattern": query.pattern,
                        "path": tree,
                        "fixed_strings": query.literal,
                        "max_results": MAX_RESULTS,
                    }),
                );
                let structured = &result["structuredContent"];
                assert_eq!(
                    structured["truncated"],
                    json!(false),
                    "the call must return every match: {}",
                    result["content"][0]["text"]
                );
                structured["matches"].as_array().unwrap().len()
            }
            Self::Ripgrep => {
                let mut cmd = Command::new("rg");
                cmd.args(["--json", "--no-require-git"]);
                if query.literal {
                    cmd.arg("-F");
                }
                cmd.arg("-e").arg(query.pattern).arg(tree);
                let mut child = cmd
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let out = BufReader::new(child.stdout.take().unwrap());
                let count = out
                    .split(b'\n')
                    .filter(|line| {
                        line.as_ref()
                            .is_ok_and(|l| l.starts_with(br#"{"type":"match""#))
                    })
                    .count();
                child.wait().unwrap();
                count
            }
            Self::RustMcpFilesystem(server) => {
                let result = server.call(
                    "search_files_content",
                    &json!({
                        "path": tree,
                        "pattern": "*",
                        "query": query.pattern,
                        "is_regex": !query.literal,
                    }),
                );
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                // "  LINE:COL: text" per match, under a line per file.
                text.lines()
                    .filter(|l| {
                        l.strip_prefix("  ")
                            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                    })
                    .count()
            }
        };
        (started.elapsed().as_secs_f64(), matches)
    }
}

fn on_path(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A small tree for the smoke test: a few hundred files, some matching.
fn smoke_tree(dir: &Path) {
    for i in 0..300 {
        let sub = dir.join(format!("crate{}", i % 10));
        std::fs::create_dir_all(&sub).unwrap();
        let body: String = (0..50)
            .map(|j| {
                if j % 17 == 0 {
                    format!("unsafe impl Send for T{j} {{}}\nfn new_{j}() {{}}\n")
                } else {
                    format!("let x{j} = {j};\n")
                }
            })
            .collect();
        std::fs::write(sub.join(format!("f{i}.rs")), body).unwrap();
    }
}

/// A tree and the tools compared on it (indices into the tool list; toolport is 0).
struct Set {
    tree: PathBuf,
    tools: Vec<usize>,
}

/// The crate directory `name` under the registry's index directories, if there is one.
fn registry_crate(tree: &Path, name: &str) -> Option<PathBuf> {
    std::fs::read_dir(tree)
        .ok()?
        .filter_map(Result::ok)
        .map(|index| index.path().join(name))
        .find(|path| path.is_dir())
}

fn main() {
    let bench = bench_mode();
    let smoke_dir = tempfile::tempdir().unwrap();
    let tree: PathBuf = if bench {
        std::env::var_os("TOOLPORT_SEARCH_TREE")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/registry/src"))
            })
            .unwrap()
    } else {
        smoke_tree(smoke_dir.path());
        smoke_dir.path().to_path_buf()
    };
    let Ok(tree) = std::fs::canonicalize(&tree) else {
        println!(
            "search: skipped, no tree at {} (set TOOLPORT_SEARCH_TREE)",
            tree.display()
        );
        return;
    };
    let rounds = if bench {
        std::env::var("TOOLPORT_SEARCH_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(DEFAULT_ROUNDS)
    } else {
        1
    };

    let config_home = tempfile::tempdir().unwrap();
    let mut toolport = Command::new(toolport_bin());
    toolport
        .arg("--root")
        .arg(&tree)
        .args(["--read-max-bytes", READ_MAX_BYTES])
        // The matches are counted from the structured result.
        .args(["--payload", "structured"])
        .env("XDG_CONFIG_HOME", config_home.path())
        .env_remove("RUST_LOG");
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLPORT_") || key.starts_with("OTEL_") {
            toolport.env_remove(key);
        }
    }
    let mut tools = vec![Tool::Toolport(Server::start("toolport", toolport).0)];
    let mut full = Set {
        tree: tree.clone(),
        tools: vec![0],
    };
    if on_path("rg") {
        tools.push(Tool::Ripgrep);
        full.tools.push(tools.len() - 1);
    } else {
        println!("search: rg is not on PATH, so ripgrep is left out (cargo install ripgrep)");
    }
    let mut sets = vec![full];
    // rust-mcp-filesystem has no --version; `--help` answers when it is installed.
    let rmf_installed = Command::new("rust-mcp-filesystem")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let subtree = if bench {
        registry_crate(&tree, RMF_SUBTREE)
    } else {
        Some(tree.clone())
    };
    match (rmf_installed, subtree) {
        (true, Some(subtree)) => {
            let mut cmd = Command::new("rust-mcp-filesystem");
            cmd.arg(&subtree);
            tools.push(Tool::RustMcpFilesystem(
                Server::start("rust-mcp-filesystem", cmd).0,
            ));
            let mut set = Set {
                tree: subtree,
                tools: vec![0],
            };
            if matches!(tools.get(1), Some(Tool::Ripgrep)) {
                set.tools.push(1);
            }
            set.tools.push(tools.len() - 1);
            sets.push(set);
        }
        (false, _) => println!(
            "search: rust-mcp-filesystem is not on PATH, so it is left out (cargo install rust-mcp-filesystem --version 0.4.5)"
        ),
        (true, None) => println!(
            "search: no {RMF_SUBTREE} crate under {}, so rust-mcp-filesystem is left out",
            tree.display()
        ),
    }

    // times[set][query][tool] = one time per round; counts from the last run.
    let mut times = vec![vec![vec![Vec::new(); tools.len()]; QUERIES.len()]; sets.len()];
    let mut counts = vec![vec![vec![0usize; tools.len()]; QUERIES.len()]; sets.len()];
    // Warm-up: one run of each, which also brings the trees into the page cache.
    for set in &sets {
        for query in QUERIES {
            for &t in &set.tools {
                tools[t].run(&set.tree, query);
            }
        }
    }
    for round in 0..rounds {
        for (s, set) in sets.iter().enumerate() {
            for (q, query) in QUERIES.iter().enumerate() {
                let n = set.tools.len();
                for i in 0..n {
                    let t = set.tools[(round + i) % n];
                    let (secs, matches) = tools[t].run(&set.tree, query);
                    times[s][q][t].push(secs);
                    counts[s][q][t] = matches;
                }
            }
        }
    }

    println!("\nsearch: grep, {rounds} rounds, interleaved; medians\n");
    println!("| tree | query | tool | matching lines | median s | ratio (paired) |");
    println!("|---|---|---|---|---|---|");
    for (s, set) in sets.iter().enumerate() {
        for (q, query) in QUERIES.iter().enumerate() {
            let ours = &times[s][q][0];
            for &t in &set.tools {
                let theirs = &times[s][q][t];
                let ratio = match &tools[t] {
                    Tool::Toolport(_) => "-".to_owned(),
                    Tool::Ripgrep => {
                        let r: Vec<f64> = ours.iter().zip(theirs).map(|(a, b)| a / b).collect();
                        format!("toolport / rg = {:.2}× (target ≤ 1.5×)", median(&r))
                    }
                    Tool::RustMcpFilesystem(_) => {
                        let r: Vec<f64> = theirs.iter().zip(ours).map(|(a, b)| a / b).collect();
                        format!(
                            "rust-mcp-filesystem / toolport = {:.1}× (target ≥ 3×)",
                            median(&r)
                        )
                    }
                };
                println!(
                    "| {} | {} | {} | {} | {:.3} | {ratio} |",
                    set.tree.display(),
                    query.name,
                    tools[t].name(),
                    counts[s][q][t],
                    median(theirs)
                );
            }
        }
    }
}
