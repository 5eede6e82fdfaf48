//! `toolport auth list` and `toolport auth revoke ID`: the operator's view of the built-in
//! server's grants, read from (and revoked in) where the server keeps them: the state folder,
//! or with replicas (`[replicas] redis_url`) the shared store. A running server sees a
//! revocation at its next request ([`super::store`] reads the file again when it changed; every
//! replica asks Redis). Nothing printed is secret: grants hold only hashes, and those are not
//! shown.

use std::path::PathBuf;

use serde_json::json;

use super::super::settings::OAuthSettings;
use super::super::settings::builtin::default_state_dir;
use super::store::local::{GRANTS_FILE, Local};
use super::store::shared::Shared;
use super::store::{Grant, Store};
use crate::cluster::{Cluster, RETRY_WHEN_AWAY, ReplicaSettings};

/// How many times a command tries to reach Redis (each bounded by `redis_timeout`, a second
/// apart): it has no heartbeat to reconnect for it, and a busy Redis may miss one bound.
const CONNECT_ATTEMPTS: u32 = 3;

/// The state folder of the configured built-in server (`oauth`), or the default one.
pub(crate) fn state_dir(oauth: Option<&OAuthSettings>) -> Result<PathBuf, String> {
    oauth
        .and_then(|oauth| oauth.builtin.as_ref())
        .map(|builtin| builtin.state_dir.clone())
        .or_else(default_state_dir)
        .ok_or_else(|| {
            "this platform has no data folder; give the state folder with --oauth-state-dir"
                .to_owned()
        })
}

/// Where the grants are, and how to name that place: `Ok(None)` when the state folder does
/// not exist (nothing was ever granted there).
async fn open(
    oauth: Option<&OAuthSettings>,
    replicas: Option<&ReplicaSettings>,
) -> Result<Option<(Store, String)>, String> {
    if let Some(replicas) = replicas {
        let cluster = Cluster::new(replicas.clone())?;
        let mut attempts = 1;
        while let Err(away) = cluster.connect().await {
            if attempts == CONNECT_ATTEMPTS {
                return Err(format!(
                    "the grants are in the shared store ({}), which cannot be reached: {away}",
                    replicas.redis_url
                ));
            }
            attempts += 1;
            tokio::time::sleep(RETRY_WHEN_AWAY).await;
        }
        let place = format!("the shared store {}", replicas.redis_url);
        return Ok(Some((Store::Shared(Shared::new(cluster)), place)));
    }
    let dir = state_dir(oauth)?;
    if !dir.exists() {
        return Ok(None);
    }
    if !dir.join(GRANTS_FILE).is_file() {
        return Err(format!(
            "no grants in {}: the built-in server has not granted anything there (is this the state folder the server uses? give its config, or --oauth-state-dir)",
            dir.display()
        ));
    }
    let store = Local::open(&dir).map_err(|e| e.to_string())?;
    Ok(Some((
        Store::Local(store),
        format!("state folder {}", dir.display()),
    )))
}

/// A time as RFC 3339 (UTC), or `-` for none.
fn time(seconds: u64) -> String {
    if seconds == 0 {
        return "-".to_owned();
    }
    humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds),
    )
    .to_string()
}

/// The grants, as a table or JSON lines.
pub(crate) async fn list(
    oauth: Option<&OAuthSettings>,
    replicas: Option<&ReplicaSettings>,
    as_json: bool,
) -> Result<String, String> {
    let (grants, place) = match open(oauth, replicas).await? {
        Some((store, place)) => (store.grants().await.map_err(|e| e.to_string())?, place),
        None => (
            Vec::new(),
            format!("state folder {}", state_dir(oauth)?.display()),
        ),
    };
    if as_json {
        return Ok(grants
            .iter()
            .map(|g| row_json(g).to_string())
            .collect::<Vec<_>>()
            .join("\n"));
    }
    if grants.is_empty() {
        return Ok(format!("no grants ({place})"));
    }
    let mut out = String::from("ID\tCLIENT\tCLIENT ID\tSUBJECT\tSCOPES\tCREATED\tLAST USED");
    for g in &grants {
        out.push_str(&format!(
            "\n{}\t{}\t{}\t{}\t{}\t{}\t{}",
            g.id,
            g.client_name.as_deref().unwrap_or("-"),
            g.client_id,
            g.subject,
            g.scopes.join(" "),
            time(g.created),
            time(g.last_used),
        ));
    }
    Ok(out)
}

fn row_json(g: &Grant) -> serde_json::Value {
    json!({
        "id": g.id,
        "client_name": g.client_name,
        "client_id": g.client_id,
        "subject": g.subject,
        "scopes": g.scopes,
        "resource": g.resource,
        "created": time(g.created),
        "last_used": time(g.last_used),
    })
}

/// End grant `id`.
pub(crate) async fn revoke(
    oauth: Option<&OAuthSettings>,
    replicas: Option<&ReplicaSettings>,
    id: &str,
) -> Result<String, String> {
    let Some((store, place)) = open(oauth, replicas).await? else {
        return Err(format!(
            "no grants in {}: the built-in server has not granted anything there (is this the state folder the server uses? give its config, or --oauth-state-dir)",
            state_dir(oauth)?.display()
        ));
    };
    if store.revoke(id).await.map_err(|e| e.to_string())? {
        Ok(format!("revoked grant {id}"))
    } else {
        Err(format!(
            "no grant {id:?} in {place} (`toolport auth list` shows the grants)"
        ))
    }
}
