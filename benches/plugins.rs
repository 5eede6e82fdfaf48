//! Benchmarks of plugins (issue 11), for its three targets, all in one
//! `cargo bench --bench plugins` run:
//!
//! 1. **Reloading 200 manifests** (target < 50 ms), measured two ways:
//!    - in process (criterion group `reload`): `toolport::build(&config)` with a plugin
//!      directory of 200 generated manifests against the same config without plugins. The
//!      difference is discovery + parse + check + register (schema compilation) of 200
//!      manifests: what a reload does, without the process, the signal or the client.
//!      `reload_pieces/*` times parts of that work with the crate's own dependencies (reading
//!      the files, parsing the TOML, compiling the input schemas) to show where it goes; an
//!      interleaved comparison (both builds in every round) gives the paired difference;
//!    - end to end (printed, section `sighup`): the real binary (`CARGO_BIN_EXE_toolport`, or
//!      `TOOLPORT_BIN`) is started over stdio with `--plugins DIR`, an rmcp client connects,
//!      one manifest is changed so the listing changes, and the time from `kill(pid, SIGHUP)`
//!      to the client's `notifications/tools/list_changed` is measured. The server also
//!      watches its plugin directories (a 250 ms debounce), so the changed manifest is a
//!      symlink in the plugin directory whose target, outside it, is rewritten: the watch sees
//!      no event and only the signal triggers the reload. Each round starts a fresh server,
//!      with 200 manifests and, as the fixed-cost baseline, with 1: after its first reload a
//!      server keeps reloading on its own (the watch sees the reload's own opens of the
//!      manifests; `git show a29830c:BENCHMARKS.md`, "The idle reload loop"), and those
//!      reloads would race the measured one. After the rounds, one server's CPU time and
//!      `plugins reloaded` log lines are watched while it idles, before and after a SIGHUP,
//!      which shows that loop.
//! 2. **A plugin tool call within 1.1× of `execute_command` with the same argv** (criterion
//!    group `plugin_call`, then an interleaved comparison that is the judged figure): a
//!    manifest declares `plugin_echo` (`echo {text}`) and `plugin_true` (`true`), and each is
//!    called next to `execute_command` with `{"command":"echo","args":["hi"]}` /
//!    `{"command":"true"}`, through `ToolRegistry::execute` and through the real MCP handler
//!    (`ToolportServer` over an in-memory pipe, as in `benches/exec.rs`).
//! 3. **`tools/list` with 200 plugin tools** (criterion group `tools_list`, then an
//!    interleaved comparison for p50/p90): a `tools/list` round trip through the in-process MCP
//!    handler serving the 5 built-ins plus 200 plugin tools, against the built-ins alone.
//!
//! `main` first does what the server binary does before it runs commands
//! (`tools::exec::prepare_host`), as `benches/exec.rs` does.
//!
//! Run with `cargo bench --bench plugins`; a filter selects criterion benchmarks as usual and
//! also the printed sections (`reload`, `plugin_call`, `tools_list`, `sighup`): for example
//! `cargo bench --bench plugins -- sighup` runs only the end-to-end reload. Under
//! `cargo test --benches` every part runs once or twice as a smoke test (against the debug
//! binary); its numbers are not measurements. See BENCHMARKS.md for results.

// A benchmark is not library code: a failed setup step should stop the run loudly, which is
// exactly what unwrap/expect do. The crate-wide deny of these lints is for src/.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The interleaved comparisons and the end-to-end reload are not criterion benchmarks:
// printing their results to stdout is how they report them.
#![allow(clippy::print_stdout)]

