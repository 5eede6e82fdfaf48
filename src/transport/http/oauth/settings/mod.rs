//! `[http.oauth]`, its flags and variables, validated into [`OAuthSettings`]: toolport as an
//! OAuth 2.1 resource server.
//!
//! Layered as every section (file < flags/environment, clap merging a flag with its
//! variable). The rules checked here, before anything listens:
//! - the issuer, a JWKS override and the introspection endpoint are `https` URLs, except on a
//!   loopback host (a local identity provider, the tests' `oidc-provider`): keys and token
//!   answers fetched in the clear from another machine could be forged on the way;
//! - `public_url` is the canonical URL of `/mcp` as clients reach it (`https`, or `http` on a
//!   loopback host), without query or fragment: tokens must name it as their audience, and
//!   RFC 9728 metadata names it as the resource;
//! - introspection needs a client id and its secret (from a file or `TOOLPORT_OAUTH_CLIENT_SECRET`,
//!   never printed: [`Secret`]);
//! - `trusted_proxies` are addresses or CIDR blocks (`10.0.0.0/8`); `X-Forwarded-*` from any
//!   other peer is ignored. They are kept here as written before `[http] trusted_proxies`
//!   existed; [`super::super::settings::HttpSettings::load`] merges both lists (and the
//!   `--trusted-proxy` flags) into the one list every forwarded header is believed from.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde::{Serialize, Serializer};
use toolport_tools::host::config::FileOAuth;
use toolport_tools::host::secret::{Secret, Source};
use toolport_tools::host::settings::{Note, SettingError, duration_setting, serialize_duration};
use url::Url;

pub(crate) mod builtin;

use self::builtin::{Approval, BUILTIN, BuiltinSettings};
use crate::identity::ScopeMap;
use crate::transport::http::forwarded::TrustedProxies;

/// A duration printed as the other durations are, when there is one.
fn serialize_optional_duration<S: Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(duration) => serialize_duration(duration, serializer),
        None => serializer.serialize_none(),
    }
}

/// Default clock skew allowed on `exp` and `nbf`: clocks of a tunnel host and an identity
/// provider drift by seconds, and a token a few seconds past its expiry is still the token the
/// provider meant; a minute (jsonwebtoken's default) keeps a stolen token alive too long.
pub(crate) const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// Largest leeway an operator may set: beyond five minutes an expired token stays good for
/// longer than most providers issue them for.
const MAX_LEEWAY: Duration = Duration::from_secs(300);
/// Where a secret from the command line came from, as `toolport config` names it (clap has
/// merged the flag and the variable).
const SECRET_FLAG: &str = "--oauth-client-secret / TOOLPORT_OAUTH_CLIENT_SECRET";

