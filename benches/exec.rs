//! Benchmarks of `execute_command`, in two parts that run in the same `cargo bench --bench exec`
//! run.
//!
//! 1. Criterion groups for the cost of one round trip of `true`:
//!    - `spawn_true/*`: raw `std::process::Command::new("true").status()` and a
//!      `tokio::process` spawn + wait (the baselines), then
//!      `registry.execute("execute_command", {"command":"true"}, &ctx)` and the same call
//!      through the real MCP handler (`ToolportServer` over an in-memory duplex pipe with
//!      toolport's `StdioTransport`, driven by an rmcp client), as in `benches/registry.rs`;
//!    - `exec_pieces/*`: pieces of that path, to show where the time goes:
//!      `toolport_tools::host::exec::process::run` alone (no policy, validation or rendering), and a
//!      `tokio::process` spawn with the same stdio and environment set-up done the naive way
//!      (a bare program name under a replaced environment, so std forks), without reader tasks.
//!
//!    `main` first does what the server binary does before it runs commands
//!    (`tools::exec::prepare_host`), so every spawn registers with a real watchdog process.
//! 2. An end-to-end output flood against the real binary (`CARGO_BIN_EXE_toolport`, which
//!    `cargo bench` builds with the release-derived `bench` profile into
//!    `target/release/toolport`; set `TOOLPORT_BIN` to use another binary): it is started as a
//!    child process speaking MCP over stdio, one `execute_command` writes 1 GiB to stdout
//!    (`sh -c 'head -c 1073741824 /dev/zero'`), and meanwhile the server's VmRSS/VmHWM are
//!    sampled from `/proc/<pid>/status` every 50 ms and a `path_info` call is made every 50 ms
//!    with its latency measured. The results are printed to stdout.
//!
//! 3. Jobs against the real binary (section `jobs`): a background `true` read to its end with
//!    job_output against the foreground call (interleaved pairs), and 16 jobs each writing
//!    100 MiB at once with the server's memory sampled and `path_info` probed meanwhile.
//!
//! Run with `cargo bench --bench exec`. A filter (`cargo bench --bench exec -- spawn_true`)
//! selects criterion benchmarks as usual; the flood runs when there is no filter or a filter
//! contains `flood` (`cargo bench --bench exec -- flood` runs only the flood). Under
//! `cargo test --benches` (criterion's test mode) the flood is shrunk to 16 MiB as a smoke
//! test. See BENCHMARKS.md for results.

// A benchmark is not library code: a failed setup step should stop the run loudly, which is
// exactly what unwrap/expect do. The crate-wide deny of these lints is for src/.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The flood measurement is not a criterion benchmark: printing its results to stdout is how
// it reports them (criterion prints its own results there too).
#![allow(clippy::print_stdout)]

mod common;

use std::hint::black_box;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;
use toolport::config::Config;
use toolport::server::Shared;
use toolport_tools::host::exec::process::{self, RunSpec};
use toolport_tools::{NoProgress, ToolContext};

use crate::common::config::{ALLOW_SHELLS, config_file};
use crate::common::object;
use crate::common::proc::{Mem, cpu_secs, mem};
use crate::common::stats::median;

/// The program every round-trip benchmark runs: it starts, does nothing and exits 0.
const PROGRAM: &str = "true";

/// Bytes the flood command writes to stdout (1 GiB).
const FLOOD_BYTES: u64 = 1 << 30;

/// The flood's size under `cargo test --benches`: just enough to check the harness works.
const SMOKE_FLOOD_BYTES: u64 = 16 << 20;

/// The RSS target for the flood (64 MiB), in KiB as `/proc/<pid>/status` reports it.
const RSS_TARGET_KIB: u64 = 64 * 1024;

/// How often the flood samples memory and calls `path_info`.
const FLOOD_TICK: Duration = Duration::from_millis(50);

/// `path_info` calls made before the flood, for an idle baseline.
const IDLE_PROBES: usize = 40;

/// A temp workspace and the server state built from it (every setting at its default).
struct Fixture {
    /// Kept alive so the directory exists for the whole run.
    dir: tempfile::TempDir,
    shared: Arc<Shared>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("create a temp dir");
    let config = Config {
        roots: vec![dir.path().to_path_buf()],
        ..Config::default()
    };
    let shared = Arc::new(toolport::build(&config).expect("build the server state"));
    Fixture { dir, shared }
}

