//! Where an OAuth upstream's tokens are kept between runs: the system's credential store
//! (`keyring`: the login keychain on macOS, the Credential Manager on Windows, the Secret
//! Service on Linux and the BSDs), or a file only its owner can read when there is none (or
//! the operator chose it: `token_store = "file"`), which toolport says on stderr and in the
//! status. One entry per upstream name, holding the URL it was obtained for: tokens stored for
//! another URL are never sent (an entry whose `url` changed needs a new login).
//!
//! rmcp's OAuth client reads and writes the entry through [`rmcp`'s `CredentialStore`]
//! (`load` before each request: from memory after the first; `save` after a login or
//! refresh). A refresh holds a lock file shared by every toolport process using the entry and
//! reads the entry again under it (several clients each run their own toolport with one
//! config, and a rotated refresh token used twice ends the grant). A login made by another
//! process (`toolport upstreams login`) is picked up at the next connection.
//!
//! [`rmcp`'s `CredentialStore`]: rmcp::transport::auth::CredentialStore

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::super::settings::StoreKind;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix::{PERMISSIONS, create_private_dir};
#[cfg(not(unix))]
mod other;
#[cfg(not(unix))]
use other::{PERMISSIONS, create_private_dir};

/// The service name toolport's entries have in the system's credential store.
const KEYRING_SERVICE: &str = "toolport";

/// The variable naming the folder of the token files (tests, or an operator who wants them
/// somewhere else): otherwise toolport's state folder.
pub const TOKEN_DIR_VARIABLE: &str = "TOOLPORT_TOKEN_DIR";

/// Where one upstream's tokens are.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// The system's credential store, under service `toolport`, account `upstream:NAME`.
    Keyring,
    /// A JSON file, 0600 on Unix (on Windows: the user's own profile folder's access rules;
    /// no permission of its own is claimed).
    File(PathBuf),
}

impl Backend {
    /// How the status and the log name it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Keyring => "the system credential store".to_owned(),
            Self::File(path) => format!("the file {} ({PERMISSIONS})", path.display()),
        }
    }
}

/// Where each upstream's tokens were last found to be kept (by name), for the status.
static RESOLVED: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Mutex::default);

/// Where upstream `name`'s tokens are kept, once its store has been opened in this process.
pub(crate) fn resolved(name: &str) -> Option<String> {
    RESOLVED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .cloned()
}

/// What is kept: rmcp's credentials and the URL they were obtained for.
#[derive(Serialize, Deserialize)]
struct Saved {
    url: String,
    credentials: StoredCredentials,
}

/// One upstream's entry, as rmcp's credential store. rmcp loads the entry before every
/// request; after the first read it comes from memory (`cache`, written through on every
/// save), so a credential store is asked once per connection and once per refresh, not once
/// per request (a D-Bus round trip each, on Linux).
#[derive(Debug, Clone)]
pub(crate) struct TokenStore {
    name: String,
    url: String,
    pub(crate) backend: Backend,
    cache: std::sync::Arc<Mutex<Option<Option<StoredCredentials>>>>,
}

