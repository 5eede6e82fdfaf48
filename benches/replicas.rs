//! Issue 43: the cost of a shared budget decision per call. Two `toolport serve --http
//! --stateless` servers (the bench's binary) give every principal the same policy budget (a
//! total and a rate: `max_calls`, `max_calls_per_minute`, both far above what the bench
//! spends); one counts it in process, the other in a `redis-server` on loopback (`[replicas]`:
//! one Lua script per call). One rmcp client per server calls `path_info` one call after
//! another; the difference between the two is what a shared decision adds to a call (a round
//! trip to Redis and the script).
//!
//! Each round measures in-process then shared, then shared then in-process, so drift in the
//! machine's load falls on both alike; [`ROUNDS`] rounds of [`CALLS`] calls after
//! [`WARMUP`] calls each. Reported: p50 and p99 of the per-call times of each, and the
//! difference of the p50s.
//!
//! Run with `cargo bench --bench replicas` (needs `redis-server`: Debian's package; skipped
//! with a note without it). Under `cargo test --benches` it makes a few calls as a smoke test.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;
// The tests' redis-server starter (loopback, a free port, a temporary folder).
#[allow(dead_code)]
#[path = "../tests/it/common/redis.rs"]
mod redis;

use std::time::Instant;

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::common::args::bench_mode;
use crate::common::http::{Client, client, serve};
use crate::common::stats::quantile;

/// Measured calls per server and round.
const CALLS: usize = 2000;
/// Unmeasured calls per server before the first round (connections, caches, the script
/// loaded in Redis).
const WARMUP: usize = 200;
/// Rounds (each measures both servers, in alternating order).
const ROUNDS: usize = 4;
/// A policy budget that admits every call of the bench, so each call is decided and counted.
const POLICY: &str = "[http.principals]\n[[http.principals.rules]]\nname = \"team\"\nmatch_all = true\nmax_calls = 1000000000\nmax_calls_per_minute = 60000\n";

/// `n` calls one after another; each one's time in microseconds.
async fn calls(client: &Client, n: usize) -> Vec<f64> {
    let args = json!({"path": "."}).as_object().cloned().unwrap();
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new("path_info").with_arguments(args.clone()))
            .await
            .unwrap();
        times.push(started.elapsed().as_secs_f64() * 1e6);
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    times
}

fn main() {
    let Some(program) = redis::redis_server() else {
        return;
    };
    let (calls_per_round, warmup, rounds) = if bench_mode() {
        (CALLS, WARMUP, ROUNDS)
    } else {
        (20, 5, 1)
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let redis = redis::Redis::start(program).await;
        let dir = tempfile::tempdir().unwrap();
        let local = serve(dir.path(), "local", POLICY, &["--stateless"]).await;
        let shared = serve(
            dir.path(),
            "shared",
            &format!(
                "[replicas]\nredis_url = \"{}\"\nid = \"bench\"\n{POLICY}",
                redis.url()
            ),
            &["--stateless"],
        )
        .await;
        let (local_client, shared_client) = (client(&local.url).await, client(&shared.url).await);
        calls(&local_client, warmup).await;
        calls(&shared_client, warmup).await;
        let (mut local_times, mut shared_times) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            if round % 2 == 0 {
                local_times.extend(calls(&local_client, calls_per_round).await);
                shared_times.extend(calls(&shared_client, calls_per_round).await);
            } else {
                shared_times.extend(calls(&shared_client, calls_per_round).await);
                local_times.extend(calls(&local_client, calls_per_round).await);
            }
        }
        let (l50, l99) = (quantile(&local_times, 0.5), quantile(&local_times, 0.99));
        let (s50, s99) = (quantile(&shared_times, 0.5), quantile(&shared_times, 0.99));
        println!("## replicas: a call with a policy budget, decided in process or in Redis");
        println!(
            "{} calls each ({rounds} rounds), one client, path_info over stateless HTTP",
            local_times.len()
        );
        println!("| budget decided | p50 (µs) | p99 (µs) |");
        println!("|---|---|---|");
        println!("| in process | {l50:.0} | {l99:.0} |");
        println!("| in Redis (loopback) | {s50:.0} | {s99:.0} |");
        println!(
            "| difference (the shared decision) | {:.0} | {:.0} |",
            s50 - l50,
            s99 - l99
        );
        for client in [local_client, shared_client] {
            client.cancel().await.unwrap();
        }
    });
}