/// The `[http.oauth]` flags (global, like the other `--http` flags).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct OAuthArgs {
    /// With --http: accept OAuth access tokens issued by this authorization server (its
    /// issuer identifier; metadata found by RFC 8414 or OpenID discovery).
    #[arg(
        long = "oauth-issuer",
        value_name = "URL",
        env = "TOOLPORT_OAUTH_ISSUER",
        global = true
    )]
    pub(crate) issuer: Option<String>,

    /// With --oauth-issuer: the URL clients reach /mcp at (e.g. https://tools.example.com/mcp),
    /// the resource tokens must be issued for.
    #[arg(
        long = "public-url",
        value_name = "URL",
        env = "TOOLPORT_PUBLIC_URL",
        global = true
    )]
    pub(crate) public_url: Option<String>,

    /// With --oauth-issuer: the JWKS URL, instead of the one in the issuer's metadata.
    #[arg(
        long = "oauth-jwks-uri",
        value_name = "URL",
        env = "TOOLPORT_OAUTH_JWKS_URI",
        global = true
    )]
    pub(crate) jwks_uri: Option<String>,

    /// With --oauth-issuer: the audience tokens must name (default: the public URL).
    #[arg(
        long = "oauth-audience",
        value_name = "AUDIENCE",
        env = "TOOLPORT_OAUTH_AUDIENCE",
        global = true
    )]
    pub(crate) audience: Option<String>,

    /// With --oauth-issuer: check opaque tokens at this RFC 7662 introspection endpoint.
    #[arg(
        long = "oauth-introspection-endpoint",
        value_name = "URL",
        env = "TOOLPORT_OAUTH_INTROSPECTION_ENDPOINT",
        global = true
    )]
    pub(crate) introspection_endpoint: Option<String>,

    /// The client id toolport introspects with.
    #[arg(
        long = "oauth-client-id",
        value_name = "ID",
        env = "TOOLPORT_OAUTH_CLIENT_ID",
        global = true
    )]
    pub(crate) client_id: Option<String>,

    /// A file holding the introspection client's secret (or set TOOLPORT_OAUTH_CLIENT_SECRET).
    #[arg(
        long = "oauth-client-secret-file",
        value_name = "FILE",
        env = "TOOLPORT_OAUTH_CLIENT_SECRET_FILE",
        global = true
    )]
    pub(crate) client_secret_file: Option<PathBuf>,

    /// The introspection client's secret. Prefer TOOLPORT_OAUTH_CLIENT_SECRET or
    /// --oauth-client-secret-file: a flag is visible to other local users in `ps`.
    #[arg(
        long = "oauth-client-secret",
        value_name = "SECRET",
        env = "TOOLPORT_OAUTH_CLIENT_SECRET",
        hide_env_values = true,
        global = true,
        conflicts_with = "client_secret_file"
    )]
    pub(crate) client_secret: Option<Secret>,

    /// With --http: `builtin` makes toolport its own OAuth authorization server, for one
    /// person (claude.ai or ChatGPT through a tunnel, with no identity provider).
    #[arg(
        long = "oauth",
        value_name = "MODE",
        env = "TOOLPORT_OAUTH",
        value_parser = [BUILTIN],
        global = true
    )]
    pub(crate) mode: Option<String>,

    /// With --oauth builtin: where its signing key and grants are kept (with --redis-url, its
    /// signing key only: the grants are in Redis).
    #[arg(
        long = "oauth-state-dir",
        value_name = "DIR",
        env = "TOOLPORT_OAUTH_STATE_DIR",
        global = true
    )]
    pub(crate) state_dir: Option<PathBuf>,

    /// With --oauth builtin: a file holding the passphrase that approves the consent page
    /// (default: a one-time code printed on stderr for each request).
    #[arg(
        long = "oauth-consent-passphrase-file",
        value_name = "FILE",
        env = "TOOLPORT_OAUTH_CONSENT_PASSPHRASE_FILE",
        global = true
    )]
    pub(crate) consent_passphrase_file: Option<PathBuf>,

    /// The consent passphrase itself (set TOOLPORT_OAUTH_CONSENT_PASSPHRASE; a flag would be
    /// visible in `ps`).
    #[arg(
        long = "oauth-consent-passphrase",
        value_name = "PASSPHRASE",
        env = "TOOLPORT_OAUTH_CONSENT_PASSPHRASE",
        hide_env_values = true,
        hide = true,
        global = true,
        conflicts_with = "consent_passphrase_file"
    )]
    pub(crate) consent_passphrase: Option<Secret>,
}

/// How opaque tokens are checked: RFC 7662 introspection with toolport's own client.
#[derive(Debug, Clone)]
pub(crate) struct Introspection {
    pub(crate) endpoint: Url,
    pub(crate) client_id: String,
    pub(crate) client_secret: Secret,
    /// Where the secret came from (`toolport config` prints a file's path, nothing else).
    pub(crate) source: Source,
}

/// The validated `[http.oauth]`.
#[derive(Debug, Clone)]
pub(crate) struct OAuthSettings {
    /// The canonical URL of `/mcp`; `None`: taken from each request (`Host`, or
    /// `X-Forwarded-*` from a trusted proxy).
    pub(crate) public_url: Option<Url>,
    /// The issuer identifier, exactly as tokens carry it in `iss`.
    pub(crate) issuer: String,
    /// The JWKS URL, when the operator gave one.
    pub(crate) jwks_uri: Option<Url>,
    /// Opaque tokens' check, when configured.
    pub(crate) introspection: Option<Introspection>,
    /// The audience a token must name; `None`: the canonical resource URL.
    pub(crate) audience: Option<String>,
    /// Scope name -> tool classes.
    pub(crate) scopes: ScopeMap,
    /// Peers whose `X-Forwarded-*` headers are believed (with `[http] trusted_proxies`, once
    /// the HTTP settings are loaded).
    pub(crate) trusted_proxies: TrustedProxies,
    /// Clock skew allowed on `exp` and `nbf`.
    pub(crate) leeway: Duration,
    /// The built-in authorization server, when toolport is its own (then `issuer` is empty:
    /// the issuer is the origin of the resource, [`super::metadata::Resource::issuer`]).
    pub(crate) builtin: Option<BuiltinSettings>,
}

