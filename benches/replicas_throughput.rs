//! Issue 43: calls/s through three replicas against one. Three `toolport serve --http
//! --stateless` replicas (the bench's binary) share a `redis-server` on loopback, each call's
//! policy budget decided there (`[replicas]`, one Lua script per call, as in `replicas.rs`);
//! two `haproxy`s stand in front of them, round robin, as the replica tests run it: one with a
//! single replica behind it, one with all three. [`CLIENTS`] rmcp clients at once call
//! `path_info` through one balancer, each its next call as soon as the last returns, for
//! [`WINDOW`]; the calls completed per second is the throughput.
//!
//! Each round measures both balancers, the order alternating, so drift in the machine's load
//! falls on both alike; [`ROUNDS`] rounds after a warm-up window each. Reported: each
//! balancer's median calls/s over the rounds, and the median of the per-round ratios.
//!
//! On one machine the replicas share its cores (and the balancer's, Redis's and the clients'):
//! the ratio shows what spreading over processes gains there, not what three machines would.
//!
//! Run with `cargo bench --bench replicas_throughput` (needs `redis-server` and `haproxy`:
//! Debian's packages; skipped with a note without them). Under `cargo test --benches` it runs a
//! short window as a smoke test.

// A benchmark is not library code: a failed setup step should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
// Printing the results to stdout is how this bench reports them.
#![allow(clippy::print_stdout)]

mod common;
// The tests' redis-server and haproxy starters (loopback, free ports, temporary folders).
#[allow(dead_code)]
#[path = "../tests/it/common/haproxy.rs"]
mod haproxy;
#[allow(dead_code)]
#[path = "../tests/it/common/redis.rs"]
mod redis;

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::common::args::bench_mode;
use crate::common::http::{Client, Server, client, serve};
use crate::common::stats::median;
use crate::haproxy::Haproxy;

/// Clients calling at once through a balancer: enough to keep three replicas busy on a small
/// machine (each call is a few hundred µs of server work), few enough not to measure the
/// clients' own scheduling.
const CLIENTS: usize = 12;
/// How long each measurement lasts.
const WINDOW: Duration = Duration::from_secs(3);
/// Rounds (each measures both balancers, in alternating order).
const ROUNDS: usize = 5;
/// A policy budget that admits every call of the bench, so each call is decided (in Redis) and
/// counted: a total (a rate's largest allowed value, 60,000 a minute, is within what three
/// replicas serve).
const POLICY: &str = "[http.principals]\n[[http.principals.rules]]\nname = \"team\"\nmatch_all = true\nmax_calls = 1000000000\n";

/// haproxy, round robin, in front of `replicas`.
async fn balancer(program: &std::path::Path, replicas: &[&Server]) -> Haproxy {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, s)| format!("  server r{i} {}\n", s.url.trim_start_matches("http://")))
        .collect();
    Haproxy::start(program, &format!("  balance roundrobin\n{servers}")).await
}

/// The calls `clients` complete, each one after another, within `window`: calls per second.
async fn throughput(clients: &[Client], window: Duration) -> f64 {
    let args = json!({"path": "."}).as_object().cloned().unwrap();
    let started = Instant::now();
    let counts = futures::future::join_all(clients.iter().map(|client| {
        let args = args.clone();
        async move {
            let mut calls = 0_u64;
            while started.elapsed() < window {
                let result = client
                    .call_tool(CallToolRequestParams::new("path_info").with_arguments(args.clone()))
                    .await
                    .unwrap();
                assert_ne!(result.is_error, Some(true), "{result:?}");
                calls += 1;
            }
            calls
        }
    }))
    .await;
    counts.iter().sum::<u64>() as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let (Some(redis_server), Some(haproxy)) = (
        redis::redis_server(),
        redis::required_program("haproxy", "/usr/sbin"),
    ) else {
        return;
    };
    let (window, rounds) = if bench_mode() {
        (WINDOW, ROUNDS)
    } else {
        (Duration::from_millis(200), 1)
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let redis = redis::Redis::start(redis_server).await;
        let dir = tempfile::tempdir().unwrap();
        let mut replicas = Vec::new();
        for id in ["r1", "r2", "r3"] {
            let config = format!(
                "[replicas]\nredis_url = \"{}\"\nid = \"{id}\"\n{POLICY}",
                redis.url()
            );
            replicas.push(serve(dir.path(), id, &config, &["--stateless"]).await);
        }
        let one = balancer(&haproxy, &replicas[..1].iter().collect::<Vec<_>>()).await;
        let three = balancer(&haproxy, &replicas.iter().collect::<Vec<_>>()).await;
        let mut through_one = Vec::new();
        let mut through_three = Vec::new();
        for _ in 0..CLIENTS {
            through_one.push(client(&one.url).await);
            through_three.push(client(&three.url).await);
        }
        throughput(&through_one, window).await;
        throughput(&through_three, window).await;
        let (mut ones, mut threes, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (a, b) = if round % 2 == 0 {
                let a = throughput(&through_one, window).await;
                (a, throughput(&through_three, window).await)
            } else {
                let b = throughput(&through_three, window).await;
                (throughput(&through_one, window).await, b)
            };
            ones.push(a);
            threes.push(b);
            ratios.push(b / a);
        }
        println!("## replicas_throughput: calls/s through haproxy to one replica and to three");
        println!(
            "{CLIENTS} clients at once, path_info over stateless HTTP, each call's budget decided in Redis; {rounds} rounds of {window:?}"
        );
        println!("| behind the balancer | calls/s (median) |");
        println!("|---|---:|");
        println!("| one replica | {:.0} |", median(&ones));
        println!("| three replicas | {:.0} |", median(&threes));
        println!("| three / one (median of the rounds' ratios) | {:.2}× |", median(&ratios));
        for client in through_one.into_iter().chain(through_three) {
            client.cancel().await.unwrap();
        }
    });
}
