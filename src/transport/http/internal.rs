//! `/internal/jobs`: where the other replicas send requests for this replica's jobs and tasks
//! (`[replicas]`, [`crate::cluster::jobs`]). Outside the clients' gate: no client token is
//! taken here, nor ever sent by a replica; each call must carry a valid signature under the
//! operator's internal secret ([`crate::cluster::internal`]), checked before its body is read
//! as a request. Without an internal secret the path does not exist (the gate answers it as any
//! unknown path).

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;

use crate::cluster::Cluster;
use crate::cluster::internal::PATH;
use crate::cluster::jobs::Forwarded;
use crate::server::{Shared, forwarded};

/// The route, when this replica takes forwarded requests (it has an internal secret).
pub(super) fn routes(shared: Arc<Shared>, max_body_bytes: usize) -> Router {
    let Some(cluster) = shared.principal_budgets.cluster().cloned() else {
        return Router::new();
    };
    if cluster.verifier().is_none() {
        return Router::new();
    }
    Router::new()
        .route(
            PATH,
            post(move |headers: HeaderMap, body: Bytes| {
                let (shared, cluster) = (shared.clone(), cluster.clone());
                async move { handle(&shared, &cluster, &headers, &body).await }
            }),
        )
        .layer(DefaultBodyLimit::max(max_body_bytes))
}

async fn handle(
    shared: &Arc<Shared>,
    cluster: &Cluster,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let Some(verifier) = cluster.verifier() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Err(why) = verifier.check(|name| headers.get(name)?.to_str().ok(), body) {
        tracing::warn!(why, "refused an internal call");
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": format!("not a valid internal call: {why}")})),
        )
            .into_response();
    }
    let request: Forwarded = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": format!("not a forwarded request: {e}")})),
            )
                .into_response();
        }
    };
    Json(forwarded::answer(shared, &cluster.work_name(), request).await).into_response()
}
