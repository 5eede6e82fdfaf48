//! `[web.fetch]`: the settings of `fetch_url` ([`FetchSettings`]): the SSRF guard's host lists,
//! the caps on what one call reads and returns, timeouts, the page cache, the per-host
//! throttle, the User-Agent and robots.txt.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_USER_AGENT, MAX_CACHE_TTL, MAX_MAX_RESPONSE_BYTES,
    MAX_MIN_INTERVAL, MAX_TIMEOUT, check_user_agent, invalid,
};
use crate::settings::{
    Deprecated, DurationValue, LegacyUnit, SettingError, check_range, renamed_duration,
    serialize_duration,
};

/// Default characters returned by one `fetch_url` call: about 5,000 tokens, a long article's
/// worth, small enough for a model's context; the rest is a `start_index` away.
pub(crate) const DEFAULT_FETCH_PAGE_CHARS: usize = 20_000;
/// Default operator cap on `max_length` (characters per call).
pub(crate) const DEFAULT_FETCH_MAX_LENGTH: usize = 100_000;
/// Largest cap an operator may set: 1 M characters is already more than any model's context.
const MAX_FETCH_MAX_LENGTH: usize = 1_000_000;
/// Default cap on a fetched body, bytes read from the network: the median web page's HTML is
/// about 30 KiB and large documentation pages reach 2-3 MiB; 5 MiB bounds a broken or hostile
/// server's cost.
pub(crate) const DEFAULT_FETCH_MAX_RESPONSE_BYTES: usize = 5 * 1024 * 1024;
/// Default total time of one fetch, every redirect hop and the body included: a slow page
/// should not hold a model for long; MCP clients give up after about 60 s.
pub(crate) const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(20);
/// Default cache lifetime of a fetched page: a model paging through a page, or reading it
/// again in the same task, gets the same text without another request.
pub(crate) const DEFAULT_FETCH_CACHE_TTL: Duration = Duration::from_secs(300);
/// Default number of cached pages: each holds a page's converted text (up to the body cap).
pub(crate) const DEFAULT_FETCH_CACHE_MAX_ENTRIES: usize = 64;
/// Most cached pages an operator may set (each may hold several MiB).
const MAX_FETCH_CACHE_MAX_ENTRIES: usize = 10_000;
/// Default least time between two requests to one host: a model fetching several pages of a
/// site reads like one person, not a crawler.
pub(crate) const DEFAULT_FETCH_MIN_INTERVAL: Duration = Duration::from_millis(200);

/// The `[web.fetch]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileFetch {
    allow_private: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    denied_hosts: Option<Vec<String>>,
    max_length: Option<usize>,
    max_response_bytes: Option<usize>,
    timeout: Option<DurationValue>,
    connect_timeout: Option<DurationValue>,
    cache_ttl: Option<DurationValue>,
    cache_max_entries: Option<usize>,
    min_interval: Option<DurationValue>,
    user_agent: Option<String>,
    respect_robots: Option<bool>,
    /// Deprecated: `timeout` (a number: milliseconds).
    timeout_ms: Option<DurationValue>,
    /// Deprecated: `connect_timeout` (a number: milliseconds).
    connect_timeout_ms: Option<DurationValue>,
    /// Deprecated: `cache_ttl` (a number: seconds).
    cache_ttl_secs: Option<DurationValue>,
    /// Deprecated: `min_interval` (a number: milliseconds).
    min_interval_ms: Option<DurationValue>,
}

/// The effective `[web.fetch]` settings of `fetch_url`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FetchSettings {
    /// Turn the SSRF guard's address rules off (scheme, credentials and denied_hosts stay).
    pub(crate) allow_private: bool,
    /// Hosts exempt from the address rules (names or address literals).
    pub(crate) allowed_hosts: Vec<String>,
    /// Hosts always refused, whatever they resolve to.
    pub(crate) denied_hosts: Vec<String>,
    /// Most characters one call may ask for (`max_length`).
    pub(crate) max_length: usize,
    /// Largest body read from the network, in bytes; a longer one is cut there.
    pub(crate) max_response_bytes: usize,
    /// Total time of one fetch (all hops and the body).
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) timeout: Duration,
    /// Time to connect to one host.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) connect_timeout: Duration,
    /// How long a fetched page stays cached (0: no cache).
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) cache_ttl: Duration,
    /// Most cached pages.
    pub(crate) cache_max_entries: usize,
    /// Least time between two requests to one host; closer calls queue. 0: no throttle.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) min_interval: Duration,
    /// The User-Agent header.
    pub(crate) user_agent: String,
    /// Refuse what the site's robots.txt disallows for the user agent's product token.
    pub(crate) respect_robots: bool,
}

impl Default for FetchSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            allowed_hosts: Vec::new(),
            denied_hosts: Vec::new(),
            max_length: DEFAULT_FETCH_MAX_LENGTH,
            max_response_bytes: DEFAULT_FETCH_MAX_RESPONSE_BYTES,
            timeout: DEFAULT_FETCH_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            cache_ttl: DEFAULT_FETCH_CACHE_TTL,
            cache_max_entries: DEFAULT_FETCH_CACHE_MAX_ENTRIES,
            min_interval: DEFAULT_FETCH_MIN_INTERVAL,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            respect_robots: false,
        }
    }
}