mod common;

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use criterion::{BatchSize, Criterion};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{ClientCacheConfig, NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use toolport::config::{Cli, Config, PluginSettings};
use toolport::server::Shared;
use toolport_tools::{JsonObject, ToolContext, ToolRegistry};

use crate::common::args::{bench_mode, wants};
use crate::common::config::config_file;
use crate::common::object;
use crate::common::proc::cpu_secs;
use crate::common::stats::{median, quantile};

/// How many manifests the reload and listing benchmarks generate (the issue's figure).
const MANIFESTS: usize = 200;

/// The built-in tools every server has (read_file, list_directory, path_info,
/// execute_command, web_search).
const BUILTINS: usize = 5;

/// Rounds of each interleaved comparison (every round runs every path once).
const INTERLEAVED_ROUNDS: usize = 400;

/// Rounds of the in-process reload comparison (a round builds twice, some tens of ms).
const BUILD_ROUNDS: usize = 100;

/// Rounds of the end-to-end SIGHUP measurement, per plugin directory.
const SIGHUP_ROUNDS: usize = 30;

/// How long the end-to-end section watches an idle server, before and after a SIGHUP.
const IDLE_WINDOW: Duration = Duration::from_secs(3);

/// Every await in this file is bounded: a hang fails the run instead of stalling it.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Await `f`, panicking if it takes longer than [`TIMEOUT`].
async fn within<F: Future>(f: F) -> F::Output {
    match tokio::time::timeout(TIMEOUT, f).await {
        Ok(out) => out,
        Err(_) => panic!("timed out after {TIMEOUT:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// Fixtures.

/// A generated manifest: one `[[tools]]` table shaped like the example plugins (title,
/// description of a few hundred characters, category, tags, annotations, example, an input
/// schema of 2–4 parameters with types, defaults and bounds, and a `[tools.run]` with several
/// templates, a cwd and path parameters). Four shapes, chosen by `i % 4`; `revision` goes
/// into the description, so changing it changes the listing.
fn manifest(i: usize, revision: usize) -> String {
    let common = |name: &str, title: &str, what: &str| {
        format!(
            r#"# Generated by benches/plugins.rs: manifest {i} of {MANIFESTS}.

[[tools]]
name = "{name}_{i:03}"
title = "{title} {i}"
description = "{what} Paths are relative to the first workspace root or absolute inside a root. Read-only; never uses the network. Times out after 30 seconds. (Benchmark tool {i}, revision {revision}.)"
category = "bench"
tags = ["bench", "read", "generated"]
annotations = {{ read_only = true, destructive = false, idempotent = true, open_world = false }}
"#
        )
    };
    match i % 4 {
        0 => format!(
            r#"{}example = {{ count = 10, path = "src" }}

[tools.input_schema]
type = "object"
additionalProperties = false

[tools.input_schema.properties.repo]
type = "string"
default = "."
description = "A directory inside the git repository, where git runs. Default \".\" (the first root)."

[tools.input_schema.properties.count]
type = "integer"
default = 20
minimum = 1
maximum = 200
description = "How many commits to list, 1 to 200. Default 20."

[tools.input_schema.properties.path]
type = "string"
description = "Only commits that changed this file or directory. Default: all commits."

[tools.run]
command = "git"
args = [
  "--no-pager", "--no-optional-locks", "-c", "core.hooksPath=/dev/null",
  "log", "--no-color", "--max-count={{count}}", "--date=short", "--format=%h %ad [%an] %s",
  "--", "{{path}}",
]
cwd = "{{repo}}"
paths = ["repo", "path"]
timeout = 30
"#,
            common(
                "bench_log",
                "Bench log",
                "List the most recent commits reachable from HEAD, newest first, one per line: abbreviated hash, author date, author and subject. `count` is how many (default 20, 1 to 200); `path` keeps only commits that changed that file or directory."
            )
        ),
        1 => format!(
            r#"{}example = {{ pattern = "TODO", path = "src", ignore_case = true }}

[tools.input_schema]
type = "object"
additionalProperties = false
required = ["pattern"]

[tools.input_schema.properties.pattern]
type = "string"
minLength = 1
description = "The regular expression to look for (POSIX extended syntax)."

[tools.input_schema.properties.path]
type = "string"
default = "."
description = "The file or directory to search. Default \".\" (the first root)."

[tools.input_schema.properties.ignore_case]
type = "boolean"
default = false
description = "Match upper and lower case alike. Default false."

[tools.input_schema.properties.max_count]
type = "integer"
default = 100
minimum = 1
maximum = 10000
description = "Stop after this many matching lines per file. Default 100."

[tools.run]
command = "grep"
args = [
  "--recursive", "--line-number", "--extended-regexp", "--binary-files=without-match",
  "{{ignore_case?--ignore-case}}", "--max-count={{max_count}}", "--regexp={{pattern}}",
  "--", "{{path}}",
]
paths = ["path"]
timeout = 30
"#,
            common(
                "bench_grep",
                "Bench grep",
                "Search files for lines matching a regular expression and print each match as path:line:text. `ignore_case` matches case-insensitively; `max_count` stops after that many matches per file (default 100). Binary files are skipped."
            )
        ),
        2 => format!(
            r#"{}example = {{ dir = "src", all = false }}

[tools.input_schema]
type = "object"
additionalProperties = false
required = ["dir"]

[tools.input_schema.properties.dir]
type = "string"
description = "The directory to list."

[tools.input_schema.properties.all]
type = "boolean"
default = false
description = "Also list entries whose names start with a dot. Default false."

[tools.run]
command = "ls"
args = ["-l", "--time-style=long-iso", "{{all?--almost-all}}", "--", "{{dir}}"]
cwd = "{{dir}}"
paths = ["dir"]
timeout = 10
"#,
            common(
                "bench_ls",
                "Bench ls",
                "List a directory in long format: permissions, links, owner, group, size in bytes, modification time (YYYY-MM-DD HH:MM) and name, one entry per line. With `all` true, dot files are listed too (not . and ..)."
            )
        ),
        _ => format!(
            r#"{}example = {{ archive = "dist/release.tar.gz", format = "gnu", limit = 50 }}

[tools.input_schema]
type = "object"
additionalProperties = false
required = ["archive"]

[tools.input_schema.properties.archive]
type = "string"
pattern = "\\.(tar|tar\\.gz|tgz|tar\\.xz)$"
description = "The archive to list (.tar, .tar.gz, .tgz or .tar.xz)."

[tools.input_schema.properties.format]
type = "string"
enum = ["gnu", "posix", "ustar"]
default = "gnu"
description = "The archive format to assume. Default gnu."

[tools.input_schema.properties.limit]
type = "integer"
minimum = 1
maximum = 100000
description = "At most this many entries (the start of the listing). Default: all."

[tools.run]
command = "tar"
args = ["--list", "--verbose", "--format={{format}}", "--occurrence={{limit}}", "--file", "{{archive}}"]
paths = ["archive"]
timeout = 30
"#,
            common(
                "bench_tar",
                "Bench tar",
                "List the members of a tar archive, one per line in `ls -l` style: permissions, owner/group, size, date and path. Compressed archives are recognised by their suffix. `format` is the archive format to assume (default gnu); `limit` keeps only the first entries."
            )
        ),
    }
}

/// Write manifests `0..n` into `dir` as `bench_NNN.toml`.
fn write_manifests(dir: &Path, n: usize) {
    for i in 0..n {
        std::fs::write(dir.join(format!("bench_{i:03}.toml")), manifest(i, 0))
            .expect("write a manifest");
    }
}

/// The manifest of the tools that item 2 calls.
const CALL_MANIFEST: &str = r#"
[[tools]]
name = "plugin_true"
description = "Run `true`: it exits 0 and prints nothing (benches/plugins.rs)."

[tools.run]
command = "true"

[[tools]]
name = "plugin_echo"
description = "Run `echo TEXT` and return what it prints (benches/plugins.rs)."
input_schema = { type = "object", additionalProperties = false, required = ["text"], properties = { text = { type = "string", description = "What to print." } } }

[tools.run]
command = "echo"
args = ["{text}"]
"#;

/// A config as the binary would load it from `toolport --config <empty file> --root ROOT
/// --plugins PLUGINS` (the empty config file keeps the developer's own config out; the
/// environment is not read).
fn plugin_config(root: &Path, plugins: &Path, etc: &Path) -> Config {
    let empty = config_file(etc, "");
    let argv: Vec<OsString> = vec![
        "toolport".into(),
        "--config".into(),
        empty.into(),
        "--root".into(),
        root.into(),
        "--plugins".into(),
        plugins.into(),
    ];
    let cli = Cli::try_parse_from(argv).expect("parse the command line");
    Config::load(&cli.global, |_| None).expect("load the config")
}

/// The same config without plugins.
fn without_plugins(config: &Config) -> Config {
    Config {
        plugins: PluginSettings::default(),
        ..config.clone()
    }
}

/// A temp workspace, a config directory and a plugin directory, kept alive together.
struct Dirs {
    root: tempfile::TempDir,
    etc: tempfile::TempDir,
    plugins: tempfile::TempDir,
}

fn dirs() -> Dirs {
    Dirs {
        root: tempfile::tempdir().expect("create the root"),
        etc: tempfile::tempdir().expect("create the config dir"),
        plugins: tempfile::tempdir().expect("create the plugin dir"),
    }
}

/// Build the server state, checking the number of tools it serves.
fn build(config: &Config, tools: usize) -> Arc<Shared> {
    let shared = toolport::build(config).expect("build the server state");
    assert_eq!(shared.registry.load().len(), tools, "tools served");
    Arc::new(shared)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

/// The runtime the MCP handler runs on (2 workers on the benchmark machine), as in
/// `benches/exec.rs`.
fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime")
}

// ------------------------------------------------------------------------------------------
// Interleaved comparisons.

/// One timed path of an interleaved comparison.
type Timed<'a> = (&'static str, Box<dyn Fn() + 'a>);

/// Run every path once per round, in an order rotated each round, so all of them see the
/// same machine load; each path's times in µs.
fn interleave(rounds: usize, paths: &[Timed<'_>]) -> Vec<Vec<f64>> {
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); paths.len()];
    for round in 0..rounds {
        for k in 0..paths.len() {
            let i = (k + round) % paths.len();
            let started = Instant::now();
            (paths[i].1)();
            times[i].push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    times
}

/// Print each path's median and p90.
fn print_paths(paths: &[Timed<'_>], times: &[Vec<f64>]) {
    for ((name, _), t) in paths.iter().zip(times) {
        println!(
            "  {name:<40} median {:>9.1} us   p90 {:>9.1} us",
            median(t),
            quantile(t, 0.9)
        );
    }
}

/// Print path `a` against path `b`: the median of the per-round ratios a/b (the judged
/// figure), the ratio of the medians, and the median of the per-round differences.
fn print_pair(paths: &[Timed<'_>], times: &[Vec<f64>], a: usize, b: usize) {
    let ratios: Vec<f64> = times[a].iter().zip(&times[b]).map(|(x, y)| x / y).collect();
    let diffs: Vec<f64> = times[a].iter().zip(&times[b]).map(|(x, y)| x - y).collect();
    println!(
        "  {} / {}: median of paired ratios {:.3}x (ratio of medians {:.3}x), median paired difference {:+.1} us",
        paths[a].0,
        paths[b].0,
        median(&ratios),
        median(&times[a]) / median(&times[b]),
        median(&diffs)
    );
}

fn rounds(full: usize) -> usize {
    if bench_mode() { full } else { 2 }
}

// ------------------------------------------------------------------------------------------
// 1. Reload, in process.

/// `reload/*` and `reload_pieces/*`, then the interleaved builds.
fn reload(c: &mut Criterion) {
    if !wants("reload") {
        return;
    }
    let d = dirs();
    write_manifests(d.plugins.path(), MANIFESTS);
    let with = plugin_config(d.root.path(), d.plugins.path(), d.etc.path());
    let without = without_plugins(&with);
    build(&with, BUILTINS + MANIFESTS);
    build(&without, BUILTINS);

    let mut group = c.benchmark_group("reload");
    group.bench_function("build_no_plugins", |b| {
        b.iter(|| toolport::build(&without).expect("build"));
    });
    group.bench_function("build_200_manifests", |b| {
        b.iter(|| toolport::build(&with).expect("build"));
    });
    group.finish();

    // Parts of the work, with the same dependencies the loader uses: listing and reading the
    // files, parsing the TOML (into a generic table; the loader deserializes into its own
    // structs and checks them), and compiling each input schema (the registry compiles one
    // validator per tool).
    let files: Vec<PathBuf> = {
        let mut files: Vec<PathBuf> = std::fs::read_dir(d.plugins.path())
            .expect("list the plugin dir")
            .map(|e| e.expect("a dir entry").path())
            .collect();
        files.sort();
        files
    };
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read a manifest"))
        .collect();
    let schemas: Vec<Value> = texts
        .iter()
        .map(|text| {
            let table: toml::Table = toml::from_str(text).expect("parse a manifest");
            serde_json::to_value(&table["tools"][0]["input_schema"]).expect("schema to JSON")
        })
        .collect();
    let mut group = c.benchmark_group("reload_pieces");
    group.bench_function("read_200_files", |b| {
        b.iter(|| {
            let mut files: Vec<PathBuf> = std::fs::read_dir(d.plugins.path())
                .expect("list the plugin dir")
                .map(|e| e.expect("a dir entry").path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            files
                .iter()
                .map(|f| std::fs::read_to_string(f).expect("read").len())
                .sum::<usize>()
        });
    });
    group.bench_function("parse_200_toml", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| toml::from_str::<toml::Table>(t).expect("parse").len())
                .sum::<usize>()
        });
    });
    group.bench_function("compile_200_schemas", |b| {
        b.iter(|| {
            schemas
                .iter()
                .map(|s| jsonschema::validator_for(s).expect("compile"))
                .collect::<Vec<_>>()
        });
    });
    group.finish();

    let paths: Vec<Timed<'_>> = vec![
        (
            "build_no_plugins",
            Box::new(|| drop(toolport::build(&without).expect("build"))),
        ),
        (
            "build_200_manifests",
            Box::new(|| drop(toolport::build(&with).expect("build"))),
        ),
    ];
    let n = rounds(BUILD_ROUNDS);
    let times = interleave(n, &paths);
    println!("interleaved toolport::build ({n} rounds):");
    print_paths(&paths, &times);
    print_pair(&paths, &times, 1, 0);
}

// ------------------------------------------------------------------------------------------
// 2. A plugin tool call against execute_command with the same argv.

/// Check a call's result: exit 0 and `expected` on stdout, whichever way the tool reports it.
fn assert_printed(name: &str, text: &str, structured: Option<&Value>, expected: &str) {
    match structured {
        // execute_command: structured, with the return code and stdout.
        Some(s) => {
            assert_eq!(s["return_code"], json!(0), "{name}: {s}");
            assert_eq!(s["stdout"], json!(expected), "{name}: {s}");
        }
        // A text plugin tool: stdout is the text ("(no output)" when empty).
        None => {
            let want = if expected.is_empty() {
                "(no output)"
            } else {
                expected
            };
            assert_eq!(text, want, "{name}");
        }
    }
}

/// A timed `registry.execute(tool, args)` on a current-thread runtime.
fn registry_call<'a>(
    rt: &'a tokio::runtime::Runtime,
    registry: &'a ToolRegistry,
    ctx: &'a ToolContext,
    tool: &'a str,
    args: JsonObject,
) -> Box<dyn Fn() + 'a> {
    Box::new(move || {
        rt.block_on(within(registry.execute(tool, args.clone(), ctx)))
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
    })
}

/// A timed `tools/call` through the in-process MCP handler.
fn mcp_call<'a>(
    mt: &'a tokio::runtime::Runtime,
    client: &'a RunningService<RoleClient, ()>,
    request: CallToolRequestParams,
) -> Box<dyn Fn() + 'a> {
    Box::new(move || {
        let result = mt
            .block_on(within(client.call_tool(request.clone())))
            .expect("a tools/call answer");
        assert_ne!(result.is_error, Some(true), "{result:?}");
    })
}

