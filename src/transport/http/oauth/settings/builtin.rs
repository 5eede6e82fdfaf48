//! The built-in authorization server's settings (`[http.oauth] authorization_server =
//! "builtin"`, `--oauth builtin`), validated into [`BuiltinSettings`].
//!
//! Safe by default: the server grants only [`DEFAULT_MAX_SCOPES`] (the read-only file tools)
//! unless `builtin_max_scopes` names more; every name there must be a scope of the scope map.
//! The consent page is approved with a one-time code printed on stderr, unless a passphrase is
//! given (a file, or `TOOLPORT_OAUTH_CONSENT_PASSPHRASE`), which must be long enough not to be
//! guessed within the attempt limits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolport_tools::host::config::FileOAuth;
use toolport_tools::host::secret::{Secret, Source};
use toolport_tools::host::settings::{SettingError, duration_setting};

use super::OAuthArgs;
use crate::identity::ScopeMap;

/// The mode's name in `authorization_server` and `--oauth`.
pub(crate) const BUILTIN: &str = "builtin";
/// What the built-in server grants unless the operator allows more: the read-only file tools.
/// Writing, commands and the web are what a stolen or mis-approved token could do harm with.
pub(crate) const DEFAULT_MAX_SCOPES: &[&str] = &["tools:read"];
/// Default access-token lifetime: short, so a leaked token is good for minutes (clients
/// refresh it silently); long enough that a busy session refreshes rarely.
pub(crate) const DEFAULT_ACCESS_TOKEN_LIFETIME: Duration = Duration::from_secs(600);
/// The range an operator may set: a second (tests of refresh) to an hour (beyond that a
/// leaked token outlives a revocation by too long).
const ACCESS_TOKEN_LIFETIMES: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(3600);
/// Shortest passphrase accepted: with [`super::consent`]'s attempt limits (a few per minute)
/// 12 characters cannot be guessed in any useful time.
const MIN_PASSPHRASE_CHARS: usize = 12;
/// The state folder under the platform's data folder.
const STATE_SUBDIR: &str = "toolport/oauth";

/// How the consent page is approved.
#[derive(Debug, Clone)]
pub(crate) enum Approval {
    /// A fresh one-time code per authorization request, printed on stderr.
    OneTimeCode,
    /// The operator's passphrase.
    Passphrase(Secret, Source),
}

/// The validated built-in server settings.
#[derive(Debug, Clone)]
pub(crate) struct BuiltinSettings {
    /// The scopes it may grant.
    pub(crate) max_scopes: Vec<String>,
    pub(crate) access_token_lifetime: Duration,
    /// Its signing key and (without replicas) its grants.
    pub(crate) state_dir: PathBuf,
    pub(crate) approval: Approval,
}

/// The default state folder: `<data dir>/toolport/oauth` (`~/.local/share` on Linux,
/// `~/Library/Application Support` on macOS, `%APPDATA%` on Windows).
pub(crate) fn default_state_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join(STATE_SUBDIR))
}

impl BuiltinSettings {
    /// The settings when the built-in mode is chosen; `scopes` is the scope map in effect.
    pub(crate) fn load(
        args: &OAuthArgs,
        file: &FileOAuth,
        scopes: &ScopeMap,
    ) -> Result<Self, SettingError> {
        let max_scopes: Vec<String> = match &file.builtin_max_scopes {
            Some(list) => list.iter().map(|s| s.trim().to_owned()).collect(),
            None => DEFAULT_MAX_SCOPES.iter().map(|s| (*s).to_owned()).collect(),
        };
        let known: Vec<&str> = scopes.names().collect();
        if let Some(unknown) = max_scopes.iter().find(|s| !known.contains(&s.as_str())) {
            return Err(SettingError::new(
                "http.oauth.builtin_max_scopes",
                format!(
                    "{unknown:?} is not a scope (the scopes are {}); set builtin_max_scopes to the scopes the built-in server may grant",
                    known.join(", ")
                ),
            ));
        }
        let access_token_lifetime = duration_setting(
            "http.oauth.access_token_lifetime",
            file.access_token_lifetime.as_ref(),
            None,
            DEFAULT_ACCESS_TOKEN_LIFETIME,
            ACCESS_TOKEN_LIFETIMES,
        )?;
        let state_dir = match args.state_dir.as_ref().or(file.state_dir.as_ref()) {
            Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
            None => default_state_dir().ok_or_else(|| {
                SettingError::new(
                    "http.oauth.state_dir",
                    "this platform has no data folder; set state_dir (or --oauth-state-dir)",
                )
            })?,
        };
        let approval = approval(args, file)?;
        Ok(Self {
            max_scopes,
            access_token_lifetime,
            state_dir,
            approval,
        })
    }
}

/// The consent secret: a passphrase (variable or file) or a one-time code per request.
fn approval(args: &OAuthArgs, file: &FileOAuth) -> Result<Approval, SettingError> {
    const KEY: &str = "http.oauth.consent_passphrase_file";
    let (secret, source) = if let Some(secret) = &args.consent_passphrase {
        (
            secret.clone(),
            Source::Env("TOOLPORT_OAUTH_CONSENT_PASSPHRASE"),
        )
    } else if let Some(path) = args
        .consent_passphrase_file
        .as_ref()
        .or(file.consent_passphrase_file.as_ref())
    {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SettingError::new(KEY, format!("cannot read {}: {e}", path.display())))?;
        (Secret::new(text.trim()), Source::File(absolute(path)))
    } else {
        return Ok(Approval::OneTimeCode);
    };
    if secret.expose().chars().count() < MIN_PASSPHRASE_CHARS {
        return Err(SettingError::new(
            KEY,
            format!("the consent passphrase is shorter than {MIN_PASSPHRASE_CHARS} characters"),
        ));
    }
    Ok(Approval::Passphrase(secret, source))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}
