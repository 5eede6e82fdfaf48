//! The shared home's rules against a real `redis-server` (Debian's; skipped with a note without
//! it, required in CI by `TOOLPORT_REQUIRE_REDIS`), through two replicas' stores on one Redis:
//! a refresh token presented twice at once (on one replica or two) is rotated once and then
//! caught as a reuse, its grant and every index entry gone; a revocation on one replica is seen
//! on the other; a code is taken once; a pending approval's wrong attempts are counted across
//! replicas and it is decided once; published keys are found by the others and forgotten when
//! no token they signed can still be valid; a store that is away answers at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use super::super::tests::grant;
use super::super::{Attempt, Client, Issued, Pending, Refresh, Store, StoreError, hash};
use super::*;
use crate::cluster::tests::{cluster, redis as process};

/// Every await here is bounded by this.
const PATIENCE: Duration = Duration::from_secs(10);

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(PATIENCE, f).await.expect("timed out")
}

async fn store(url: &str, id: &str) -> Store {
    Store::Shared(Shared::new(within(cluster(url, id)).await))
}

/// A Redis and two replicas' stores on it, or `None` (skipped) without `redis-server`.
async fn two_replicas() -> Option<(process::Redis, Store, Store)> {
    let redis = within(process::Redis::start(process::redis_server()?)).await;
    let a = store(&redis.url(), "a").await;
    let b = store(&redis.url(), "b").await;
    Some((redis, a, b))
}

/// How many refresh-token hashes the index holds.
async fn indexed(store: &Store) -> usize {
    let Store::Shared(shared) = store else {
        unreachable!()
    };
    let (_, index) = shared.grant_keys();
    within(shared.cluster.run(|mut connection| async move {
        redis::cmd("HLEN")
            .arg(index)
            .query_async(&mut connection)
            .await
    }))
    .await
    .unwrap()
}

#[tokio::test]
async fn a_refresh_token_presented_twice_at_once_is_rotated_once_then_caught() {
    let Some((_redis, a, b)) = two_replicas().await else {
        return;
    };
    const GRANTS: usize = 20;
    for i in 0..GRANTS {
        within(a.add_grant(grant(&format!("g{i}"), &format!("r{i}"))))
            .await
            .unwrap();
    }
    assert_eq!(indexed(&a).await, GRANTS);
    // Each grant's token presented on both replicas at the same moment, and twice on `a`.
    let outcomes = within(futures::future::join_all((0..GRANTS).map(|i| {
        let (a, b) = (&a, &b);
        async move {
            let presented = hash(&format!("r{i}"));
            let next = [
                hash(&format!("a{i}")),
                hash(&format!("b{i}")),
                hash(&format!("c{i}")),
            ];
            let (x, y, z) = tokio::join!(
                a.rotate(&presented, &next[0]),
                b.rotate(&presented, &next[1]),
                a.rotate(&presented, &next[2]),
            );
            [x.unwrap(), y.unwrap(), z.unwrap()]
        }
    })))
    .await;
    for (i, outcome) in outcomes.iter().enumerate() {
        let rotated = outcome
            .iter()
            .filter(|r| matches!(r, Refresh::Rotated(_)))
            .count();
        let reused = outcome
            .iter()
            .filter(|r| matches!(r, Refresh::Reused(_)))
            .count();
        // One presentation rotates; the next finds it rotated and revokes the grant; a third
        // finds nothing (or, if it came second, the reuse).
        assert_eq!(rotated, 1, "grant {i}: {outcome:?}");
        assert!(reused >= 1, "grant {i}: {outcome:?}");
        assert!(!within(b.grant_alive(&format!("g{i}"))).await.unwrap());
    }
    assert_eq!(
        indexed(&a).await,
        0,
        "every hash left the index with its grant"
    );
    assert!(within(a.grants()).await.unwrap().is_empty());
}