/// Start the real binary serving `root` as a child process speaking MCP over its stdin and
/// stdout, isolated from the developer's config and `TOOLPORT_*` environment, and connect an
/// rmcp client. Returns the client and the server's pid.
async fn start_binary(
    root: &Path,
    scratch: &Path,
    config: Option<&Path>,
) -> (RunningService<RoleClient, ()>, u32) {
    let mut cmd = tokio::process::Command::new(common::toolport_bin());
    cmd.arg("--root").arg(root);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    cmd.current_dir(root)
        .env("XDG_CONFIG_HOME", scratch.join("no-config"))
        .env("RUST_LOG", "warn");
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLPORT_") {
            cmd.env_remove(key);
        }
    }
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolport");
    let pid = transport.id().expect("the server's pid");
    let client = ().serve(transport).await.expect("initialize");
    (client, pid)
}

/// Check an `execute_command` result for `true`: exit code 0, no output.
fn assert_true_ran(structured: &Value) {
    assert_eq!(structured["return_code"], json!(0), "{structured}");
    assert_eq!(structured["stdout_bytes"], json!(0), "{structured}");
    assert_eq!(structured["stderr_bytes"], json!(0), "{structured}");
}

/// `spawn_true/*`: the baselines and the two `execute_command` paths, in one group so the
/// ratios compare medians from the same run.
fn spawn_true(c: &mut Criterion) {
    let fx = fixture();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");

    // Baselines: the same program, spawned and reaped with nothing else around it.
    assert!(
        std::process::Command::new(PROGRAM)
            .status()
            .expect("spawn true")
            .success()
    );
    let mut group = c.benchmark_group("spawn_true");
    group.bench_function("std_status", |b| {
        b.iter(|| {
            std::process::Command::new(black_box(PROGRAM))
                .status()
                .expect("spawn true")
        });
    });
    group.bench_function("tokio_spawn_wait", |b| {
        b.iter(|| {
            rt.block_on(async {
                tokio::process::Command::new(black_box(PROGRAM))
                    .spawn()
                    .expect("spawn true")
                    .wait()
                    .await
                    .expect("wait for true")
            })
        });
    });

    // Registry execute on a current-thread runtime, as in benches/registry.rs.
    let args = object(json!({"command": PROGRAM}));
    let registry = fx.shared.registry.load();
    let ctx = ToolContext::local(fx.shared.workspace.clone(), fx.shared.confirm_fallback);
    let out = rt
        .block_on(registry.execute("execute_command", args.clone(), &ctx))
        .expect("execute_command succeeds via the registry");
    assert_true_ran(&out.structured.expect("structured output"));
    group.bench_function("execute_command_via_registry", |b| {
        b.iter_batched(
            || args.clone(),
            |args| rt.block_on(registry.execute("execute_command", args, &ctx)),
            BatchSize::SmallInput,
        );
    });

    // The real MCP handler over an in-memory pipe with toolport's own transport, called by an
    // rmcp client on a multi-thread runtime (2 workers on the benchmark machine).
    let mt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime");
    let (client, server) = common::mcp_session(&mt, &fx.shared);
    let request = CallToolRequestParams::new("execute_command").with_arguments(args.clone());
    let result = mt
        .block_on(client.call_tool(request.clone()))
        .expect("execute_command answered over MCP");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_true_ran(&result.structured_content.expect("structured content"));
    group.bench_function("execute_command_via_mcp_handler", |b| {
        b.iter_batched(
            || request.clone(),
            |request| mt.block_on(client.call_tool(request)),
            BatchSize::SmallInput,
        );
    });

    // The real release binary as a child process, over its stdin/stdout pipes: what an MCP
    // client launching toolport sees. The command is spawned by the server process (its own
    // memory map and runtime), not by this one.
    let scratch = tempfile::tempdir().expect("create a scratch dir");
    let (binary, server_pid) = mt.block_on(start_binary(fx.dir.path(), scratch.path(), None));
    let result = mt
        .block_on(binary.call_tool(request.clone()))
        .expect("execute_command answered by the binary");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_true_ran(&result.structured_content.expect("structured content"));
    group.bench_function("execute_command_via_stdio_binary", |b| {
        b.iter_batched(
            || request.clone(),
            |request| mt.block_on(binary.call_tool(request)),
            BatchSize::SmallInput,
        );
    });
    group.finish();
    // A fork copies the parent's page tables and the exec tears them down again, so the cost
    // of a forked spawn grows with the spawning process's memory: print both processes' RSS.
    if let (Some(own), Some(server)) = (mem(std::process::id()), mem(server_pid)) {
        println!(
            "spawning processes: this bench process VmRSS {}, the toolport binary VmRSS {}",
            mib(own.rss),
            mib(server.rss)
        );
    }

    // A piece: the registry call on the multi-thread runtime the MCP handler runs on (spawned
    // onto a worker, like rmcp does), to separate the runtime's share from the MCP layer's.
    let mut pieces = c.benchmark_group("exec_pieces");
    pieces.bench_function("execute_command_via_registry_mt", |b| {
        b.iter_batched(
            || args.clone(),
            |args| {
                let registry = registry.clone();
                let ctx =
                    ToolContext::local(fx.shared.workspace.clone(), fx.shared.confirm_fallback);
                mt.block_on(
                    mt.spawn(async move { registry.execute("execute_command", args, &ctx).await }),
                )
            },
            BatchSize::SmallInput,
        );
    });
    pieces.finish();

    // Interleaved: the raw spawn and the three toolport paths, one after another in each
    // round (order rotated), so all four see the same machine load; the ratio of each round's
    // pair is taken before the median. On a shared machine this is steadier than comparing
    // criterion groups that ran seconds apart.
    let rounds = if common::args::bench_mode() {
        INTERLEAVED_ROUNDS
    } else {
        2
    };
    let paths: Vec<(&str, Timed)> = vec![
        (
            "std_status",
            Box::new(|| {
                std::process::Command::new(black_box(PROGRAM))
                    .status()
                    .expect("spawn true");
            }),
        ),
        (
            "via_registry",
            Box::new(|| {
                rt.block_on(registry.execute("execute_command", args.clone(), &ctx))
                    .expect("execute_command via the registry");
            }),
        ),
        (
            "via_mcp_handler",
            Box::new(|| {
                mt.block_on(client.call_tool(request.clone()))
                    .expect("execute_command via the MCP handler");
            }),
        ),
        (
            "via_stdio_binary",
            Box::new(|| {
                mt.block_on(binary.call_tool(request.clone()))
                    .expect("execute_command via the binary");
            }),
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); paths.len()];
    for round in 0..rounds {
        for k in 0..paths.len() {
            let i = (k + round) % paths.len();
            let started = Instant::now();
            (paths[i].1)();
            times[i].push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    println!("interleaved round trips of `{PROGRAM}` ({rounds} rounds, medians):");
    let base = median(&times[0]);
    for (i, (name, _)) in paths.iter().enumerate() {
        let ratios: Vec<f64> = times[i].iter().zip(&times[0]).map(|(t, b)| t / b).collect();
        println!(
            "  {name:<18} {:>8.1} us   median of paired ratios to std_status {:.2}x   (ratio of medians {:.2}x)",
            median(&times[i]),
            median(&ratios),
            median(&times[i]) / base
        );
    }
    drop(paths);

    mt.block_on(async {
        let _ = binary.cancel().await;
        let _ = client.cancel().await;
        let _ = server.await;
    });
    drop(fx.dir);
}

/// One timed path of the interleaved comparison.
type Timed<'a> = Box<dyn Fn() + 'a>;

/// Rounds of the interleaved comparison in `spawn_true` (each round runs all four paths).
const INTERLEAVED_ROUNDS: usize = 400;

/// `exec_pieces/*`: where the time of `execute_command_via_registry` goes.
fn exec_pieces(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("create a temp dir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let env = toolport_tools::host::exec::child_env(&[], None).expect("the default environment");
    let cancel = CancellationToken::new();
    let spec = |dir: &Path| RunSpec {
        program: PROGRAM.into(),
        args: Vec::new(),
        cwd: std::fs::File::open(dir).expect("open the temp dir"),
        env: env.clone(),
        stdin: None,
        timeout: Duration::from_secs(60),
        max_output_bytes: 100 * 1024,
    };
    let outcome = rt.block_on(process::run(spec(dir.path()), &cancel, &NoProgress));
    assert_eq!(outcome.status.and_then(|s| s.code()), Some(0));

    let mut group = c.benchmark_group("exec_pieces");
    // toolport's process runner alone: PATH resolution, the posix_spawn (process group, cwd
    // through its handle), watchdog registration, piped stdout/stderr drained by two tasks,
    // the wait, the drain and the group kill.
    group.bench_function("process_run", |b| {
        b.iter_batched(
            || spec(dir.path()),
            |spec| rt.block_on(process::run(spec, &cancel, &NoProgress)),
            BatchSize::SmallInput,
        );
    });
    // The same stdio and environment through tokio::process the naive way: the bare program
    // name under a replaced environment, which makes std fork instead of posix_spawn (what
    // toolport avoids by resolving PATH itself); no reader tasks (both pipes are read
    // inline) and no process-group kill.
    group.bench_function("tokio_piped_env", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut child = tokio::process::Command::new(black_box(PROGRAM))
                    .env_clear()
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .current_dir(dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .expect("spawn true");
                let mut out = child.stdout.take().expect("stdout");
                let mut err = child.stderr.take().expect("stderr");
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let (ra, rb, status) = tokio::join!(
                    out.read_to_end(&mut a),
                    err.read_to_end(&mut b),
                    child.wait()
                );
                ra.expect("read stdout");
                rb.expect("read stderr");
                status.expect("wait for true")
            })
        });
    });
    group.finish();
}

