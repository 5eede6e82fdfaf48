//! The `[replicas]` settings ([`ReplicaSettings`]): where the shared store is (one Redis URL,
//! `redis://` or `rediss://` for TLS), its password (from a file or `TOOLPORT_REDIS_PASSWORD`,
//! never from the URL, never printed), this replica's id and internal address, what calls get
//! while Redis is away, the bound on every Redis command, and whether requests for another
//! replica's job are forwarded to it (with the internal secret replicas sign those calls with,
//! from a file or `TOOLPORT_INTERNAL_SECRET`, never printed).
//!
//! Without `redis_url` there are no settings at all (`None` in the `Config`): nothing connects,
//! nothing is printed, and every decision is taken in process as on one machine.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::{Serialize, Serializer};
use toolport_tools::host::config::FileReplicas;
use toolport_tools::host::secret::{Secret, Source, random_token};
use toolport_tools::host::settings::{Note, SettingError, duration_setting, serialize_duration};
use url::Url;

/// The bound on one Redis command (and on connecting): a shared decision sits in front of
/// every call that needs one, so it must be short; a healthy Redis on the same network
/// answers in well under a millisecond, and 500 ms leaves room for a busy one without making
/// a call wait long when Redis is gone.
const DEFAULT_REDIS_TIMEOUT: Duration = Duration::from_millis(500);
/// The shortest and longest `redis_timeout`: below 10 ms a loaded network would read as an
/// outage; past 10 s a call would hang in all but name.
const REDIS_TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(10)..=Duration::from_secs(10);
/// The prefix of every key toolport writes, unless `key_prefix` says another (two
/// deployments sharing one Redis give each its own).
const DEFAULT_KEY_PREFIX: &str = "toolport";
/// Random bytes of a generated replica id (hex: 12 characters), unique among any number of
/// replicas a deployment runs.
const GENERATED_ID_BYTES: usize = 6;
/// The longest replica id or key prefix: they are parts of Redis keys and of log lines.
const MAX_NAME_LEN: usize = 64;
/// Where the Redis password is read from when no file is given.
const PASSWORD_VAR: &str = "TOOLPORT_REDIS_PASSWORD";
/// Where the internal secret is read from when no file is given.
const INTERNAL_SECRET_VAR: &str = "TOOLPORT_INTERNAL_SECRET";
/// The shortest internal secret: it is an HMAC key that anyone who can reach a replica's
/// internal address may try to guess, so at least 128 bits of a random hex or base64 string.
const MIN_INTERNAL_SECRET_LEN: usize = 32;

/// The flags of `[replicas]`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ReplicaArgs {
    /// The shared store of replicas behind a load balancer: `redis://HOST:PORT/DB`, or
    /// `rediss://…` for TLS. Budgets, rate limits, the built-in authorization server's grants
    /// and the replica registry are kept there (see docs/http.md, "Replicas").
    #[arg(long, value_name = "URL", env = "TOOLPORT_REDIS_URL", global = true)]
    pub(crate) redis_url: Option<String>,
    /// A file holding the Redis password (else TOOLPORT_REDIS_PASSWORD).
    #[arg(
        long,
        value_name = "FILE",
        env = "TOOLPORT_REDIS_PASSWORD_FILE",
        global = true
    )]
    pub(crate) redis_password_file: Option<PathBuf>,
    /// This replica's id (default: generated at start).
    #[arg(long, value_name = "ID", env = "TOOLPORT_REPLICA_ID", global = true)]
    pub(crate) replica_id: Option<String>,
    /// How the other replicas reach this one (`http://10.0.0.5:8080`).
    #[arg(long, value_name = "URL", env = "TOOLPORT_INTERNAL_URL", global = true)]
    pub(crate) internal_url: Option<String>,
    /// A file holding the secret replicas sign their internal calls with (else
    /// TOOLPORT_INTERNAL_SECRET); the same on every replica.
    #[arg(
        long,
        value_name = "FILE",
        env = "TOOLPORT_INTERNAL_SECRET_FILE",
        global = true
    )]
    pub(crate) internal_secret_file: Option<PathBuf>,
    /// Send a request for another replica's job or task to it (default: when an internal
    /// secret is set); `false`: answer it with an error that names the replica.
    #[arg(
        long,
        value_name = "BOOL",
        env = "TOOLPORT_FORWARD_JOBS",
        global = true
    )]
    pub(crate) forward_jobs: Option<bool>,
}

