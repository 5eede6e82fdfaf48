//! `toolport auth list` and `toolport auth revoke ID`: the operator's view of the built-in
//! server's grants, read from (and revoked in) the state folder the server uses. A running
//! server sees a revocation at its next request ([`super::store`] reads the file again when it
//! changed). Nothing printed is secret: grants hold only hashes, and those are not shown.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::super::settings::OAuthSettings;
use super::super::settings::builtin::default_state_dir;
use super::store::{Grant, Store};

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

fn open(dir: &Path) -> Result<Store, String> {
    if !dir.join("grants.json").is_file() {
        return Err(format!(
            "no grants in {}: the built-in server has not granted anything there (is this the state folder the server uses? give its config, or --oauth-state-dir)",
            dir.display()
        ));
    }
    Store::open(dir).map_err(|e| e.to_string())
}

/// The grants in `dir`, as a table or JSON lines.
pub(crate) fn list(dir: &Path, as_json: bool) -> Result<String, String> {
    let grants = match open(dir) {
        Ok(store) => store.grants().map_err(|e| e.to_string())?,
        Err(_) if !dir.exists() => Vec::new(),
        Err(error) => return Err(error),
    };
    if as_json {
        return Ok(grants
            .iter()
            .map(|g| row_json(g).to_string())
            .collect::<Vec<_>>()
            .join("\n"));
    }
    if grants.is_empty() {
        return Ok(format!("no grants (state folder {})", dir.display()));
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

/// End grant `id` in `dir`.
pub(crate) fn revoke(dir: &Path, id: &str) -> Result<String, String> {
    let store = open(dir)?;
    if store.revoke(id).map_err(|e| e.to_string())? {
        Ok(format!("revoked grant {id}"))
    } else {
        Err(format!(
            "no grant {id:?} in {} (`toolport auth list` shows the grants)",
            dir.display()
        ))
    }
}
