//! Settings of the HTTP transports: the `--http …` flags, the `[http]` section of the TOML file,
//! and their validation into one immutable [`HttpSettings`].
//!
//! The HTTP feature's settings module, in the shape every feature's settings share
//! ([`toolport_tools::host::settings`]): `config/` only flattens [`HttpArgs`] into its flags
//! and calls [`HttpSettings::load`] with the file's `[http]` ([`FileHttp`], the library's: the
//! library owns the file's format), which returns a [`SettingError`] naming the key and what is
//! allowed. The gate's rules are parsed with the gate
//! ([`super::gate::OriginRule`], [`super::gate::normalize_host`]).
//!
//! The rule that matters most is checked here, before anything listens: a server bound beyond
//! loopback must have a bearer token ([`HttpSettings::load`] refuses otherwise, and suggests a
//! freshly generated one). Tokens are held in [`Secret`], whose `Debug` and `Serialize` print
//! a mask, so no log can reveal them; `toolport config` prints a token file's path
//! (`token_file`) and otherwise only where the token was set ([`HttpSettings::notes`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde::{Serialize, Serializer};
use toolport_tools::host::config::{FileHttp, FilePrincipals};
use toolport_tools::host::secret::{Secret, Source, random_token};
use toolport_tools::host::settings::{
    Note, SettingError, check_range, duration_setting, serialize_duration,
};

use super::forwarded::TrustedProxies;
use super::gate::{Gate, OriginRule, normalize_host};
use super::oauth::OAuth;
use super::oauth::settings::{OAuthArgs, OAuthSettings};
use crate::identity::Policy;

/// Default request body cap: 4 MiB holds any sane MCP message (tool arguments included) and
/// bounds what one request can make the server buffer. Matches rmcp's own default.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Smallest body cap an operator may set: an `initialize` request alone is a few hundred
/// bytes, so below 1 KiB no client could even start.
const MIN_MAX_BODY_BYTES: usize = 1024;
/// Largest body cap an operator may set: 256 MiB is far beyond any tool argument, and every
/// request up to the cap may be buffered whole.
const MAX_MAX_BODY_BYTES: usize = 256 * 1024 * 1024;
/// Default cap on live sessions (Streamable HTTP and legacy SSE together). Each costs a task
/// and a few small buffers; 256 is far beyond what the agents on one machine open, and
/// bounds what a client with the token can make the server hold.
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 256;
/// Largest session cap an operator may set: each session holds a task, channels and a server
/// instance, so 100 000 is already gigabytes; a larger number is a typo, not a plan.
const MAX_MAX_SESSIONS: usize = 100_000;
/// Default idle expiry: a session with no message from its client for this long is closed.
/// Five minutes is rmcp's default and outlasts the longest `execute_command` timeout clients
/// usually wait for.
pub(crate) const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);
/// Default interval of SSE keep-alive comments: well under the 30-60 s idle timeouts of
/// common proxies and load balancers, rare enough to cost nothing.
pub(crate) const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Shortest idle expiry and keep-alive interval: under a second, a session would expire
/// between two messages of a working client, and keep-alives would be noise.
const MIN_SESSION_DURATION: Duration = Duration::from_secs(1);
/// Longest idle expiry: a day; an abandoned session holds its slot under the cap that long.
const MAX_SESSION_IDLE: Duration = Duration::from_secs(24 * 3600);
/// Longest keep-alive interval: an hour; proxies close quiet connections far sooner.
const MAX_SSE_KEEP_ALIVE: Duration = Duration::from_secs(3600);
/// Largest per-client request rate: a thousand a second is beyond any MCP client; a larger
/// number is a typo, not a limit.
const MAX_REQUESTS_PER_MINUTE: u32 = 60_000;
/// Shortest token accepted: 16 characters of a random token are ~96 bits and more; shorter
/// ones are guessable and almost certainly typed by hand.
pub(crate) const MIN_TOKEN_LEN: usize = 16;
/// Where a token from the command line came from, as errors and `toolport config` name it
/// (clap has merged the flag and the variable).
const TOKEN_FLAG: &str = "--token / TOOLPORT_TOKEN";
/// Bytes of randomness in a generated token (hex-encoded, so 64 characters).
pub(crate) const GENERATED_TOKEN_BYTES: usize = 32;