/// `plugin_call/*`, then the interleaved comparison.
fn plugin_call(c: &mut Criterion) {
    if !wants("plugin_call") {
        return;
    }
    let d = dirs();
    std::fs::write(d.plugins.path().join("calls.toml"), CALL_MANIFEST).expect("write");
    let config = plugin_config(d.root.path(), d.plugins.path(), d.etc.path());
    let shared = build(&config, BUILTINS + 2);
    let rt = runtime();
    let registry = shared.registry.load();
    let ctx = ToolContext::local(shared.workspace.clone(), shared.confirm_fallback);

    // The pairs: the same argv through the plugin tool and through execute_command.
    let calls: [(&str, &str, Value, &str); 4] = [
        ("plugin_echo", "plugin_echo", json!({"text": "hi"}), "hi\n"),
        (
            "execute_command_echo",
            "execute_command",
            json!({"command": "echo", "args": ["hi"]}),
            "hi\n",
        ),
        ("plugin_true", "plugin_true", json!({}), ""),
        (
            "execute_command_true",
            "execute_command",
            json!({"command": "true"}),
            "",
        ),
    ];
    for (label, tool, args, expected) in &calls {
        let out = rt
            .block_on(within(registry.execute(tool, object(args.clone()), &ctx)))
            .unwrap_or_else(|e| panic!("{label} via the registry: {e}"));
        assert_printed(label, &out.text, out.structured.as_ref(), expected);
    }

    let mt = multi_thread_runtime();
    let (client, server) = common::mcp_session(&mt, &shared);
    let requests: Vec<CallToolRequestParams> = calls
        .iter()
        .map(|(_, tool, args, _)| {
            CallToolRequestParams::new(*tool).with_arguments(object(args.clone()))
        })
        .collect();
    for ((label, _, _, expected), request) in calls.iter().zip(&requests) {
        let result = mt
            .block_on(within(client.call_tool(request.clone())))
            .unwrap_or_else(|e| panic!("{label} over MCP: {e}"));
        assert_ne!(result.is_error, Some(true), "{label}: {result:?}");
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert_printed(label, &text, result.structured_content.as_ref(), expected);
    }

    let via_registry = |i: usize| {
        let (_, tool, args, _) = &calls[i];
        registry_call(&rt, &registry, &ctx, tool, object(args.clone()))
    };
    let via_mcp = |request: &CallToolRequestParams| mcp_call(&mt, &client, request.clone());

    let mut group = c.benchmark_group("plugin_call");
    for (label, tool, args, _) in &calls {
        let args = object(args.clone());
        group.bench_function(format!("{label}_via_registry"), |b| {
            b.iter_batched(
                || args.clone(),
                |args| rt.block_on(within(registry.execute(tool, args, &ctx))),
                BatchSize::SmallInput,
            );
        });
    }
    for ((label, ..), request) in calls.iter().zip(&requests).take(2) {
        group.bench_function(format!("{label}_via_mcp_handler"), |b| {
            b.iter_batched(
                || request.clone(),
                |request| mt.block_on(within(client.call_tool(request))),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();

    {
        let paths: Vec<Timed<'_>> = vec![
            ("plugin_echo_via_registry", via_registry(0)),
            ("execute_command_echo_via_registry", via_registry(1)),
            ("plugin_true_via_registry", via_registry(2)),
            ("execute_command_true_via_registry", via_registry(3)),
            ("plugin_echo_via_mcp_handler", via_mcp(&requests[0])),
            (
                "execute_command_echo_via_mcp_handler",
                via_mcp(&requests[1]),
            ),
        ];
        let n = rounds(INTERLEAVED_ROUNDS);
        let times = interleave(n, &paths);
        println!("interleaved tool calls ({n} rounds):");
        print_paths(&paths, &times);
        print_pair(&paths, &times, 0, 1);
        print_pair(&paths, &times, 2, 3);
        print_pair(&paths, &times, 4, 5);
    }

    mt.block_on(async {
        let _ = within(client.cancel()).await;
        let _ = within(server).await;
    });
}

// ------------------------------------------------------------------------------------------
// 3. tools/list with 200 plugin tools.

/// `tools_list/*`, then the interleaved comparison.
fn tools_list(c: &mut Criterion) {
    if !wants("tools_list") {
        return;
    }
    let d = dirs();
    write_manifests(d.plugins.path(), MANIFESTS);
    let with = plugin_config(d.root.path(), d.plugins.path(), d.etc.path());
    let mt = multi_thread_runtime();
    let sessions = [
        (
            "builtins_only",
            build(&without_plugins(&with), BUILTINS),
            BUILTINS,
        ),
        (
            "with_200_plugins",
            build(&with, BUILTINS + MANIFESTS),
            BUILTINS + MANIFESTS,
        ),
    ]
    .map(|(label, shared, tools)| {
        let (client, server) = common::mcp_session(&mt, &shared);
        // toolport's answer carries no ttlMs, so rmcp would not cache it anyway; disabled so
        // that every call is certainly a round trip.
        mt.block_on(within(
            client
                .peer()
                .set_response_cache_config(ClientCacheConfig::disabled()),
        ));
        let result = mt
            .block_on(within(client.list_tools(None)))
            .expect("tools/list answered");
        assert_eq!(result.tools.len(), tools, "{label}");
        assert!(result.next_cursor.is_none(), "{label}: one page");
        let bytes = serde_json::to_vec(&result).expect("serialize").len();
        println!("tools/list {label}: {tools} tools, {bytes} bytes of JSON result");
        (label, client, server)
    });

    let mut group = c.benchmark_group("tools_list");
    for (label, client, _) in &sessions {
        group.bench_function(format!("{label}_via_mcp_handler"), |b| {
            b.iter(|| mt.block_on(within(client.list_tools(None))));
        });
    }
    group.finish();

    {
        let paths: Vec<Timed<'_>> = sessions
            .iter()
            .map(|(label, client, _)| -> Timed<'_> {
                let mt = &mt;
                let name = if *label == "builtins_only" {
                    "tools_list_builtins_only"
                } else {
                    "tools_list_with_200_plugins"
                };
                (
                    name,
                    Box::new(move || {
                        mt.block_on(within(client.list_tools(None)))
                            .expect("tools/list answered");
                    }),
                )
            })
            .collect();
        let n = rounds(INTERLEAVED_ROUNDS);
        let times = interleave(n, &paths);
        println!("interleaved tools/list round trips through the MCP handler ({n} rounds):");
        print_paths(&paths, &times);
        print_pair(&paths, &times, 1, 0);
    }

    mt.block_on(async {
        for (_, client, server) in sessions {
            let _ = within(client.cancel()).await;
            let _ = within(server).await;
        }
    });
}

// ------------------------------------------------------------------------------------------
// 1b. Reload end to end: SIGHUP to notifications/tools/list_changed against the real binary.

/// A client that notes when each `notifications/tools/list_changed` arrives.
#[derive(Clone)]
struct ListChanged(mpsc::UnboundedSender<Instant>);

impl ClientHandler for ListChanged {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Instant::now());
    }
}

