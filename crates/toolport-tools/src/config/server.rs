//! The server's own sections of the config file, as data: `[http]`, `[audit]` and
//! `[telemetry]` (the call budgets are keys of `[limits]`: [`FileLimits`]). Their settings —
//! defaults, flags, validation — are the `toolport` binary's (its
//! `transport/http/settings.rs`, `observe/audit/settings.rs`, `observe/trace/settings.rs`);
//! their keys are here so that the library, reading the same file, refuses a misspelled one
//! as the server does instead of passing over the section.
//!
//! [`FileLimits`]: crate::tools::fs::FileLimits

use std::path::PathBuf;

use serde::Deserialize;

use crate::settings::DurationValue;

/// The `[http]` section: the HTTP transport.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHttp {
    /// No sessions: each POST is served on its own.
    pub stateless: Option<bool>,
    /// The bearer token clients must send.
    pub token: Option<String>,
    /// A file holding the bearer token.
    pub token_file: Option<PathBuf>,
    /// No authentication (loopback only).
    pub no_auth: Option<bool>,
    /// `Host` names accepted beside the loopback ones (`"*"`: any).
    pub allowed_hosts: Option<Vec<String>>,
    /// Browser `Origin`s accepted beside the loopback ones.
    pub allowed_origins: Option<Vec<String>>,
    /// Request body cap in bytes.
    pub max_body_bytes: Option<usize>,
    /// Most live sessions.
    pub max_sessions: Option<usize>,
    /// A duration such as "5m" or "90s".
    pub session_idle_timeout: Option<DurationValue>,
    /// A duration such as "15s".
    pub sse_keep_alive: Option<DurationValue>,
    /// Requests per minute one client may send.
    pub max_requests_per_minute: Option<u32>,
    /// `[http.oauth]`: accept OAuth 2.1 access tokens (the server as a resource server).
    pub oauth: Option<FileOAuth>,
}

/// The `[http.oauth]` section: toolport as an OAuth 2.1 resource server.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOAuth {
    /// The canonical URL clients reach `/mcp` at (the protected resource).
    pub public_url: Option<String>,
    /// The authorization server's issuer identifier.
    pub issuer: Option<String>,
    /// The JWKS URL, instead of the one the issuer's metadata names.
    pub jwks_uri: Option<String>,
    /// RFC 7662 introspection endpoint, for opaque tokens.
    pub introspection_endpoint: Option<String>,
    /// The client id toolport introspects with.
    pub client_id: Option<String>,
    /// A file holding that client's secret.
    pub client_secret_file: Option<PathBuf>,
    /// The audience a token must name (default: the public URL).
    pub audience: Option<String>,
    /// Scope name -> the tool classes it grants.
    pub scopes: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// Peers whose `X-Forwarded-Proto` / `X-Forwarded-Host` are believed.
    pub trusted_proxies: Option<Vec<String>>,
    /// Clock skew allowed on `exp` / `nbf`, such as "30s".
    pub leeway: Option<DurationValue>,
}

/// The `[audit]` section: the audit log.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileAudit {
    /// Where the log goes, relative to the config file's folder; `-` is stderr.
    pub path: Option<PathBuf>,
    /// Rotate when the file would grow past this many bytes.
    pub max_bytes: Option<u64>,
    /// Rotated files to keep.
    pub keep: Option<u32>,
}

/// The `[telemetry]` section: trace export.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTelemetry {
    /// OTLP/HTTP base URL (`http://collector:4318`); spans go to its `/v1/traces`.
    pub otlp_endpoint: Option<String>,
    /// The full OTLP/HTTP traces URL, used as is.
    pub otlp_traces_endpoint: Option<String>,
    /// The `service.name` resource.
    pub service_name: Option<String>,
}