/// The `--http …` flags (global, so `toolport --http ADDR` and `toolport serve --http ADDR`
/// both work, and `toolport config` shows their effect).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct HttpArgs {
    /// Serve MCP over HTTP on this address instead of stdio: Streamable HTTP at /mcp, legacy
    /// HTTP+SSE at /sse, /healthz for load balancers. "8787" means 127.0.0.1:8787.
    #[arg(long, value_name = "ADDR", env = "TOOLPORT_HTTP", global = true)]
    pub(crate) http: Option<String>,

    /// With --http: no sessions (each POST is served on its own), for replicas behind a
    /// load balancer.
    #[arg(long, env = "TOOLPORT_STATELESS", global = true)]
    pub(crate) stateless: bool,

    /// With --http: the bearer token clients must send (`Authorization: Bearer TOKEN`).
    /// Prefer TOOLPORT_TOKEN or --token-file: a flag is visible to other local users in `ps`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "TOOLPORT_TOKEN",
        hide_env_values = true,
        global = true,
        conflicts_with = "token_file"
    )]
    pub(crate) token: Option<Secret>,

    /// With --http: read the bearer token from this file (surrounding whitespace is ignored).
    #[arg(long, value_name = "FILE", env = "TOOLPORT_TOKEN_FILE", global = true)]
    pub(crate) token_file: Option<PathBuf>,

    /// With --http on a loopback address: accept requests without a token. Without a token
    /// and without this flag, toolport generates one at start-up and prints it on stderr.
    #[arg(long, env = "TOOLPORT_NO_AUTH", global = true)]
    pub(crate) no_auth: bool,

    /// With --http: also accept this Host (name or IP, any port; repeatable; "*" accepts any
    /// Host). Default: localhost, 127.0.0.1, ::1 and the bound address.
    #[arg(long = "allowed-host", value_name = "HOST", global = true)]
    pub(crate) allowed_hosts: Vec<String>,

    /// With --http: also accept browser requests from this Origin, e.g. https://app.example.com
    /// or http://localhost:* (repeatable; "*" accepts any). Default: loopback origins.
    /// Requests without an Origin header (non-browser clients) are always accepted.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", global = true)]
    pub(crate) allowed_origins: Vec<String>,

    /// With --http: believe X-Forwarded-For (the client's address, for the per-client rate)
    /// and X-Forwarded-Proto/Host (the OAuth resource URL) from this address or CIDR block
    /// (repeatable): the load balancer, reverse proxy or tunnel in front of toolport.
    #[arg(long = "trusted-proxy", value_name = "ADDR", global = true)]
    pub(crate) trusted_proxies: Vec<String>,

    /// `[http.oauth]`: OAuth access tokens.
    #[command(flatten)]
    pub(crate) oauth: OAuthArgs,
}

/// `allowed_hosts` entry that accepts any Host.
const ANY_HOST: &str = "*";

/// Host names that always mean this machine.
pub(crate) const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// How clients authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthMode {
    /// Clients must send this bearer token (read from the source).
    Token(Secret, Source),
    /// No token was configured: generate one at start-up and print it on stderr (loopback
    /// only).
    Generate,
    /// No authentication (`--no-auth`; loopback only).
    Disabled,
    /// OAuth access tokens only (`[http.oauth]` without a static token).
    OAuth,
}

