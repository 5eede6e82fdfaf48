//! The web tools. `web_search`: one result schema over five search providers, with failover, a
//! per-provider throttle and a short TTL cache. `fetch_url` ([`fetch_url`]): one page as
//! markdown, text, HTML or JSON, paged, behind the SSRF [`guard`], converted by [`extract`].
//! Both send through the client stack of [`fetch`], each with its own client.
//!
//! A call normalises the query, answers from the [`cache`] when it can, and otherwise asks the
//! configured providers in order (see [`settings`] for the default order). Each provider is a
//! pure [`provider::SearchProvider`] (request builder + parser: [`duckduckgo`], [`brave`],
//! [`google`], [`searxng`], [`tavily`]); [`fetch`] sends its request through the provider's
//! [`throttle`], retries 429s within bounds and caps the body. Any failure (network, timeout,
//! 429, 401/403, bot page, no results, unparsable or oversized body) moves on to the next
//! provider, and the result says which providers failed and why. When all fail, the error
//! lists every provider's failure in words the operator can act on.
//!
//! API keys live only in [`crate::secret::Secret`]s and request headers. Failure messages are
//! additionally scrubbed of every configured key before they reach a result or a log line.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::secret::{Secret, scrub};
use crate::tool::{Annotations, ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};

pub(crate) mod brave;
pub(crate) mod cache;
pub(crate) mod duckduckgo;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use duckduckgo::fuzz_parse as fuzz_duckduckgo;
pub(crate) mod extract;
pub(crate) mod fetch;
pub(crate) mod fetch_url;
pub(crate) mod google;
pub(crate) mod guard;
pub(crate) mod provider;
pub(crate) mod searxng;
pub(crate) mod settings;
pub(crate) mod tavily;
pub(crate) mod throttle;

pub(crate) use fetch_url::FetchUrl;
pub(crate) use provider::RequestCounter;

use provider::{Failure, FailureKind, Hit, Query, SearchProvider, collapse_whitespace};
use settings::{ProviderId, WebSettings};
use throttle::Throttle;

/// The category of the web tools.
const CATEGORY: &str = "web";
/// Longest query accepted, in characters: search engines ignore words beyond about 32
/// (Google) or a few hundred characters, so a longer "query" is a pasted document, not a search.
pub(crate) const MAX_QUERY_CHARS: usize = 400;
/// Results returned when the call does not say: enough to compare sources, few enough to keep
/// a model's context small.
pub(crate) const DEFAULT_NUM_RESULTS: u64 = 5;
/// Most results one call may ask for (Google's API returns at most 10 per request).
pub(crate) const MAX_NUM_RESULTS: u64 = 10;

/// Annotations of the web tools: they read only, talk to the open web, and the same query or
/// URL may give different results over time (not idempotent).
pub(crate) const ANNOTATIONS: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: false,
    open_world: true,
};

/// The tool's description, stating the real limits and cache lifetime.
fn description(settings: &WebSettings) -> String {
    let cache = if settings.cache_ttl.is_zero() {
        "Results are not cached.".to_owned()
    } else {
        let secs = settings.cache_ttl.as_secs();
        let lifetime = match secs {
            s if s.is_multiple_of(3600) => {
                format!("{} hour{}", s / 3600, if s == 3600 { "" } else { "s" })
            }
            s if s.is_multiple_of(60) => {
                format!("{} minute{}", s / 60, if s == 60 { "" } else { "s" })
            }
            s => format!("{s} seconds"),
        };
        format!(
            "The same query with the same num_results is answered from a cache for {lifetime} (`cached: true`)."
        )
    };
    format!(
        "Search the web and get a ranked list of results: title, url and a short snippet for each, best first. `query` is what you would type into a search box (1 to {MAX_QUERY_CHARS} characters); `num_results` is how many results to return (1 to {MAX_NUM_RESULTS}, default {DEFAULT_NUM_RESULTS}). Results come from the first configured search provider that answers (DuckDuckGo by default; Brave, Google, SearXNG or Tavily when configured); if one fails, the next is tried and the result says so. {cache} Snippets are short extracts chosen by the search engine and may be outdated: open the url for the full, current text."
    )
}

