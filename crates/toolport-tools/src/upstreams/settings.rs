//! `[[upstreams]]`: the other MCP servers whose tools toolport serves beside its own. Each
//! entry is a stdio command (program, arguments, only the environment it is given) or a
//! Streamable HTTP URL (with credentials of its own from a variable or a file, never the
//! client's), plus what of it is served and how: the prefix mode, allow and deny lists, tags
//! and category, confirmation, time limits and the largest result passed on.
//!
//! Secrets are never printed: an HTTP upstream's token is read when it connects (from
//! `token_env` or `token_file`, both printed as the names they are); an `env` value or a
//! header under a secret-looking name is left out of `toolport config` with a note (`env_pass`
//! names a variable of toolport's own environment instead, which carries it without writing it
//! down); the userinfo of a URL in `args` or an `env` value (`postgresql://user:pass@host`) is
//! printed as `***`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use crate::secret::{hide_userinfo, secret_name};
use crate::settings::{
    DurationValue, Note, SettingError, check_range, duration_setting, serialize_duration,
};
use crate::tools::exec::check_variable;

/// The longest upstream name: the prefix `name__` leaves room for the tool's own name in the
/// 64 characters a tool name may have.
const MAX_NAME_CHARS: usize = 32;

/// A call's default time limit on an upstream: long enough for a slow API or a browser step.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The call time limits allowed: long calls belong in a job, not a call.
const TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(3600);

/// How long an upstream may take to start and answer `initialize` and `tools/list` before it
/// counts as failed (then it is retried with backoff): `npx` and `uvx` starting from their
/// caches take a few seconds.
const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);
/// The start time limits allowed.
const START_TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(600);

/// The `list_wait` allowed: a listing held longer than a minute is a client's timeout.
const LIST_WAIT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::ZERO..=Duration::from_secs(60);

/// The largest result of an upstream passed on by default: the most toolport reads of any one
/// message of an upstream ([`super::oversize::MAX_MESSAGE_BYTES`]); an operator may set less.
const DEFAULT_MAX_RESULT_BYTES: usize = super::oversize::MAX_MESSAGE_BYTES;
/// The `max_result_bytes` allowed: at least a page of text, at most what is read of a message.
const MAX_RESULT_BYTES_RANGE: std::ops::RangeInclusive<usize> =
    1024..=super::oversize::MAX_MESSAGE_BYTES;

/// When an upstream's tools are listed under `name__tool`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PrefixMode {
    /// Always `name__tool` (the default: names never collide, and say where a tool comes from).
    #[default]
    Always,
    /// The tool's own name, unless another tool has it; then `name__tool`.
    Conditional,
    /// The tool's own name; a tool whose name is taken is not served (a warning says so).
    Never,
}

/// One `[[upstreams]]` entry as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUpstream {
    name: Option<String>,
    enabled: Option<bool>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    env_pass: Option<Vec<String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    headers: Option<BTreeMap<String, String>>,
    auth: Option<AuthKind>,
    client_id: Option<String>,
    client_secret_env: Option<String>,
    client_secret_file: Option<PathBuf>,
    private_key_file: Option<PathBuf>,
    private_key_alg: Option<KeyAlg>,
    client_metadata_url: Option<String>,
    scopes: Option<Vec<String>>,
    token_store: Option<StoreKind>,
    prefix: Option<PrefixMode>,
    allow_tools: Option<Vec<String>>,
    deny_tools: Option<Vec<String>>,
    confirm: Option<bool>,
    confirm_tools: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    category: Option<String>,
    timeout: Option<DurationValue>,
    start_timeout: Option<DurationValue>,
    list_wait: Option<DurationValue>,
    max_result_bytes: Option<usize>,
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A program speaking MCP on its stdin and stdout.
    Command {
        /// The program (looked up on `PATH`).
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// The variables it gets beyond the minimal environment.
        env: BTreeMap<String, String>,
        /// Variables copied from toolport's own environment by name (secrets stay out of the
        /// config file).
        env_pass: Vec<String>,
        /// Its working directory (default: the first root).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint (`http://127.0.0.1:3001/mcp`).
        url: url::Url,
        /// The variable holding its bearer token.
        token_env: Option<String>,
        /// The file holding its bearer token.
        token_file: Option<PathBuf>,
        /// Extra request headers (not secrets: they are printed).
        headers: BTreeMap<String, String>,
        /// Tokens obtained with OAuth instead of a static one (`auth`).
        oauth: Option<OAuthSettings>,
    },
}

/// `auth`: how an HTTP upstream's tokens are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthKind {
    /// The authorization code flow with PKCE, once, by `toolport upstreams login NAME`; then
    /// refreshed.
    Oauth,
    /// The client credentials grant (machine to machine): a client secret or a signed
    /// assertion (`private_key_jwt`), no person involved.
    ClientCredentials,
}