/// The binary serving one plugin directory, with a connected client.
struct Server {
    client: RunningService<RoleClient, ListChanged>,
    pid: u32,
    /// When each `tools/list_changed` arrived.
    changes: mpsc::UnboundedReceiver<Instant>,
    /// Each `plugins reloaded` log line (stderr, at info), with when it was read.
    reloads: mpsc::UnboundedReceiver<(Instant, String)>,
    /// From spawning the process to the end of `initialize`.
    startup: Duration,
}

/// Start the binary over stdio with `--plugins plugins`, isolated from the developer's config
/// and `TOOLPORT_*` environment, logging at info to a pipe this process reads.
async fn start_server(root: &Path, plugins: &Path, etc: &Path) -> Server {
    let mut cmd = tokio::process::Command::new(common::toolport_bin());
    cmd.arg("--config")
        .arg(config_file(etc, ""))
        .arg("--root")
        .arg(root)
        .arg("--plugins")
        .arg(plugins)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", etc.join("no-config"))
        .env("RUST_LOG", "info");
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLPORT_") {
            cmd.env_remove(key);
        }
    }
    let started = Instant::now();
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolport");
    let pid = transport.id().expect("the server's pid");
    let (reload_tx, reloads) = mpsc::unbounded_channel();
    let stderr = stderr.expect("the server's stderr");
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("plugins reloaded") {
                let _ = reload_tx.send((Instant::now(), line));
            }
        }
    });
    let (tx, changes) = mpsc::unbounded_channel();
    let client = within(ListChanged(tx).serve(transport))
        .await
        .expect("initialize");
    let startup = started.elapsed();
    Server {
        client,
        pid,
        changes,
        reloads,
        startup,
    }
}

