//! Issue 32: the overhead of a call proxied through toolport to an upstream MCP server, against
//! calling that server directly, side by side in one run (target: ≤ 1.2× its latency at one
//! client).
//!
//! The same raw JSON-RPC client (`common/stdio.rs`: one line per message, a call timed from
//! writing the request to reading the whole answer) drives, in each pair:
//! - **direct**: the upstream server over its own stdio;
//! - **proxied**: toolport (the release binary: `CARGO_BIN_EXE_toolport` or `TOOLPORT_BIN`)
//!   over stdio with that server as its one `[[upstreams]]` entry, calling the same tool under
//!   its prefixed name.
//!
//! Pairs:
//! - `everything`: `echo` of the official `@modelcontextprotocol/server-everything` (node),
//!   pinned in `.ci/upstreams` (`npm ci` there; node on PATH). Skipped with the reason when it
//!   is not installed.
//! - `toolport`: `path_info` of another toolport (always built), so the figure does not
//!   depend on node;
//! - `toolport-exec`: `execute_command` of `true` on another toolport: a call that does some
//!   work (a process started and reaped, about a millisecond), as real upstream tools do (an
//!   API request, a query), where the proxy's fixed cost is a share of the call.
//!
//! Each round calls direct then proxied, then proxied then direct (so drift in the machine's
//! load falls on both alike), [`ROUNDS`] rounds after [`WARMUP`] calls of each; the figures
//! are the medians and p90s of the per-call times, and the ratio of the medians.
//!
//! Run with `cargo bench --bench upstreams`. Under `cargo test --benches` it makes a few
//! calls of each as a smoke test; those numbers are not measurements.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::args::bench_mode;
use crate::common::stats::{median, quantile};
use crate::common::stdio::Server;
use crate::common::toolport_bin;

/// Calls of each path before measuring (the first of a proxied path also waits for the
/// upstream to start).
const WARMUP: usize = 50;

/// Measured rounds; each calls both paths twice (direct, proxied, proxied, direct).
const ROUNDS: usize = 1000;

/// One upstream and the call both paths make.
struct Pair {
    name: &'static str,
    /// The upstream's program and arguments.
    program: PathBuf,
    args: Vec<String>,
    /// Its tool and the arguments of the call.
    tool: &'static str,
    arguments: Value,
}

fn main() {
    let work = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(work.path()).unwrap();
    std::fs::write(root.join("a.txt"), "x\n").unwrap();
    let mut pairs = vec![Pair {
        name: "toolport",
        program: toolport_bin(),
        args: vec![
            "--root".into(),
            root.display().to_string(),
            "--config".into(),
            empty_config(&root).display().to_string(),
        ],
        tool: "path_info",
        arguments: json!({"path": "a.txt"}),
    }];
    pairs.push(Pair {
        name: "toolport-exec",
        program: toolport_bin(),
        args: pairs[0].args.clone(),
        tool: "execute_command",
        arguments: json!({"command": "true"}),
    });
    match everything() {
        Ok((node, script)) => pairs.insert(
            0,
            Pair {
                name: "everything",
                program: node,
                args: vec![script.display().to_string(), "stdio".into()],
                tool: "echo",
                arguments: json!({"message": "hi"}),
            },
        ),
        Err(why) => println!("everything: skipped ({why})"),
    }
    let (warmup, rounds) = if bench_mode() {
        (WARMUP, ROUNDS)
    } else {
        (2, 3)
    };
    println!("upstreams: {rounds} rounds (direct and proxied twice each), medians and p90 in µs");
    println!(
        "| upstream | tool | direct p50 | proxied p50 | added p50 | ratio p50 | direct p90 | proxied p90 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for pair in &pairs {
        measure(pair, &root, warmup, rounds);
    }
}

/// Time `rounds` rounds of `pair`, both paths, and print its row.
fn measure(pair: &Pair, root: &Path, warmup: usize, rounds: usize) {
    let mut direct_cmd = Command::new(&pair.program);
    direct_cmd.args(&pair.args).current_dir(root);
    isolate(&mut direct_cmd, root);
    let (mut direct, _) = Server::start(&format!("{} (direct)", pair.name), direct_cmd);

    let config = root.join(format!("{}-proxy.toml", pair.name));
    let args: Vec<String> = pair.args.iter().map(|a| format!("'{a}'")).collect();
    std::fs::write(
        &config,
        format!(
            "[[upstreams]]\nname = \"up\"\ncommand = '{}'\nargs = [{}]\n",
            pair.program.display(),
            args.join(", ")
        ),
    )
    .unwrap();
    let mut proxy_cmd = Command::new(toolport_bin());
    proxy_cmd
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(&config)
        .current_dir(root);
    isolate(&mut proxy_cmd, root);
    let (mut proxied, _) = Server::start(&format!("{} (proxied)", pair.name), proxy_cmd);
    let proxied_tool = format!("up__{}", pair.tool);

    for _ in 0..warmup {
        direct.timed_call(pair.tool, &pair.arguments);
        proxied.timed_call(&proxied_tool, &pair.arguments);
    }
    let mut direct_times = Vec::with_capacity(2 * rounds);
    let mut proxied_times = Vec::with_capacity(2 * rounds);
    for _ in 0..rounds {
        direct_times.push(direct.timed_call(pair.tool, &pair.arguments).0);
        proxied_times.push(proxied.timed_call(&proxied_tool, &pair.arguments).0);
        proxied_times.push(proxied.timed_call(&proxied_tool, &pair.arguments).0);
        direct_times.push(direct.timed_call(pair.tool, &pair.arguments).0);
    }
    let us = |seconds: f64| seconds * 1e6;
    let (d50, p50) = (median(&direct_times), median(&proxied_times));
    println!(
        "| {} | {} | {:.0} | {:.0} | {:.0} | {:.2}× | {:.0} | {:.0} |",
        pair.name,
        pair.tool,
        us(d50),
        us(p50),
        us(p50 - d50),
        p50 / d50,
        us(quantile(&direct_times, 0.9)),
        us(quantile(&proxied_times, 0.9)),
    );
    let _ = direct.child.kill();
    let _ = proxied.child.kill();
    let _ = direct.child.wait();
    let _ = proxied.child.wait();
}

/// No developer config, no TOOLPORT_* settings, logs quiet.
fn isolate(cmd: &mut Command, root: &Path) {
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLPORT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("XDG_CONFIG_HOME", root.join(".no-config"))
        .env("RUST_LOG", "error");
}

/// An empty config file (so the inner toolport reads no default one).
fn empty_config(root: &Path) -> PathBuf {
    let path = root.join("empty.toml");
    std::fs::write(&path, "").unwrap();
    path
}

/// node on PATH and the pinned server-everything, or why not.
fn everything() -> Result<(PathBuf, PathBuf), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.is_file() {
        return Err("not installed: npm ci in .ci/upstreams".into());
    }
    let node = std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("node"))
                .find(|n| n.is_file())
        })
        .ok_or("no node on PATH")?;
    Ok((node, script))
}