/// What a call that needs a shared decision gets while Redis cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WhenAway {
    /// Refused with an error that says why and when to retry (the default: N replicas never
    /// allow more than one budget).
    Refuse,
    /// Decided by this replica alone, with a warning: each replica allows up to a whole
    /// budget until Redis is back.
    Local,
}

impl WhenAway {
    fn parse(text: &str) -> Result<Self, SettingError> {
        match text.trim() {
            "refuse" => Ok(Self::Refuse),
            "local" => Ok(Self::Local),
            other => Err(SettingError::new(
                "replicas.when_redis_away",
                format!(
                    "{other:?} is not a choice: \"refuse\" (calls that need a shared decision are refused until Redis is back) or \"local\" (each replica decides alone meanwhile)"
                ),
            )),
        }
    }

    /// The name as the file writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Refuse => "refuse",
            Self::Local => "local",
        }
    }
}

/// The shared store and this replica's place among the others.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaSettings {
    /// The Redis URL (it holds no password: [`ReplicaSettings::load`] refuses one).
    #[serde(serialize_with = "serialize_url")]
    pub(crate) redis_url: Url,
    /// The file the password was read from: printed, so a printed config reads it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    redis_password_file: Option<PathBuf>,
    /// The Redis password and where it came from (never printed).
    #[serde(skip)]
    pub(crate) password: Option<(Secret, Source)>,
    /// This replica's id: unique among the replicas sharing the store.
    #[serde(skip_serializing_if = "is_generated", serialize_with = "serialize_id")]
    pub(crate) id: ReplicaId,
    /// How the other replicas reach this one.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_optional_url"
    )]
    pub(crate) internal_url: Option<Url>,
    /// What calls get while Redis is away.
    pub(crate) when_redis_away: WhenAway,
    /// The bound on one Redis command.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) redis_timeout: Duration,
    /// The prefix of every key.
    pub(crate) key_prefix: String,
    /// Whether requests for another replica's job or task are sent to it.
    pub(crate) forward_jobs: bool,
    /// The file the internal secret was read from: printed, so a printed config reads it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    internal_secret_file: Option<PathBuf>,
    /// The secret replicas sign their internal calls with, and where it came from (never
    /// printed).
    #[serde(skip)]
    pub(crate) internal_secret: Option<(Secret, Source)>,
}

/// A replica's id, and whether the operator chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplicaId {
    pub(crate) value: String,
    pub(crate) generated: bool,
}

fn is_generated(id: &ReplicaId) -> bool {
    id.generated
}

fn serialize_id<S: Serializer>(id: &ReplicaId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&id.value)
}

fn serialize_url<S: Serializer>(url: &Url, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(url.as_str())
}

fn serialize_optional_url<S: Serializer>(
    url: &Option<Url>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match url {
        Some(url) => serializer.serialize_str(url.as_str()),
        None => serializer.serialize_none(),
    }
}