/// `token_store`: where an OAuth upstream's tokens are kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// The system's credential store, or the file when there is none (saying so).
    #[default]
    Auto,
    /// The system's credential store only (an error when there is none).
    Keyring,
    /// A file readable only by its owner, in toolport's state folder (`TOOLPORT_TOKEN_DIR`).
    File,
}

/// `private_key_alg`: how a `private_key_jwt` assertion is signed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum KeyAlg {
    /// RSA PKCS#1 v1.5 with SHA-256 (the default: what every server takes).
    #[default]
    RS256,
    /// RSA with SHA-384.
    RS384,
    /// RSA with SHA-512.
    RS512,
    /// ECDSA P-256 with SHA-256.
    ES256,
    /// ECDSA P-384 with SHA-384.
    ES384,
}

/// Where a client secret is read (never written in the config file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// A variable of toolport's environment.
    Env(String),
    /// A file (trimmed).
    File(PathBuf),
}

impl SecretSource {
    /// The secret, read now (a rotated file is picked up at the next connection).
    pub(crate) fn read(&self, what: &str) -> Result<String, String> {
        let value = match self {
            Self::Env(name) => {
                std::env::var(name).map_err(|_| format!("its {what} variable {name} is not set"))?
            }
            Self::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read its {what} file {} ({e})", path.display()))?,
        };
        let value = value.trim().to_owned();
        if value.is_empty() {
            return Err(format!("its {what} is empty"));
        }
        Ok(value)
    }
}

/// How the client of a `client_credentials` upstream authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAuth {
    /// A client secret (`client_secret_env` / `client_secret_file`).
    Secret(SecretSource),
    /// A private key signing an RFC 7523 assertion (`private_key_file`, `private_key_alg`).
    PrivateKey {
        /// The PEM file.
        file: PathBuf,
        /// Its algorithm.
        alg: KeyAlg,
    },
}

/// The grant an OAuth upstream's tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// `auth = "oauth"`: a person logs in once (`toolport upstreams login NAME`).
    AuthorizationCode {
        /// A client registered out of band; otherwise a client ID metadata document or
        /// dynamic registration, as the authorization server offers.
        client_id: Option<String>,
        /// The secret of that client, when it is confidential.
        client_secret: Option<SecretSource>,
        /// The https URL of toolport's client ID metadata document, when the operator
        /// publishes one.
        client_metadata_url: Option<String>,
    },
    /// `auth = "client_credentials"`.
    ClientCredentials {
        /// The client.
        client_id: String,
        /// How it authenticates.
        credential: ClientAuth,
    },
}

/// An HTTP upstream that authorizes with OAuth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    /// Where its tokens come from.
    pub grant: Grant,
    /// The scopes asked for (none: what the upstream's challenge and metadata suggest).
    pub scopes: Vec<String>,
    /// Where its tokens are kept.
    pub store: StoreKind,
}

impl OAuthSettings {
    /// `auth` as written.
    pub fn kind(&self) -> AuthKind {
        match self.grant {
            Grant::AuthorizationCode { .. } => AuthKind::Oauth,
            Grant::ClientCredentials { .. } => AuthKind::ClientCredentials,
        }
    }

    /// Its client secret's source, when it has one.
    fn secret_source(&self) -> Option<&SecretSource> {
        match &self.grant {
            Grant::AuthorizationCode { client_secret, .. } => client_secret.as_ref(),
            Grant::ClientCredentials {
                credential: ClientAuth::Secret(source),
                ..
            } => Some(source),
            Grant::ClientCredentials { .. } => None,
        }
    }
}

/// One upstream, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSettings {
    /// `[A-Za-z0-9_-]`, unique: the prefix of its tools and its name in logs and the audit.
    pub name: String,
    /// `false`: configured but not started.
    pub enabled: bool,
    /// How it is reached.
    pub endpoint: Endpoint,
    /// When its tools get the `name__` prefix.
    pub prefix: PrefixMode,
    /// Only these of its tools (by their own names); `None`: all.
    pub allow_tools: Option<Vec<String>>,
    /// Never these (wins over `allow_tools`).
    pub deny_tools: Vec<String>,
    /// Every call asks the user first.
    pub confirm: bool,
    /// These tools (by their own names) ask the user first.
    pub confirm_tools: Vec<String>,
    /// Tags its tools carry (for `[tools] tags` and the filters).
    pub tags: Vec<String>,
    /// The category its tools carry (default `upstream`).
    pub category: String,
    /// A call's time limit.
    pub timeout: Duration,
    /// How long starting it may take.
    pub start_timeout: Duration,
    /// How long a `tools/list` that comes while it is in its first start waits for it (0: not
    /// at all, the default: toolport answers at once with what is ready).
    pub list_wait: Duration,
    /// The largest result (its JSON) passed on; a larger one fails the call, saying so.
    pub max_result_bytes: usize,
}

/// The category an upstream's tools have unless it names one.
pub(crate) const DEFAULT_CATEGORY: &str = "upstream";

