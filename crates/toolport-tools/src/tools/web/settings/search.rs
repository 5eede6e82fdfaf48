//! `[web]`: the settings of `web_search` ([`WebSettings`]): which providers run in which
//! order, timeouts, 429 retries and the cache; each provider's own section is
//! [`super::provider`]'s, and `[web.fetch]` (`fetch_url`) is [`super::fetch`]'s.
//!
//! Default provider order, when `providers` is not set: every provider that has what it needs,
//! in the order searxng (the operator's own instance: no quota), brave, tavily, google (by how
//! generous their free quotas are), then duckduckgo last. DuckDuckGo needs no key, so it is
//! always there as the fallback, but scraping its HTML page is the least reliable source (bot
//! challenges, markup changes), so it goes last whenever something better is configured.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fetch::{FetchSettings, FileFetch};
use super::provider::{FileProvider, ProviderId, ProviderSections, ProviderSettings};
use super::{
    DEFAULT_CONNECT_TIMEOUT, MAX_CACHE_TTL, MAX_MAX_RESPONSE_BYTES, MAX_TIMEOUT, Secret,
    check_user_agent, invalid,
};
use crate::secret::Source;
use crate::settings::{
    Deprecated, DurationValue, LegacyUnit, Note, SettingError, Unset, check_range, env_value,
    renamed_duration, serialize_duration,
};

/// Default total time for one request to a provider (connect, send, read the whole body):
/// search APIs answer in well under a second; 10 s leaves room for a slow network without
/// making a model wait long before failover.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time budget of one `web_search` call, over every provider it tries, throttle
/// waits and 429 retries included: MCP clients give up after about 60 s, and a model should
/// hear back well before that.
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest `call_timeout`.
const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Default cap on a response body: a results page is 20-100 KiB (DuckDuckGo's HTML is the
/// largest); 2 MiB is far beyond any honest answer and bounds what a broken server can cost.
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;
/// Default retries of a provider that answered 429 before failing over.
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 2;
/// Default longest `Retry-After` toolport waits for; a provider asking for longer is skipped
/// (failover) rather than making the model wait.
const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_secs(5);
/// Default cache lifetime: search results hardly change in 10 minutes, and models often repeat
/// a query within a task.
pub(crate) const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(600);
/// Default number of cached queries (each a few KiB): bounds memory on a long-running server.
pub(crate) const DEFAULT_CACHE_MAX_ENTRIES: usize = 256;
/// Most 429 retries an operator may allow per provider and call.
pub(crate) const MAX_MAX_RETRIES: u32 = 5;
/// Longest `max_retry_wait` an operator may set (one minute).
const MAX_MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// Most cached queries an operator may set.
pub(crate) const MAX_CACHE_MAX_ENTRIES: usize = 100_000;

/// The environment variable that lists the providers, as `web.providers` does.
const PROVIDERS_ENV: &str = "TOOLPORT_WEB_PROVIDERS";

/// The `[web]` section of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileWeb {
    providers: Option<Vec<ProviderId>>,
    call_timeout: Option<DurationValue>,
    timeout: Option<DurationValue>,
    connect_timeout: Option<DurationValue>,
    max_response_bytes: Option<usize>,
    max_retries: Option<u32>,
    max_retry_wait: Option<DurationValue>,
    cache_ttl: Option<DurationValue>,
    cache_max_entries: Option<usize>,
    /// Deprecated: `call_timeout` (a number: milliseconds).
    call_timeout_ms: Option<DurationValue>,
    /// Deprecated: `timeout` (a number: milliseconds).
    timeout_ms: Option<DurationValue>,
    /// Deprecated: `connect_timeout` (a number: milliseconds).
    connect_timeout_ms: Option<DurationValue>,
    /// Deprecated: `max_retry_wait` (a number: milliseconds).
    max_retry_wait_ms: Option<DurationValue>,
    /// Deprecated: `cache_ttl` (a number: seconds).
    cache_ttl_secs: Option<DurationValue>,
    user_agent: Option<String>,
    // The `[web.<provider>]` sections are fields, not a map keyed by the table's names, so
    // that an unknown key is refused with serde's list of the known ones.
    #[serde(default)]
    duckduckgo: FileProvider,
    #[serde(default)]
    brave: FileProvider,
    #[serde(default)]
    google: FileProvider,
    #[serde(default)]
    searxng: FileProvider,
    #[serde(default)]
    tavily: FileProvider,
    #[serde(default)]
    fetch: FileFetch,
}