/// The validated HTTP settings.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Where to listen; `None` serves stdio.
    pub(crate) bind: Option<SocketAddr>,
    /// Stateless Streamable HTTP (no sessions).
    pub(crate) stateless: bool,
    /// How clients authenticate.
    pub(crate) auth: AuthMode,
    /// Accepted `Host` names (lower case, without port); empty means any.
    pub(crate) allowed_hosts: Vec<String>,
    /// Accepted browser Origins.
    pub(crate) allowed_origins: Vec<OriginRule>,
    /// Request body cap in bytes.
    pub(crate) max_body_bytes: usize,
    /// Most live sessions.
    pub(crate) max_sessions: usize,
    /// Idle expiry of a session.
    pub(crate) session_idle_timeout: Duration,
    /// Interval of keep-alive comments on SSE streams (both transports).
    pub(crate) sse_keep_alive: Duration,
    /// Requests per minute one client (peer address, or the address a trusted proxy names)
    /// may send; `None`: no limit.
    pub(crate) max_requests_per_minute: Option<NonZeroU32>,
    /// Peers whose `X-Forwarded-*` headers are believed.
    pub(crate) trusted_proxies: TrustedProxies,
    /// OAuth access tokens (`[http.oauth]`), beside the static token when one is set.
    pub(crate) oauth: Option<OAuthSettings>,
    /// The policy per principal (`[http.principals]`).
    pub(crate) principals: Arc<Policy>,
}

/// `[http]` as `toolport config` prints it: the keys [`FileHttp`] takes. The address is a
/// flag's and the token is never printed (a token file is, as `token_file`); both are notes
/// ([`HttpSettings::notes`]). Any Host (no list) is `allowed_hosts = ["*"]`.
impl Serialize for HttpSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Printed<'a> {
            stateless: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            token_file: Option<&'a Path>,
            no_auth: bool,
            allowed_hosts: Vec<&'a str>,
            allowed_origins: &'a [OriginRule],
            max_body_bytes: usize,
            max_sessions: usize,
            #[serde(serialize_with = "serialize_duration")]
            session_idle_timeout: Duration,
            #[serde(serialize_with = "serialize_duration")]
            sse_keep_alive: Duration,
            #[serde(skip_serializing_if = "Option::is_none")]
            max_requests_per_minute: Option<NonZeroU32>,
            trusted_proxies: &'a TrustedProxies,
            #[serde(skip_serializing_if = "Option::is_none")]
            oauth: Option<&'a OAuthSettings>,
            #[serde(skip_serializing_if = "Option::is_none")]
            principals: Option<&'a FilePrincipals>,
        }
        let token_file = match &self.auth {
            AuthMode::Token(_, source) => source.file(),
            AuthMode::Generate | AuthMode::Disabled | AuthMode::OAuth => None,
        };
        let allowed_hosts = if self.allowed_hosts.is_empty() {
            vec![ANY_HOST]
        } else {
            self.allowed_hosts.iter().map(String::as_str).collect()
        };
        Printed {
            stateless: self.stateless,
            token_file,
            no_auth: self.auth == AuthMode::Disabled,
            allowed_hosts,
            allowed_origins: &self.allowed_origins,
            max_body_bytes: self.max_body_bytes,
            max_sessions: self.max_sessions,
            session_idle_timeout: self.session_idle_timeout,
            sse_keep_alive: self.sse_keep_alive,
            max_requests_per_minute: self.max_requests_per_minute,
            trusted_proxies: &self.trusted_proxies,
            oauth: self.oauth.as_ref(),
            principals: self.principals.source(),
        }
        .serialize(serializer)
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            bind: None,
            stateless: false,
            auth: AuthMode::Generate,
            allowed_hosts: LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect(),
            allowed_origins: default_origins(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE,
            sse_keep_alive: DEFAULT_SSE_KEEP_ALIVE,
            max_requests_per_minute: None,
            trusted_proxies: TrustedProxies::default(),
            oauth: None,
            principals: Arc::default(),
        }
    }
}

/// Loopback pages (a local web UI such as the MCP Inspector's) on any port, http or https.
fn default_origins() -> Vec<OriginRule> {
    let mut rules = Vec::new();
    for host in LOOPBACK_HOSTS {
        for scheme in ["http", "https"] {
            rules.push(OriginRule::Site {
                scheme: scheme.to_owned(),
                host: host.to_string(),
                port: None,
            });
        }
    }
    rules
}

