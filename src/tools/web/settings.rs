//! `[web]` settings for `web_search`: which providers run in which order, their credentials
//! and base URLs, timeouts, the per-provider throttle, 429 retries and the cache; and
//! `[web.fetch]` for `fetch_url` ([`FetchSettings`]: the SSRF guard's lists, limits, cache).
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
//!
//! Default provider order, when `providers` is not set: every provider that has what it needs,
//! in the order searxng (the operator's own instance: no quota), brave, tavily, google (by how
//! generous their free quotas are), then duckduckgo last. DuckDuckGo needs no key, so it is
//! always there as the fallback, but scraping its HTML page is the least reliable source (bot
//! challenges, markup changes), so it goes last whenever something better is configured.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) use crate::secret::Secret;
use crate::secret::{Source, no_key_file, serialize_key_file};
use crate::settings::{
    Deprecated, DurationValue, LegacyUnit, Note, SettingError, check_range, env_value,
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
/// Default time to establish a connection: a provider that cannot be reached in 5 s is down.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
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
/// The User-Agent sent to the JSON APIs. DuckDuckGo gets a browser-like one
/// ([`DUCKDUCKGO_USER_AGENT`]) unless the operator sets `user_agent`.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!("toolport/", env!("CARGO_PKG_VERSION"));
/// DuckDuckGo's HTML endpoint serves its bot challenge to unknown agents far more often.
pub(crate) const DUCKDUCKGO_USER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
/// Largest `timeout` / `connect_timeout`: a model's client gives up after about 2
/// minutes, and several providers may be tried in one call.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest `max_response_bytes` an operator may set.
pub(crate) const MAX_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// Most 429 retries an operator may allow per provider and call.
pub(crate) const MAX_MAX_RETRIES: u32 = 5;
/// Longest `max_retry_wait` an operator may set (one minute).
const MAX_MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// Longest `min_interval` (one request a minute).
const MAX_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// Longest cache lifetime an operator may set (a day): search results go stale.
const MAX_CACHE_TTL: Duration = Duration::from_secs(86_400);
/// Most cached queries an operator may set.
pub(crate) const MAX_CACHE_MAX_ENTRIES: usize = 100_000;

/// One search provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ProviderId {
    /// DuckDuckGo's HTML endpoint (no key).
    Duckduckgo,
    /// The Brave Search API.
    Brave,
    /// The Google Custom Search JSON API.
    Google,
    /// A SearXNG instance's JSON API.
    Searxng,
    /// The Tavily search API.
    Tavily,
}

impl ProviderId {
    /// Every provider, in the default preference order (see the module docs).
    pub(crate) const DEFAULT_ORDER: [ProviderId; 5] = [
        ProviderId::Searxng,
        ProviderId::Brave,
        ProviderId::Tavily,
        ProviderId::Google,
        ProviderId::Duckduckgo,
    ];

    /// The name used in config and in results, e.g. `"duckduckgo"`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ProviderId::Duckduckgo => "duckduckgo",
            ProviderId::Brave => "brave",
            ProviderId::Google => "google",
            ProviderId::Searxng => "searxng",
            ProviderId::Tavily => "tavily",
        }
    }

    /// The name people know, e.g. `"DuckDuckGo"`.
    pub(crate) fn display_name(self) -> &'static str {
        match self {
            ProviderId::Duckduckgo => "DuckDuckGo",
            ProviderId::Brave => "Brave",
            ProviderId::Google => "Google",
            ProviderId::Searxng => "SearXNG",
            ProviderId::Tavily => "Tavily",
        }
    }

    /// The public endpoint, used unless `base_url` is set (SearXNG has none: it is always the
    /// operator's instance).
    pub(crate) fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderId::Duckduckgo => Some("https://html.duckduckgo.com"),
            ProviderId::Brave => Some("https://api.search.brave.com"),
            ProviderId::Google => Some("https://www.googleapis.com"),
            ProviderId::Searxng => None,
            ProviderId::Tavily => Some("https://api.tavily.com"),
        }
    }

    /// The environment variable holding the API key, for keyed providers.
    pub(crate) fn key_env(self) -> Option<&'static str> {
        match self {
            ProviderId::Brave => Some("TOOLPORT_BRAVE_API_KEY"),
            ProviderId::Google => Some("TOOLPORT_GOOGLE_API_KEY"),
            ProviderId::Tavily => Some("TOOLPORT_TAVILY_API_KEY"),
            ProviderId::Duckduckgo | ProviderId::Searxng => None,
        }
    }

    /// Default least time between two requests to this provider. DuckDuckGo's HTML endpoint
    /// answers bursts with its bot challenge; Brave's free plan allows 1 request per second;
    /// the others tolerate more.
    pub(crate) fn default_min_interval(self) -> Duration {
        Duration::from_millis(match self {
            ProviderId::Duckduckgo => 1_500,
            ProviderId::Brave => 1_000,
            ProviderId::Google | ProviderId::Searxng | ProviderId::Tavily => 200,
        })
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

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

/// A `[web.<provider>]` section. Keys that do not apply to a provider (`cx` outside Google, a
/// key for DuckDuckGo) are rejected in [`WebSettings::load`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProvider {
    base_url: Option<String>,
    api_key: Option<Secret>,
    api_key_file: Option<PathBuf>,
    cx: Option<String>,
    min_interval: Option<DurationValue>,
    /// Deprecated: `min_interval` (a number: milliseconds).
    min_interval_ms: Option<DurationValue>,
}