impl UpstreamSettings {
    /// Whether `tool` (its own name) is served: allowed and not denied.
    pub(crate) fn serves(&self, tool: &str) -> bool {
        self.allow_tools
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool))
            && !self.deny_tools.iter().any(|d| d == tool)
    }

    /// Whether a call of `tool` (its own name) asks the user first.
    pub(crate) fn confirms(&self, tool: &str) -> bool {
        self.confirm || self.confirm_tools.iter().any(|c| c == tool)
    }

    /// How it authorizes with OAuth, when it does.
    pub fn oauth(&self) -> Option<&OAuthSettings> {
        match &self.endpoint {
            Endpoint::Http { oauth, .. } => oauth.as_ref(),
            Endpoint::Command { .. } => None,
        }
    }

    /// `stdio` or `http`, for the status and the log.
    pub fn transport(&self) -> &'static str {
        match self.endpoint {
            Endpoint::Command { .. } => "stdio",
            Endpoint::Http { .. } => "http",
        }
    }

    /// Every upstream of the file, validated (`base` resolves relative paths: the config
    /// file's folder).
    pub fn load_all(file: Vec<FileUpstream>, base: &Path) -> Result<Vec<Self>, SettingError> {
        let mut all: Vec<Self> = Vec::with_capacity(file.len());
        for (index, entry) in file.into_iter().enumerate() {
            let upstream = Self::load(entry, index, base)?;
            if all.iter().any(|u| u.name == upstream.name) {
                return Err(SettingError::new(
                    format!("upstreams[{index}].name"),
                    format!(
                        "{:?} is the name of an earlier upstream; each needs its own (it is the prefix of its tools)",
                        upstream.name
                    ),
                ));
            }
            all.push(upstream);
        }
        Ok(all)
    }

    fn load(file: FileUpstream, index: usize, base: &Path) -> Result<Self, SettingError> {
        let key = |k: &str| format!("upstreams[{index}].{k}");
        // The OAuth keys are read from the entry as written, beside the fields taken below.
        let whole = file.clone();
        let name = file.name.unwrap_or_default();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || name.contains("__")
        {
            return Err(SettingError::new(
                key("name"),
                format!(
                    "{name:?} is not an upstream name: 1 to {MAX_NAME_CHARS} of A-Z a-z 0-9 _ -, without \"__\" (it becomes the prefix \"name__\" of its tools)"
                ),
            ));
        }
        let endpoint = match (file.command, file.url) {
            (Some(program), None) => {
                refuse_given(
                    &key,
                    [
                        ("token_env", file.token_env.is_some()),
                        ("token_file", file.token_file.is_some()),
                        ("headers", file.headers.is_some()),
                        ("auth", file.auth.is_some()),
                    ],
                    "only an HTTP upstream (url) takes it; a command gets variables through env or env_pass",
                )?;
                refuse_given(
                    &key,
                    oauth_keys(&whole),
                    "only an HTTP upstream with auth = \"oauth\" or \"client_credentials\" takes it",
                )?;
                if program.trim().is_empty() {
                    return Err(SettingError::new(
                        key("command"),
                        "is empty; name the program to run",
                    ));
                }
                let env = file.env.unwrap_or_default();
                let env_pass = file.env_pass.unwrap_or_default();
                for name in env.keys().chain(&env_pass) {
                    check_variable(name)
                        .map_err(|e| SettingError::new(key("env"), e.to_string()))?;
                }
                Endpoint::Command {
                    program,
                    args: file.args.unwrap_or_default(),
                    env,
                    env_pass,
                    cwd: file.cwd.map(|d| base.join(d)),
                }
            }
            (None, Some(url)) => {
                refuse_given(
                    &key,
                    [
                        ("args", file.args.is_some()),
                        ("env", file.env.is_some()),
                        ("env_pass", file.env_pass.is_some()),
                        ("cwd", file.cwd.is_some()),
                    ],
                    "only a command upstream takes it; an HTTP upstream (url) is reached, not started",
                )?;
                let parsed = url::Url::parse(&url)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
                let Some(parsed) = parsed else {
                    return Err(SettingError::new(
                        key("url"),
                        format!(
                            "{:?} is not an http(s) URL like \"http://127.0.0.1:3001/mcp\"",
                            crate::secret::hide_userinfo(&url)
                        ),
                    ));
                };
                if !parsed.username().is_empty() || parsed.password().is_some() {
                    return Err(SettingError::new(
                        key("url"),
                        "carries credentials; give the token with token_env or token_file instead (they are never printed)",
                    ));
                }
                if file.token_env.is_some() && file.token_file.is_some() {
                    return Err(SettingError::new(
                        key("token_env"),
                        "and token_file are two sources of one token; keep one",
                    ));
                }
                let headers = file.headers.unwrap_or_default();
                for (header, value) in &headers {
                    if reqwest::header::HeaderValue::from_str(value).is_err() {
                        return Err(SettingError::new(
                            key("headers"),
                            format!(
                                "the value of {header:?} is not a valid header value (visible ASCII)"
                            ),
                        ));
                    }
                    if header.eq_ignore_ascii_case("authorization") {
                        return Err(SettingError::new(
                            key("headers"),
                            "Authorization is set from token_env, token_file or auth (never written in the config file)",
                        ));
                    }
                    if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        return Err(SettingError::new(
                            key("headers"),
                            format!("{header:?} is not a header name"),
                        ));
                    }
                }
                let oauth = load_oauth(&whole, &parsed, &key, base)?;
                Endpoint::Http {
                    url: parsed,
                    token_env: file.token_env,
                    token_file: file.token_file.map(|f| base.join(f)),
                    headers,
                    oauth,
                }
            }
            (Some(_), Some(_)) => {
                return Err(SettingError::new(
                    key("command"),
                    "and url are both given; an upstream is either a command (stdio) or a url (Streamable HTTP)",
                ));
            }
            (None, None) => {
                return Err(SettingError::new(
                    key("command"),
                    "is missing: give command (a stdio server) or url (a Streamable HTTP server)",
                ));
            }
        };
        Ok(Self {
            name,
            enabled: file.enabled.unwrap_or(true),
            endpoint,
            prefix: file.prefix.unwrap_or_default(),
            allow_tools: file.allow_tools,
            deny_tools: file.deny_tools.unwrap_or_default(),
            confirm: file.confirm.unwrap_or(false),
            confirm_tools: file.confirm_tools.unwrap_or_default(),
            tags: file.tags.unwrap_or_default(),
            category: file.category.unwrap_or_else(|| DEFAULT_CATEGORY.to_owned()),
            timeout: duration_setting(
                key("timeout"),
                file.timeout.as_ref(),
                None,
                DEFAULT_TIMEOUT,
                TIMEOUT_RANGE,
            )?,
            list_wait: duration_setting(
                key("list_wait"),
                file.list_wait.as_ref(),
                None,
                Duration::ZERO,
                LIST_WAIT_RANGE,
            )?,
            start_timeout: duration_setting(
                key("start_timeout"),
                file.start_timeout.as_ref(),
                None,
                DEFAULT_START_TIMEOUT,
                START_TIMEOUT_RANGE,
            )?,
            max_result_bytes: match file.max_result_bytes {
                Some(bytes) => check_range(key("max_result_bytes"), bytes, MAX_RESULT_BYTES_RANGE)?,
                None => DEFAULT_MAX_RESULT_BYTES,
            },
        })
    }

    /// Its `env` variables or headers (name, value) whose names look like secrets.
    fn secret_entries(&self) -> (&'static str, Vec<(&String, &String)>) {
        match &self.endpoint {
            Endpoint::Command { env, .. } => (
                "env",
                env.iter().filter(|(name, _)| secret_name(name)).collect(),
            ),
            Endpoint::Http { headers, .. } => (
                "headers",
                headers
                    .iter()
                    .filter(|(name, _)| secret_name(name))
                    .collect(),
            ),
        }
    }

    /// The secrets its settings hold, for the audit log's scrubber: the values of its `env`
    /// or headers under secret-looking names, of the variables it passes on from toolport's
    /// environment (`env_pass`) under such names, and the userinfo of a URL in any of its
    /// arguments, `env` values or headers (`postgres://app:pa55@db/x`: `app:pa55` and the
    /// password alone, which a model or an error may repeat without the URL).
    pub fn secret_values(&self) -> Vec<String> {
        let (passed, texts): (Vec<String>, Vec<&String>) = match &self.endpoint {
            Endpoint::Command {
                args,
                env,
                env_pass,
                ..
            } => (
                env_pass
                    .iter()
                    .filter(|name| secret_name(name))
                    .filter_map(|name| std::env::var(name).ok())
                    .collect(),
                args.iter().chain(env.values()).collect(),
            ),
            Endpoint::Http { headers, .. } => (Vec::new(), headers.values().collect()),
        };
        let credentials = texts
            .into_iter()
            .flat_map(|text| crate::secret::url_credentials(text).map(str::to_owned));
        self.secret_entries()
            .1
            .into_iter()
            .map(|(_, value)| value.clone())
            .chain(passed)
            .chain(credentials)
            .collect()
    }

    /// What `toolport config` says instead of printing: each `env` value or header under a
    /// secret-looking name.
    pub fn notes(&self, index: usize) -> Vec<Note> {
        let (key, entries) = self.secret_entries();
        entries
            .into_iter()
            .map(|(name, _)| {
                Note::new(
                    format!("upstreams[{index}].{key}.{name}"),
                    "set in the config file (a secret: never printed; for a command, name it in env_pass and set it in toolport's environment for a printed config to carry it)",
                )
            })
            .collect()
    }
}

