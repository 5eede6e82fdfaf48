//! The search providers and their `[web.<provider>]` sections: one table ([`TABLE`]) says
//! what each provider is (its names, its public endpoint or that it is the operator's own
//! instance, the credentials it needs, its default throttle), and one settings type
//! ([`ProviderSettings`]) holds any provider's section, loaded by one function that reads
//! everything provider-specific from that table.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use super::{MAX_MIN_INTERVAL, Secret, check_url, invalid};
use crate::secret::{Source, no_key_file, serialize_key_file};
use crate::settings::{
    Deprecated, DurationValue, LegacyUnit, SettingError, Unset, env_value, renamed_duration,
    serialize_duration,
};

/// DuckDuckGo's HTML endpoint serves its bot challenge to unknown agents far more often.
pub(crate) const DUCKDUCKGO_USER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// One search provider. The declaration order is the order of the `[web.<provider>]`
/// sections (in the config file's schema and in `toolport config`) and of [`TABLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderId {
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

/// Where a provider's requests go unless `base_url` is set.
#[derive(Debug, Clone, Copy)]
enum Endpoint {
    /// The provider's public endpoint.
    Public(&'static str),
    /// None: it is always the operator's own instance, given by this environment variable or
    /// `base_url`; until one is set, the provider is not set up.
    Instance { env: &'static str },
}

/// What a provider needs besides an endpoint.
#[derive(Debug, Clone, Copy)]
enum Credentials {
    /// Nothing (a key in its section is an error).
    None,
    /// An API key: this environment variable, else `api_key` or `api_key_file`.
    ApiKey { env: &'static str },
    /// An API key as above and a search engine id (`cx`): this environment variable, else
    /// `cx`.
    ApiKeyAndEngine {
        env: &'static str,
        cx_env: &'static str,
    },
}

/// What one provider is: the row of [`TABLE`] everything provider-specific in the settings
/// comes from.
#[derive(Debug)]
struct Provider {
    id: ProviderId,
    /// The name used in config and in results, e.g. `"duckduckgo"` (its serde name).
    name: &'static str,
    /// The name people know, e.g. `"DuckDuckGo"`.
    display_name: &'static str,
    endpoint: Endpoint,
    credentials: Credentials,
    /// Default least time between two requests.
    min_interval: Duration,
}

/// Every provider, in [`ProviderId`]'s order (checked when compiling). Default throttles:
/// DuckDuckGo's HTML endpoint answers bursts with its bot challenge; Brave's free plan allows
/// 1 request per second; the others tolerate more.
const TABLE: [Provider; 5] = [
    Provider {
        id: ProviderId::Duckduckgo,
        name: "duckduckgo",
        display_name: "DuckDuckGo",
        endpoint: Endpoint::Public("https://html.duckduckgo.com"),
        credentials: Credentials::None,
        min_interval: Duration::from_millis(1_500),
    },
    Provider {
        id: ProviderId::Brave,
        name: "brave",
        display_name: "Brave",
        endpoint: Endpoint::Public("https://api.search.brave.com"),
        credentials: Credentials::ApiKey {
            env: "TOOLPORT_BRAVE_API_KEY",
        },
        min_interval: Duration::from_millis(1_000),
    },
    Provider {
        id: ProviderId::Google,
        name: "google",
        display_name: "Google",
        endpoint: Endpoint::Public("https://www.googleapis.com"),
        credentials: Credentials::ApiKeyAndEngine {
            env: "TOOLPORT_GOOGLE_API_KEY",
            cx_env: "TOOLPORT_GOOGLE_CX",
        },
        min_interval: Duration::from_millis(200),
    },
    Provider {
        id: ProviderId::Searxng,
        name: "searxng",
        display_name: "SearXNG",
        endpoint: Endpoint::Instance {
            env: "TOOLPORT_SEARXNG_URL",
        },
        credentials: Credentials::None,
        min_interval: Duration::from_millis(200),
    },
    Provider {
        id: ProviderId::Tavily,
        name: "tavily",
        display_name: "Tavily",
        endpoint: Endpoint::Public("https://api.tavily.com"),
        credentials: Credentials::ApiKey {
            env: "TOOLPORT_TAVILY_API_KEY",
        },
        min_interval: Duration::from_millis(200),
    },
];

// `ProviderId::row` indexes the table by the id: each row must sit at its id's place.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            TABLE[i].id as usize == i,
            "TABLE is not in ProviderId's order"
        );
        i += 1;
    }
};

