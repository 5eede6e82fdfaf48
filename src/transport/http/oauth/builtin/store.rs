//! What the built-in authorization server keeps across restarts, in its state folder: the
//! clients that registered (RFC 7591) and the grants (one per approval: client, subject,
//! scopes, the resource, when created and last used, and the current refresh token's hash).
//!
//! **Only hashes.** A refresh token is stored as its SHA-256: a copy of the folder lets no one
//! refresh. The hashes of rotated (used) refresh tokens are kept with their grant so that a
//! reuse is recognised and the whole grant revoked (OAuth 2.1 §4.3.1: a rotated token presented
//! again means one of two parties holds a stolen copy).
//!
//! **Files.** One JSON document, `grants.json`, written whole to a temporary file beside it and
//! renamed over it (a crash leaves the old or the new file, never half of one). On Unix the
//! folder is made 0700 and the files 0600 (only the operator's account reads them). On Windows
//! the files inherit the folder's ACL: the default state folder is under the user's
//! `%APPDATA%`, which only that user (and administrators) can read; no mode is claimed there.
//!
//! **Two writers.** `toolport auth revoke` changes the file while a server runs: every access
//! reads the file again when its modification time or length changed, so a revocation from the
//! command line ends the grant's next refresh and its access tokens' next request. A write
//! from each at the same instant can lose one of the two changes (the file is never torn);
//! revoking is the one command-line write and is rare.
//!
//! The file operations are blocking and small (kilobytes): they run under a plain mutex on the
//! calling task, which is simpler than a blocking pool for a single-person server.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The grants file in the state folder.
const GRANTS_FILE: &str = "grants.json";
/// Most registered clients kept: registration is open (that is how claude.ai and mcp-remote
/// register), so the oldest client without a grant is forgotten past this, bounding the file.
pub(crate) const MAX_CLIENTS: usize = 200;
/// Rotated refresh-token hashes kept per grant for reuse detection: a client refreshing every
/// ten minutes for five hours; an older token presented again is then just unknown.
const MAX_ROTATED: usize = 32;

/// Why the state cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the OAuth state in {path} cannot be {action}: {source}")]
pub(crate) struct StoreError {
    path: PathBuf,
    action: &'static str,
    source: std::io::Error,
}

/// A registered client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Client {
    pub(crate) client_id: String,
    /// What it calls itself (shown on the consent page as its claim, not as a fact).
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
    /// Seconds since the Unix epoch.
    pub(crate) created: u64,
}

/// One approval: what a client may do until it is revoked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) id: String,
    pub(crate) client_id: String,
    pub(crate) client_name: Option<String>,
    pub(crate) subject: String,
    pub(crate) scopes: Vec<String>,
    /// The resource its tokens are for.
    pub(crate) resource: String,
    pub(crate) created: u64,
    pub(crate) last_used: u64,
    /// SHA-256 (hex) of the current refresh token.
    pub(crate) refresh_hash: String,
    /// Hashes of the refresh tokens it replaced, newest last.
    #[serde(default)]
    pub(crate) rotated: Vec<String>,
}

/// The document.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Data {
    #[serde(default)]
    pub(crate) clients: BTreeMap<String, Client>,
    #[serde(default)]
    pub(crate) grants: BTreeMap<String, Grant>,
}

/// What a refresh token turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// The current token of this grant, now rotated: the grant as it is now.
    Rotated(Grant),
    /// A token this grant already rotated away: the grant is revoked.
    Reused(Grant),
    /// Not a token of any grant.
    Unknown,
}

/// The state folder's grants and clients.
#[derive(Debug)]
pub(crate) struct Store {
    path: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    data: Data,
    /// The file's modification time and length when last read or written.
    stamp: Option<(SystemTime, u64)>,
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// SHA-256 of `secret`, hex: how refresh tokens and authorization codes are kept.
pub(crate) fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Make `dir` (and its parents) for state only the owner reads: 0700 on Unix.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Write `bytes` to `path` atomically (a temporary file beside it, renamed over it), readable
/// by the owner only (0600 on Unix, from its creation: never briefly wider).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(error) = written.and_then(|()| fs::rename(&temporary, path)) {
        let _ = fs::remove_file(&temporary);
        return Err(error);
    }
    Ok(())
}

impl Store {
    /// The store in `dir`, made (0700) when missing.
    pub(crate) fn open(dir: &Path) -> Result<Self, StoreError> {
        private_dir(dir).map_err(|source| StoreError {
            path: dir.to_owned(),
            action: "created",
            source,
        })?;
        let store = Self {
            path: dir.join(GRANTS_FILE),
            inner: Mutex::default(),
        };
        store.with(|_| ())?;
        Ok(store)
    }

    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let meta = fs::metadata(&self.path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    }