/// Parse `--http`: `HOST:PORT`, `[V6]:PORT`, or a bare port (on 127.0.0.1). A host name is
/// resolved (`localhost:8787` binds 127.0.0.1).
fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let all: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| {
            format!("{text:?} is not an address like 127.0.0.1:8787, [::1]:8787 or 8787 ({e})")
        })?
        .collect();
    // Prefer IPv4 loopback for `localhost`, which most clients try first.
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

fn check_token(token: &str, key: &'static str) -> Result<Secret, SettingError> {
    let token = token.trim().to_owned();
    let invalid = |message: String| SettingError::new(key, message);
    if token.len() < MIN_TOKEN_LEN {
        return Err(invalid(format!(
            "the token is {} characters long; use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)",
            token.len()
        )));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            "the token may only contain visible ASCII characters (no spaces), as it travels in an HTTP header".into(),
        ));
    }
    Ok(Secret::new(token))
}

impl HttpSettings {
    /// The security gate these settings describe, holding `token` (when auth is on), without
    /// OAuth (the tests' and the fuzz target's).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn gate(&self, token: Option<Secret>) -> Gate {
        self.gate_with(token, None)
    }

    /// The security gate these settings describe, holding `token` and `oauth`.
    pub(crate) fn gate_with(&self, token: Option<Secret>, oauth: Option<Arc<OAuth>>) -> Gate {
        Gate::new(
            token,
            oauth,
            self.principals.clone(),
            self.allowed_hosts.clone(),
            self.allowed_origins.clone(),
            self.max_body_bytes,
            self.max_requests_per_minute,
        )
        .with_trusted_proxies(self.trusted_proxies.clone())
    }

    /// Layer file < environment/flags (clap has already merged the environment into `args`)
    /// and validate. `file_dir` is the config file's folder (relative `roots` of the policy rules are
    /// taken from it).
    pub(crate) fn load(
        args: &HttpArgs,
        file: &FileHttp,
        file_dir: &Path,
    ) -> Result<Self, SettingError> {
        let mut s = HttpSettings {
            stateless: args.stateless || file.stateless.unwrap_or(false),
            ..HttpSettings::default()
        };
        s.bind = args
            .http
            .as_deref()
            .map(parse_bind)
            .transpose()
            .map_err(|message| SettingError::new("--http", message))?;

        let token = if let Some(token) = &args.token {
            Some((
                check_token(token.expose(), TOKEN_FLAG)?,
                Source::Env(TOKEN_FLAG),
            ))
        } else if let Some(path) = args.token_file.as_ref().or(file.token_file.as_ref()) {
            let text = std::fs::read_to_string(path).map_err(|e| {
                SettingError::new(
                    "http.token_file",
                    format!("cannot read the token file {}: {e}", path.display()),
                )
            })?;
            // Absolute (the path is read from the current directory), so `toolport config`
            // prints a `token_file` that reads the same file from anywhere.
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            Some((check_token(&text, "http.token_file")?, Source::File(path)))
        } else if let Some(token) = &file.token {
            Some((check_token(token, "http.token")?, Source::Inline))
        } else {
            None
        };
        let no_auth = args.no_auth || file.no_auth.unwrap_or(false);
        s.oauth = OAuthSettings::load(&args.oauth, file.oauth.as_ref())?;
        // One list of trusted proxies for every forwarded header: the flags, or else both
        // keys (`[http.oauth] trusted_proxies` was its first home).
        s.trusted_proxies = if args.trusted_proxies.is_empty() {
            let own = TrustedProxies::parse(
                "http.trusted_proxies",
                file.trusted_proxies.as_deref().unwrap_or_default(),
            )?;
            match &s.oauth {
                Some(oauth) => own.merged(&oauth.trusted_proxies),
                None => own,
            }
        } else {
            TrustedProxies::parse("--trusted-proxy", &args.trusted_proxies)?
        };
        if let Some(oauth) = &mut s.oauth {
            oauth.trusted_proxies = s.trusted_proxies.clone();
        }
        s.principals = Arc::new(Policy::load(file.principals.as_ref(), file_dir)?);
        if no_auth && s.oauth.is_some() {
            return Err(SettingError::new(
                "http.no_auth",
                "[http.oauth] is configured and --no-auth is set; choose one",
            ));
        }
        s.auth = match (token, no_auth) {
            (Some(_), true) => {
                return Err(SettingError::new(
                    "http.no_auth",
                    "a token is configured and --no-auth is set; choose one",
                ));
            }
            (Some((token, source)), false) => AuthMode::Token(token, source),
            (None, true) => AuthMode::Disabled,
            (None, false) if s.oauth.is_some() => AuthMode::OAuth,
            (None, false) => AuthMode::Generate,
        };
        if let Some(bind) = s.bind
            && !bind.ip().is_loopback()
            && !matches!(s.auth, AuthMode::Token(..) | AuthMode::OAuth)
        {
            let suggestion = random_token(GENERATED_TOKEN_BYTES)
                .map(|t| format!(" For example, this freshly generated one: TOOLPORT_TOKEN={t}"))
                .unwrap_or_default();
            return Err(SettingError::new(
                "--http",
                format!(
                    "refusing to serve on {bind} without a bearer token: that address is reachable from other machines, and anyone reaching it could run tools{}. Set a token with TOOLPORT_TOKEN, --token-file or [http] token_file, or an OAuth issuer with [http.oauth] (--no-auth is only allowed on loopback).{suggestion}",
                    if no_auth {
                        " (--no-auth is not allowed there)"
                    } else {
                        ""
                    }
                ),
            ));
        }

        let extra_hosts = if args.allowed_hosts.is_empty() {
            file.allowed_hosts.clone().unwrap_or_default()
        } else {
            args.allowed_hosts.clone()
        };
        if extra_hosts.iter().any(|h| h.trim() == ANY_HOST) {
            s.allowed_hosts = Vec::new();
        } else {
            for host in extra_hosts {
                let host = normalize_host(host.trim());
                if host.is_empty() || host.contains('/') {
                    return Err(SettingError::new(
                        "http.allowed_hosts",
                        format!(
                            "{host:?} is not a host name or IP address (give it without scheme or port)"
                        ),
                    ));
                }
                s.allowed_hosts.push(host);
            }
            if let Some(bind) = s.bind
                && !bind.ip().is_unspecified()
            {
                s.allowed_hosts.push(normalize_host(&bind.ip().to_string()));
            }
            // Clients reach a server behind a tunnel or proxy by its public name.
            if let Some(host) = s
                .oauth
                .as_ref()
                .and_then(|o| o.public_url.as_ref())
                .and_then(|url| url.host_str())
            {
                s.allowed_hosts.push(normalize_host(host));
            }
            s.allowed_hosts.sort();
            s.allowed_hosts.dedup();
        }

        let extra_origins = if args.allowed_origins.is_empty() {
            file.allowed_origins.clone().unwrap_or_default()
        } else {
            args.allowed_origins.clone()
        };
        for origin in extra_origins {
            let rule = OriginRule::parse(&origin)
                .map_err(|message| SettingError::new("http.allowed_origins", message))?;
            if !s.allowed_origins.contains(&rule) {
                s.allowed_origins.push(rule);
            }
        }

        if let Some(bytes) = file.max_body_bytes {
            s.max_body_bytes = check_range(
                "http.max_body_bytes",
                bytes,
                MIN_MAX_BODY_BYTES..=MAX_MAX_BODY_BYTES,
            )?;
        }
        if let Some(sessions) = file.max_sessions {
            s.max_sessions = check_range("http.max_sessions", sessions, 1..=MAX_MAX_SESSIONS)?;
        }
        s.session_idle_timeout = duration_setting(
            "http.session_idle_timeout",
            file.session_idle_timeout.as_ref(),
            None,
            s.session_idle_timeout,
            MIN_SESSION_DURATION..=MAX_SESSION_IDLE,
        )?;
        if let Some(rate) = file.max_requests_per_minute {
            let rate = check_range(
                "http.max_requests_per_minute",
                rate,
                1..=MAX_REQUESTS_PER_MINUTE,
            )?;
            s.max_requests_per_minute = NonZeroU32::new(rate);
        }
        s.sse_keep_alive = duration_setting(
            "http.sse_keep_alive",
            file.sse_keep_alive.as_ref(),
            None,
            s.sse_keep_alive,
            MIN_SESSION_DURATION..=MAX_SSE_KEEP_ALIVE,
        )?;
        Ok(s)
    }

    /// What `toolport config` prints as comments: the address from `--http` (a flag, not a
    /// file key) and where the token was set (never the token).
    pub(crate) fn notes(&self) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some(bind) = self.bind {
            notes.push(Note::new(
                "http.bind",
                format!("{bind}, from --http / TOOLPORT_HTTP (a flag, not a file key)"),
            ));
        }
        if let AuthMode::Token(_, source) = &self.auth {
            notes.extend(source.note("http.token", "http.token_file or TOOLPORT_TOKEN"));
        }
        if let Some(oauth) = &self.oauth {
            notes.extend(oauth.notes());
        }
        notes
    }
}