impl ProviderId {
    /// Every provider, in the default preference order (see [`super::search`]).
    pub(crate) const DEFAULT_ORDER: [ProviderId; 5] = [
        ProviderId::Searxng,
        ProviderId::Brave,
        ProviderId::Tavily,
        ProviderId::Google,
        ProviderId::Duckduckgo,
    ];

    fn row(self) -> &'static Provider {
        &TABLE[self as usize]
    }

    /// The name used in config and in results, e.g. `"duckduckgo"`.
    pub(crate) fn as_str(self) -> &'static str {
        self.row().name
    }

    /// The name people know, e.g. `"DuckDuckGo"`.
    pub(crate) fn display_name(self) -> &'static str {
        self.row().display_name
    }

    /// The public endpoint, used unless `base_url` is set (SearXNG has none: it is always the
    /// operator's instance).
    fn default_base_url(self) -> Option<&'static str> {
        match self.row().endpoint {
            Endpoint::Public(url) => Some(url),
            Endpoint::Instance { .. } => None,
        }
    }

    /// The environment variable holding the API key, for keyed providers.
    pub(crate) fn key_env(self) -> Option<&'static str> {
        match self.row().credentials {
            Credentials::None => None,
            Credentials::ApiKey { env } | Credentials::ApiKeyAndEngine { env, .. } => Some(env),
        }
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

/// A `[web.<provider>]` section. Keys that do not apply to a provider (`cx` outside Google, a
/// key for DuckDuckGo) are rejected in [`ProviderSettings::load`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileProvider {
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

impl ProviderSettings {
    /// No section, no environment.
    fn default_for(id: ProviderId) -> Self {
        Self {
            base_url: id.default_base_url().map(String::from),
            api_key: None,
            api_key_source: None,
            cx: None,
            min_interval: id.row().min_interval,
        }
    }