/// The effective `[web]` settings.
#[derive(Debug, Clone, Serialize)]
pub struct WebSettings {
    /// Providers tried in this order; the next one is tried when one fails.
    #[serde(skip)]
    pub providers: Vec<ProviderId>,
    /// `providers` as `toolport config` prints it: the operator's list (file or
    /// `TOOLPORT_WEB_PROVIDERS`) when a printed config can carry it (every key it needs is
    /// printed as a key file or set in the environment); otherwise it is a note.
    #[serde(rename = "providers", skip_serializing_if = "Option::is_none")]
    pub(crate) listed: Option<Vec<ProviderId>>,
    /// Whether the operator listed the providers (printed or not).
    #[serde(skip)]
    pub(crate) explicit: bool,
    /// Time budget of one call over all providers.
    #[serde(serialize_with = "serialize_duration")]
    pub call_timeout: Duration,
    /// Total time for one request.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) timeout: Duration,
    /// Time to connect.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) connect_timeout: Duration,
    /// Largest response body read, in bytes.
    pub(crate) max_response_bytes: usize,
    /// Retries after a 429 before failing over.
    pub(crate) max_retries: u32,
    /// Longest Retry-After waited for.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) max_retry_wait: Duration,
    /// How long a result stays cached (0: no cache).
    #[serde(serialize_with = "serialize_duration")]
    pub cache_ttl: Duration,
    /// Most cached queries.
    pub(crate) cache_max_entries: usize,
    /// The User-Agent header (`None`: toolport's own, and a browser's for DuckDuckGo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_agent: Option<String>,
    /// Each provider's own settings (`[web.<provider>]`, printed in place as those sections).
    #[serde(flatten)]
    pub(crate) sections: ProviderSections,
    /// `fetch_url` (`[web.fetch]`).
    pub(crate) fetch: FetchSettings,
    /// The keys of `[web]` the file gave under a deprecated name (logged by the command once
    /// logging is set up: the log level is itself a setting).
    #[serde(skip)]
    pub deprecated: Vec<Deprecated>,
}

impl Default for WebSettings {
    /// No file, no environment: DuckDuckGo only.
    fn default() -> Self {
        Self {
            providers: vec![ProviderId::Duckduckgo],
            listed: None,
            explicit: false,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_retries: DEFAULT_MAX_RETRIES,
            max_retry_wait: DEFAULT_MAX_RETRY_WAIT,
            cache_ttl: DEFAULT_CACHE_TTL,
            cache_max_entries: DEFAULT_CACHE_MAX_ENTRIES,
            user_agent: None,
            sections: ProviderSections::default(),
            fetch: FetchSettings::default(),
            deprecated: Vec::new(),
        }
    }
}

