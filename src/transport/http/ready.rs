//! Readiness and the replica registry over HTTP.
//!
//! - `/readyz`, outside the gate (a load balancer's or Kubernetes' probe carries no token):
//!   `200 {"status":"ready"}` when this replica can take every call. With `[replicas]` it
//!   says whether the shared store answers; while it is away, `503 {"status":"unavailable"}`
//!   when calls that need a shared decision are refused (`when_redis_away = "refuse"`: a
//!   balancer should prefer another replica), or `200 {"status":"degraded"}` when each replica
//!   decides alone (`"local"`). It shows the replica's id and the store's state, nothing else:
//!   no address, no error text.
//! - `/healthz` stays liveness alone ("ok" while the process serves): a Redis outage must not
//!   make an orchestrator restart healthy replicas.
//! - `/replicas`, behind the gate: this replica, the store's state with the reason it is away,
//!   and every replica the registry knows (id, internal address, live or gone, last beat).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::cluster::{Cluster, WhenAway};

/// `/readyz`.
pub(super) fn readyz_route(cluster: Option<Arc<Cluster>>) -> Router {
    Router::new().route(
        "/readyz",
        get(move || {
            let cluster = cluster.clone();
            async move { readiness(cluster.as_deref()) }
        }),
    )
}

/// `/replicas` (the caller puts it behind the gate).
pub(super) fn replicas_route(cluster: Option<Arc<Cluster>>) -> Router {
    Router::new().route(
        "/replicas",
        get(move || {
            let cluster = cluster.clone();
            async move { registry(cluster.as_deref()).await }
        }),
    )
}

fn readiness(cluster: Option<&Cluster>) -> Response {
    let Some(cluster) = cluster else {
        return Json(json!({"status": "ready"})).into_response();
    };
    let health = cluster.health();
    if health.up {
        return Json(json!({"status": "ready", "replica": cluster.id(), "shared_store": "up"}))
            .into_response();
    }
    let (status, word) = match cluster.when_away() {
        WhenAway::Refuse => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        WhenAway::Local => (StatusCode::OK, "degraded"),
    };
    let body = json!({
        "status": word,
        "replica": cluster.id(),
        "shared_store": "away",
        "away_since": unix_seconds(health.since),
        "when_redis_away": cluster.when_away().name(),
    });
    (status, Json(body)).into_response()
}

async fn registry(cluster: Option<&Cluster>) -> Response {
    let Some(cluster) = cluster else {
        return Json(json!({
            "replicas": [],
            "shared_store": null,
            "note": "no shared store is configured ([replicas] redis_url): this server is the only replica"
        }))
        .into_response();
    };
    let replicas = cluster.replicas().await;
    let health = cluster.health();
    let store = json!({
        "up": health.up,
        "since": unix_seconds(health.since),
        "reason": health.reason,
        "when_redis_away": cluster.when_away().name(),
    });
    let body: Value = match replicas {
        Ok(list) => json!({"replica": cluster.id(), "shared_store": store, "replicas": list}),
        Err(away) => json!({
            "replica": cluster.id(),
            "shared_store": store,
            "replicas": null,
            "error": format!("the registry cannot be read: {away}"),
        }),
    };
    Json(body).into_response()
}

fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
