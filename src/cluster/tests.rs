//! The shared decisions against a real `redis-server` (Debian's; skipped with a note without
//! it, required in CI by `TOOLPORT_REQUIRE_REDIS`): totals, rates and calls at once counted
//! across two replicas' clusters, refunds, places freed when a call ends or its replica
//! leaves, all-or-nothing over several budgets, and a store that is away.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../tests/it/common/redis.rs"]
pub(crate) mod redis;

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolport_tools::host::config::FileReplicas;

use super::*;

/// How long a test waits for something given back in the background.
const PATIENCE: Duration = Duration::from_secs(10);

/// A connected cluster on `url` as replica `id`, beating once.
pub(crate) async fn cluster(url: &str, id: &str) -> Arc<Cluster> {
    let file = FileReplicas {
        redis_url: Some(url.to_owned()),
        id: Some(id.to_owned()),
        ..FileReplicas::default()
    };
    let settings = ReplicaSettings::load(&file, &ReplicaArgs::default(), |_| None)
        .unwrap()
        .unwrap();
    let cluster = Cluster::new(settings).unwrap();
    cluster.store.connect().await.unwrap();
    cluster.beat().await.unwrap();
    cluster
}

fn budget(name: &str, calls: Option<u64>, rate: Option<u32>, running: Option<u32>) -> Budget {
    Budget {
        name: name.to_owned(),
        max_calls: calls,
        per_minute: rate,
        max_running: running,
    }
}

fn refusal(result: Result<Lease, Refused>) -> Refusal {
    match result {
        Err(Refused::Over(refusal)) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Admit `budgets` until it is admitted (something is being given back in the background).
async fn admitted_eventually(cluster: &Arc<Cluster>, budgets: &[Budget]) -> Lease {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match cluster.admit(budgets).await {
            Ok(lease) => return lease,
            Err(refused) => assert!(Instant::now() < deadline, "still refused: {refused:?}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A Redis and two replicas' clusters on it, or `None` (skipped) without `redis-server`.
async fn two_replicas() -> Option<(redis::Redis, Arc<Cluster>, Arc<Cluster>)> {
    let redis = redis::Redis::start(redis::redis_server()?).await;
    let a = cluster(&redis.url(), "a").await;
    let b = cluster(&redis.url(), "b").await;
    Some((redis, a, b))
}

#[tokio::test]
async fn shared_budgets_count_across_replicas() {
    let Some((_redis, a, b)) = two_replicas().await else {
        return;
    };

    // A total of 3, spent from both replicas; a refund gives one back.
    let total = [budget("total", Some(3), None, None)];
    let first = a.admit(&total).await.unwrap();
    drop(b.admit(&total).await.unwrap());
    drop(a.admit(&total).await.unwrap());
    let refused = refusal(b.admit(&total).await);
    assert_eq!((refused.index, refused.limit), (0, SharedLimit::Calls));
    assert_eq!(refused.retry_after, None);
    first.refund();
    drop(admitted_eventually(&b, &total).await);
    refusal(a.admit(&total).await);

    // A rate of 3 a minute: a burst of 3, then one every 20 s.
    let rate = [budget("rate", None, Some(3), None)];
    for cluster in [&a, &b, &a] {
        drop(cluster.admit(&rate).await.unwrap());
    }
    let refused = refusal(b.admit(&rate).await);
    assert_eq!(refused.limit, SharedLimit::Rate);
    let wait = refused.retry_after.unwrap();
    assert!(
        wait > Duration::from_secs(15) && wait <= Duration::from_secs(20),
        "{wait:?}"
    );

    // Two at once: a third waits until one ends.
    let running = [budget("running", None, None, Some(2))];
    let held = a.admit(&running).await.unwrap();
    let _other = b.admit(&running).await.unwrap();
    assert_eq!(refusal(a.admit(&running).await).limit, SharedLimit::Running);
    drop(held);
    let _third = admitted_eventually(&b, &running).await;

    // All or nothing: refused by the second budget, the first counted nothing.
    let first_only = [budget("pair-1", Some(1), None, None)];
    let pair = [
        budget("pair-1", Some(1), None, None),
        budget("pair-2", Some(1), None, None),
    ];
    drop(
        b.admit(&[budget("pair-2", Some(1), None, None)])
            .await
            .unwrap(),
    );
    assert_eq!(refusal(a.admit(&pair).await).index, 1);
    drop(a.admit(&first_only).await.unwrap());
}

#[tokio::test]
async fn a_replica_that_leaves_frees_its_calls_places() {
    let Some((_redis, a, b)) = two_replicas().await else {
        return;
    };
    let one = [budget("one", None, None, Some(1))];
    // `a` dies mid-call: its lease is never dropped.
    std::mem::forget(a.admit(&one).await.unwrap());
    assert_eq!(refusal(b.admit(&one).await).limit, SharedLimit::Running);
    a.leave().await;
    drop(b.admit(&one).await.unwrap());
    let listed = b.replicas().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|r| (r.id.as_str(), r.live))
            .collect::<Vec<_>>(),
        [("b", true)]
    );
}

#[tokio::test]
async fn a_store_that_is_away_answers_at_once() {
    let Some(program) = redis::redis_server() else {
        return;
    };
    let mut redis = redis::Redis::start(program).await;
    let a = cluster(&redis.url(), "a").await;
    assert!(a.health().up);
    redis.stop().await;
    let total = [budget("total", Some(10), None, None)];
    let started = Instant::now();
    assert!(matches!(a.admit(&total).await, Err(Refused::Away(_))));
    // Dropped after the failure: the next call does not even try.
    assert!(matches!(
        a.admit(&total).await,
        Err(Refused::Away(Away::NotConnected(_)))
    ));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(!a.health().up);
    redis.resume().await;
    a.store.connect().await.unwrap();
    drop(a.admit(&total).await.unwrap());
    assert!(a.health().up);
}