/// One provider's effective settings.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProviderSettings {
    /// Where requests go (the public endpoint unless configured; always set for SearXNG when
    /// it is configured at all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) base_url: Option<String>,
    /// The API key (never printed).
    #[serde(skip)]
    pub(crate) api_key: Option<Secret>,
    /// Where the key was read from: printed as `api_key_file` when that is a key file, else
    /// as a note.
    #[serde(
        rename = "api_key_file",
        skip_serializing_if = "no_key_file",
        serialize_with = "serialize_key_file"
    )]
    pub(crate) api_key_source: Option<Source>,
    /// Google's search engine id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cx: Option<String>,
    /// Least time between two requests; closer calls queue. 0: no throttle.
    #[serde(serialize_with = "serialize_duration")]
    pub(crate) min_interval: Duration,
}

/// The effective `[web]` settings.
#[derive(Debug, Clone, Serialize)]
pub struct WebSettings {
    /// Providers tried in this order; the next one is tried when one fails.
    #[serde(skip)]
    pub(crate) providers: Vec<ProviderId>,
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
    pub(crate) call_timeout: Duration,
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
    pub(crate) cache_ttl: Duration,
    /// Most cached queries.
    pub(crate) cache_max_entries: usize,
    /// The User-Agent header (`None`: toolport's own, and a browser's for DuckDuckGo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_agent: Option<String>,
    /// DuckDuckGo.
    pub(crate) duckduckgo: ProviderSettings,
    /// Brave.
    pub(crate) brave: ProviderSettings,
    /// Google Custom Search.
    pub(crate) google: ProviderSettings,
    /// SearXNG.
    pub(crate) searxng: ProviderSettings,
    /// Tavily.
    pub(crate) tavily: ProviderSettings,
    /// `fetch_url` (`[web.fetch]`).
    pub(crate) fetch: FetchSettings,
    /// The keys of `[web]` the file gave under a deprecated name (logged by the command once
    /// logging is set up: the log level is itself a setting).
    #[serde(skip)]
    pub(crate) deprecated: Vec<Deprecated>,
}

impl Default for WebSettings {
    /// No file, no environment: DuckDuckGo only.
    fn default() -> Self {
        let provider = |id: ProviderId| ProviderSettings {
            base_url: id.default_base_url().map(String::from),
            api_key: None,
            api_key_source: None,
            cx: None,
            min_interval: id.default_min_interval(),
        };
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
            duckduckgo: provider(ProviderId::Duckduckgo),
            brave: provider(ProviderId::Brave),
            google: provider(ProviderId::Google),
            searxng: provider(ProviderId::Searxng),
            tavily: provider(ProviderId::Tavily),
            fetch: FetchSettings::default(),
            deprecated: Vec::new(),
        }
    }
}