impl ReplicaSettings {
    /// Layer the file < environment and flags (clap reads the variables into `args`); `env`
    /// gives `TOOLPORT_REDIS_PASSWORD`. `None` when no Redis URL is set: replicas share
    /// nothing.
    pub(crate) fn load(
        file: &FileReplicas,
        args: &ReplicaArgs,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, SettingError> {
        let Some(text) = args.redis_url.as_ref().or(file.redis_url.as_ref()) else {
            return refuse_without_url(file, args);
        };
        let redis_url = parse_redis_url(text)?;
        let password = match args
            .redis_password_file
            .as_ref()
            .or(file.redis_password_file.as_ref())
        {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    SettingError::new(
                        "replicas.redis_password_file",
                        format!("cannot read the password file {}: {e}", path.display()),
                    )
                })?;
                let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                Some((
                    password(&text, "replicas.redis_password_file")?,
                    Source::File(path),
                ))
            }
            None => env(PASSWORD_VAR)
                .filter(|v| !v.is_empty())
                .map(|v| password(&v, PASSWORD_VAR).map(|p| (p, Source::Env(PASSWORD_VAR))))
                .transpose()?,
        };
        let id = match args.replica_id.as_ref().or(file.id.as_ref()) {
            Some(id) => ReplicaId {
                value: name("replicas.id", id)?,
                generated: false,
            },
            None => ReplicaId {
                value: random_token(GENERATED_ID_BYTES).map_err(|e| {
                    SettingError::new(
                        "replicas.id",
                        format!("cannot generate one ({e}); set replicas.id"),
                    )
                })?,
                generated: true,
            },
        };
        let internal_url = args
            .internal_url
            .as_ref()
            .or(file.internal_url.as_ref())
            .map(|text| parse_internal_url(text))
            .transpose()?;
        let when_redis_away = file
            .when_redis_away
            .as_deref()
            .map_or(Ok(WhenAway::Refuse), WhenAway::parse)?;
        let redis_timeout = duration_setting(
            "replicas.redis_timeout",
            file.redis_timeout.as_ref(),
            None,
            DEFAULT_REDIS_TIMEOUT,
            REDIS_TIMEOUT_RANGE,
        )?;
        let key_prefix = file
            .key_prefix
            .as_deref()
            .map_or(Ok(DEFAULT_KEY_PREFIX.to_owned()), |p| {
                name("replicas.key_prefix", p)
            })?;
        let internal_secret = match args
            .internal_secret_file
            .as_ref()
            .or(file.internal_secret_file.as_ref())
        {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    SettingError::new(
                        "replicas.internal_secret_file",
                        format!("cannot read the secret file {}: {e}", path.display()),
                    )
                })?;
                let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                Some((
                    internal_secret(&text, "replicas.internal_secret_file")?,
                    Source::File(path),
                ))
            }
            None => env(INTERNAL_SECRET_VAR)
                .filter(|v| !v.is_empty())
                .map(|v| {
                    internal_secret(&v, INTERNAL_SECRET_VAR)
                        .map(|s| (s, Source::Env(INTERNAL_SECRET_VAR)))
                })
                .transpose()?,
        };
        let forward_jobs = match args.forward_jobs.or(file.forward_jobs) {
            Some(true) if internal_secret.is_none() => {
                return Err(SettingError::new(
                    "replicas.forward_jobs",
                    format!(
                        "is true but no internal secret is set: replicas authenticate the requests they forward with one; put the same random string (at least {MIN_INTERNAL_SECRET_LEN} characters, e.g. `openssl rand -hex 32`) in replicas.internal_secret_file or {INTERNAL_SECRET_VAR} on every replica"
                    ),
                ));
            }
            Some(on) => on,
            None => internal_secret.is_some(),
        };
        Ok(Some(Self {
            redis_url,
            redis_password_file: password
                .as_ref()
                .and_then(|(_, source)| source.file().map(std::path::Path::to_path_buf)),
            password,
            id,
            internal_url,
            when_redis_away,
            redis_timeout,
            key_prefix,
            forward_jobs,
            internal_secret_file: internal_secret
                .as_ref()
                .and_then(|(_, source)| source.file().map(std::path::Path::to_path_buf)),
            internal_secret,
        }))
    }

    /// What `toolport config` prints as comments: the password's source (never the
    /// password), a generated id.
    pub(crate) fn notes(&self) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some((_, source)) = &self.password {
            notes.extend(source.note(
                "replicas.redis_password",
                "replicas.redis_password_file or TOOLPORT_REDIS_PASSWORD",
            ));
        }
        if let Some((_, source)) = &self.internal_secret {
            notes.extend(source.note(
                "replicas.internal_secret",
                "replicas.internal_secret_file or TOOLPORT_INTERNAL_SECRET",
            ));
        }
        if self.id.generated {
            notes.push(Note::new(
                "replicas.id",
                format!(
                    "{} (generated for this run; set replicas.id or TOOLPORT_REPLICA_ID to keep one)",
                    self.id.value
                ),
            ));
        }
        notes
    }
}