#[tokio::test]
async fn rotation_reuse_and_revocation_are_seen_by_every_replica() {
    let Some((_redis, a, b)) = two_replicas().await else {
        return;
    };
    within(a.add_grant(grant("g1", "r1"))).await.unwrap();
    within(a.add_grant(grant("g2", "s1"))).await.unwrap();
    let Refresh::Rotated(g) = within(b.rotate(&hash("r1"), &hash("r2"))).await.unwrap() else {
        panic!("not rotated")
    };
    assert_eq!(g.rotated, [hash("r1")]);
    assert_eq!(
        within(a.current_grant(&hash("r2")))
            .await
            .unwrap()
            .unwrap()
            .id,
        "g1"
    );
    assert!(
        within(a.current_grant(&hash("r1")))
            .await
            .unwrap()
            .is_none()
    );
    // r1 again, on the other replica: the grant is revoked, r2 with it.
    assert!(matches!(
        within(a.rotate(&hash("r1"), &hash("r3"))).await.unwrap(),
        Refresh::Reused(g) if g.id == "g1"
    ));
    assert_eq!(
        within(b.rotate(&hash("r2"), &hash("r4"))).await.unwrap(),
        Refresh::Unknown
    );
    assert!(within(b.grant_alive("g2")).await.unwrap());
    // Revoked on one replica by a rotated token: gone on the other.
    within(b.rotate(&hash("s1"), &hash("s2"))).await.unwrap();
    assert!(within(a.revoke_by_refresh(&hash("s1"))).await.unwrap());
    assert!(!within(b.grant_alive("g2")).await.unwrap());
    assert!(!within(b.revoke("g2")).await.unwrap());
    assert_eq!(indexed(&a).await, 0);
}

fn issued() -> Issued {
    Issued {
        client_id: "c".to_owned(),
        client_name: None,
        redirect_uri: "http://127.0.0.1:9/cb".to_owned(),
        challenge: "x".to_owned(),
        resource: "http://127.0.0.1:1/mcp".to_owned(),
        issuer: "http://127.0.0.1:1".to_owned(),
        scopes: vec!["tools:read".to_owned()],
    }
}

fn pending() -> Pending {
    Pending {
        client_id: "c".to_owned(),
        client_name: Some("a client".to_owned()),
        redirect_uri: "http://127.0.0.1:9/cb".to_owned(),
        redirect_host: "127.0.0.1".to_owned(),
        redirect_origin: "http://127.0.0.1:9".to_owned(),
        state: Some("st".to_owned()),
        challenge: "x".to_owned(),
        resource: "http://127.0.0.1:1/mcp".to_owned(),
        issuer: "http://127.0.0.1:1".to_owned(),
        granted: vec!["tools:read".to_owned()],
        withheld: Vec::new(),
        csrf: "csrf".to_owned(),
        one_time_code: Some(hash("code")),
        attempts: 0,
        replica: Some("a".to_owned()),
    }
}