/// The fuzz target `http_gate`'s door to [`Gate::check`] (fuzz/; `fuzzing` feature only):
/// the gate of the default settings (loopback hosts and origins) holding `token` (`None`:
/// `--no-auth`), with `extra_origins` added as `--allowed-origin` rules (those that do not
/// parse are skipped), applied to `headers`. `Err`: the rejection as its `Debug` text.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_gate_check(
    token: Option<&str>,
    extra_origins: &[&str],
    headers: &axum::http::HeaderMap,
) -> Result<(), String> {
    let mut settings = HttpSettings::default();
    let extra = extra_origins
        .iter()
        .filter_map(|o| OriginRule::parse(o).ok());
    settings.allowed_origins.extend(extra);
    let gate = settings.gate(token.map(Secret::new));
    gate.check(headers).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolport_tools::host::secret::MASK;

    fn args(http: &str) -> HttpArgs {
        HttpArgs {
            http: Some(http.into()),
            ..HttpArgs::default()
        }
    }

    #[test]
    fn a_bare_port_binds_loopback_and_generates_a_token() {
        let s = HttpSettings::load(&args("8787"), &FileHttp::default(), Path::new(".")).unwrap();
        assert_eq!(s.bind, Some("127.0.0.1:8787".parse().unwrap()));
        assert_eq!(s.auth, AuthMode::Generate);
        assert_eq!(s.allowed_hosts, ["127.0.0.1", "::1", "localhost"]);
    }

    #[test]
    fn a_non_loopback_bind_without_a_token_is_refused_with_a_suggestion() {
        let err = HttpSettings::load(&args("0.0.0.0:8787"), &FileHttp::default(), Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing to serve on 0.0.0.0:8787"), "{err}");
        assert!(err.contains("TOOLPORT_TOKEN="), "{err}");
        let mut a = args("0.0.0.0:8787");
        a.no_auth = true;
        assert!(HttpSettings::load(&a, &FileHttp::default(), Path::new(".")).is_err());
        a.no_auth = false;
        a.token = Some(Secret::new("0123456789abcdef0123"));
        let s = HttpSettings::load(&a, &FileHttp::default(), Path::new(".")).unwrap();
        assert!(matches!(s.auth, AuthMode::Token(..)));
    }

    #[test]
    fn tokens_are_checked_and_masked() {
        let mut a = args("8787");
        a.token = Some(Secret::new("short"));
        let err = HttpSettings::load(&a, &FileHttp::default(), Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 16"), "{err}");
        assert!(
            !err.contains("short"),
            "the error must not echo the token: {err}"
        );
        a.token = Some(Secret::new("a-long-enough-secret-token"));
        let s = HttpSettings::load(&a, &FileHttp::default(), Path::new(".")).unwrap();
        let printed = toml::to_string(&s).unwrap();
        let shown = format!("{a:?} {s:?} {printed}");
        assert!(!shown.contains("a-long-enough"), "{shown}");
        assert!(shown.contains(MASK), "{shown}");
        assert!(
            printed.contains("no_auth = false") && !printed.contains("token"),
            "{printed}"
        );
        assert_eq!(
            s.notes(),
            [
                Note::new(
                    "http.bind",
                    "127.0.0.1:8787, from --http / TOOLPORT_HTTP (a flag, not a file key)"
                ),
                Note::new(
                    "http.token",
                    "set from --token / TOOLPORT_TOKEN (a secret: never printed)"
                )
            ]
        );
    }

    #[test]
    fn limits_and_durations_name_the_key_and_the_allowed_range() {
        let load = |toml_text: &str| {
            let file: FileHttp = toml::from_str(toml_text).unwrap();
            HttpSettings::load(&args("8787"), &file, Path::new(".")).map_err(|e| e.to_string())
        };
        let s = load("max_sessions = 3\nsession_idle_timeout = \"90s\"\nsse_keep_alive = \"2s\"")
            .unwrap();
        assert_eq!(
            (s.max_sessions, s.session_idle_timeout, s.sse_keep_alive),
            (3, Duration::from_secs(90), Duration::from_secs(2))
        );
        assert_eq!(
            load("max_sessions = 0").unwrap_err(),
            "invalid setting http.max_sessions: 0 is out of range; allowed is 1..=100000"
        );
        assert_eq!(
            load("max_body_bytes = 10").unwrap_err(),
            "invalid setting http.max_body_bytes: 10 is out of range; allowed is 1024..=268435456"
        );
        assert_eq!(
            load("session_idle_timeout = \"2days\"").unwrap_err(),
            "invalid setting http.session_idle_timeout: 48h is out of range; allowed is 1s..=24h"
        );
        assert_eq!(
            load("sse_keep_alive = 15").unwrap_err(),
            "invalid setting http.sse_keep_alive: 15 has no unit; write a duration like \"30s\", \"500ms\" or \"5m\""
        );
    }

    #[test]
    fn trusted_proxies_are_one_list_from_both_keys_or_the_flags() {
        let load = |toml_text: &str, flags: &[&str]| {
            let file: FileHttp = toml::from_str(toml_text).unwrap();
            let mut a = args("8787");
            a.trusted_proxies = flags.iter().map(ToString::to_string).collect();
            HttpSettings::load(&a, &file, Path::new(".")).map_err(|e| e.to_string())
        };
        let ip = |text: &str| Some(text.parse().unwrap());
        let both = "trusted_proxies = [\"10.0.0.0/8\"]\n[oauth]\nissuer = \"https://idp.example\"\ntrusted_proxies = [\"192.0.2.1\"]";
        let s = load(both, &[]).unwrap();
        assert!(
            s.trusted_proxies.trusts(ip("10.1.1.1")) && s.trusted_proxies.trusts(ip("192.0.2.1"))
        );
        // OAuth believes X-Forwarded-Proto/Host from the same list.
        assert_eq!(s.oauth.as_ref().unwrap().trusted_proxies, s.trusted_proxies);
        let printed = toml::to_string(&s).unwrap();
        assert!(
            printed.contains("trusted_proxies = [\"10.0.0.0/8\", \"192.0.2.1/32\"]"),
            "{printed}"
        );
        // The flags replace both.
        let s = load(both, &["127.0.0.1"]).unwrap();
        assert!(
            s.trusted_proxies.trusts(ip("127.0.0.1")) && !s.trusted_proxies.trusts(ip("10.1.1.1"))
        );
        assert!(!s.oauth.unwrap().trusts(ip("192.0.2.1")));
        assert_eq!(
            load("trusted_proxies = [\"lb\"]", &[]).unwrap_err(),
            "invalid setting http.trusted_proxies: \"lb\" is not an IP address or a CIDR block such as 10.0.0.0/8"
        );
        assert!(load("", &["lb"]).unwrap_err().contains("--trusted-proxy"));
    }
}