const PURPOSE: &str = "Find information that is not in the workspace or may have changed since your training: documentation, release notes, error messages, news, facts you are unsure of. Phrase the query as keywords, not as a question to a person (\"tokio select cancellation safety\", not \"can you tell me about…\"); put an exact error message or phrase in double quotes; add site:docs.rs (or another site) to stay on one site. Start with the default 5 results and ask for up to 10 only when those are not enough. Results may be stale or wrong: prefer official sources, and cite the url of every result you use.";

fn default_num_results() -> u64 {
    DEFAULT_NUM_RESULTS
}

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// What to search for: keywords as typed into a search box, 1 to 400 characters.
    #[schemars(length(min = 1, max = MAX_QUERY_CHARS))]
    query: String,
    /// How many results to return, 1 to 10.
    #[serde(default = "default_num_results")]
    #[schemars(range(min = 1, max = MAX_NUM_RESULTS))]
    num_results: u64,
}

/// One search result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SearchResult {
    /// The page title.
    title: String,
    /// The page's address (the real one, not a search engine redirect).
    url: String,
    /// A short extract of the page chosen by the search engine (may be empty).
    snippet: String,
    /// The provider that found it: duckduckgo, brave, google, searxng or tavily.
    provider: String,
    /// Position in this list, 1 first.
    rank: u32,
    /// When the page was published, as the provider states it, if it does.
    published: Option<String>,
}

/// A provider that was tried and failed before the one that answered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ProviderFailure {
    /// The provider that failed: duckduckgo, brave, google, searxng or tavily.
    provider: String,
    /// Why it failed.
    error: String,
}

/// The structured result of `web_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SearchOutput {
    /// The query as searched (whitespace collapsed).
    query: String,
    /// The results, best first.
    results: Vec<SearchResult>,
    /// The provider that answered: duckduckgo, brave, google, searxng or tavily.
    provider: String,
    /// True when the answer came from the cache (at most web.cache_ttl old, 10 minutes by
    /// default) rather than a new search.
    cached: bool,
    /// Providers tried before `provider` that failed, with why; empty when the first answered.
    failover: Vec<ProviderFailure>,
}

/// A provider with its throttle.
struct Backend {
    /// Shared with the blocking thread that parses its answers.
    provider: Arc<dyn SearchProvider>,
    throttle: Throttle,
}

/// What is cached: who answered, and the hits.
#[derive(Clone)]
struct Answer {
    provider: ProviderId,
    hits: Arc<Vec<Hit>>,
}

/// The `web_search` tool.
pub(crate) struct WebSearch {
    description: String,
    backends: Vec<Backend>,
    fetcher: fetch::Fetcher,
    cache: cache::Cache<Answer>,
    secrets: Vec<Secret>,
    call_timeout: Duration,
    /// Provider requests by provider and outcome (a metric).
    requests: provider::RequestCounter,
}

impl std::fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let providers: Vec<&str> = self
            .backends
            .iter()
            .map(|b| b.provider.id().as_str())
            .collect();
        f.debug_struct("WebSearch")
            .field("providers", &providers)
            .finish_non_exhaustive()
    }
}

fn build_provider(settings: &WebSettings, id: ProviderId) -> Option<Arc<dyn SearchProvider>> {
    let p = settings.provider(id);
    let base = p.base_url.clone()?;
    Some(match id {
        ProviderId::Duckduckgo => Arc::new(duckduckgo::DuckDuckGo::new(base)),
        ProviderId::Searxng => Arc::new(searxng::Searxng::new(base)),
        ProviderId::Brave => Arc::new(brave::Brave::new(base, p.api_key.clone()?)),
        ProviderId::Tavily => Arc::new(tavily::Tavily::new(base, p.api_key.clone()?)),
        ProviderId::Google => {
            Arc::new(google::Google::new(base, p.api_key.clone()?, p.cx.clone()?))
        }
    })
}