/// The OAuth keys of an entry and whether each was given (all belong to `auth`).
fn oauth_keys(file: &FileUpstream) -> [(&'static str, bool); 8] {
    [
        ("client_id", file.client_id.is_some()),
        ("client_secret_env", file.client_secret_env.is_some()),
        ("client_secret_file", file.client_secret_file.is_some()),
        ("private_key_file", file.private_key_file.is_some()),
        ("private_key_alg", file.private_key_alg.is_some()),
        ("client_metadata_url", file.client_metadata_url.is_some()),
        ("scopes", file.scopes.is_some()),
        ("token_store", file.token_store.is_some()),
    ]
}

/// An HTTP entry's `auth` and its keys, validated: each grant takes only what it uses, a
/// client secret or key is named by where it is (never written in the file), and tokens go
/// only over https (or plain http to a loopback address, where nothing leaves the machine).
fn load_oauth(
    file: &FileUpstream,
    url: &url::Url,
    key: &impl Fn(&str) -> String,
    base: &Path,
) -> Result<Option<OAuthSettings>, SettingError> {
    let Some(kind) = file.auth else {
        return refuse_given(
            key,
            oauth_keys(file),
            "only an upstream with auth = \"oauth\" or \"client_credentials\" takes it; add auth",
        )
        .map(|()| None);
    };
    refuse_given(
        key,
        [
            ("token_env", file.token_env.is_some()),
            ("token_file", file.token_file.is_some()),
        ],
        "is a static token; an upstream with auth gets its tokens from its authorization server (drop one of the two)",
    )?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if url.scheme() != "https" && !loopback {
        return Err(SettingError::new(
            key("url"),
            "is plain http to another machine; OAuth tokens go only over https (or http to 127.0.0.1, ::1 or localhost)",
        ));
    }
    for scope in file.scopes.iter().flatten() {
        if scope.is_empty()
            || scope
                .chars()
                .any(|c| c.is_whitespace() || c == '"' || c == '\\')
        {
            return Err(SettingError::new(
                key("scopes"),
                format!("{scope:?} is not a scope: one word each, without spaces or quotes"),
            ));
        }
    }
    if file.client_secret_env.is_some() && file.client_secret_file.is_some() {
        return Err(SettingError::new(
            key("client_secret_env"),
            "and client_secret_file are two sources of one secret; keep one",
        ));
    }
    let secret = match (&file.client_secret_env, &file.client_secret_file) {
        (Some(name), _) => {
            check_variable(name)
                .map_err(|e| SettingError::new(key("client_secret_env"), e.to_string()))?;
            Some(SecretSource::Env(name.clone()))
        }
        (None, Some(path)) => Some(SecretSource::File(base.join(path))),
        (None, None) => None,
    };
    let client_id = match &file.client_id {
        Some(id) if id.trim().is_empty() => {
            return Err(SettingError::new(
                key("client_id"),
                "is empty; give the client's id, or leave it out",
            ));
        }
        other => other.clone(),
    };
    if file.private_key_alg.is_some() && file.private_key_file.is_none() {
        return Err(SettingError::new(
            key("private_key_alg"),
            "names how private_key_file signs; give private_key_file too",
        ));
    }
    let grant = match kind {
        AuthKind::Oauth => {
            refuse_given(
                key,
                [("private_key_file", file.private_key_file.is_some())],
                "is for auth = \"client_credentials\" (private_key_jwt); a login (auth = \"oauth\") uses no key",
            )?;
            if secret.is_some() && client_id.is_none() {
                return Err(SettingError::new(
                    key("client_id"),
                    "is missing: a client secret belongs to a client registered out of band; give its client_id",
                ));
            }
            let metadata_url = match &file.client_metadata_url {
                Some(text) => {
                    let ok = url::Url::parse(text).is_ok_and(|u| {
                        u.scheme() == "https" && u.host().is_some() && u.path() != "/"
                    });
                    if !ok {
                        return Err(SettingError::new(
                            key("client_metadata_url"),
                            format!(
                                "{text:?} is not an https URL with a path (where toolport's client ID metadata document is published)"
                            ),
                        ));
                    }
                    Some(text.clone())
                }
                None => None,
            };
            Grant::AuthorizationCode {
                client_id,
                client_secret: secret,
                client_metadata_url: metadata_url,
            }
        }
        AuthKind::ClientCredentials => {
            refuse_given(
                key,
                [("client_metadata_url", file.client_metadata_url.is_some())],
                "is for a login (auth = \"oauth\"); client credentials need a registered client_id",
            )?;
            let Some(client_id) = client_id else {
                return Err(SettingError::new(
                    key("client_id"),
                    "is missing: client credentials need the client registered with the authorization server",
                ));
            };
            let credential = match (secret, &file.private_key_file) {
                (Some(source), None) => ClientAuth::Secret(source),
                (None, Some(path)) => ClientAuth::PrivateKey {
                    file: base.join(path),
                    alg: file.private_key_alg.unwrap_or_default(),
                },
                (Some(_), Some(_)) => {
                    return Err(SettingError::new(
                        key("private_key_file"),
                        "and a client secret are two ways to authenticate one client; keep one",
                    ));
                }
                (None, None) => {
                    return Err(SettingError::new(
                        key("client_secret_env"),
                        "is missing: client credentials need client_secret_env, client_secret_file or private_key_file (private_key_jwt)",
                    ));
                }
            };
            Grant::ClientCredentials {
                client_id,
                credential,
            }
        }
    };
    Ok(Some(OAuthSettings {
        grant,
        scopes: file.scopes.clone().unwrap_or_default(),
        store: file.token_store.unwrap_or_default(),
    }))
}

/// An error naming the first of `keys` that was given (`true`): it does not belong to this
/// kind of upstream, `why`.
fn refuse_given<const N: usize>(
    key: &impl Fn(&str) -> String,
    keys: [(&str, bool); N],
    why: &str,
) -> Result<(), SettingError> {
    match keys.iter().find(|(_, given)| *given) {
        Some((name, _)) => Err(SettingError::new(key(name), why.to_owned())),
        None => Ok(()),
    }
}

/// An upstream as `toolport config` prints it: the keys the file takes, an `env` value under
/// a secret-looking name left out (a note says so).
impl Serialize for UpstreamSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Printed<'a> {
            name: &'a str,
            enabled: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            command: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            args: Option<Vec<String>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            env: Option<BTreeMap<&'a str, String>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            env_pass: Option<&'a [String]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            cwd: Option<&'a Path>,
            #[serde(skip_serializing_if = "Option::is_none")]
            url: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            token_env: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            token_file: Option<&'a Path>,
            #[serde(skip_serializing_if = "Option::is_none")]
            headers: Option<BTreeMap<&'a str, &'a str>>,
            #[serde(flatten)]
            oauth: Option<PrintedOAuth<'a>>,
            prefix: PrefixMode,
            #[serde(skip_serializing_if = "Option::is_none")]
            allow_tools: Option<&'a [String]>,
            deny_tools: &'a [String],
            confirm: bool,
            confirm_tools: &'a [String],
            tags: &'a [String],
            category: &'a str,
            #[serde(serialize_with = "serialize_duration")]
            timeout: Duration,
            #[serde(serialize_with = "serialize_duration")]
            start_timeout: Duration,
            #[serde(serialize_with = "serialize_duration")]
            list_wait: Duration,
            max_result_bytes: usize,
        }
        let mut printed = Printed {
            name: &self.name,
            enabled: self.enabled,
            command: None,
            args: None,
            env: None,
            env_pass: None,
            cwd: None,
            url: None,
            token_env: None,
            token_file: None,
            headers: None,
            oauth: None,
            prefix: self.prefix,
            allow_tools: self.allow_tools.as_deref(),
            deny_tools: &self.deny_tools,
            confirm: self.confirm,
            confirm_tools: &self.confirm_tools,
            tags: &self.tags,
            category: &self.category,
            timeout: self.timeout,
            start_timeout: self.start_timeout,
            list_wait: self.list_wait,
            max_result_bytes: self.max_result_bytes,
        };
        match &self.endpoint {
            Endpoint::Command {
                program,
                args,
                env,
                env_pass,
                cwd,
            } => {
                printed.command = Some(program);
                printed.args = Some(args.iter().map(|a| hide_userinfo(a).into_owned()).collect());
                printed.env = Some(
                    env.iter()
                        .filter(|(name, _)| !secret_name(name))
                        .map(|(k, v)| (k.as_str(), hide_userinfo(v).into_owned()))
                        .collect(),
                );
                printed.env_pass = Some(env_pass);
                printed.cwd = cwd.as_deref();
            }
            Endpoint::Http {
                url,
                token_env,
                token_file,
                headers,
                oauth,
            } => {
                printed.oauth = oauth.as_ref().map(PrintedOAuth::of);
                printed.url = Some(url.as_str());
                printed.token_env = token_env.as_deref();
                printed.token_file = token_file.as_deref();
                printed.headers = Some(
                    headers
                        .iter()
                        .filter(|(name, _)| !secret_name(name))
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect(),
                );
            }
        }
        printed.serialize(serializer)
    }
}