// ------------------------------------------------------------------------------------------
// The flood.

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn latency_summary(latencies: &[Duration]) -> String {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    format!(
        "n = {}, median {}, p95 {}, max {}",
        sorted.len(),
        ms(percentile(&sorted, 50.0)),
        ms(percentile(&sorted, 95.0)),
        ms(sorted.last().copied().unwrap_or_default()),
    )
}

async fn path_info(peer: &rmcp::Peer<RoleClient>) -> Duration {
    let request = CallToolRequestParams::new("path_info")
        .with_arguments(object(json!({"path": "probe.txt"})));
    let started = Instant::now();
    let result = peer.call_tool(request).await.expect("path_info answered");
    let elapsed = started.elapsed();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["exists"], json!(true), "{structured}");
    elapsed
}

/// Start the real binary over stdio, flood its `execute_command` with `bytes` of stdout, and
/// report peak RSS, the flood's duration and `path_info` latencies during the flood.
fn flood(bytes: u64) {
    let root = tempfile::tempdir().expect("create the root");
    let etc = tempfile::tempdir().expect("create the config dir");
    std::fs::write(root.path().join("probe.txt"), "probe\n").expect("write the probe file");
    // `sh -c` needs the user's confirmation unless the operator allows shells.
    let config = config_file(etc.path(), ALLOW_SHELLS);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime");
    rt.block_on(async {
        let (client, pid) = start_binary(root.path(), etc.path(), Some(&config)).await;
        let peer = client.peer().clone();

        // Idle baseline: memory after start-up, and path_info latency with nothing running.
        let mut idle = Vec::new();
        for _ in 0..IDLE_PROBES {
            idle.push(path_info(&peer).await);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let before = mem(pid).expect("read the server's memory");
        let cpu_before = cpu_secs(pid);

        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let done = done.clone();
            tokio::spawn(async move {
                let mut samples: Vec<Mem> = Vec::new();
                let mut tick = tokio::time::interval(FLOOD_TICK);
                while !done.load(Ordering::Relaxed) {
                    tick.tick().await;
                    if let Some(sample) = mem(pid) {
                        samples.push(sample);
                    }
                }
                samples
            })
        };
        let prober = {
            let done = done.clone();
            let peer = peer.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut tick = tokio::time::interval(FLOOD_TICK);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    latencies.push(path_info(&peer).await);
                }
                latencies
            })
        };

        let script = format!("head -c {bytes} /dev/zero");
        let request = CallToolRequestParams::new("execute_command").with_arguments(object(
            json!({"command": "sh", "args": ["-c", script], "timeout": 120}),
        ));
        let started = Instant::now();
        let result = peer.call_tool(request).await.expect("the flood answered");
        let wall = started.elapsed();
        done.store(true, Ordering::Relaxed);
        let cpu_after = cpu_secs(pid);
        let samples = sampler.await.expect("the sampler");
        let latencies = prober.await.expect("the prober");
        let after = mem(pid).expect("read the server's memory");

        assert_ne!(result.is_error, Some(true), "{result:?}");
        let structured = result.structured_content.expect("structured content");
        assert_eq!(structured["return_code"], json!(0), "{structured}");
        assert_eq!(structured["stdout_bytes"], json!(bytes), "{structured}");
        assert_eq!(structured["truncated"], json!(true), "{structured}");
        let reported_ms = structured["duration_ms"].as_u64().unwrap_or_default();
        let result_json_bytes = serde_json::to_vec(&structured).map_or(0, |v| v.len());

        let peak_sampled = samples.iter().map(|m| m.rss).max().unwrap_or_default();
        let hwm = after.hwm.max(samples.iter().map(|m| m.hwm).max().unwrap_or_default());
        let secs = wall.as_secs_f64();
        println!();
        if bytes < FLOOD_BYTES {
            println!("(smoke test, not a measurement: {bytes} bytes under `cargo test --benches`)");
        }
        println!(
            "flood: execute_command sh -c 'head -c {bytes} /dev/zero' against {}",
            common::toolport_bin().display()
        );
        println!("  server pid {pid}; memory and path_info sampled every {} ms", FLOOD_TICK.as_millis());
        println!(
            "  memory before the flood: VmRSS {}, VmHWM {}",
            mib(before.rss),
            mib(before.hwm)
        );
        println!(
            "  during: {} samples, highest VmRSS {}; after: VmRSS {}, VmHWM (peak since start) {}",
            samples.len(),
            mib(peak_sampled),
            mib(after.rss),
            mib(hwm)
        );
        println!(
            "  target VmHWM <= {}: {}",
            mib(RSS_TARGET_KIB),
            if hwm <= RSS_TARGET_KIB { "MET" } else { "NOT MET" }
        );
        println!(
            "  flood: {} bytes of stdout in {:.2} s client wall time ({:.0} MiB/s), duration_ms {reported_ms} reported by the server; result JSON {} bytes",
            bytes,
            secs,
            bytes as f64 / (1024.0 * 1024.0) / secs,
            result_json_bytes
        );
        if let (Some(a), Some(b)) = (cpu_before, cpu_after) {
            let cpu = b - a;
            println!(
                "  server CPU time (user+sys) during the flood: {cpu:.2} s ({:.0} % of one core)",
                100.0 * cpu / secs
            );
        }
        println!("  path_info idle (before the flood): {}", latency_summary(&idle));
        println!("  path_info during the flood:        {}", latency_summary(&latencies));

        let _ = client.cancel().await;
    });
}