impl WebSettings {
    /// Layer defaults < `[web]` in the file < environment and validate. `file_dir` is where
    /// relative `api_key_file` paths resolve (the config file's folder). Keys read under a
    /// deprecated name are listed in `deprecated`.
    pub(crate) fn load(
        file: FileWeb,
        file_dir: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, SettingError> {
        let d = WebSettings::default();
        let mut deprecated = Vec::new();
        let deprecated = &mut deprecated;
        let mut s = WebSettings {
            call_timeout: renamed_duration(
                "web",
                ("call_timeout", file.call_timeout.as_ref()),
                (
                    "call_timeout_ms",
                    file.call_timeout_ms.as_ref(),
                    LegacyUnit::Millis,
                ),
                d.call_timeout,
                Duration::from_millis(1)..=MAX_CALL_TIMEOUT,
                deprecated,
            )?,
            timeout: renamed_duration(
                "web",
                ("timeout", file.timeout.as_ref()),
                ("timeout_ms", file.timeout_ms.as_ref(), LegacyUnit::Millis),
                d.timeout,
                Duration::from_millis(1)..=MAX_TIMEOUT,
                deprecated,
            )?,
            connect_timeout: renamed_duration(
                "web",
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
            max_response_bytes: check_range(
                "web.max_response_bytes",
                file.max_response_bytes.unwrap_or(d.max_response_bytes),
                1024..=MAX_MAX_RESPONSE_BYTES,
            )?,
            max_retries: check_range(
                "web.max_retries",
                file.max_retries.unwrap_or(d.max_retries),
                0..=MAX_MAX_RETRIES,
            )?,
            max_retry_wait: renamed_duration(
                "web",
                ("max_retry_wait", file.max_retry_wait.as_ref()),
                (
                    "max_retry_wait_ms",
                    file.max_retry_wait_ms.as_ref(),
                    LegacyUnit::Millis,
                ),
                d.max_retry_wait,
                Duration::ZERO..=MAX_MAX_RETRY_WAIT,
                deprecated,
            )?,
            cache_ttl: renamed_duration(
                "web",
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
                "web.cache_max_entries",
                file.cache_max_entries.unwrap_or(d.cache_max_entries),
                1..=MAX_CACHE_MAX_ENTRIES,
            )?,
            ..WebSettings::default()
        };
        if let Some(agent) = file.user_agent {
            s.user_agent = Some(check_user_agent("web.user_agent", agent)?);
        }
        s.fetch = FetchSettings::load(file.fetch, deprecated)?;

        s.sections = ProviderSections::load(
            [
                (ProviderId::Duckduckgo, file.duckduckgo),
                (ProviderId::Brave, file.brave),
                (ProviderId::Google, file.google),
                (ProviderId::Searxng, file.searxng),
                (ProviderId::Tavily, file.tavily),
            ],
            file_dir,
            &env,
            deprecated,
        )?;

        let explicit = match env_value(&env, PROVIDERS_ENV) {
            Some(list) => Some(parse_provider_list(&list)?),
            None => file.providers,
        };
        s.providers = match explicit.clone() {
            Some(list) => {
                if list.is_empty() {
                    return Err(invalid(
                        "web.providers".into(),
                        "the list is empty; name at least one of duckduckgo, brave, google, searxng, tavily (disable the tool with tools.disabled instead)",
                    ));
                }
                let mut seen = Vec::new();
                for id in list {
                    if seen.contains(&id) {
                        return Err(invalid(
                            "web.providers".into(),
                            format!("{} is listed twice", id.as_str()),
                        ));
                    }
                    if let Some(missing) = s.missing(id) {
                        return Err(invalid(
                            "web.providers".into(),
                            format!("{} is listed but {missing}", id.as_str()),
                        ));
                    }
                    seen.push(id);
                }
                seen
            }
            None => ProviderId::DEFAULT_ORDER
                .into_iter()
                .filter(|id| s.missing(*id).is_none())
                .collect(),
        };
        // A list naming a provider whose key is written in the config file would not load
        // from the printed config, which leaves that key out.
        s.explicit = explicit.is_some();
        s.deprecated = std::mem::take(deprecated);
        s.listed = explicit.filter(|list| {
            list.iter()
                .all(|id| s.provider(*id).api_key_source != Some(Source::Inline))
        });
        Ok(s)
    }

    /// What `toolport config` prints as comments: where each key was set (never the key), and
    /// the provider order when it is not printed as `providers`.
    pub fn notes(&self) -> Vec<Note> {
        let mut notes = Vec::new();
        if self.listed.is_none() {
            let order: Vec<&str> = self.providers.iter().map(|id| id.as_str()).collect();
            let why = if self.explicit {
                "as listed; not a key here, since it names a provider whose key is not printed"
            } else {
                "every provider that is set up, in the default order"
            };
            notes.push(Note::new(
                "web.providers",
                format!("{} ({why})", order.join(", ")),
            ));
        }
        for id in ProviderId::DEFAULT_ORDER {
            let Some(source) = &self.provider(id).api_key_source else {
                continue;
            };
            let carry = format!(
                "web.{}.api_key_file or {}",
                id.as_str(),
                id.key_env().unwrap_or("the environment")
            );
            notes.extend(source.note(&format!("web.{}.api_key", id.as_str()), &carry));
        }
        notes
    }

    /// The keys that add a search provider, for `toolport config` to print as comments while
    /// they are unset: the provider order, then each provider's instance, key and engine id,
    /// in the default order.
    pub fn unset(&self) -> Vec<Unset> {
        let mut unset = Vec::new();
        if !self.explicit {
            let all: Vec<String> = ProviderId::DEFAULT_ORDER
                .iter()
                .map(|id| format!("\"{}\"", id.as_str()))
                .collect();
            unset.push(Unset::new(
                "web.providers",
                format!("[{}]", all.join(", ")),
                PROVIDERS_ENV,
            ));
        }
        for id in ProviderId::DEFAULT_ORDER {
            unset.extend(self.provider(id).unset(id));
        }
        unset
    }

    /// One provider's settings.
    pub(crate) fn provider(&self, id: ProviderId) -> &ProviderSettings {
        self.sections.get(id)
    }

    /// What a provider lacks to be usable, in words naming where to set it; `None` when it is
    /// ready.
    fn missing(&self, id: ProviderId) -> Option<String> {
        self.provider(id).missing(id)
    }

    /// Every configured key (for scrubbing messages as a last line of defence).
    pub fn secrets(&self) -> Vec<Secret> {
        ProviderId::DEFAULT_ORDER
            .into_iter()
            .filter_map(|id| self.provider(id).api_key.clone())
            .collect()
    }
}

fn parse_provider_list(list: &str) -> Result<Vec<ProviderId>, SettingError> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            ProviderId::DEFAULT_ORDER
                .into_iter()
                .find(|id| id.as_str().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    invalid(
                        PROVIDERS_ENV.into(),
                        format!(
                            "unknown provider {name:?}; known are duckduckgo, brave, google, searxng, tavily"
                        ),
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::load;
    use super::*;
    use crate::secret::MASK;

    #[test]
    fn with_nothing_configured_only_duckduckgo_runs() {
        let s = load("", &[]).unwrap();
        assert_eq!(s.providers, vec![ProviderId::Duckduckgo]);
    }

    #[test]
    fn configured_providers_come_before_duckduckgo() {
        let s = load(
            "",
            &[
                ("TOOLPORT_BRAVE_API_KEY", "b"),
                ("TOOLPORT_GOOGLE_API_KEY", "g"),
                ("TOOLPORT_GOOGLE_CX", "cx"),
                ("TOOLPORT_SEARXNG_URL", "http://127.0.0.1:8888/"),
                ("TOOLPORT_TAVILY_API_KEY", "t"),
            ],
        )
        .unwrap();
        assert_eq!(s.providers, ProviderId::DEFAULT_ORDER.to_vec());
        assert_eq!(
            s.provider(ProviderId::Searxng).base_url.as_deref(),
            Some("http://127.0.0.1:8888")
        );
    }

    #[test]
    fn keys_are_never_printed_only_where_they_were_set() {
        let s = load(
            "[google]\napi_key = \"g-very-secret\"\ncx = \"c\"\n",
            &[("TOOLPORT_BRAVE_API_KEY", "sk-very-secret")],
        )
        .unwrap();
        let debug = format!("{s:?}");
        let toml = toml::to_string(&s).unwrap();
        for shown in [&debug, &toml] {
            assert!(
                !shown.contains("sk-very-secret") && !shown.contains("g-very-secret"),
                "{shown}"
            );
        }
        assert!(debug.contains(MASK), "{debug}");
        assert!(!toml.contains("api_key"), "{toml}");
        assert_eq!(
            s.notes(),
            [
                Note::new(
                    "web.providers",
                    "brave, google, duckduckgo (every provider that is set up, in the default order)"
                ),
                Note::new(
                    "web.brave.api_key",
                    "set from TOOLPORT_BRAVE_API_KEY (a secret: never printed)"
                ),
                Note::new(
                    "web.google.api_key",
                    "set in the config file (a secret: never printed; put it in web.google.api_key_file or TOOLPORT_GOOGLE_API_KEY for a printed config to carry it)"
                ),
            ]
        );
        // A list the printed config could not load (google's key is not in it) is a note.
        let s = load(
            "providers = [\"google\", \"brave\"]\n[google]\napi_key = \"g-very-secret\"\ncx = \"c\"\n",
            &[("TOOLPORT_BRAVE_API_KEY", "sk-very-secret")],
        )
        .unwrap();
        assert_eq!(s.listed, None);
        assert_eq!(
            s.notes()[0],
            Note::new(
                "web.providers",
                "google, brave (as listed; not a key here, since it names a provider whose key is not printed)"
            )
        );
        let s = load(
            "providers = [\"brave\"]\n",
            &[("TOOLPORT_BRAVE_API_KEY", "sk-very-secret")],
        )
        .unwrap();
        assert_eq!(s.listed, Some(vec![ProviderId::Brave]));
    }

    #[test]
    fn bad_settings_name_the_key() {
        for (text, key) in [
            ("[duckduckgo]\napi_key = \"x\"\n", "web.duckduckgo.api_key"),
            ("[brave]\ncx = \"x\"\n", "web.brave.cx"),
            ("[brave]\nbase_url = \"ftp://x\"\n", "web.brave.base_url"),
            ("[brave]\nbase_url = \"not a url\"\n", "web.brave.base_url"),
            ("timeout_ms = 0\n", "web.timeout_ms"),
            ("timeout = \"0s\"\n", "web.timeout"),
            ("providers = []\n", "web.providers"),
            (
                "providers = [\"duckduckgo\", \"duckduckgo\"]\n",
                "web.providers",
            ),
        ] {
            let err = load(text, &[]).unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
        assert!(toml::from_str::<FileWeb>("[brave]\napi_keys = \"x\"\n").is_err());
        assert!(toml::from_str::<FileWeb>("provider = [\"brave\"]\n").is_err());
        assert!(toml::from_str::<FileWeb>("providers = [\"bing\"]\n").is_err());
    }
}