fn hangup(pid: u32) {
    kill(
        Pid::from_raw(i32::try_from(pid).expect("a pid")),
        Signal::SIGHUP,
    )
    .expect("send SIGHUP");
}

/// What one end-to-end round measured, in ms.
#[derive(Default)]
struct Round {
    startup: f64,
    /// SIGHUP → `tools/list_changed` at the client.
    list_changed: f64,
    /// SIGHUP → the `plugins reloaded` log line read from stderr.
    log_line: f64,
}

/// A plugin directory for the end-to-end rounds: `n - 1` regular manifests and
/// `zz_probe.toml`, a symlink to a manifest outside the directory that the rounds rewrite.
struct ProbeDir {
    plugins: tempfile::TempDir,
    outside: tempfile::TempDir,
    n: usize,
}

impl ProbeDir {
    fn new(n: usize) -> Self {
        let plugins = tempfile::tempdir().expect("create the plugin dir");
        let outside = tempfile::tempdir().expect("create the probe's dir");
        write_manifests(plugins.path(), n - 1);
        let probe = ProbeDir {
            plugins,
            outside,
            n,
        };
        probe.write(0);
        std::os::unix::fs::symlink(probe.target(), probe.plugins.path().join("zz_probe.toml"))
            .expect("symlink the probe");
        probe
    }