/// Jobs (issue 13), against the real binary:
/// - `true` started with `background: true` and read to its end with job_output (`wait`),
///   against the same command as a plain foreground call, interleaved, `rounds` pairs;
/// - `jobs` jobs each writing `bytes` to stdout at once (`max_concurrent` raised so all run),
///   with the server's VmRSS/VmHWM sampled and a `path_info` probe every 50 ms until every
///   job has ended.
fn jobs(rounds: usize, jobs: usize, bytes: u64) {
    let root = tempfile::tempdir().expect("create the root");
    let etc = tempfile::tempdir().expect("create the config dir");
    std::fs::write(root.path().join("probe.txt"), "probe\n").expect("write the probe file");
    let config = config_file(
        etc.path(),
        // Finished jobs leave after a second, so the rounds never fill the table.
        &format!(
            "{ALLOW_SHELLS}max_concurrent = {jobs}\nmax_jobs = 1024\njob_retention = \"1s\"\n"
        ),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime");
    rt.block_on(async {
        let (client, pid) = start_binary(root.path(), etc.path(), Some(&config)).await;
        let peer = client.peer().clone();
        let call = |name: &'static str, args: Value| {
            let peer = peer.clone();
            async move {
                let result = peer
                    .call_tool(CallToolRequestParams::new(name).with_arguments(object(args)))
                    .await
                    .expect("the call answered");
                assert_ne!(result.is_error, Some(true), "{result:?}");
                result.structured_content.expect("structured content")
            }
        };

        // 1. Background `true` to its end, against the foreground call.
        let (mut foreground, mut background) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let fg = async {
                let started = Instant::now();
                assert_true_ran(&call("execute_command", json!({"command": "true"})).await);
                started.elapsed()
            };
            let bg = async {
                let started = Instant::now();
                let job = call("execute_command", json!({"command": "true", "background": true})).await;
                let id = job["job_id"].as_str().expect("a job id").to_owned();
                loop {
                    let out = call("job_output", json!({"job_id": id, "wait": 5})).await;
                    if out["running"] == json!(false) {
                        assert_eq!(out["return_code"], json!(0), "{out}");
                        break;
                    }
                }
                started.elapsed()
            };
            if round % 2 == 0 {
                foreground.push(fg.await);
                background.push(bg.await);
            } else {
                background.push(bg.await);
                foreground.push(fg.await);
            }
        }
        let ratios: Vec<f64> = background
            .iter()
            .zip(&foreground)
            .map(|(b, f)| b.as_secs_f64() / f.as_secs_f64())
            .collect();
        let med = |v: &[Duration]| {
            common::stats::median(&v.iter().map(Duration::as_secs_f64).collect::<Vec<_>>())
        };
        println!("\njobs: `true`, {rounds} interleaved pairs against the binary over stdio");
        println!(
            "  foreground execute_command: median {:.3} ms; background + job_output to the end: median {:.3} ms; paired ratio {:.2}x",
            med(&foreground) * 1e3,
            med(&background) * 1e3,
            common::stats::median(&ratios)
        );

        // 2. Many jobs writing a lot at once.
        let before = mem(pid).expect("read the server's memory");
        let started = Instant::now();
        let mut ids = Vec::new();
        for _ in 0..jobs {
            let script = format!("head -c {bytes} /dev/zero");
            let job = call(
                "execute_command",
                json!({"command": "sh", "args": ["-c", script], "background": true}),
            )
            .await;
            ids.push(job["job_id"].as_str().expect("a job id").to_owned());
        }
        let (mut samples, mut probes) = (Vec::new(), Vec::new());
        let mut tick = tokio::time::interval(FLOOD_TICK);
        loop {
            tick.tick().await;
            if let Some(sample) = mem(pid) {
                samples.push(sample);
            }
            probes.push(path_info(&peer).await);
            let list = call("job_list", json!({})).await;
            let running = list["jobs"]
                .as_array()
                .expect("jobs")
                .iter()
                .filter(|j| j["running"] == json!(true))
                .count();
            if running == 0 {
                break;
            }
        }
        let wall = started.elapsed();
        for id in &ids {
            let out = call("job_output", json!({"job_id": id})).await;
            assert_eq!(out["stdout_bytes"], json!(bytes), "{out}");
            assert_eq!(out["return_code"], json!(0), "{out}");
        }
        let after = mem(pid).expect("read the server's memory");
        let hwm = after.hwm.max(samples.iter().map(|m| m.hwm).max().unwrap_or_default());
        println!(
            "  {jobs} jobs x {} MiB of stdout each, all running at once: done in {:.2} s; server VmRSS before {}, VmHWM (peak since start) {} (target <= 64 MiB: {})",
            bytes / (1024 * 1024),
            wall.as_secs_f64(),
            mib(before.rss),
            mib(hwm),
            if hwm <= 64 * 1024 { "MET" } else { "NOT MET" }
        );
        println!("  path_info during the jobs: {}", latency_summary(&probes));
        let _ = client.cancel().await;
    });
}

fn main() {
    common::prepare_commands();
    let mut criterion = common::criterion();
    spawn_true(&mut criterion);
    exec_pieces(&mut criterion);
    criterion.final_summary();

    let filters = common::args::filters();
    if filters.is_empty() || filters.iter().any(|f| f.contains("flood")) {
        // `cargo bench` passes --bench; without it (cargo test --benches) run a small smoke flood.
        let bench_mode = common::args::bench_mode();
        flood(if bench_mode {
            FLOOD_BYTES
        } else {
            SMOKE_FLOOD_BYTES
        });
    }
    if filters.is_empty() || filters.iter().any(|f| f.contains("jobs")) {
        if common::args::bench_mode() {
            jobs(200, 16, 100 * 1024 * 1024);
        } else {
            jobs(2, 2, 1024 * 1024);
        }
    }
}