/// An upstream's OAuth keys as `toolport config` prints them: a secret or a key only as where
/// it is read from.
#[derive(Serialize)]
struct PrintedOAuth<'a> {
    auth: AuthKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret_env: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret_file: Option<&'a Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    private_key_file: Option<&'a Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    private_key_alg: Option<KeyAlg>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_metadata_url: Option<&'a str>,
    scopes: &'a [String],
    token_store: StoreKind,
}

impl<'a> PrintedOAuth<'a> {
    fn of(oauth: &'a OAuthSettings) -> Self {
        let (client_id, client_metadata_url, key) = match &oauth.grant {
            Grant::AuthorizationCode {
                client_id,
                client_metadata_url,
                ..
            } => (client_id.as_deref(), client_metadata_url.as_deref(), None),
            Grant::ClientCredentials {
                client_id,
                credential,
            } => (
                Some(client_id.as_str()),
                None,
                match credential {
                    ClientAuth::PrivateKey { file, alg } => Some((file.as_path(), *alg)),
                    ClientAuth::Secret(_) => None,
                },
            ),
        };
        let (secret_env, secret_file) = match oauth.secret_source() {
            Some(SecretSource::Env(name)) => (Some(name.as_str()), None),
            Some(SecretSource::File(path)) => (None, Some(path.as_path())),
            None => (None, None),
        };
        Self {
            auth: oauth.kind(),
            client_id,
            client_secret_env: secret_env,
            client_secret_file: secret_file,
            private_key_file: key.map(|(file, _)| file),
            private_key_alg: key.map(|(_, alg)| alg),
            client_metadata_url,
            scopes: &oauth.scopes,
            token_store: oauth.store,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Vec<UpstreamSettings>, String> {
        #[derive(Deserialize)]
        struct Root {
            upstreams: Vec<FileUpstream>,
        }
        let root: Root = toml::from_str(text).map_err(|e| e.to_string())?;
        UpstreamSettings::load_all(root.upstreams, Path::new("/etc/toolport"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_entry_reads_with_its_defaults() {
        let all = load(
            r#"
            [[upstreams]]
            name = "everything"
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-everything"]
            env = { LOG_LEVEL = "warn" }
            allow_tools = ["echo", "add"]
            deny_tools = ["add"]
            timeout = "5s"

            [[upstreams]]
            name = "remote-1"
            url = "http://127.0.0.1:3001/mcp"
            token_file = "token"
            prefix = "conditional"
            confirm = true
            "#,
        )
        .unwrap();
        let everything = &all[0];
        assert_eq!(everything.prefix, PrefixMode::Always);
        assert!(everything.serves("echo"));
        assert!(!everything.serves("add"), "deny wins over allow");
        assert!(!everything.serves("printEnv"));
        assert_eq!(everything.timeout, Duration::from_secs(5));
        assert_eq!(everything.start_timeout, DEFAULT_START_TIMEOUT);
        assert_eq!(everything.category, DEFAULT_CATEGORY);
        assert_eq!(everything.max_result_bytes, 16 * 1024 * 1024);
        assert!(!everything.confirms("echo"));
        let remote = &all[1];
        assert_eq!(remote.transport(), "http");
        assert!(remote.confirms("anything"));
        match &remote.endpoint {
            Endpoint::Http { token_file, .. } => {
                assert_eq!(
                    token_file.as_deref(),
                    Some(Path::new("/etc/toolport/token"))
                );
            }
            Endpoint::Command { .. } => panic!("an HTTP upstream"),
        }
    }

    #[test]
    fn what_cannot_work_is_an_error_naming_the_key() {
        for (text, key) in [
            ("name = \"a b\"\ncommand = \"x\"", "upstreams[0].name"),
            ("name = \"a__b\"\ncommand = \"x\"", "upstreams[0].name"),
            ("command = \"x\"", "upstreams[0].name"),
            ("name = \"a\"", "upstreams[0].command"),
            (
                "name = \"a\"\ncommand = \"x\"\nurl = \"http://h/\"",
                "upstreams[0].command",
            ),
            ("name = \"a\"\nurl = \"ftp://h/\"", "upstreams[0].url"),
            ("name = \"a\"\nurl = \"http://u:p@h/\"", "upstreams[0].url"),
            (
                "name = \"a\"\nurl = \"http://h/\"\nargs = []",
                "upstreams[0].args",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\ntoken_env = \"T\"",
                "upstreams[0].token_env",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\ntimeout = \"0s\"",
                "upstreams[0].timeout",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\nenv = { \"A B\" = \"1\" }",
                "upstreams[0].env",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\nenv = { LD_PRELOAD = \"x.so\" }",
                "upstreams[0].env",
            ),
            (
                "name = \"a\"\nurl = \"http://h/\"\nheaders = { X = \"a\\nb\" }",
                "upstreams[0].headers",
            ),
            (
                "name = \"a\"\nurl = \"http://h/\"\nheaders = { Authorization = \"x\" }",
                "upstreams[0].headers",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\nmax_result_bytes = 100",
                "upstreams[0].max_result_bytes",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\nmax_result_bytes = 17000000",
                "upstreams[0].max_result_bytes",
            ),
            // OAuth: each key where it belongs, secrets by where they are, tokens over https.
            (
                "name = \"a\"\ncommand = \"x\"\nauth = \"oauth\"",
                "upstreams[0].auth",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nclient_id = \"c\"",
                "upstreams[0].client_id",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"oauth\"\ntoken_env = \"T\"",
                "upstreams[0].token_env",
            ),
            (
                "name = \"a\"\nurl = \"http://h/\"\nauth = \"oauth\"",
                "upstreams[0].url",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"client_credentials\"\nclient_secret_env = \"S\"",
                "upstreams[0].client_id",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"client_credentials\"\nclient_id = \"c\"",
                "upstreams[0].client_secret_env",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"client_credentials\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\nprivate_key_file = \"k.pem\"",
                "upstreams[0].private_key_file",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"client_credentials\"\nclient_id = \"c\"\nclient_secret_env = \"S\"\nprivate_key_alg = \"ES256\"",
                "upstreams[0].private_key_alg",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"oauth\"\nprivate_key_file = \"k.pem\"",
                "upstreams[0].private_key_file",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"oauth\"\nclient_secret_env = \"S\"",
                "upstreams[0].client_id",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"oauth\"\nclient_metadata_url = \"http://h/c.json\"",
                "upstreams[0].client_metadata_url",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"oauth\"\nscopes = [\"a b\"]",
                "upstreams[0].scopes",
            ),
            (
                "name = \"a\"\nurl = \"https://h/\"\nauth = \"oauth\"\ntoken_store = \"disk\"",
                "token_store",
            ),
        ] {
            let error = load(&format!("[[upstreams]]\n{text}")).unwrap_err();
            assert!(error.contains(key), "{text}: {error}");
        }
        let twice = load(
            "[[upstreams]]\nname = \"a\"\ncommand = \"x\"\n[[upstreams]]\nname = \"a\"\ncommand = \"y\"",
        );
        assert!(twice.unwrap_err().contains("upstreams[1].name"));
        let typo = load("[[upstreams]]\nname = \"a\"\ncommand = \"x\"\nprefx = \"never\"");
        assert!(typo.unwrap_err().contains("prefx"));
    }

    #[test]
    fn oauth_entries_read_and_print_their_secrets_by_source_only() {
        let all = load(
            "[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9/mcp\"\nauth = \"oauth\"\n\
             [[upstreams]]\nname = \"b\"\nurl = \"https://h/mcp\"\nauth = \"client_credentials\"\nclient_id = \"c\"\nprivate_key_file = \"k.pem\"\nscopes = [\"x\"]",
        )
        .unwrap();
        let a = all[0].oauth().unwrap();
        assert_eq!(a.kind(), AuthKind::Oauth);
        assert_eq!(a.store, StoreKind::Auto);
        let b = all[1].oauth().unwrap();
        assert_eq!(
            b.grant,
            Grant::ClientCredentials {
                client_id: "c".into(),
                credential: ClientAuth::PrivateKey {
                    file: PathBuf::from("/etc/toolport/k.pem"),
                    alg: KeyAlg::RS256,
                },
            }
        );
        let printed = toml::to_string(&all[1]).unwrap();
        for key in [
            "auth = \"client_credentials\"",
            "client_id = \"c\"",
            "private_key_file = \"/etc/toolport/k.pem\"",
            "private_key_alg = \"RS256\"",
        ] {
            assert!(printed.contains(key), "{printed}");
        }
        // What is printed loads again.
        let again = load(&format!("[[upstreams]]\n{printed}")).unwrap();
        assert_eq!(again[0], all[1]);
    }

    #[test]
    fn secrets_in_env_are_never_printed() {
        let all = load(
            "[[upstreams]]\nname = \"gh\"\ncommand = \"x\"\nenv = { GITHUB_TOKEN = \"ghp_s3cret\", LOG_LEVEL = \"warn\" }",
        )
        .unwrap();
        let printed = toml::to_string(&all[0]).unwrap();
        assert!(!printed.contains("ghp_s3cret"), "{printed}");
        assert!(printed.contains("LOG_LEVEL"), "{printed}");
        assert_eq!(all[0].notes(0).len(), 1);
        assert_eq!(all[0].secret_values(), vec!["ghp_s3cret".to_owned()]);
        // A URL's credentials in an argument or a variable, a secret-looking header.
        let all = load(
            "[[upstreams]]\nname = \"pg\"\ncommand = \"x\"\nargs = [\"postgresql://app:pa55word@db/x\"]\nenv = { DATABASE_URL = \"postgres://u:hunter2@h/d\" }\n\
             [[upstreams]]\nname = \"r\"\nurl = \"http://h/mcp\"\nheaders = { \"X-Api-Key\" = \"k3y-value\", \"X-Team\" = \"tools\" }",
        )
        .unwrap();
        let printed = toml::to_string(&all[0]).unwrap() + &toml::to_string(&all[1]).unwrap();
        for secret in ["pa55word", "hunter2", "k3y-value"] {
            assert!(!printed.contains(secret), "{printed}");
        }
        assert!(printed.contains("X-Team"), "{printed}");
        assert_eq!(all[1].secret_values(), vec!["k3y-value".to_owned()]);
        // The audit log's scrubber gets the credentials, and each password alone.
        assert_eq!(
            all[0].secret_values(),
            ["app:pa55word", "pa55word", "u:hunter2", "hunter2"]
        );
    }
}
