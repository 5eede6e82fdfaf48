//! The built-in server's state on one server alone ([`Local`]): clients and grants in the state
//! folder, pending approvals and codes in this process's memory.
//!
//! **The folder.** One JSON document, `grants.json`, written whole to a temporary file beside
//! it and renamed over it (a crash leaves the old or the new file, never half of one). On Unix
//! the folder is made 0700 and the files 0600 (only the operator's account reads them). On
//! Windows the files inherit the folder's ACL: the default state folder is under the user's
//! `%APPDATA%`, which only that user (and administrators) can read; no mode is claimed there.
//! Only hashes: a copy of the folder lets no one refresh.
//!
//! **Two writers.** `toolport auth revoke` changes the file while a server runs: every access
//! reads the file again when its modification time or length changed, so a revocation from the
//! command line ends the grant's next refresh and its access tokens' next request. A write
//! from each at the same instant can lose one of the two changes (the file is never torn);
//! revoking is the one command-line write and is rare.
//!
//! **Memory.** Consent pages waiting for approval and codes waiting for exchange do not survive
//! a restart (a client starts again), which is what a 60 s code wants.
//!
//! The file operations are blocking and small (kilobytes): they run under a plain mutex on the
//! calling task, which is simpler than a blocking pool for a single-person server.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::{
    Attempt, CODE_LIFETIME, Client, Grant, Issued, PENDING_LIFETIME, Pending, Presented, Refresh,
    evictions,
};

/// The grants file in the state folder.
pub(crate) const GRANTS_FILE: &str = "grants.json";

/// Why the state folder cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the OAuth state in {path} cannot be {action}: {source}")]
pub(crate) struct FileError {
    path: PathBuf,
    action: &'static str,
    source: std::io::Error,
}

/// The document.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Data {
    #[serde(default)]
    pub(crate) clients: BTreeMap<String, Client>,
    #[serde(default)]
    pub(crate) grants: BTreeMap<String, Grant>,
}

/// In-memory flow state: consent pages waiting for approval and codes waiting for exchange,
/// each with when it expires.
#[derive(Debug, Default)]
struct Flows {
    pending: HashMap<String, (Pending, Instant)>,
    /// By the code's hash.
    codes: HashMap<String, (Issued, Instant)>,
}

impl Flows {
    /// Forget what has expired.
    fn sweep(&mut self) {
        let now = Instant::now();
        self.pending.retain(|_, (_, expires)| *expires > now);
        self.codes.retain(|_, (_, expires)| *expires > now);
    }
}

/// The state folder's grants and clients, and the flows in memory.
#[derive(Debug)]
pub(crate) struct Local {
    path: PathBuf,
    inner: Mutex<Inner>,
    flows: Mutex<Flows>,
}

#[derive(Debug, Default)]
struct Inner {
    data: Data,
    /// The file's modification time and length when last read or written.
    stamp: Option<(SystemTime, u64)>,
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

type Result<T> = std::result::Result<T, super::StoreError>;

impl Local {
    /// The store in `dir`, made (0700) when missing.
    pub(crate) fn open(dir: &Path) -> std::result::Result<Self, FileError> {
        private_dir(dir).map_err(|source| FileError {
            path: dir.to_owned(),
            action: "created",
            source,
        })?;
        let store = Self {
            path: dir.join(GRANTS_FILE),
            inner: Mutex::default(),
            flows: Mutex::default(),
        };
        store.with(|_| ())?;
        Ok(store)
    }

    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let meta = fs::metadata(&self.path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    }

    /// Run `f` on the current data (read again when the file changed), without writing.
    fn with<R>(&self, f: impl FnOnce(&Data) -> R) -> std::result::Result<R, FileError> {
        let mut inner = self.lock();
        self.refresh(&mut inner)?;
        Ok(f(&inner.data))
    }