impl TokenStore {
    /// The store of upstream `name` (at `url`) as `kind` chooses it. `auto` tries the system's
    /// credential store and, when there is none (no Secret Service on a headless Linux, a
    /// locked keychain), falls back to the file and says so on stderr.
    pub(crate) async fn open(name: &str, url: &str, kind: StoreKind) -> Result<Self, String> {
        let backend = match kind {
            StoreKind::File => Backend::File(token_file(name)?),
            StoreKind::Keyring => {
                probe_keyring(name).await.map_err(|why| {
                    format!("the system credential store cannot be used ({why}); set token_store = \"file\" to keep the tokens in a file readable only by you")
                })?;
                Backend::Keyring
            }
            StoreKind::Auto => match probe_keyring(name).await {
                Ok(()) => Backend::Keyring,
                Err(why) => {
                    let file = token_file(name)?;
                    if resolved(name).is_none() {
                        tracing::warn!(
                            upstream = %name,
                            "no system credential store ({why}); keeping its OAuth tokens in {} ({PERMISSIONS})",
                            file.display()
                        );
                    }
                    Backend::File(file)
                }
            },
        };
        RESOLVED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), backend.describe());
        Ok(Self {
            name: name.to_owned(),
            url: url.to_owned(),
            backend,
            cache: std::sync::Arc::default(),
        })
    }

    fn account(&self) -> String {
        format!("upstream:{}", self.name)
    }

    /// The entry's text, if there is one.
    async fn read(&self) -> Result<Option<String>, String> {
        match &self.backend {
            Backend::File(path) => match tokio::fs::read_to_string(path).await {
                Ok(text) => Ok(Some(text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("cannot read {} ({e})", path.display())),
            },
            Backend::Keyring => {
                let account = self.account();
                blocking(move || match keyring_entry(&account)?.get_password() {
                    Ok(text) => Ok(Some(text)),
                    Err(keyring::Error::NoEntry) => Ok(None),
                    Err(e) => Err(e.to_string()),
                })
                .await
            }
        }
    }

    async fn write(&self, text: String) -> Result<(), String> {
        match &self.backend {
            Backend::File(path) => {
                let path = path.clone();
                blocking(move || write_private(&path, &text)).await
            }
            Backend::Keyring => {
                let account = self.account();
                // The Windows Credential Manager holds at most 2,560 bytes an entry: large
                // tokens (JWTs with many claims) do not fit there.
                blocking(move || {
                    keyring_entry(&account)?.set_password(&text).map_err(|e| {
                        format!("the system credential store refused the tokens ({e}); give this upstream token_store = \"file\"")
                    })
                })
                .await
            }
        }
    }

    /// Forget the entry; `true` when there was one.
    pub(crate) async fn remove(&self) -> Result<bool, String> {
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = None;
        match &self.backend {
            Backend::File(path) => match tokio::fs::remove_file(path).await {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(format!("cannot remove {} ({e})", path.display())),
            },
            Backend::Keyring => {
                let account = self.account();
                blocking(move || match keyring_entry(&account)?.delete_credential() {
                    Ok(()) => Ok(true),
                    Err(keyring::Error::NoEntry) => Ok(false),
                    Err(e) => Err(e.to_string()),
                })
                .await
            }
        }
    }

    /// A digest of the entry as it is now (`None`: no entry): a login by another process
    /// changes it, which a supervisor waiting for one watches.
    pub(crate) async fn fingerprint(&self) -> Option<[u8; 32]> {
        let text = self.read().await.ok()??;
        Some(Sha256::digest(text.as_bytes()).into())
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if let Some(cached) = self.cached() {
            return Ok(cached);
        }
        let loaded = self.load_stored().await?;
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = Some(loaded.clone());
        Ok(loaded)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let saved = Saved {
            url: self.url.clone(),
            credentials,
        };
        let text = serde_json::to_string(&saved)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        // Forgotten first: a write that fails leaves the next load to read what is there.
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.write(text)
            .await
            .map_err(AuthError::CredentialStoreError)?;
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = Some(Some(saved.credentials));
        Ok(())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        self.lock_for_refresh()
            .await
            .map(Some)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.remove()
            .await
            .map(|_| ())
            .map_err(AuthError::CredentialStoreError)
    }
}