    fn target(&self) -> PathBuf {
        self.outside.path().join("probe.toml")
    }

    /// Rewrite the probe (write a new file and rename it over the old one, as editors do):
    /// its description names `revision`.
    fn write(&self, revision: usize) {
        let tmp = self.outside.path().join("probe.toml.tmp");
        std::fs::write(&tmp, manifest(self.n - 1, revision)).expect("write the probe");
        std::fs::rename(&tmp, self.target()).expect("replace the probe");
    }
}

/// One round: a fresh server, the probe changed, SIGHUP, until the client hears of it.
async fn sighup_round(dir: &ProbeDir, root: &Path, etc: &Path, revision: usize) -> Round {
    dir.write(revision);
    let mut server = start_server(root, dir.plugins.path(), etc).await;
    let listed = within(server.client.list_tools(None))
        .await
        .expect("tools/list");
    assert_eq!(listed.tools.len(), BUILTINS + dir.n, "tools served");
    // The session subscribes to list changes when it gets `notifications/initialized`: give
    // it time to settle, so the change below is not raced.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(server.changes.try_recv().is_err(), "no change yet");

    dir.write(revision + 1);
    let sent = Instant::now();
    hangup(server.pid);
    let heard = within(server.changes.recv())
        .await
        .expect("tools/list_changed");
    let (logged, line) = within(server.reloads.recv())
        .await
        .expect("a `plugins reloaded` log line");
    assert!(line.contains("changed=true"), "{line}");
    let round = Round {
        startup: server.startup.as_secs_f64() * 1e3,
        list_changed: (heard - sent).as_secs_f64() * 1e3,
        log_line: (logged - sent).as_secs_f64() * 1e3,
    };
    let _ = within(server.client.cancel()).await;
    round
}