/// Replica keys without a Redis URL are a mistake the operator should hear about: they would
/// silently do nothing.
fn refuse_without_url(
    file: &FileReplicas,
    args: &ReplicaArgs,
) -> Result<Option<ReplicaSettings>, SettingError> {
    let given = [
        (
            "replicas.id",
            file.id.is_some() || args.replica_id.is_some(),
        ),
        (
            "replicas.internal_url",
            file.internal_url.is_some() || args.internal_url.is_some(),
        ),
        (
            "replicas.redis_password_file",
            file.redis_password_file.is_some() || args.redis_password_file.is_some(),
        ),
        ("replicas.when_redis_away", file.when_redis_away.is_some()),
        ("replicas.redis_timeout", file.redis_timeout.is_some()),
        ("replicas.key_prefix", file.key_prefix.is_some()),
        (
            "replicas.forward_jobs",
            file.forward_jobs.is_some() || args.forward_jobs.is_some(),
        ),
        (
            "replicas.internal_secret_file",
            file.internal_secret_file.is_some() || args.internal_secret_file.is_some(),
        ),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((key, _)) => Err(SettingError::new(
            *key,
            "has no effect without replicas.redis_url (--redis-url, TOOLPORT_REDIS_URL): set the shared store, or leave the [replicas] keys out",
        )),
        None => Ok(None),
    }
}