impl TokenStore {
    /// Hold the entry across a refresh, against every process that shares it: an exclusive
    /// lock on `NAME.lock` beside the token files (several clients each start their own
    /// toolport with one config; a refresh token rotates at each use, and one used twice ends
    /// the grant at most servers). The entry is read again under the lock, so a refresh made
    /// meanwhile by another process is the one continued.
    async fn lock_for_refresh(&self) -> Result<CredentialRefreshGuard, String> {
        let path = token_file(&self.name)?.with_extension("lock");
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = None;
        blocking(move || {
            let dir = path.parent().unwrap_or(Path::new("."));
            create_private_dir(dir)
                .map_err(|e| format!("cannot create {} ({e})", dir.display()))?;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| format!("cannot open {} ({e})", path.display()))?;
            file.lock()
                .map_err(|e| format!("cannot lock {} ({e})", path.display()))?;
            Ok(CredentialRefreshGuard::new(file))
        })
        .await
    }

    fn cached(&self) -> Option<Option<StoredCredentials>> {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The entry's credentials as stored (not the cache).
    async fn load_stored(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(text) = self.read().await.map_err(AuthError::CredentialStoreError)? else {
            return Ok(None);
        };
        // An entry that does not parse (written by another version) or was obtained for
        // another URL is as good as none: a new login replaces it.
        match serde_json::from_str::<Saved>(&text) {
            Ok(saved) if saved.url == self.url => Ok(Some(saved.credentials)),
            Ok(_) => {
                tracing::warn!(upstream = %self.name, "its stored OAuth tokens were obtained for another URL; they are not used (log in again)");
                Ok(None)
            }
            Err(_) => {
                tracing::warn!(upstream = %self.name, "its stored OAuth tokens cannot be read; they are not used (log in again)");
                Ok(None)
            }
        }
    }
}

/// The token file of upstream `name`: in `TOOLPORT_TOKEN_DIR`, or toolport's state folder
/// (`$XDG_STATE_HOME/toolport` on Linux, `~/Library/Application Support/toolport` on macOS,
/// `%LOCALAPPDATA%\toolport` on Windows) under `upstream-tokens/`.
fn token_file(name: &str) -> Result<PathBuf, String> {
    let dir = match std::env::var_os(TOKEN_DIR_VARIABLE) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => dirs::state_dir()
            .or_else(dirs::data_local_dir)
            .map(|d| d.join("toolport").join("upstream-tokens"))
            .ok_or_else(|| {
                format!("no state folder is known for this user; set {TOKEN_DIR_VARIABLE} to a folder for the token files")
            })?,
    };
    Ok(dir.join(format!("{name}.json")))
}

/// Write `text` to `path` whole or not at all: a temporary file beside it (created 0600 on
/// Unix by tempfile), synced, renamed over it; the folder made private first.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(|e| format!("cannot create {} ({e})", dir.display()))?;
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("cannot write in {} ({e})", dir.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| format!("cannot write {} ({e})", path.display()))?;
    file.persist(path)
        .map_err(|e| format!("cannot write {} ({})", path.display(), e.error))?;
    Ok(())
}

fn keyring_entry(account: &str) -> Result<keyring::Entry, String> {
    keyring::Entry::new(KEYRING_SERVICE, account).map_err(|e| e.to_string())
}

/// Whether the system's credential store answers (an absent entry is an answer).
async fn probe_keyring(name: &str) -> Result<(), String> {
    let account = format!("upstream:{name}");
    blocking(move || match keyring_entry(&account)?.get_password() {
        Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(e.to_string()),
    })
    .await
}

/// Run a credential store call on the blocking pool (the keyring backends block: D-Bus, the
/// keychain, the Credential Manager).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the credential store call failed ({e})"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_file_store_keeps_tokens_for_their_url_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("a.json");
        let store = TokenStore {
            name: "a".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            backend: Backend::File(path.clone()),
            cache: std::sync::Arc::default(),
        };
        assert!(store.load().await.unwrap().is_none());
        assert!(store.fingerprint().await.is_none());
        store
            .save(StoredCredentials::new(
                "client".into(),
                None,
                vec![],
                Some(1),
            ))
            .await
            .unwrap();
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "client");
        assert!(store.fingerprint().await.is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let elsewhere = TokenStore {
            url: "http://127.0.0.1:2/mcp".into(),
            cache: std::sync::Arc::default(),
            ..store.clone()
        };
        assert!(
            elsewhere.load().await.unwrap().is_none(),
            "another URL's tokens are never used"
        );
        assert!(store.remove().await.unwrap());
        assert!(!store.remove().await.unwrap());
    }
}