fn invalid(key: String, message: impl Into<String>) -> SettingError {
    SettingError::new(key, message)
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

        for (id, section) in [
            (ProviderId::Duckduckgo, file.duckduckgo),
            (ProviderId::Brave, file.brave),
            (ProviderId::Google, file.google),
            (ProviderId::Searxng, file.searxng),
            (ProviderId::Tavily, file.tavily),
        ] {
            let settings = load_provider(id, section, file_dir, &env, deprecated)?;
            *s.provider_mut(id) = settings;
        }

        let explicit = match env_value(&env, "TOOLPORT_WEB_PROVIDERS") {
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
    pub(crate) fn notes(&self) -> Vec<Note> {
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

    /// One provider's settings.
    pub(crate) fn provider(&self, id: ProviderId) -> &ProviderSettings {
        match id {
            ProviderId::Duckduckgo => &self.duckduckgo,
            ProviderId::Brave => &self.brave,
            ProviderId::Google => &self.google,
            ProviderId::Searxng => &self.searxng,
            ProviderId::Tavily => &self.tavily,
        }
    }

    fn provider_mut(&mut self, id: ProviderId) -> &mut ProviderSettings {
        match id {
            ProviderId::Duckduckgo => &mut self.duckduckgo,
            ProviderId::Brave => &mut self.brave,
            ProviderId::Google => &mut self.google,
            ProviderId::Searxng => &mut self.searxng,
            ProviderId::Tavily => &mut self.tavily,
        }
    }

    /// What a provider lacks to be usable, in words naming where to set it; `None` when it is
    /// ready.
    pub(crate) fn missing(&self, id: ProviderId) -> Option<String> {
        let p = self.provider(id);
        match id {
            ProviderId::Searxng if p.base_url.is_none() => Some(
                "no SearXNG instance is set: set TOOLPORT_SEARXNG_URL or web.searxng.base_url"
                    .into(),
            ),
            ProviderId::Duckduckgo | ProviderId::Searxng => None,
            ProviderId::Google if p.api_key.is_some() && p.cx.is_none() => {
                Some("no search engine id is set: set TOOLPORT_GOOGLE_CX or web.google.cx".into())
            }
            _ if p.api_key.is_none() => Some(format!(
                "no API key is set: set {} or web.{}.api_key / api_key_file",
                id.key_env().unwrap_or("the key"),
                id.as_str()
            )),
            _ => None,
        }
    }

    /// Every configured key (for scrubbing messages as a last line of defence).
    pub(crate) fn secrets(&self) -> Vec<Secret> {
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
                        "TOOLPORT_WEB_PROVIDERS".into(),
                        format!(
                            "unknown provider {name:?}; known are duckduckgo, brave, google, searxng, tavily"
                        ),
                    )
                })
        })
        .collect()
}

