//! `edit_file` of one line in a 10 MB file (issue 14): the p50 of a whole call over stdio,
//! through the release binary (`CARGO_BIN_EXE_toolport` or `TOOLPORT_BIN`).
//!
//! The file is 10 MB of 50-byte lines; each call replaces one line in its middle, flipping it
//! between two values so every call matches exactly once and really writes. A call reads the
//! file, hashes it, decodes it, applies the edit, diffs old and new (`similar`, line-wise),
//! encodes, writes a temporary file, fsyncs it and renames it over the file. The dry run
//! (the same call with `dry_run`, nothing written) shows what the write and fsync cost.
//!
//! The client is a raw JSON-RPC writer/reader on the child's pipes, one call at a time.
//! Run with `cargo bench --bench edit`. Under `cargo test --benches` it makes a few calls
//! against the debug binary as a smoke test; those numbers are not measurements.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use crate::common::args::bench_mode;
use crate::common::stats::{median, quantile};
use crate::common::toolport_bin;

/// The file's size, as the issue asks.
const FILE_BYTES: usize = 10 * 1024 * 1024;
/// Bytes per line (49 characters and a newline), a typical source line.
const LINE_BYTES: usize = 50;

struct Server {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn request(&mut self, rest: &str) -> String {
        self.next_id += 1;
        let line = format!(r#"{{"jsonrpc":"2.0","id":{},{rest}}}"#, self.next_id) + "\n";
        self.stdin.write_all(line.as_bytes()).unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "closed stdout"
            );
            if line.contains(&format!(r#""id":{}"#, self.next_id)) && !line.contains("\"method\"") {
                return line;
            }
        }
    }

    /// One edit_file call flipping the middle line; its latency in ms.
    fn edit(&mut self, round: usize, dry_run: bool) -> f64 {
        let (old, new) = if round.is_multiple_of(2) {
            ("value=A", "value=B")
        } else {
            ("value=B", "value=A")
        };
        let request = format!(
            r#""method":"tools/call","params":{{"name":"edit_file","arguments":{{"path":"big.txt","dry_run":{dry_run},"edits":[{{"old_text":"middle line {old}","new_text":"middle line {new}"}}]}}}}"#
        );
        let started = Instant::now();
        let answer = self.request(&request);
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        assert!(
            answer.contains("\"isError\":false") || !answer.contains("isError"),
            "{answer}"
        );
        elapsed
    }
}

fn main() {
    let bench = bench_mode();
    let (calls, warm_up) = if bench { (60, 5) } else { (3, 1) };
    let root = tempfile::tempdir().unwrap();
    let lines = FILE_BYTES / LINE_BYTES;
    let mut text = String::with_capacity(FILE_BYTES);
    for i in 0..lines {
        if i == lines / 2 {
            text.push_str(&format!("{:<49}\n", "middle line value=A"));
        } else {
            text.push_str(&format!("{:<49}\n", format!("line {i} of the big file")));
        }
    }
    std::fs::write(root.path().join("big.txt"), &text).unwrap();
    let mut child = Command::new(toolport_bin())
        .arg("--root")
        .arg(root.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start toolport");
    let mut server = Server {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        next_id: 0,
    };
    server.request(
        r#""method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#,
    );
    server
        .stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .unwrap();

    let mut round = 0;
    for _ in 0..warm_up {
        server.edit(round, false);
        round += 1;
    }
    let mut writes = Vec::with_capacity(calls);
    let mut dry = Vec::with_capacity(calls);
    for _ in 0..calls {
        writes.push(server.edit(round, false));
        round += 1;
        // The dry run edits the current content: the value the last write left.
        dry.push(server.edit(round, true));
    }
    println!(
        "\nedit: edit_file of one line in a {} MB file ({lines} lines), {calls} calls each\n",
        FILE_BYTES / (1024 * 1024)
    );
    println!("| call | p50 ms | p90 ms |");
    println!("|---|---|---|");
    for (name, samples) in [
        ("edit_file (written, fsynced)", &writes),
        ("edit_file dry_run", &dry),
    ] {
        println!(
            "| {name} | {:.1} | {:.1} |",
            median(samples),
            quantile(samples, 0.9)
        );
    }
    drop(server);
    let _ = child.wait();
}
