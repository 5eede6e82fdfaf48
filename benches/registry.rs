//! Benchmarks of the tool-call path: registry lookup, argument validation, a 4 KiB
//! `read_file` through `ToolRegistry::execute`, and the same call through the real MCP handler
//! (`ToolportServer` over an in-memory duplex pipe, driven by an rmcp client), with a raw
//! `std::fs::read_to_string` of the same file as the baseline.
//!
//! Everything (temp dir, config, registry, runtimes, MCP session) is set up once, outside the
//! timed loops. Run with `cargo bench --bench registry`; see BENCHMARKS.md for results.

// A benchmark is not library code: a failed setup step should stop the run loudly, which is
// exactly what unwrap/expect do. The crate-wide deny of these lints is for src/.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use toolport::config::Config;
use toolport::server::Shared;
use toolport_tools::ToolContext;

use crate::common::object;

/// Size of the file every read benchmark reads.
const FILE_BYTES: usize = 4096;

/// A temp workspace with one 4 KiB text file, and everything built from it.
struct Fixture {
    /// Kept alive so the directory exists for the whole run.
    _dir: tempfile::TempDir,
    /// Absolute path of the file (for the raw baseline).
    file: PathBuf,
    shared: Arc<Shared>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("create a temp dir");
    // 64 lines of 63 printable bytes + '\n' = exactly 4096 bytes of ASCII text.
    let line = format!("{}\n", "x".repeat(63));
    let text = line.repeat(FILE_BYTES / line.len());
    assert_eq!(text.len(), FILE_BYTES);
    let file = dir.path().join("file.txt");
    std::fs::write(&file, &text).expect("write the test file");

    let config = Config {
        roots: vec![dir.path().to_path_buf()],
        ..Config::default()
    };
    let shared = Arc::new(toolport::build(&config).expect("build the server state"));
    Fixture {
        _dir: dir,
        file,
        shared,
    }
}

/// `registry/lookup` and `registry/validate`: the synchronous parts of a call.
fn registry(c: &mut Criterion) {
    let fx = fixture();
    let registry = fx.shared.registry.load();
    let args = object(json!({"path": "file.txt", "offset": 1, "limit": 100}));
    assert!(registry.get("read_file").is_some());
    registry
        .validate("read_file", &args)
        .expect("the arguments are valid");

    let mut group = c.benchmark_group("registry");
    group.bench_function("lookup", |b| {
        b.iter(|| registry.get(black_box("read_file")));
    });
    group.bench_function("validate", |b| {
        b.iter(|| registry.validate(black_box("read_file"), black_box(&args)));
    });
    group.finish();
}

/// `std_read/4KiB` and `read_file/4KiB_via_registry` / `read_file/4KiB_via_mcp_handler`,
/// in one run so the ratios compare like with like.
fn read_file(c: &mut Criterion) {
    let fx = fixture();
    let args = object(json!({"path": "file.txt"}));

    // Raw baseline.
    assert_eq!(
        std::fs::read_to_string(&fx.file).expect("read").len(),
        FILE_BYTES
    );
    let mut group = c.benchmark_group("std_read");
    group.bench_function("4KiB", |b| {
        b.iter(|| std::fs::read_to_string(black_box(&fx.file)).expect("read"));
    });
    group.finish();

    // Registry execute on a current-thread runtime (read_file itself runs on the blocking pool).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let registry = fx.shared.registry.load();
    let ctx = ToolContext::local(fx.shared.workspace.clone(), fx.shared.confirm_fallback);
    let out = rt
        .block_on(registry.execute("read_file", args.clone(), &ctx))
        .expect("read_file succeeds via the registry");
    let structured = out.structured.expect("structured output");
    assert_eq!(
        structured["content"].as_str().map(str::len),
        Some(FILE_BYTES)
    );

    let mut group = c.benchmark_group("read_file");
    group.bench_function("4KiB_via_registry", |b| {
        b.iter_batched(
            || args.clone(),
            |args| rt.block_on(registry.execute("read_file", args, &ctx)),
            BatchSize::SmallInput,
        );
    });

    // The real MCP handler, served over an in-memory pipe with toolport's own transport, called
    // by an rmcp client: lookup + validation + the read + JSON-RPC framing both ways.
    let mt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime");
    let (client, server) = common::mcp_session(&mt, &fx.shared);
    let request = CallToolRequestParams::new("read_file").with_arguments(args.clone());
    let result = mt
        .block_on(client.call_tool(request.clone()))
        .expect("read_file succeeds over MCP");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let structured = result.structured_content.expect("structured content");
    assert_eq!(
        structured["content"].as_str().map(str::len),
        Some(FILE_BYTES)
    );

    group.bench_function("4KiB_via_mcp_handler", |b| {
        b.iter_batched(
            || request.clone(),
            |request| mt.block_on(client.call_tool(request)),
            BatchSize::SmallInput,
        );
    });
    group.finish();

    mt.block_on(async {
        let _ = client.cancel().await;
        let _ = server.await;
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = registry, read_file
}
criterion_main!(benches);