fn load_provider(
    id: ProviderId,
    file: FileProvider,
    file_dir: &Path,
    env: &impl Fn(&str) -> Option<String>,
    deprecated: &mut Vec<Deprecated>,
) -> Result<ProviderSettings, SettingError> {
    let name = id.as_str();
    let key = |field: &str| format!("web.{name}.{field}");
    if file.cx.is_some() && id != ProviderId::Google {
        return Err(invalid(key("cx"), "only the google provider takes a cx"));
    }
    if id.key_env().is_none() && (file.api_key.is_some() || file.api_key_file.is_some()) {
        return Err(invalid(
            key("api_key"),
            format!("{} takes no API key", id.display_name()),
        ));
    }
    if file.api_key.is_some() && file.api_key_file.is_some() {
        return Err(invalid(
            key("api_key"),
            format!("set only one of web.{name}.api_key and web.{name}.api_key_file"),
        ));
    }
    let from_file = match &file.api_key_file {
        Some(path) => {
            let path = if path.is_absolute() {
                path.clone()
            } else {
                file_dir.join(path)
            };
            let text = std::fs::read_to_string(&path).map_err(|e| {
                invalid(
                    key("api_key_file"),
                    format!("cannot read the key file {}: {e}", path.display()),
                )
            })?;
            Some((Secret::new(text.trim()), Source::File(path)))
        }
        None => file
            .api_key
            .map(|k| (Secret::new(k.expose().trim()), Source::Inline)),
    };
    let (api_key, api_key_source) = id
        .key_env()
        .and_then(|var| Some((Secret::new(env_value(env, var)?), Source::Env(var))))
        .or(from_file)
        .filter(|(k, _)| !k.expose().is_empty())
        .unzip();

    let base_url = match id {
        ProviderId::Searxng => env_value(env, "TOOLPORT_SEARXNG_URL").or(file.base_url),
        _ => file.base_url,
    };
    let base_url = match base_url {
        Some(raw) => Some(check_url(&key("base_url"), &raw)?),
        None => id.default_base_url().map(String::from),
    };
    let cx = match id {
        ProviderId::Google => env_value(env, "TOOLPORT_GOOGLE_CX").or(file.cx),
        _ => None,
    };
    let min_interval = renamed_duration(
        &format!("web.{name}"),
        ("min_interval", file.min_interval.as_ref()),
        (
            "min_interval_ms",
            file.min_interval_ms.as_ref(),
            LegacyUnit::Millis,
        ),
        id.default_min_interval(),
        Duration::ZERO..=MAX_MIN_INTERVAL,
        deprecated,
    )?;
    Ok(ProviderSettings {
        base_url,
        api_key,
        api_key_source,
        cx,
        min_interval,
    })
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
    fn load(file: FileFetch, deprecated: &mut Vec<Deprecated>) -> Result<Self, SettingError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::MASK;
    use std::collections::HashMap;

    fn load(toml_text: &str, env: &[(&str, &str)]) -> Result<WebSettings, SettingError> {
        let file: FileWeb = toml::from_str(toml_text).unwrap();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        WebSettings::load(file, Path::new("/nonexistent"), |k| env.get(k).cloned())
    }

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
        assert_eq!(s.searxng.base_url.as_deref(), Some("http://127.0.0.1:8888"));
    }

    #[test]
    fn a_google_key_without_cx_leaves_google_out_and_an_explicit_list_says_why() {
        let s = load("", &[("TOOLPORT_GOOGLE_API_KEY", "g")]).unwrap();
        assert_eq!(s.providers, vec![ProviderId::Duckduckgo]);
        let err = load(
            "providers = [\"google\"]",
            &[("TOOLPORT_GOOGLE_API_KEY", "g")],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("TOOLPORT_GOOGLE_CX"), "{err}");
        let err = load("providers = [\"brave\"]", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("TOOLPORT_BRAVE_API_KEY"), "{err}");
    }

    #[test]
    fn env_overrides_the_file_and_the_order_can_be_set() {
        let s = load(
            "providers = [\"duckduckgo\", \"brave\"]\n[brave]\napi_key = \"from-file\"\n",
            &[("TOOLPORT_BRAVE_API_KEY", "from-env")],
        )
        .unwrap();
        assert_eq!(s.providers, vec![ProviderId::Duckduckgo, ProviderId::Brave]);
        assert_eq!(s.brave.api_key.as_ref().unwrap().expose(), "from-env");
        let s = load(
            "[brave]\napi_key = \"k\"\n",
            &[("TOOLPORT_WEB_PROVIDERS", "brave")],
        )
        .unwrap();
        assert_eq!(s.providers, vec![ProviderId::Brave]);
    }

    #[test]
    fn a_key_file_is_read_relative_to_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tavily.key"), "tvly-secret\n").unwrap();
        let file: FileWeb = toml::from_str("[tavily]\napi_key_file = \"tavily.key\"\n").unwrap();
        let s = WebSettings::load(file, dir.path(), |_| None).unwrap();
        assert_eq!(s.tavily.api_key.as_ref().unwrap().expose(), "tvly-secret");
        let printed = toml::to_string(&s).unwrap();
        assert!(
            printed.contains(&format!(
                "api_key_file = {:?}",
                dir.path().join("tavily.key").display().to_string()
            )) && !printed.contains("tvly-secret"),
            "a key file is printed as its (absolute) path: {printed}"
        );
        assert_eq!(
            s.providers,
            vec![ProviderId::Tavily, ProviderId::Duckduckgo]
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
    fn the_web_section_loads_through_the_whole_config() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolport.toml");
        let load = |text: &str, env: &[(&str, &str)]| {
            std::fs::write(&path, text).unwrap();
            let cli = crate::config::Cli::try_parse_from([
                "toolport",
                "--config",
                path.to_str().unwrap(),
            ])
            .unwrap();
            let env: HashMap<String, String> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            crate::config::Config::load(&cli.global, |k| env.get(k).cloned())
        };
        let text = "[web]\nproviders = [\"brave\", \"duckduckgo\"]\n";
        let err = load(text, &[]).unwrap_err().to_string();
        assert!(
            err.contains("web.providers") && err.contains("TOOLPORT_BRAVE_API_KEY"),
            "{err}"
        );
        let c = load(text, &[("TOOLPORT_BRAVE_API_KEY", "sk-secret")]).unwrap();
        assert_eq!(
            c.web.providers,
            vec![ProviderId::Brave, ProviderId::Duckduckgo]
        );
        let shown = c.to_toml();
        assert!(
            !shown.contains("sk-secret")
                && shown.contains("web.brave.api_key: set from TOOLPORT_BRAVE_API_KEY"),
            "{shown}"
        );
        assert!(!format!("{c:?}").contains("sk-secret"));
        let err = load("[web]\nprovider = []\n", &[]).unwrap_err().to_string();
        assert!(err.contains("unknown field `provider`"), "{err}");
        let err = load("[web.brave]\napi_key_file = \"missing.key\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.key"), "{err}");
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
                s.brave.min_interval,
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