impl WebSearch {
    /// The tool with the `[web]` settings (already validated: every listed provider has what
    /// it needs).
    pub(crate) fn new(settings: &WebSettings, requests: provider::RequestCounter) -> Self {
        let backends = settings
            .providers
            .iter()
            .filter_map(|&id| {
                Some(Backend {
                    provider: build_provider(settings, id)?,
                    throttle: Throttle::new(settings.provider(id).min_interval),
                })
            })
            .collect();
        Self {
            description: description(settings),
            backends,
            fetcher: fetch::Fetcher::new(settings),
            cache: cache::Cache::new(settings.cache_ttl, settings.cache_max_entries),
            secrets: settings.secrets(),
            call_timeout: settings.call_timeout,
            requests,
        }
    }

    /// Count one provider request.
    fn count(&self, provider: &str, outcome: &str) {
        self.requests
            .get_or_create(&vec![
                ("provider".to_owned(), provider.to_owned()),
                ("outcome".to_owned(), outcome.to_owned()),
            ])
            .inc();
    }

    /// `text` with every configured key replaced by a mask: a last line of defence should a
    /// provider ever echo a key back in an error.
    fn scrub(&self, text: &str) -> String {
        scrub(text, &self.secrets)
    }

    /// Ask the providers in order until one answers or the call's time budget runs out
    /// (throttle waits and 429 retries count against it, so queueing is bounded too).
    async fn search(&self, query: Query<'_>, ctx: &ToolContext) -> Result<SearchOutput, ToolError> {
        let key = cache::key(query.text, query.count);
        if let Some(answer) = self.cache.get(&key) {
            return Ok(output(query.text, &answer, true, &[]));
        }
        let mut failures: Vec<Failure> = Vec::new();
        let deadline = tokio::time::Instant::now() + self.call_timeout;
        for (index, backend) in self.backends.iter().enumerate() {
            let id = backend.provider.id();
            let attempt = self
                .fetcher
                .search(&backend.provider, &backend.throttle, query);
            let outcome = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => {
                    return Err(ToolError::Cancelled("the search was cancelled".into()));
                }
                outcome = tokio::time::timeout_at(deadline, attempt) => outcome,
            };
            let Ok(outcome) = outcome else {
                self.count(id.as_str(), FailureKind::Timeout.as_str());
                failures.push(Failure::new(
                    id,
                    FailureKind::Timeout,
                    format!(
                        "{}: cut off, the call's time budget of {} (web.call_timeout) ran out",
                        id.display_name(),
                        crate::settings::human(self.call_timeout)
                    ),
                ));
                for rest in &self.backends[index + 1..] {
                    let id = rest.provider.id();
                    failures.push(Failure::new(
                        id,
                        FailureKind::Timeout,
                        format!("{}: not tried, no time left", id.display_name()),
                    ));
                }
                break;
            };
            match outcome {
                Ok(hits) => {
                    self.count(id.as_str(), "ok");
                    let answer = Answer {
                        provider: backend.provider.id(),
                        hits: Arc::new(hits),
                    };
                    self.cache.put(key, answer.clone());
                    return Ok(output(query.text, &answer, false, &failures));
                }
                Err(mut failure) => {
                    self.count(id.as_str(), failure.kind.as_str());
                    failure.message = self.scrub(&failure.message);
                    tracing::warn!(
                        provider = failure.provider.as_str(),
                        kind = ?failure.kind,
                        reason = %failure.message,
                        "search provider failed; trying the next one"
                    );
                    failures.push(failure);
                }
            }
        }
        Err(all_failed(query.text, &failures, self.backends.len()))
    }
}