    /// Run `f` on the current data and write the result.
    fn update<R>(&self, f: impl FnOnce(&mut Data) -> R) -> std::result::Result<R, FileError> {
        let mut inner = self.lock();
        self.refresh(&mut inner)?;
        let result = f(&mut inner.data);
        let error = |source| FileError {
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
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn refresh(&self, inner: &mut Inner) -> std::result::Result<(), FileError> {
        let stamp = self.stamp();
        if stamp.is_some() && stamp == inner.stamp {
            return Ok(());
        }
        inner.data = match fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| FileError {
                path: self.path.clone(),
                action: "read",
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Data::default(),
            Err(source) => {
                return Err(FileError {
                    path: self.path.clone(),
                    action: "read",
                    source,
                });
            }
        };
        inner.stamp = stamp;
        Ok(())
    }

    pub(super) fn add_client(&self, client: Client) -> Result<()> {
        Ok(self.update(|data| {
            for id in evictions(&data.clients, &data.grants) {
                data.clients.remove(&id);
            }
            data.clients.insert(client.client_id.clone(), client);
        })?)
    }

    pub(super) fn client(&self, client_id: &str) -> Result<Option<Client>> {
        Ok(self.with(|data| data.clients.get(client_id).cloned())?)
    }

    pub(super) fn grant_alive(&self, id: &str) -> Result<bool> {
        Ok(self.with(|data| data.grants.contains_key(id))?)
    }

    pub(super) fn add_grant(&self, grant: Grant) -> Result<()> {
        Ok(self.update(|data| {
            data.grants.insert(grant.id.clone(), grant);
        })?)
    }

    pub(super) fn current_grant(&self, presented: &str) -> Result<Option<Grant>> {
        Ok(self.with(|data| {
            data.grants
                .values()
                .find(|g| g.refresh_hash == presented)
                .cloned()
        })?)
    }

    pub(super) fn rotate(&self, presented: &str, next: &str) -> Result<Refresh> {
        Ok(self.update(|data| {
            let found = data
                .grants
                .values_mut()
                .find_map(|g| g.present(presented, next).map(|outcome| (g, outcome)));
            match found {
                Some((grant, Presented::Rotated { .. })) => Refresh::Rotated(grant.clone()),
                Some((grant, Presented::Reused)) => {
                    let id = grant.id.clone();
                    data.grants
                        .remove(&id)
                        .map_or(Refresh::Unknown, Refresh::Reused)
                }
                None => Refresh::Unknown,
            }
        })?)
    }

    pub(super) fn revoke(&self, id: &str) -> Result<bool> {
        Ok(self.update(|data| data.grants.remove(id).is_some())?)
    }

    pub(super) fn revoke_by_refresh(&self, presented: &str) -> Result<bool> {
        Ok(self.update(|data| {
            let id = data
                .grants
                .values()
                .find(|g| g.hashes().any(|h| h == presented))
                .map(|g| g.id.clone());
            id.and_then(|id| data.grants.remove(&id)).is_some()
        })?)
    }

    pub(super) fn grants(&self) -> Result<Vec<Grant>> {
        Ok(self.with(|data| data.grants.values().cloned().collect())?)
    }

    /// The flows, swept of what expired.
    fn flows(&self) -> std::sync::MutexGuard<'_, Flows> {
        // Every change to the maps is a single insert, update or remove: a panic elsewhere
        // leaves them consistent.
        let mut flows = self
            .flows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        flows.sweep();
        flows
    }

    pub(super) fn add_pending(&self, id: &str, pending: &Pending, max: usize) -> bool {
        let mut flows = self.flows();
        if flows.pending.len() >= max {
            return false;
        }
        flows.pending.insert(
            id.to_owned(),
            (pending.clone(), Instant::now() + PENDING_LIFETIME),
        );
        true
    }

    pub(super) fn pending(&self, id: &str) -> Option<Pending> {
        self.flows().pending.get(id).map(|(p, _)| p.clone())
    }

    pub(super) fn wrong_attempt(&self, id: &str, max: u32) -> Attempt {
        let mut flows = self.flows();
        let Some((pending, _)) = flows.pending.get_mut(id) else {
            return Attempt::Gone;
        };
        pending.attempts += 1;
        if pending.attempts < max {
            return Attempt::Counted(pending.clone());
        }
        flows
            .pending
            .remove(id)
            .map_or(Attempt::Gone, |(p, _)| Attempt::Ended(p))
    }

    pub(super) fn take_pending(&self, id: &str) -> Option<Pending> {
        self.flows().pending.remove(id).map(|(p, _)| p)
    }

    pub(super) fn add_code(&self, code_hash: &str, issued: &Issued) {
        self.flows().codes.insert(
            code_hash.to_owned(),
            (issued.clone(), Instant::now() + CODE_LIFETIME),
        );
    }

    pub(super) fn take_code(&self, code_hash: &str) -> Option<Issued> {
        self.flows().codes.remove(code_hash).map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::grant;
    use super::super::{Store, hash};
    use super::*;

    #[tokio::test]
    async fn refresh_tokens_rotate_and_a_reused_one_revokes_the_grant() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::Local(Local::open(dir.path()).unwrap());
        store.add_grant(grant("g1", "r1")).await.unwrap();
        store.add_grant(grant("g2", "other")).await.unwrap();
        let Refresh::Rotated(g) = store.rotate(&hash("r1"), &hash("r2")).await.unwrap() else {
            panic!("not rotated")
        };
        assert_eq!(g.refresh_hash, hash("r2"));
        assert_eq!(
            store.rotate(&hash("nope"), &hash("x")).await.unwrap(),
            Refresh::Unknown
        );
        // r1 again: reuse, the grant is gone, and r2 with it.
        assert!(matches!(
            store.rotate(&hash("r1"), &hash("r3")).await.unwrap(),
            Refresh::Reused(g) if g.id == "g1"
        ));
        assert!(!store.grant_alive("g1").await.unwrap());
        assert_eq!(
            store.rotate(&hash("r2"), &hash("r4")).await.unwrap(),
            Refresh::Unknown
        );
        assert!(
            store.grant_alive("g2").await.unwrap(),
            "another grant stands"
        );
    }

    #[test]
    fn a_restart_and_another_process_see_the_same_grants() {
        let dir = tempfile::tempdir().unwrap();
        let server = Local::open(dir.path()).unwrap();
        server.add_grant(grant("g1", "r1")).unwrap();
        let text = fs::read_to_string(dir.path().join(GRANTS_FILE)).unwrap();
        assert!(!text.contains("\"r1\""), "only the hash is stored: {text}");
        // The command line revokes it in its own store; the server sees it.
        let cli = Local::open(dir.path()).unwrap();
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
