//! The settings of the web tools, apart from the code they configure: `[web]` for
//! `web_search` ([`search`]: which providers run in which order, timeouts, 429 retries, the
//! cache), one `[web.<provider>]` section per search provider ([`provider`]: one settings type,
//! its defaults from one table of providers), and `[web.fetch]` for `fetch_url` ([`fetch`]: the
//! SSRF guard's lists, limits, cache). This file holds what the two tools' settings share: the
//! bounds an operator may set and the checks of a value both take.
//!
//! Credentials come from the environment (`TOOLPORT_BRAVE_API_KEY`, …), the config file
//! (`api_key`) or a key file (`api_key_file`), never from tool arguments. They are held in
//! [`Secret`], whose `Debug` and `Serialize` forms are masked, so no log line can print one;
//! `toolport config` prints a key file's path (`api_key_file`, which loads again) and otherwise
//! only where the key was set ([`WebSettings::notes`]).
//!
//! The duration keys were named after a unit (`call_timeout_ms`, `cache_ttl_secs`,
//! `min_interval_ms`); they are `call_timeout`, `cache_ttl`, `min_interval` … now, and the old
//! names are still read (numbers in their old unit) with a deprecation warning.

use std::time::Duration;

pub(crate) use crate::secret::Secret;
use crate::settings::SettingError;

mod fetch;
mod provider;
mod search;

pub(crate) use fetch::{DEFAULT_FETCH_PAGE_CHARS, FetchSettings};
pub(crate) use provider::DUCKDUCKGO_USER_AGENT;
pub use provider::ProviderId;
pub(crate) use search::FileWeb;
pub use search::WebSettings;

/// Default time to establish a connection: a provider or site that cannot be reached in 5 s
/// is down.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The User-Agent sent to the JSON APIs and by `fetch_url`. DuckDuckGo gets a browser-like one
/// ([`DUCKDUCKGO_USER_AGENT`]) unless the operator sets `user_agent`.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!("toolport/", env!("CARGO_PKG_VERSION"));
/// Largest `timeout` / `connect_timeout`: a model's client gives up after about 2
/// minutes, and several providers may be tried in one call.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest `max_response_bytes` an operator may set.
const MAX_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// Longest `min_interval` (one request a minute).
const MAX_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// Longest cache lifetime an operator may set (a day): search results and pages go stale.
const MAX_CACHE_TTL: Duration = Duration::from_secs(86_400);

fn invalid(key: String, message: impl Into<String>) -> SettingError {
    SettingError::new(key, message)
}

fn check_user_agent(key: &'static str, agent: String) -> Result<String, SettingError> {
    if agent.trim().is_empty() || reqwest::header::HeaderValue::from_str(&agent).is_err() {
        return Err(invalid(
            key.into(),
            "must be a non-empty, printable ASCII string",
        ));
    }
    Ok(agent)
}

/// A `base_url`: an http(s) URL with a host and neither credentials nor a query (keys go in
/// headers), returned without its trailing slash.
fn check_url(key: &str, raw: &str) -> Result<String, SettingError> {
    let url = url::Url::parse(raw.trim()).map_err(|e| {
        invalid(
            key.to_owned(),
            format!("{raw:?} is not a URL ({e}); write it like https://search.example.org"),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid(
            key.to_owned(),
            format!("{raw:?} must be an http:// or https:// URL with a host"),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
        return Err(invalid(
            key.to_owned(),
            "must not contain credentials or a query string (keys go in api_key or the environment)",
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The `[web]` tree as a whole (its sections' own tests are in their files), and what those
/// tests share: `[web]` loaded from TOML text and an environment.
#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use std::time::Duration;

    use super::{FileWeb, ProviderId, WebSettings};
    use crate::settings::SettingError;

    pub(super) fn load(toml_text: &str, env: &[(&str, &str)]) -> Result<WebSettings, SettingError> {
        let file: FileWeb = toml::from_str(toml_text).unwrap();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        WebSettings::load(file, Path::new("/nonexistent"), |k| env.get(k).cloned())
    }

    /// The keys named after a unit (`call_timeout_ms`, `cache_ttl_secs`, `min_interval_ms`)
    /// are read under their old names too, numbers in the old unit, each noted as deprecated;
    /// both names at once is an error naming both.
    #[test]
    fn old_duration_key_names_still_load_and_are_noted() {
        let file: FileWeb = toml::from_str(
            "call_timeout_ms = 45000\ncache_ttl_secs = 60\ntimeout = \"2s\"\n[brave]\nmin_interval_ms = \"1s\"\n[fetch]\nmin_interval_ms = 250\ncache_ttl_secs = 0\n",
        )
        .unwrap();
        let s = WebSettings::load(file, Path::new("/"), |_| None).unwrap();
        assert_eq!(
            (
                s.call_timeout,
                s.cache_ttl,
                s.timeout,
                s.provider(ProviderId::Brave).min_interval,
                s.fetch.min_interval,
                s.fetch.cache_ttl
            ),
            (
                Duration::from_secs(45),
                Duration::from_secs(60),
                Duration::from_secs(2),
                Duration::from_secs(1),
                Duration::from_millis(250),
                Duration::ZERO
            )
        );
        let renamed: Vec<(&str, &str)> = s
            .deprecated
            .iter()
            .map(|d| (d.old.as_str(), d.new.as_str()))
            .collect();
        assert_eq!(
            renamed,
            [
                ("web.call_timeout_ms", "web.call_timeout"),
                ("web.cache_ttl_secs", "web.cache_ttl"),
                ("web.fetch.cache_ttl_secs", "web.fetch.cache_ttl"),
                ("web.fetch.min_interval_ms", "web.fetch.min_interval"),
                ("web.brave.min_interval_ms", "web.brave.min_interval"),
            ]
        );
        for (text, message) in [
            (
                "call_timeout = \"30s\"\ncall_timeout_ms = 30000\n",
                "invalid setting web.call_timeout: web.call_timeout_ms is the same setting under its deprecated name; keep only web.call_timeout",
            ),
            (
                "[fetch]\ncache_ttl = \"1m\"\ncache_ttl_secs = 60\n",
                "invalid setting web.fetch.cache_ttl: web.fetch.cache_ttl_secs is the same setting under its deprecated name; keep only web.fetch.cache_ttl",
            ),
            (
                "[searxng]\nmin_interval = \"1s\"\nmin_interval_ms = 1000\n",
                "invalid setting web.searxng.min_interval: web.searxng.min_interval_ms is the same setting under its deprecated name; keep only web.searxng.min_interval",
            ),
        ] {
            assert_eq!(load(text, &[]).unwrap_err().to_string(), message, "{text}");
        }
    }
}
