//! The server's own sections of the config file, as data: `[http]`, `[audit]`, `[telemetry]`
//! and `[replicas]` (the call budgets are keys of `[limits]`: [`FileLimits`]). Their settings —
//! defaults, flags, validation — are the `toolport` binary's (its
//! `transport/http/settings.rs`, `observe/audit/settings.rs`, `observe/trace/settings.rs`,
//! `cluster/settings.rs`);
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
    /// Peers (addresses or CIDR blocks) whose `X-Forwarded-*` headers are believed: the
    /// reverse proxy or load balancer in front.
    pub trusted_proxies: Option<Vec<String>>,
    /// `[http.oauth]`: accept OAuth 2.1 access tokens (the server as a resource server).
    pub oauth: Option<FileOAuth>,
    /// `[http.principals]`: what each authenticated principal may use, by rules.
    pub principals: Option<FilePrincipals>,
}

/// The `[http.principals]` section: the policy per principal. (`Serialize`: `toolport config`
/// prints it as written.)
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilePrincipals {
    /// What a principal no rule matches may use: "scopes" (what its token grants) or
    /// "nothing".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmatched: Option<String>,
    /// The claim that holds a principal's groups (default "groups").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_claim: Option<String>,
    /// `[[http.principals.rules]]`: the rules, each naming whom it matches and what it allows,
    /// denies and bounds.
    #[serde(default)]
    pub rules: Vec<FilePrincipalRule>,
}

/// One `[[http.principals.rules]]` entry.
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilePrincipalRule {
    /// The rule's name (in errors, the audit log and budget messages).
    pub name: String,
    /// Match every principal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_all: Option<bool>,
    /// Match these subjects (`sub`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subjects: Option<Vec<String>>,
    /// Match these OAuth clients (`client_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<Vec<String>>,
    /// Match principals in any of these groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// Match principals whose claims have these values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claims: Option<std::collections::BTreeMap<String, String>>,
    /// Allow only these tools (names; `*` matches any run of characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_tools: Option<Vec<String>>,
    /// Deny these tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_tools: Option<Vec<String>>,
    /// Allow only these tool classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_classes: Option<Vec<String>>,
    /// Deny these tool classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_classes: Option<Vec<String>>,
    /// Only tools that change nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The roots the principal's file tools and commands are narrowed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<Vec<PathBuf>>,
    /// Calls the principal may make in all (across its sessions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u64>,
    /// Calls per minute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_calls_per_minute: Option<u32>,
    /// Calls running at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent_calls: Option<u32>,
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
    /// `"builtin"`: toolport is its own authorization server (instead of `issuer`).
    pub authorization_server: Option<String>,
    /// The scopes the built-in server may grant (default: the read-only one).
    pub builtin_max_scopes: Option<Vec<String>>,
    /// How long the built-in server's access tokens last, such as "10m".
    pub access_token_lifetime: Option<DurationValue>,
    /// Where the built-in server keeps its signing key and grants.
    pub state_dir: Option<PathBuf>,
    /// A file holding the passphrase that approves the built-in server's consent page
    /// (instead of a one-time code printed on stderr).
    pub consent_passphrase_file: Option<PathBuf>,
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

/// The `[replicas]` section: the shared store (Redis) that replicas behind a load balancer
/// keep their shared state in.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileReplicas {
    /// `redis://host:port/db` or `rediss://…` (TLS); no password in it.
    pub redis_url: Option<String>,
    /// A file holding the Redis password.
    pub redis_password_file: Option<PathBuf>,
    /// This replica's id (default: generated at start).
    pub id: Option<String>,
    /// How the other replicas reach this one (`http://10.0.0.5:8080`).
    pub internal_url: Option<String>,
    /// What calls that need a shared decision get while Redis is away: `refuse` or `local`.
    pub when_redis_away: Option<String>,
    /// The longest any one Redis command may take.
    pub redis_timeout: Option<DurationValue>,
    /// The prefix of every key toolport writes.
    pub key_prefix: Option<String>,
    /// Whether a request for another replica's job or task is sent to it (default: when an
    /// internal secret is set).
    pub forward_jobs: Option<bool>,
    /// A file holding the secret replicas sign their internal calls with.
    pub internal_secret_file: Option<PathBuf>,
}