#[tokio::test]
async fn codes_and_approvals_are_used_once_across_replicas() {
    let Some((_redis, a, b)) = two_replicas().await else {
        return;
    };
    // A code made on one replica is exchanged on another, once, even when both try at once.
    let code = hash("code-1");
    within(a.add_code(&code, &issued())).await.unwrap();
    let (x, y) = within(async { tokio::join!(a.take_code(&code), b.take_code(&code)) }).await;
    let taken: Vec<Issued> = [x.unwrap(), y.unwrap()].into_iter().flatten().collect();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].scopes, ["tools:read"]);

    // Pending approvals: bounded in number, attempts counted across replicas.
    assert!(within(a.add_pending("p1", &pending(), 2)).await.unwrap());
    assert!(within(b.add_pending("p2", &pending(), 2)).await.unwrap());
    assert!(!within(a.add_pending("p3", &pending(), 2)).await.unwrap());
    let seen = within(b.pending("p1")).await.unwrap().unwrap();
    assert_eq!(seen.client_name.as_deref(), Some("a client"));
    assert_eq!(seen.replica.as_deref(), Some("a"));
    assert!(matches!(
        within(a.wrong_attempt("p1", 3)).await.unwrap(),
        Attempt::Counted(p) if p.attempts == 1
    ));
    assert!(matches!(
        within(b.wrong_attempt("p1", 3)).await.unwrap(),
        Attempt::Counted(p) if p.attempts == 2
    ));
    assert_eq!(within(a.pending("p1")).await.unwrap().unwrap().attempts, 2);
    assert!(matches!(
        within(a.wrong_attempt("p1", 3)).await.unwrap(),
        Attempt::Ended(p) if p.attempts == 3
    ));
    assert!(matches!(
        within(b.wrong_attempt("p1", 3)).await.unwrap(),
        Attempt::Gone
    ));
    assert!(within(b.pending("p1")).await.unwrap().is_none());
    // Decided once, whichever replica gets the approval first.
    let (x, y) = within(async { tokio::join!(a.take_pending("p2"), b.take_pending("p2")) }).await;
    assert_eq!(
        [x.unwrap(), y.unwrap()].iter().flatten().count(),
        1,
        "one replica took it"
    );
    // Room again for new ones.
    assert!(within(a.add_pending("p3", &pending(), 2)).await.unwrap());

    // A client registered on one replica is known on the other.
    let client = Client {
        client_id: "tp-1".to_owned(),
        client_name: Some("c".to_owned()),
        redirect_uris: vec!["http://127.0.0.1:9/cb".to_owned()],
        created: 1,
    };
    within(a.add_client(client.clone())).await.unwrap();
    assert_eq!(within(b.client("tp-1")).await.unwrap(), Some(client));
    assert_eq!(within(b.client("tp-2")).await.unwrap(), None);
}

#[tokio::test]
async fn published_keys_are_found_by_the_others_until_they_expire() {
    let Some((_redis, a, b)) = two_replicas().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let signer = super::super::super::keys::Signer::load_or_create(dir.path()).unwrap();
    let kid = signer.jwk().common.key_id.clone().unwrap();
    within(a.publish_key(signer.jwk(), Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(
        within(b.published_keys(Some(&kid))).await.unwrap(),
        [signer.jwk().clone()]
    );
    assert_eq!(within(b.published_keys(None)).await.unwrap().len(), 1);
    assert!(
        within(b.published_keys(Some("other")))
            .await
            .unwrap()
            .is_empty()
    );
    // Published again for less: never shortened.
    within(a.publish_key(signer.jwk(), Duration::from_millis(1)))
        .await
        .unwrap();
    assert_eq!(within(b.published_keys(Some(&kid))).await.unwrap().len(), 1);

    // Another key valid for a moment only: gone once its time has passed.
    let other_dir = tempfile::tempdir().unwrap();
    let other = super::super::super::keys::Signer::load_or_create(other_dir.path()).unwrap();
    let other_kid = other.jwk().common.key_id.clone().unwrap();
    within(b.publish_key(other.jwk(), Duration::from_millis(1)))
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !within(a.published_keys(Some(&other_kid)))
        .await
        .unwrap()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the expired key is still listed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(within(a.published_keys(None)).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_store_that_is_away_answers_at_once() {
    let Some(program) = process::redis_server() else {
        return;
    };
    let mut redis = within(process::Redis::start(program)).await;
    let a = store(&redis.url(), "a").await;
    within(a.add_grant(grant("g1", "r1"))).await.unwrap();
    within(redis.stop()).await;
    let started = Instant::now();
    assert!(matches!(
        within(a.grant_alive("g1")).await,
        Err(StoreError::Away(_))
    ));
    assert!(matches!(
        within(a.rotate(&hash("r1"), &hash("r2"))).await,
        Err(StoreError::Away(_))
    ));
    assert!(matches!(
        within(a.take_code(&hash("c"))).await,
        Err(StoreError::Away(_))
    ));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