impl FetchSettings {
    /// Defaults < `[web.fetch]`, validated (keys read under a deprecated name are pushed to
    /// `deprecated`).
    pub(super) fn load(
        file: FileFetch,
        deprecated: &mut Vec<Deprecated>,
    ) -> Result<Self, SettingError> {
        let d = FetchSettings::default();
        let hosts = |key: &'static str, list: Option<Vec<String>>| {
            let list = list.unwrap_or_default();
            for host in &list {
                let bare = host.trim().trim_end_matches('.');
                if bare.is_empty() || bare.contains(['/', ':', '@', ' ']) && !bare.starts_with('[')
                {
                    return Err(invalid(
                        key.into(),
                        format!(
                            "{host:?} is not a host; write a name or an address without scheme, port or path (\"wiki.corp\", \"10.0.0.7\", \"[fd00::1]\")"
                        ),
                    ));
                }
            }
            Ok(list)
        };
        Ok(FetchSettings {
            allow_private: file.allow_private.unwrap_or(d.allow_private),
            allowed_hosts: hosts("web.fetch.allowed_hosts", file.allowed_hosts)?,
            denied_hosts: hosts("web.fetch.denied_hosts", file.denied_hosts)?,
            max_length: check_range(
                "web.fetch.max_length",
                file.max_length.unwrap_or(d.max_length),
                1_000..=MAX_FETCH_MAX_LENGTH,
            )?,
            max_response_bytes: check_range(
                "web.fetch.max_response_bytes",
                file.max_response_bytes.unwrap_or(d.max_response_bytes),
                1024..=MAX_MAX_RESPONSE_BYTES,
            )?,
            timeout: renamed_duration(
                "web.fetch",
                ("timeout", file.timeout.as_ref()),
                ("timeout_ms", file.timeout_ms.as_ref(), LegacyUnit::Millis),
                d.timeout,
                Duration::from_millis(1)..=MAX_TIMEOUT,
                deprecated,
            )?,
            connect_timeout: renamed_duration(
                "web.fetch",
                ("connect_timeout", file.connect_timeout.as_ref()),
                (
                    "connect_timeout_ms",
                    file.connect_timeout_ms.as_ref(),
                    LegacyUnit::Millis,
                ),
                d.connect_timeout,
                Duration::from_millis(1)..=MAX_TIMEOUT,
                deprecated,
            )?,
            cache_ttl: renamed_duration(
                "web.fetch",
                ("cache_ttl", file.cache_ttl.as_ref()),
                (
                    "cache_ttl_secs",
                    file.cache_ttl_secs.as_ref(),
                    LegacyUnit::Secs,
                ),
                d.cache_ttl,
                Duration::ZERO..=MAX_CACHE_TTL,
                deprecated,
            )?,
            cache_max_entries: check_range(
                "web.fetch.cache_max_entries",
                file.cache_max_entries.unwrap_or(d.cache_max_entries),
                1..=MAX_FETCH_CACHE_MAX_ENTRIES,
            )?,
            min_interval: renamed_duration(
                "web.fetch",
                ("min_interval", file.min_interval.as_ref()),
                (
                    "min_interval_ms",
                    file.min_interval_ms.as_ref(),
                    LegacyUnit::Millis,
                ),
                d.min_interval,
                Duration::ZERO..=MAX_MIN_INTERVAL,
                deprecated,
            )?,
            user_agent: match file.user_agent {
                Some(agent) => check_user_agent("web.fetch.user_agent", agent)?,
                None => d.user_agent,
            },
            respect_robots: file.respect_robots.unwrap_or(d.respect_robots),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::FileWeb;
    use super::super::tests::load;
    use super::*;

    #[test]
    fn the_fetch_section_loads_and_bad_values_name_the_key() {
        let s = load(
            "[fetch]\nallow_private = true\nallowed_hosts = [\"wiki.corp\", \"10.0.0.7\"]\nmax_length = 5000\ntimeout = \"3s\"\nuser_agent = \"me/1\"\n",
            &[],
        )
        .unwrap();
        assert!(s.fetch.allow_private);
        assert_eq!(s.fetch.allowed_hosts, vec!["wiki.corp", "10.0.0.7"]);
        assert_eq!(s.fetch.max_length, 5000);
        assert_eq!(s.fetch.timeout, Duration::from_secs(3));
        assert_eq!(s.fetch.user_agent, "me/1");
        let d = load("", &[]).unwrap().fetch;
        assert!(!d.allow_private && d.allowed_hosts.is_empty());
        for (text, key) in [
            ("[fetch]\nmax_length = 0\n", "web.fetch.max_length"),
            ("[fetch]\ntimeout_ms = 0\n", "web.fetch.timeout_ms"),
            ("[fetch]\ntimeout = \"0s\"\n", "web.fetch.timeout"),
            ("[fetch]\ntimeout = 3\n", "web.fetch.timeout"),
            (
                "[fetch]\nallowed_hosts = [\"http://wiki.corp/\"]\n",
                "web.fetch.allowed_hosts",
            ),
            ("[fetch]\ndenied_hosts = [\"\"]\n", "web.fetch.denied_hosts"),
            ("[fetch]\nuser_agent = \" \"\n", "web.fetch.user_agent"),
        ] {
            let err = load(text, &[]).unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
        let err = toml::from_str::<FileWeb>("[fetch]\nallow_privat = true\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("allow_privat"), "{err}");
    }
}