    /// Defaults < the section < environment, validated. `file_dir` is where a relative
    /// `api_key_file` resolves; keys read under a deprecated name are pushed to `deprecated`.
    fn load(
        id: ProviderId,
        file: FileProvider,
        file_dir: &Path,
        env: &impl Fn(&str) -> Option<String>,
        deprecated: &mut Vec<Deprecated>,
    ) -> Result<Self, SettingError> {
        let row = id.row();
        let name = row.name;
        let key = |field: &str| format!("web.{name}.{field}");
        let cx_env = match row.credentials {
            Credentials::ApiKeyAndEngine { cx_env, .. } => Some(cx_env),
            Credentials::None | Credentials::ApiKey { .. } => None,
        };
        if file.cx.is_some() && cx_env.is_none() {
            return Err(invalid(key("cx"), "only the google provider takes a cx"));
        }
        if id.key_env().is_none() && (file.api_key.is_some() || file.api_key_file.is_some()) {
            return Err(invalid(
                key("api_key"),
                format!("{} takes no API key", row.display_name),
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

        let base_url = match row.endpoint {
            Endpoint::Instance { env: var } => env_value(env, var).or(file.base_url),
            Endpoint::Public(_) => file.base_url,
        };
        let base_url = match base_url {
            Some(raw) => Some(check_url(&key("base_url"), &raw)?),
            None => id.default_base_url().map(String::from),
        };
        let cx = cx_env.and_then(|var| env_value(env, var).or(file.cx));
        let min_interval = renamed_duration(
            &format!("web.{name}"),
            ("min_interval", file.min_interval.as_ref()),
            (
                "min_interval_ms",
                file.min_interval_ms.as_ref(),
                LegacyUnit::Millis,
            ),
            row.min_interval,
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

    /// The keys of provider `id` (whose settings these are) that set it up and are not set:
    /// its instance, its API key (as `api_key_file`, the form `toolport config` prints), its
    /// search engine id; each with the environment variable that sets it too.
    pub(crate) fn unset(&self, id: ProviderId) -> Vec<Unset> {
        let row = id.row();
        let key = |field: &str| format!("web.{}.{field}", row.name);
        let fill_in = "\"…\"";
        let mut unset = Vec::new();
        if let (None, Endpoint::Instance { env }) = (&self.base_url, row.endpoint) {
            unset.push(Unset::new(key("base_url"), fill_in, env));
        }
        match row.credentials {
            Credentials::None => {}
            Credentials::ApiKey { env } | Credentials::ApiKeyAndEngine { env, .. }
                if self.api_key.is_none() =>
            {
                unset.push(Unset::new(key("api_key_file"), fill_in, env));
            }
            Credentials::ApiKey { .. } | Credentials::ApiKeyAndEngine { .. } => {}
        }
        if let (None, Credentials::ApiKeyAndEngine { cx_env, .. }) = (&self.cx, row.credentials) {
            unset.push(Unset::new(key("cx"), fill_in, cx_env));
        }
        unset
    }

    /// What provider `id` (whose settings these are) lacks to be usable, in words naming
    /// where to set it; `None` when it is ready.
    pub(crate) fn missing(&self, id: ProviderId) -> Option<String> {
        let row = id.row();
        if let (None, Endpoint::Instance { env }) = (&self.base_url, row.endpoint) {
            return Some(format!(
                "no {} instance is set: set {env} or web.{}.base_url",
                row.display_name, row.name
            ));
        }
        let key_env = match row.credentials {
            Credentials::None => return None,
            Credentials::ApiKeyAndEngine { cx_env, .. }
                if self.api_key.is_some() && self.cx.is_none() =>
            {
                return Some(format!(
                    "no search engine id is set: set {cx_env} or web.{}.cx",
                    row.name
                ));
            }
            Credentials::ApiKey { env } | Credentials::ApiKeyAndEngine { env, .. } => env,
        };
        self.api_key.is_none().then(|| {
            format!(
                "no API key is set: set {key_env} or web.{}.api_key / api_key_file",
                row.name
            )
        })
    }
}

/// Every provider's settings, one per row of [`TABLE`]; printed as the `[web.<provider>]`
/// sections in [`ProviderId`]'s order.
#[derive(Debug, Clone)]
pub(crate) struct ProviderSections([ProviderSettings; 5]);

impl Default for ProviderSections {
    fn default() -> Self {
        Self(
            TABLE
                .each_ref()
                .map(|row| ProviderSettings::default_for(row.id)),
        )
    }
}

impl ProviderSections {
    /// Each provider's section of the file (`sections` names each one's provider) loaded with
    /// [`ProviderSettings::load`], in the given order (which is the order errors and
    /// deprecation warnings come in).
    pub(super) fn load(
        sections: [(ProviderId, FileProvider); 5],
        file_dir: &Path,
        env: &impl Fn(&str) -> Option<String>,
        deprecated: &mut Vec<Deprecated>,
    ) -> Result<Self, SettingError> {
        let mut loaded = Self::default();
        for (id, section) in sections {
            loaded.0[id as usize] = ProviderSettings::load(id, section, file_dir, env, deprecated)?;
        }
        Ok(loaded)
    }

    /// One provider's settings.
    pub(crate) fn get(&self, id: ProviderId) -> &ProviderSettings {
        &self.0[id as usize]
    }
}

impl Serialize for ProviderSections {
    /// One `<provider>` table per provider, named as in the config file.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(TABLE.len()))?;
        for (row, settings) in TABLE.iter().zip(&self.0) {
            map.serialize_entry(row.name, settings)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::load;
    use super::super::{FileWeb, WebSettings};
    use super::*;

    /// The table's names are the names the config file and `TOOLPORT_WEB_PROVIDERS` use.
    #[test]
    fn the_table_names_each_provider_as_serde_does() {
        for row in &TABLE {
            assert_eq!(
                toml::Value::try_from(row.id).unwrap().as_str(),
                Some(row.name)
            );
        }
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
    fn only_what_a_provider_still_lacks_is_shown_as_unset() {
        let s = load("", &[("TOOLPORT_GOOGLE_API_KEY", "g")]).unwrap();
        assert_eq!(
            s.provider(ProviderId::Google).unset(ProviderId::Google),
            [Unset::new("web.google.cx", "\"…\"", "TOOLPORT_GOOGLE_CX")]
        );
        let s = load("[searxng]\nbase_url = \"http://127.0.0.1:8888\"\n", &[]).unwrap();
        assert!(
            s.provider(ProviderId::Searxng)
                .unset(ProviderId::Searxng)
                .is_empty()
        );
        assert!(
            s.provider(ProviderId::Duckduckgo)
                .unset(ProviderId::Duckduckgo)
                .is_empty()
        );
    }

    #[test]
    fn env_overrides_the_file_and_the_order_can_be_set() {
        let s = load(
            "providers = [\"duckduckgo\", \"brave\"]\n[brave]\napi_key = \"from-file\"\n",
            &[("TOOLPORT_BRAVE_API_KEY", "from-env")],
        )
        .unwrap();
        assert_eq!(s.providers, vec![ProviderId::Duckduckgo, ProviderId::Brave]);
        assert_eq!(
            s.provider(ProviderId::Brave)
                .api_key
                .as_ref()
                .unwrap()
                .expose(),
            "from-env"
        );
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
        assert_eq!(
            s.provider(ProviderId::Tavily)
                .api_key
                .as_ref()
                .unwrap()
                .expose(),
            "tvly-secret"
        );
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
}