/// Whether `url`'s host is this machine.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Parse an endpoint URL: `https`, or `http` on a loopback host; no credentials in it.
pub(crate) fn endpoint_url(key: &'static str, text: &str) -> Result<Url, SettingError> {
    let url = Url::parse(text.trim())
        .map_err(|e| SettingError::new(key, format!("{text:?} is not a URL ({e})")))?;
    let secure = url.scheme() == "https" || (url.scheme() == "http" && is_loopback(&url));
    if !secure {
        return Err(SettingError::new(
            key,
            format!(
                "{text:?} must be an https URL (http is allowed only on a loopback host such as 127.0.0.1): keys and token answers fetched in the clear could be forged on the way"
            ),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SettingError::new(
            key,
            "the URL carries credentials; give the introspection client's secret with client_secret_file or TOOLPORT_OAUTH_CLIENT_SECRET",
        ));
    }
    Ok(url)
}

impl OAuthSettings {
    /// `None` when OAuth is not configured (no issuer anywhere); an error naming the key
    /// when it is configured wrong.
    pub(crate) fn load(
        args: &OAuthArgs,
        file: Option<&FileOAuth>,
    ) -> Result<Option<Self>, SettingError> {
        let empty = FileOAuth::default();
        let file = file.unwrap_or(&empty);
        let mode = args.mode.as_ref().or(file.authorization_server.as_ref());
        let builtin = match mode.map(|m| m.trim()) {
            None => false,
            Some(BUILTIN) => true,
            Some(other) => {
                return Err(SettingError::new(
                    "http.oauth.authorization_server",
                    format!(
                        "{other:?} is not an authorization server mode: the one mode is \"{BUILTIN}\" (toolport as its own); for an identity provider set issuer instead"
                    ),
                ));
            }
        };
        let issuer = args.issuer.as_ref().or(file.issuer.as_ref());
        if builtin && issuer.is_some() {
            return Err(SettingError::new(
                "http.oauth.issuer",
                "an issuer is set and authorization_server = \"builtin\": choose one (an identity provider's issuer, or toolport as its own authorization server)",
            ));
        }
        let empty_issuer = String::new();
        let Some(issuer) = issuer.or(builtin.then_some(&empty_issuer)) else {
            if file.public_url.is_some() || args.public_url.is_some() || file.scopes.is_some() {
                return Err(SettingError::new(
                    "http.oauth.issuer",
                    "OAuth settings are given without an issuer; set the authorization server's issuer (issuer = \"https://…\", --oauth-issuer or TOOLPORT_OAUTH_ISSUER), or make toolport its own (authorization_server = \"builtin\", --oauth builtin)",
                ));
            }
            return Ok(None);
        };
        // The issuer is compared with `iss` exactly, so it is kept as written (a parsed URL
        // would gain a trailing slash).
        if !builtin {
            endpoint_url("http.oauth.issuer", issuer)?;
        }
        let issuer = issuer.trim().to_owned();

        let public_url = args
            .public_url
            .as_ref()
            .or(file.public_url.as_ref())
            .map(|text| {
                let url = endpoint_url("http.oauth.public_url", text)?;
                if url.query().is_some() || url.fragment().is_some() {
                    return Err(SettingError::new(
                        "http.oauth.public_url",
                        format!("{text:?}: the resource URL has no query or fragment"),
                    ));
                }
                Ok(url)
            })
            .transpose()?;
        let jwks_uri = args
            .jwks_uri
            .as_ref()
            .or(file.jwks_uri.as_ref())
            .map(|text| endpoint_url("http.oauth.jwks_uri", text))
            .transpose()?;
        let audience = args
            .audience
            .as_ref()
            .or(file.audience.as_ref())
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty());
        let introspection = introspection(args, file)?;
        let scopes = match &file.scopes {
            Some(table) => ScopeMap::parse(table)
                .map_err(|message| SettingError::new("http.oauth.scopes", message))?,
            None => ScopeMap::default(),
        };
        let trusted_proxies = TrustedProxies::parse(
            "http.oauth.trusted_proxies",
            file.trusted_proxies.as_deref().unwrap_or_default(),
        )?;
        let leeway = duration_setting(
            "http.oauth.leeway",
            file.leeway.as_ref(),
            None,
            DEFAULT_LEEWAY,
            Duration::ZERO..=MAX_LEEWAY,
        )?;
        let builtin = builtin
            .then(|| BuiltinSettings::load(args, file, &scopes))
            .transpose()?;
        Ok(Some(Self {
            public_url,
            issuer,
            jwks_uri,
            introspection,
            audience,
            scopes,
            trusted_proxies,
            leeway,
            builtin,
        }))
    }

    /// Whether `peer` is a trusted proxy.
    pub(crate) fn trusts(&self, peer: Option<IpAddr>) -> bool {
        self.trusted_proxies.trusts(peer)
    }

    /// What `toolport config` says beyond the keys: where the introspection secret is from.
    pub(crate) fn notes(&self) -> Vec<Note> {
        let passphrase = self.builtin.as_ref().and_then(|b| match &b.approval {
            Approval::Passphrase(_, source) => source.note(
                "http.oauth.consent_passphrase",
                "http.oauth.consent_passphrase_file or TOOLPORT_OAUTH_CONSENT_PASSPHRASE",
            ),
            Approval::OneTimeCode => None,
        });
        self.introspection
            .iter()
            .filter_map(|i| {
                i.source.note(
                    "http.oauth.client_secret",
                    "http.oauth.client_secret_file or TOOLPORT_OAUTH_CLIENT_SECRET",
                )
            })
            .chain(passphrase)
            .collect()
    }
}