    /// Run `f` on the current data (read again when the file changed), without writing.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Data) -> R) -> Result<R, StoreError> {
        let mut inner = self.lock();
        self.refresh(&mut inner)?;
        Ok(f(&inner.data))
    }

    /// Run `f` on the current data and write the result.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Data) -> R) -> Result<R, StoreError> {
        let mut inner = self.lock();
        self.refresh(&mut inner)?;
        let result = f(&mut inner.data);
        let error = |source| StoreError {
            path: self.path.clone(),
            action: "written",
            source,
        };
        let bytes =
            serde_json::to_vec_pretty(&inner.data).map_err(|e| error(std::io::Error::other(e)))?;
        write_private(&self.path, &bytes).map_err(error)?;
        inner.stamp = self.stamp();
        Ok(result)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock left consistent data (every change is written whole).
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn refresh(&self, inner: &mut Inner) -> Result<(), StoreError> {
        let stamp = self.stamp();
        if stamp.is_some() && stamp == inner.stamp {
            return Ok(());
        }
        inner.data = match fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError {
                path: self.path.clone(),
                action: "read",
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Data::default(),
            Err(source) => {
                return Err(StoreError {
                    path: self.path.clone(),
                    action: "read",
                    source,
                });
            }
        };
        inner.stamp = stamp;
        Ok(())
    }

    /// Register `client`, forgetting the oldest client without a grant past [`MAX_CLIENTS`].
    pub(crate) fn add_client(&self, client: Client) -> Result<(), StoreError> {
        self.update(|data| {
            while data.clients.len() >= MAX_CLIENTS {
                let granted: Vec<&str> =
                    data.grants.values().map(|g| g.client_id.as_str()).collect();
                let oldest = data
                    .clients
                    .values()
                    .filter(|c| !granted.contains(&c.client_id.as_str()))
                    .min_by_key(|c| c.created)
                    .map(|c| c.client_id.clone());
                match oldest {
                    Some(id) => data.clients.remove(&id),
                    None => break,
                };
            }
            data.clients.insert(client.client_id.clone(), client);
        })
    }

    /// The client `client_id`, when registered.
    pub(crate) fn client(&self, client_id: &str) -> Result<Option<Client>, StoreError> {
        self.with(|data| data.clients.get(client_id).cloned())
    }

    /// Whether grant `id` still stands.
    pub(crate) fn grant_alive(&self, id: &str) -> Result<bool, StoreError> {
        self.with(|data| data.grants.contains_key(id))
    }

    /// Keep a new grant.
    pub(crate) fn add_grant(&self, grant: Grant) -> Result<(), StoreError> {
        self.update(|data| {
            data.grants.insert(grant.id.clone(), grant);
        })
    }

    /// Rotate the refresh token whose hash is `presented` to `next` (a hash too); a reused
    /// token revokes its grant.
    pub(crate) fn rotate(&self, presented: &str, next: &str) -> Result<Refresh, StoreError> {
        self.update(|data| {
            if let Some(grant) = data
                .grants
                .values_mut()
                .find(|g| g.refresh_hash == presented)
            {
                let old = std::mem::replace(&mut grant.refresh_hash, next.to_owned());
                grant.rotated.push(old);
                if grant.rotated.len() > MAX_ROTATED {
                    grant.rotated.remove(0);
                }
                grant.last_used = now();
                return Refresh::Rotated(grant.clone());
            }
            let reused = data
                .grants
                .values()
                .find(|g| g.rotated.iter().any(|h| h == presented))
                .map(|g| g.id.clone());
            match reused.and_then(|id| data.grants.remove(&id)) {
                Some(grant) => Refresh::Reused(grant),
                None => Refresh::Unknown,
            }
        })
    }

    /// End grant `id`; `false` when there is none.
    pub(crate) fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        self.update(|data| data.grants.remove(id).is_some())
    }

    /// End the grant a refresh token (current or rotated) with hash `presented` belongs to.
    pub(crate) fn revoke_by_refresh(&self, presented: &str) -> Result<bool, StoreError> {
        self.update(|data| {
            let id = data
                .grants
                .values()
                .find(|g| g.refresh_hash == presented || g.rotated.iter().any(|h| h == presented))
                .map(|g| g.id.clone());
            id.and_then(|id| data.grants.remove(&id)).is_some()
        })
    }

    /// Every grant, oldest first.
    pub(crate) fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        self.with(|data| {
            let mut grants: Vec<Grant> = data.grants.values().cloned().collect();
            grants.sort_by_key(|g| (g.created, g.id.clone()));
            grants
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(id: &str, refresh: &str) -> Grant {
        Grant {
            id: id.to_owned(),
            client_id: "c".to_owned(),
            client_name: None,
            subject: "owner".to_owned(),
            scopes: vec!["tools:read".to_owned()],
            resource: "http://127.0.0.1:1/mcp".to_owned(),
            created: 1,
            last_used: 1,
            refresh_hash: hash(refresh),
            rotated: Vec::new(),
        }
    }

    #[test]
    fn refresh_tokens_rotate_and_a_reused_one_revokes_the_grant() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.add_grant(grant("g1", "r1")).unwrap();
        store.add_grant(grant("g2", "other")).unwrap();
        let Refresh::Rotated(g) = store.rotate(&hash("r1"), &hash("r2")).unwrap() else {
            panic!("not rotated")
        };
        assert_eq!(g.refresh_hash, hash("r2"));
        assert_eq!(
            store.rotate(&hash("nope"), &hash("x")).unwrap(),
            Refresh::Unknown
        );
        // r1 again: reuse, the grant is gone, and r2 with it.
        assert!(matches!(
            store.rotate(&hash("r1"), &hash("r3")).unwrap(),
            Refresh::Reused(g) if g.id == "g1"
        ));
        assert!(!store.grant_alive("g1").unwrap());
        assert_eq!(
            store.rotate(&hash("r2"), &hash("r4")).unwrap(),
            Refresh::Unknown
        );
        assert!(store.grant_alive("g2").unwrap(), "another grant stands");
    }

    #[test]
    fn a_restart_and_another_process_see_the_same_grants() {
        let dir = tempfile::tempdir().unwrap();
        let server = Store::open(dir.path()).unwrap();
        server.add_grant(grant("g1", "r1")).unwrap();
        let text = fs::read_to_string(dir.path().join(GRANTS_FILE)).unwrap();
        assert!(!text.contains("\"r1\""), "only the hash is stored: {text}");
        // The command line revokes it in its own store; the server sees it.
        let cli = Store::open(dir.path()).unwrap();
        assert!(cli.revoke("g1").unwrap());
        assert!(!server.grant_alive("g1").unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(dir.path()), 0o700);
            assert_eq!(mode(&dir.path().join(GRANTS_FILE)), 0o600);
        }
    }
}