/// Watch an idle server for `window`: its CPU use and the reloads it logs.
async fn watch_idle(server: &mut Server, window: Duration) -> (f64, usize, usize) {
    while server.reloads.try_recv().is_ok() {}
    while server.changes.try_recv().is_ok() {}
    let cpu_before = cpu_secs(server.pid).expect("the server's CPU time");
    tokio::time::sleep(window).await;
    let cpu = cpu_secs(server.pid).expect("the server's CPU time") - cpu_before;
    let mut reloads = 0;
    while server.reloads.try_recv().is_ok() {
        reloads += 1;
    }
    let mut changes = 0;
    while server.changes.try_recv().is_ok() {
        changes += 1;
    }
    (100.0 * cpu / window.as_secs_f64(), reloads, changes)
}

fn summary(name: &str, values: &[f64]) {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "  {name:<44} median {:>7.2} ms   p90 {:>7.2} ms   min {:>7.2}   max {:>7.2}",
        median(values),
        quantile(values, 0.9),
        min,
        max
    );
}

/// The end-to-end reload: rounds with 200 and with 1 manifest, alternating, then the idle
/// watch.
fn sighup() {
    let rounds = rounds(SIGHUP_ROUNDS);
    let window = if bench_mode() {
        IDLE_WINDOW
    } else {
        Duration::from_millis(500)
    };
    let root = tempfile::tempdir().expect("create the root");
    let etc = tempfile::tempdir().expect("create the config dir");
    let many = ProbeDir::new(MANIFESTS);
    let one = ProbeDir::new(1);
    let rt = multi_thread_runtime();
    rt.block_on(async {
        let mut results: [Vec<Round>; 2] = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            // Alternate which directory goes first, so neither always follows the other.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let dir = if k == 0 { &many } else { &one };
                let r = sighup_round(dir, root.path(), etc.path(), 2 * round).await;
                results[k].push(r);
            }
        }
        println!();
        if !bench_mode() {
            println!("(smoke test, not a measurement: {rounds} rounds under `cargo test --benches`)");
        }
        println!(
            "SIGHUP reload end to end against {} ({rounds} rounds each, a fresh server per round):",
            common::toolport_bin().display()
        );
        for (k, label) in [(0, format!("{MANIFESTS} manifests")), (1, "1 manifest".to_owned())] {
            let r = &results[k];
            let pick = |f: fn(&Round) -> f64| r.iter().map(f).collect::<Vec<f64>>();
            summary(
                &format!("{label}: SIGHUP -> tools/list_changed"),
                &pick(|r| r.list_changed),
            );
            summary(
                &format!("{label}: SIGHUP -> `plugins reloaded` log"),
                &pick(|r| r.log_line),
            );
            summary(
                &format!("{label}: spawn -> initialized"),
                &pick(|r| r.startup),
            );
        }

        // The idle server, before and after one reload.
        many.write(0);
        let mut server = start_server(root.path(), many.plugins.path(), etc.path()).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (cpu, reloads, changes) = watch_idle(&mut server, window).await;
        println!(
            "idle server with {MANIFESTS} manifests, {:.1} s before any SIGHUP: {cpu:.1} % of one core, {reloads} reloads logged, {changes} list_changed",
            window.as_secs_f64()
        );
        hangup(server.pid);
        within(server.reloads.recv())
            .await
            .expect("the SIGHUP's reload");
        let (cpu, reloads, changes) = watch_idle(&mut server, window).await;
        println!(
            "the same server, {:.1} s after one SIGHUP (listing unchanged): {cpu:.1} % of one core, {reloads} reloads logged ({:.1}/s), {changes} list_changed",
            window.as_secs_f64(),
            reloads as f64 / window.as_secs_f64()
        );
        let _ = within(server.client.cancel()).await;
    });
}

fn main() {
    common::prepare_commands();
    let mut criterion = common::criterion();
    reload(&mut criterion);
    plugin_call(&mut criterion);
    tools_list(&mut criterion);
    criterion.final_summary();

    if wants("sighup") {
        sighup();
    }
}