/// The introspection settings: all of endpoint, client id and secret, or none.
fn introspection(
    args: &OAuthArgs,
    file: &FileOAuth,
) -> Result<Option<Introspection>, SettingError> {
    const KEY: &str = "http.oauth.introspection_endpoint";
    let Some(endpoint) = args
        .introspection_endpoint
        .as_ref()
        .or(file.introspection_endpoint.as_ref())
    else {
        return Ok(None);
    };
    let endpoint = endpoint_url(KEY, endpoint)?;
    let client_id = args
        .client_id
        .as_ref()
        .or(file.client_id.as_ref())
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            SettingError::new(
                "http.oauth.client_id",
                "introspection needs the client id toolport authenticates with (client_id, --oauth-client-id or TOOLPORT_OAUTH_CLIENT_ID)",
            )
        })?;
    let (client_secret, source) = if let Some(secret) = &args.client_secret {
        (secret.clone(), Source::Env(SECRET_FLAG))
    } else if let Some(path) = args
        .client_secret_file
        .as_ref()
        .or(file.client_secret_file.as_ref())
    {
        let text = std::fs::read_to_string(path).map_err(|e| {
            SettingError::new(
                "http.oauth.client_secret_file",
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        (Secret::new(text.trim()), Source::File(path))
    } else {
        return Err(SettingError::new(
            "http.oauth.client_secret_file",
            "introspection needs the client's secret: a file (client_secret_file, --oauth-client-secret-file) or TOOLPORT_OAUTH_CLIENT_SECRET",
        ));
    };
    if client_secret.expose().is_empty() {
        return Err(SettingError::new(
            "http.oauth.client_secret_file",
            "the introspection client's secret is empty",
        ));
    }
    Ok(Some(Introspection {
        endpoint,
        client_id,
        client_secret,
        source,
    }))
}

/// `[http.oauth]` as `toolport config` prints it (the secret never; its file as its key; the
/// trusted proxies under `[http]`, where every list of them is merged).
impl Serialize for OAuthSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Printed<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            public_url: Option<&'a str>,
            #[serde(skip_serializing_if = "str::is_empty")]
            issuer: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            authorization_server: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            builtin_max_scopes: Option<&'a [String]>,
            #[serde(
                skip_serializing_if = "Option::is_none",
                serialize_with = "serialize_optional_duration"
            )]
            access_token_lifetime: Option<Duration>,
            #[serde(skip_serializing_if = "Option::is_none")]
            state_dir: Option<&'a Path>,
            #[serde(skip_serializing_if = "Option::is_none")]
            consent_passphrase_file: Option<&'a Path>,
            #[serde(skip_serializing_if = "Option::is_none")]
            jwks_uri: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            introspection_endpoint: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            client_id: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            client_secret_file: Option<&'a Path>,
            #[serde(skip_serializing_if = "Option::is_none")]
            audience: Option<&'a str>,
            #[serde(serialize_with = "serialize_duration")]
            leeway: Duration,
            scopes: BTreeMap<&'a str, Vec<String>>,
        }
        let introspection = self.introspection.as_ref();
        let builtin = self.builtin.as_ref();
        Printed {
            public_url: self.public_url.as_ref().map(Url::as_str),
            issuer: &self.issuer,
            authorization_server: builtin.map(|_| BUILTIN),
            builtin_max_scopes: builtin.map(|b| b.max_scopes.as_slice()),
            access_token_lifetime: builtin.map(|b| b.access_token_lifetime),
            state_dir: builtin.map(|b| b.state_dir.as_path()),
            consent_passphrase_file: builtin.and_then(|b| match &b.approval {
                Approval::Passphrase(_, source) => source.file(),
                Approval::OneTimeCode => None,
            }),
            jwks_uri: self.jwks_uri.as_ref().map(Url::as_str),
            introspection_endpoint: introspection.map(|i| i.endpoint.as_str()),
            client_id: introspection.map(|i| i.client_id.as_str()),
            client_secret_file: introspection.and_then(|i| i.source.file()),
            audience: self.audience.as_deref(),
            leeway: self.leeway,
            scopes: self.scopes.table(),
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(toml_text: &str) -> Result<Option<OAuthSettings>, String> {
        let file: FileOAuth = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        OAuthSettings::load(&OAuthArgs::default(), Some(&file)).map_err(|e| e.to_string())
    }

    #[test]
    fn no_issuer_is_no_oauth_but_other_keys_without_one_are_an_error() {
        assert!(load("").unwrap().is_none());
        let err = load("public_url = \"https://t.example/mcp\"").unwrap_err();
        assert!(err.contains("without an issuer"), "{err}");
    }

    #[test]
    fn endpoints_must_be_https_unless_loopback() {
        let s = load("issuer = \"http://127.0.0.1:9/\"\npublic_url = \"https://t.example/mcp\"")
            .unwrap()
            .unwrap();
        assert_eq!(s.issuer, "http://127.0.0.1:9/");
        assert_eq!(s.leeway, DEFAULT_LEEWAY);
        let err = load("issuer = \"http://idp.example\"").unwrap_err();
        assert!(err.contains("must be an https URL"), "{err}");
        let err = load("issuer = \"https://idp.example\"\njwks_uri = \"http://keys.example/jwks\"")
            .unwrap_err();
        assert!(err.contains("http.oauth.jwks_uri"), "{err}");
        let err =
            load("issuer = \"https://idp.example\"\npublic_url = \"https://t.example/mcp?x\"")
                .unwrap_err();
        assert!(err.contains("no query"), "{err}");
    }

    #[test]
    fn introspection_needs_a_client_and_never_prints_its_secret() {
        let err = load(
            "issuer = \"https://idp.example\"\nintrospection_endpoint = \"https://idp.example/introspect\"",
        )
        .unwrap_err();
        assert!(err.contains("http.oauth.client_id"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "very-secret-value\n").unwrap();
        let s = load(&format!(
            "issuer = \"https://idp.example\"\nintrospection_endpoint = \"https://idp.example/introspect\"\nclient_id = \"toolport\"\nclient_secret_file = '{}'",
            secret.display()
        ))
        .unwrap()
        .unwrap();
        let printed = toml::to_string(&s).unwrap();
        let shown = format!("{s:?} {printed}");
        assert!(!shown.contains("very-secret-value"), "{shown}");
        assert!(printed.contains("client_secret_file"), "{printed}");
    }

    #[test]
    fn proxies_and_leeway_are_checked() {
        let s = load(
            "issuer = \"https://idp.example\"\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]\nleeway = \"5s\"",
        )
        .unwrap()
        .unwrap();
        assert!(s.trusts(Some("10.1.2.3".parse().unwrap())));
        assert!(s.trusts(Some("::1".parse().unwrap())));
        assert!(!s.trusts(Some("127.0.0.1".parse().unwrap())));
        assert!(!s.trusts(None));
        assert_eq!(s.leeway, Duration::from_secs(5));
        let err =
            load("issuer = \"https://idp.example\"\ntrusted_proxies = [\"proxy\"]").unwrap_err();
        assert!(err.contains("not an IP address"), "{err}");
        let err = load("issuer = \"https://idp.example\"\nleeway = \"1h\"").unwrap_err();
        assert!(err.contains("http.oauth.leeway"), "{err}");
    }
}