fn output(query: &str, answer: &Answer, cached: bool, failures: &[Failure]) -> SearchOutput {
    SearchOutput {
        query: query.to_owned(),
        results: answer
            .hits
            .iter()
            .zip(1u32..)
            .map(|(hit, rank)| SearchResult {
                title: hit.title.clone(),
                url: hit.url.clone(),
                snippet: hit.snippet.clone(),
                provider: answer.provider.as_str().to_owned(),
                rank,
                published: hit.published.clone(),
            })
            .collect(),
        provider: answer.provider.as_str().to_owned(),
        cached,
        failover: failures
            .iter()
            .map(|f| ProviderFailure {
                provider: f.provider.as_str().to_owned(),
                error: f.message.clone(),
            })
            .collect(),
    }
}

fn all_failed(query: &str, failures: &[Failure], configured: usize) -> ToolError {
    let list: Vec<String> = failures
        .iter()
        .map(|f| format!("- {}", f.message))
        .collect();
    if failures.is_empty() {
        return ToolError::Unavailable(
            "no search provider is configured; set web.providers or a provider's key".into(),
        );
    }
    if failures.iter().all(|f| f.kind == FailureKind::Empty) {
        return ToolError::NotFound(format!(
            "no results for {query:?}:\n{}\nTry fewer or different keywords.",
            list.join("\n")
        ));
    }
    let hint = if configured == 1 {
        "\nConfigure another provider for failover (TOOLPORT_BRAVE_API_KEY, TOOLPORT_TAVILY_API_KEY, TOOLPORT_GOOGLE_API_KEY with TOOLPORT_GOOGLE_CX, or TOOLPORT_SEARXNG_URL)."
    } else {
        ""
    };
    ToolError::Unavailable(format!(
        "every search provider failed:\n{}{hint}",
        list.join("\n")
    ))
}

fn render(out: &SearchOutput) -> String {
    let provider = ProviderId::DEFAULT_ORDER
        .into_iter()
        .find(|id| id.as_str() == out.provider)
        .map_or_else(|| out.provider.clone(), |id| id.display_name().to_owned());
    let mut text = format!(
        "{} result{} for \"{}\" from {provider}{}:\n",
        out.results.len(),
        if out.results.len() == 1 { "" } else { "s" },
        out.query,
        if out.cached { " (cached)" } else { "" },
    );
    for r in &out.results {
        text.push_str(&format!("\n{}. {}\n   {}\n", r.rank, r.title, r.url));
        if !r.snippet.is_empty() {
            text.push_str(&format!("   {}\n", r.snippet));
        }
        if let Some(published) = &r.published {
            text.push_str(&format!("   published: {published}\n"));
        }
    }
    if !out.failover.is_empty() {
        text.push_str(&format!("\nFailover: {provider} answered after"));
        for f in &out.failover {
            text.push_str(&format!("\n- {}", f.error));
        }
        text.push('\n');
    }
    text
}

#[async_trait]
impl TypedTool for WebSearch {
    type Params = Params;
    type Output = SearchOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_search",
            title: "Web search",
            description: self.description.clone(),
            purpose: PURPOSE,
            example: json!({"query": "rust reqwest connect timeout", "num_results": 5}),
            category: CATEGORY,
            tags: &["search", "web", "internet"],
            annotations: ANNOTATIONS,
        }
    }

    fn render(&self, output: &SearchOutput) -> String {
        render(output)
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<SearchOutput, ToolError> {
        let text = collapse_whitespace(&p.query);
        if text.is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "`query` is empty; give the keywords to search for (1 to {MAX_QUERY_CHARS} characters)"
            )));
        }
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(ToolError::InvalidArguments(format!(
                "`query` is {chars} characters long; the limit is {MAX_QUERY_CHARS}. Search for the essential keywords only"
            )));
        }
        if !(1..=MAX_NUM_RESULTS).contains(&p.num_results) {
            return Err(ToolError::InvalidArguments(format!(
                "`num_results` is {}; allowed is 1 to {MAX_NUM_RESULTS} (default {DEFAULT_NUM_RESULTS})",
                p.num_results
            )));
        }
        let query = Query {
            text: &text,
            // In range 1..=10 (checked above), so the conversion is exact.
            count: p.num_results as usize,
        };
        self.search(query, ctx).await
    }
}