/// A Redis URL: `redis://` or `rediss://`, a host, no password (that goes in a file or the
/// environment, so it is never in a config file, a process list or a log line).
fn parse_redis_url(text: &str) -> Result<Url, SettingError> {
    const KEY: &str = "replicas.redis_url";
    let url = Url::parse(text.trim()).map_err(|e| {
        SettingError::new(
            KEY,
            format!("not a URL ({e}); write redis://HOST:PORT/DB, or rediss://… for TLS"),
        )
    })?;
    if url.password().is_some() {
        // Not echoed: the text holds the password.
        return Err(SettingError::new(
            KEY,
            "holds a password: put it in replicas.redis_password_file or TOOLPORT_REDIS_PASSWORD instead (a user name may stay in the URL)",
        ));
    }
    if !matches!(url.scheme(), "redis" | "rediss") {
        return Err(SettingError::new(
            KEY,
            format!(
                "scheme {:?} is not one toolport speaks: redis:// (plain TCP) or rediss:// (TLS)",
                url.scheme()
            ),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(SettingError::new(
            KEY,
            "names no host: redis://HOST:PORT/DB",
        ));
    }
    let db = url.path().trim_start_matches('/');
    if !db.is_empty() && db.parse::<u16>().is_err() {
        return Err(SettingError::new(
            KEY,
            format!("path {db:?} is not a database number: redis://HOST:PORT/DB"),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(SettingError::new(
            KEY,
            "takes no query or fragment: TLS is the rediss:// scheme, the password a file or TOOLPORT_REDIS_PASSWORD",
        ));
    }
    Ok(url)
}

/// How other replicas reach this one: an http(s) URL without credentials.
fn parse_internal_url(text: &str) -> Result<Url, SettingError> {
    const KEY: &str = "replicas.internal_url";
    let url = Url::parse(text.trim())
        .map_err(|e| SettingError::new(KEY, format!("not a URL ({e}); write http://HOST:PORT")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(SettingError::new(
            KEY,
            "must be http://HOST:PORT or https://…",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SettingError::new(KEY, "takes no credentials"));
    }
    Ok(url)
}

/// A password as read: one line (a trailing newline is the file's, not the password's).
fn password(text: &str, key: &'static str) -> Result<Secret, SettingError> {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    if trimmed.is_empty() || trimmed.contains(['\n', '\r']) {
        return Err(SettingError::new(
            key,
            "must hold the password alone, on one line",
        ));
    }
    Ok(Secret::new(trimmed))
}

/// The internal secret as read: one line, long enough to be an HMAC key worth the name.
fn internal_secret(text: &str, key: &'static str) -> Result<Secret, SettingError> {
    let secret = password(text, key)?;
    if secret.expose().trim().len() < MIN_INTERNAL_SECRET_LEN {
        return Err(SettingError::new(
            key,
            format!(
                "is shorter than {MIN_INTERNAL_SECRET_LEN} characters: use a random string, e.g. `openssl rand -hex 32`"
            ),
        ));
    }
    Ok(secret)
}

/// A replica id or key prefix: a part of Redis keys, so letters, digits, `-`, `_` and `.`.
fn name(key: &'static str, text: &str) -> Result<String, SettingError> {
    let ok = !text.is_empty()
        && text.len() <= MAX_NAME_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(text.to_owned())
    } else {
        Err(SettingError::new(
            key,
            format!(
                "{text:?} is not allowed: 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.'"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(toml: &str, env: &[(&str, &str)]) -> Result<Option<ReplicaSettings>, SettingError> {
        let file: FileReplicas = toml::from_str(toml).unwrap();
        ReplicaSettings::load(&file, &ReplicaArgs::default(), |name| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn without_a_url_there_is_nothing_and_a_stray_key_is_an_error() {
        assert!(load("", &[]).unwrap().is_none());
        let error = load("id = \"a\"", &[]).unwrap_err();
        assert_eq!(error.key, "replicas.id");
        assert!(error.to_string().contains("redis_url"), "{error}");
    }

    #[test]
    fn a_password_in_the_url_is_refused_without_echoing_it() {
        let error = load("redis_url = \"redis://u:hunter2@h:6379\"", &[]).unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(error.to_string().contains("redis_password_file"), "{error}");
    }

    #[test]
    fn urls_schemes_and_names_are_checked() {
        for bad in [
            "http://h:6379",
            "redis://h:6379/x",
            "redis://h:6379?tls=1",
            "not a url",
        ] {
            let error = load(&format!("redis_url = {bad:?}"), &[]).unwrap_err();
            assert_eq!(error.key, "replicas.redis_url", "{bad}");
        }
        let error = load("redis_url = \"redis://h\"\nid = \"a b\"", &[]).unwrap_err();
        assert_eq!(error.key, "replicas.id");
        let error = load("redis_url = \"redis://h\"\nwhen_redis_away = \"wait\"", &[]).unwrap_err();
        assert!(error.to_string().contains("\"refuse\""), "{error}");
    }

    #[test]
    fn the_password_comes_from_the_environment_and_is_never_printed() {
        let settings = load(
            "redis_url = \"rediss://cache:6380/2\"\nid = \"r1\"",
            &[(PASSWORD_VAR, "s3cret")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(settings.password.as_ref().unwrap().0.expose(), "s3cret");
        assert_eq!(settings.when_redis_away, WhenAway::Refuse);
        assert_eq!(settings.redis_timeout, DEFAULT_REDIS_TIMEOUT);
        let printed = toml::to_string(&settings).unwrap();
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(printed.contains("id = \"r1\""), "{printed}");
        let notes = format!("{:?}", settings.notes());
        assert!(
            notes.contains(PASSWORD_VAR) && !notes.contains("s3cret"),
            "{notes}"
        );
    }

    #[test]
    fn forwarding_follows_the_internal_secret_and_never_prints_it() {
        let secret = "0123456789abcdef0123456789abcdef";
        let off = load("redis_url = \"redis://h\"", &[]).unwrap().unwrap();
        assert!(!off.forward_jobs);
        let on = load(
            "redis_url = \"redis://h\"",
            &[(INTERNAL_SECRET_VAR, secret)],
        )
        .unwrap()
        .unwrap();
        assert!(on.forward_jobs);
        let printed = toml::to_string(&on).unwrap();
        assert!(!printed.contains(secret), "{printed}");
        assert!(printed.contains("forward_jobs = true"), "{printed}");
        let notes = format!("{:?}", on.notes());
        assert!(notes.contains(INTERNAL_SECRET_VAR) && !notes.contains(secret));
        let error = load("redis_url = \"redis://h\"\nforward_jobs = true", &[]).unwrap_err();
        assert_eq!(error.key, "replicas.forward_jobs");
        assert!(
            error.to_string().contains("internal_secret_file"),
            "{error}"
        );
        let error = load(
            "redis_url = \"redis://h\"",
            &[(INTERNAL_SECRET_VAR, "short")],
        )
        .unwrap_err();
        assert!(!error.to_string().contains("short\""), "{error}");
        assert!(error.to_string().contains("openssl rand"), "{error}");
        let off = load(
            "redis_url = \"redis://h\"\nforward_jobs = false",
            &[(INTERNAL_SECRET_VAR, secret)],
        )
        .unwrap()
        .unwrap();
        assert!(!off.forward_jobs);
    }

    #[test]
    fn a_generated_id_is_a_note_not_a_key() {
        let settings = load("redis_url = \"redis://h\"", &[]).unwrap().unwrap();
        assert!(settings.id.generated);
        assert_eq!(settings.id.value.len(), GENERATED_ID_BYTES * 2);
        assert!(!toml::to_string(&settings).unwrap().contains("\nid ="));
    }
}
