//! `fetch_url`: read one web page as markdown (the article, boilerplate removed), plain text,
//! raw HTML or pretty JSON, paged by characters, with the SSRF guard at every hop.
//!
//! A call parses the URL, answers from the page cache when it can, and otherwise fetches:
//! each hop (the first request and every redirect, at most [`MAX_REDIRECTS`]) is checked by
//! [`Guard::check_url`], waits for its host's throttle, and is sent through a client whose DNS
//! resolver is the guard's ([`GuardedResolver`]): names are resolved once and the connection
//! goes to the checked address. Redirects are followed here, not by reqwest, so every hop is
//! checked before it is requested and a refusal names the hop.
//!
//! The body is streamed and reading stops at `max_response_bytes` (the rest is never read);
//! only text types are read at all (the content type is checked before the body). Conversion
//! ([`super::extract`]) runs on a blocking thread. The whole fetch, every hop and the body,
//! runs under `timeout` and the call's cancellation.
//!
//! With `respect_robots`, each hop is also checked against its site's robots.txt (read through
//! the same guarded path, kept an hour per origin; `texting_robots` parses it). It is off by
//! default: the tool fetches the one page a user or model asked for, as a browser does.
//!
//! The client is `fetch_url`'s own (built from [`super::fetch::client_builder`], the stack
//! `web_search` uses), so a search provider's key header can never reach a fetched host.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use lru::LruCache;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, USER_AGENT};
use reqwest::{Client, StatusCode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use url::{Host, Url};

use super::extract::{self, Format};
use super::fetch::{chain, client_builder};
use super::guard::{self, Guard, GuardedResolver, Refusal};
use super::settings::{DEFAULT_FETCH_PAGE_CHARS, FetchSettings};
use super::throttle::Throttle;
use super::{ANNOTATIONS, CATEGORY, cache};
use crate::schema::JsonObject;
use crate::secret::{display_url, hide_userinfo};
use crate::settings::human;
use crate::tool::{ToolContext, ToolError};
use crate::typed::{ToolSpec, TypedTool};

/// The tool's name.
pub(crate) const NAME: &str = "fetch_url";
/// Most redirects followed: real sites use one or two (http → https, a trailing slash, a
/// login wall); more is a loop or a maze.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// Hosts whose throttles are remembered; the least recently used is forgotten past this (its
/// next request simply does not wait), which bounds memory on a long-running server.
const MAX_THROTTLED_HOSTS: usize = 1024;
/// How long a site's robots.txt is kept: crawlers commonly re-read it daily; an hour keeps a
/// long-running server close to the site's current wishes.
const ROBOTS_TTL: Duration = Duration::from_secs(3600);
/// Sites whose robots.txt is kept.
const ROBOTS_MAX_SITES: usize = 256;
/// Most bytes of a robots.txt read (RFC 9309 asks crawlers to parse at least 500 KiB).
const MAX_ROBOTS_BYTES: usize = 512 * 1024;
/// The `Accept` header: text first, anything else last (refused if it comes).
const ACCEPT_TEXT: &str = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.9,application/xml;q=0.8,*/*;q=0.1";

/// Arguments of `fetch_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Params {
    /// The page's address: a full http:// or https:// URL.
    #[schemars(length(min = 1, max = 8192))]
    url: String,
    /// What to return: "markdown" (default; the page's main content, navigation and ads
    /// removed), "text" (the main content as plain text), "html" (the body as received) or
    /// "json" (a JSON response, pretty-printed).
    format: Option<Format>,
    /// The character to start at (default 0): the previous call's next_start_index.
    start_index: Option<u64>,
    /// Most characters to return in this call.
    #[schemars(range(min = 1))]
    max_length: Option<u64>,
}

/// The structured result of `fetch_url`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct FetchOutput {
    /// The page's final address, after redirects.
    url: String,
    /// The HTTP status of the final response.
    status: u16,
    /// The response's content type, as the server sent it.
    content_type: String,
    /// The page's title, when it has one.
    title: Option<String>,
    /// This page of the content, in the asked format.
    content: String,
    /// Characters in the whole content.
    total_length: u64,
    /// The start_index of the next page; null when this is the end.
    next_start_index: Option<u64>,
    /// True when this content is not the whole page: more pages follow, or the response was
    /// larger than the server's byte cap and was cut there.
    truncated: bool,
    /// When the page was fetched (RFC 3339, UTC).
    fetched_at: String,
    /// True when the page came from the cache rather than a new request.
    cached: bool,
}

/// A fetched page, converted: what the cache holds.
#[derive(Debug)]
struct Fetched {
    url: String,
    status: u16,
    content_type: String,
    title: Option<String>,
    content: String,
    fetched_at: SystemTime,
    /// The body was longer than `max_response_bytes` and was cut there.
    cut: bool,
}

/// What a site's robots.txt allows.
enum Robots {
    /// Everything (no file, or one that does not parse).
    All,
    /// Nothing: the file could not be read (5xx, network failure), with why.
    Unreachable(String),
    /// The file's rules for our agent.
    Rules(texting_robots::Robot),
}

/// The product token robots.txt groups are matched against: the user agent's first word
/// before `/` (`toolport` for `toolport/0.1.0`).
fn robots_agent(user_agent: &str) -> &str {
    user_agent
        .split(['/', ' '])
        .next()
        .filter(|t| !t.is_empty())
        .unwrap_or(user_agent)
}

/// The `fetch_url` tool.
pub(crate) struct FetchUrl {
    settings: FetchSettings,
    description: String,
    guard: Arc<Guard>,
    /// Built on first use: a server that never fetches never sets up TLS.
    client: OnceLock<Result<Fetcher, String>>,
    throttles: Mutex<LruCache<String, Arc<Throttle>>>,
    cache: cache::Cache<Arc<Fetched>, (String, Format)>,
    /// robots.txt by origin (used only with `respect_robots`).
    robots: cache::Cache<Arc<Robots>, String>,
}

/// The fetch client and whether the environment routes it through a proxy.
struct Fetcher {
    client: Client,
    proxied: bool,
}

impl std::fmt::Debug for FetchUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchUrl")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

fn description(s: &FetchSettings) -> String {
    let guard = if s.allow_private {
        "The operator has turned the private-address guard off."
    } else {
        "Only public addresses are reachable: localhost, private networks, link-local and cloud metadata addresses are refused, at every redirect."
    };
    let cache = if s.cache_ttl.is_zero() {
        "Pages are not cached.".to_owned()
    } else {
        format!(
            "A page is cached for {} s by URL and format (`cached: true`), so paging through it fetches it once.",
            s.cache_ttl.as_secs()
        )
    };
    format!(
        "Fetch a web page by URL and read it: by default the page's main content as markdown (headings, lists, links kept; navigation, ads and footers removed). `format` may also be \"text\" (main content as plain text), \"html\" (the body as received) or \"json\" (a JSON response, pretty-printed). Long content comes in pages of `max_length` characters (default {DEFAULT_FETCH_PAGE_CHARS}, at most {max}): when `next_start_index` is not null, call again with `start_index` set to it. Only http(s) URLs of text (HTML, plain text, markdown, JSON, XML) are read; at most {MAX_REDIRECTS} redirects; bodies beyond {bytes} bytes are cut. {guard} {cache}",
        max = s.max_length,
        bytes = s.max_response_bytes,
    )
}

const PURPOSE: &str = "Read a page you found with web_search or that the user named: documentation, an article, a README, a JSON API response. Use the default markdown format for reading; \"html\" only when you need the markup itself. When the result says next_start_index, fetch again with start_index to read on, only if the part you need is not there yet.";

impl FetchUrl {
    /// The tool with the `[web.fetch]` settings.
    pub(crate) fn new(settings: &FetchSettings) -> Self {
        let hosts = NonZeroUsize::new(MAX_THROTTLED_HOSTS).unwrap_or(NonZeroUsize::MIN);
        Self {
            description: description(settings),
            guard: Arc::new(Guard::new(
                settings.allow_private,
                &settings.allowed_hosts,
                &settings.denied_hosts,
            )),
            client: OnceLock::new(),
            throttles: Mutex::new(LruCache::new(hosts)),
            cache: cache::Cache::new(settings.cache_ttl, settings.cache_max_entries),
            robots: cache::Cache::new(ROBOTS_TTL, ROBOTS_MAX_SITES),
            settings: settings.clone(),
        }
    }

    fn fetcher(&self) -> Result<&Fetcher, ToolError> {
        let built = self.client.get_or_init(|| {
            // reqwest reads the same variables when it builds the client.
            let proxies = guard::proxy_hosts(|k| std::env::var(k).ok());
            let proxied = !proxies.is_empty();
            let resolver = GuardedResolver::new(self.guard.clone(), proxies);
            client_builder(self.settings.timeout, self.settings.connect_timeout)
                .redirect(reqwest::redirect::Policy::none())
                .dns_resolver(Arc::new(resolver))
                .build()
                .map(|client| Fetcher { client, proxied })
                .map_err(|e| chain(&e.without_url()))
        });
        built
            .as_ref()
            .map_err(|why| ToolError::Unavailable(format!("cannot set up the HTTP client ({why})")))
    }

    /// The throttle of `host`, made on first use.
    fn throttle(&self, host: &str) -> Option<Arc<Throttle>> {
        if self.settings.min_interval.is_zero() {
            return None;
        }
        let mut throttles = self.throttles.lock().ok()?;
        Some(
            throttles
                .get_or_insert(host.to_owned(), || {
                    Arc::new(Throttle::new(self.settings.min_interval))
                })
                .clone(),
        )
    }

    /// Check one hop before it is requested: the URL's own rules, and with a proxy (which
    /// resolves names itself) the name's addresses as toolport's resolver sees them.
    async fn check_hop(&self, url: &Url, proxied: bool) -> Result<(), ToolError> {
        self.guard.check_url(url).map_err(|r| refused(&r, url))?;
        if proxied && let Some(Host::Domain(name)) = url.host() {
            let addrs = guard::lookup(name)
                .await
                .map_err(|e| ToolError::Unavailable(format!("cannot resolve {name}: {e}")))?;
            let ips: Vec<IpAddr> = addrs.iter().map(|a| a.ip()).collect();
            self.guard
                .check_host(name, &ips)
                .map_err(|r| refused(&r, url))?;
        }
        Ok(())
    }

    /// Request `url` and read the final body (see [`FetchUrl::follow`]).
    async fn fetch(&self, start: Url, format: Format) -> Result<Fetched, ToolError> {
        let (url, response) = self.follow(start, true).await?;
        self.read(url, response, format).await
    }

    /// Request `url`, following redirects: every hop is checked by the guard (and, with
    /// `respect_robots` and `robots` set, against its site's robots.txt) and waits for its
    /// host's throttle. Returns the final URL and response (not a redirect).
    async fn follow(
        &self,
        start: Url,
        robots: bool,
    ) -> Result<(Url, reqwest::Response), ToolError> {
        let fetcher = self.fetcher()?;
        let mut url = start;
        let mut hops = 0;
        loop {
            self.check_hop(&url, fetcher.proxied).await?;
            if robots && self.settings.respect_robots {
                self.check_robots(&url).await?;
            }
            let host = url.host_str().unwrap_or_default().to_owned();
            if let Some(throttle) = self.throttle(&host) {
                throttle.wait().await;
            }
            let response = fetcher
                .client
                .get(url.clone())
                .header(USER_AGENT, &self.settings.user_agent)
                .header(ACCEPT, ACCEPT_TEXT)
                .send()
                .await
                .map_err(|e| self.transport_error(e, &url))?;
            let status = response.status();
            if !status.is_redirection() {
                return Ok((url, response));
            }
            let Some(location) = response.headers().get(LOCATION) else {
                return Ok((url, response));
            };
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(ToolError::ExecutionFailed(format!(
                    "{} redirected more than {MAX_REDIRECTS} times; fetch_url follows at most {MAX_REDIRECTS} redirects (a loop, or a page that needs a browser)",
                    display_url(&url)
                )));
            }
            let next = location
                .to_str()
                .ok()
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| {
                    ToolError::ExecutionFailed(format!(
                        "{} answered {status} with a Location that is not a URL",
                        display_url(&url)
                    ))
                })?;
            tracing::debug!(
                from = %display_url(&url),
                to = %display_url(&next),
                "fetch_url: following a redirect"
            );
            url = next;
        }
    }

    /// Refuse `url` when its site's robots.txt disallows it for our user agent. The file is
    /// read once per origin and kept for [`ROBOTS_TTL`]. As RFC 9309 says: a missing file
    /// (4xx) allows everything, an unreachable one (5xx, network failure) allows nothing.
    async fn check_robots(&self, url: &Url) -> Result<(), ToolError> {
        let origin = url.origin().ascii_serialization();
        let rules = match self.robots.get(&origin) {
            Some(rules) => rules,
            None => {
                let rules = Arc::new(self.read_robots(url).await);
                self.robots.put(origin.clone(), rules.clone());
                rules
            }
        };
        match rules.as_ref() {
            Robots::All => Ok(()),
            Robots::Unreachable(why) => Err(ToolError::Unavailable(format!(
                "robots.txt of {origin} cannot be read ({why}), so nothing there may be fetched (web.fetch.respect_robots = true)"
            ))),
            Robots::Rules(robot) if robot.allowed(url.as_str()) => Ok(()),
            Robots::Rules(_) => Err(ToolError::PermissionDenied(format!(
                "robots.txt of {origin} disallows {url} for {agent} (the operator set web.fetch.respect_robots = true)",
                url = display_url(url),
                agent = robots_agent(&self.settings.user_agent)
            ))),
        }
    }

    /// Fetch and parse `/robots.txt` of `url`'s origin (its redirects checked like any hop).
    async fn read_robots(&self, url: &Url) -> Robots {
        let Ok(robots_url) = url.join("/robots.txt") else {
            return Robots::All;
        };
        let (_, mut response) = match Box::pin(self.follow(robots_url, false)).await {
            Ok(answer) => answer,
            Err(e) => return Robots::Unreachable(e.to_string()),
        };
        let status = response.status();
        if status.is_client_error() || status.is_redirection() {
            return Robots::All;
        }
        if !status.is_success() {
            return Robots::Unreachable(format!("it answered {}", status.as_u16()));
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if body.len() >= MAX_ROBOTS_BYTES {
                        // RFC 9309: at least 500 KiB are parsed; the rest may be ignored.
                        body.truncate(MAX_ROBOTS_BYTES);
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => return Robots::Unreachable(chain(&e.without_url())),
            }
        }
        match texting_robots::Robot::new(robots_agent(&self.settings.user_agent), &body) {
            Ok(robot) => Robots::Rules(robot),
            // An unparsable file says nothing: allowed.
            Err(_) => Robots::All,
        }
    }

    /// Check the status and content type, read the body up to the cap, convert it.
    async fn read(
        &self,
        url: Url,
        mut response: reqwest::Response,
        format: Format,
    ) -> Result<Fetched, ToolError> {
        let status = response.status();
        if status.is_client_error() || status.is_server_error() {
            let reason = status.canonical_reason().unwrap_or("");
            let message = format!(
                "{} answered {} {reason}",
                display_url(&url),
                status.as_u16()
            );
            return Err(
                if matches!(status, StatusCode::NOT_FOUND | StatusCode::GONE) {
                    ToolError::NotFound(format!("{message}; check the URL"))
                } else {
                    ToolError::ExecutionFailed(message)
                },
            );
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let media = extract::media_type(&content_type);
        let declared = if media.is_empty() {
            None
        } else {
            Some(extract::kind_of(&media).ok_or_else(|| not_text(&url, &media))?)
        };
        let cap = self.settings.max_response_bytes;
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(e, &url))?
        {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        drop(response);
        let kind = match declared {
            Some(kind) => kind,
            None => {
                extract::sniff(&body).ok_or_else(|| not_text(&url, "no content type, binary"))?
            }
        };
        if cut && format == Format::Json {
            return Err(ToolError::ExecutionFailed(format!(
                "the JSON at {} is larger than {cap} bytes (web.fetch.max_response_bytes) and cannot be parsed in part; ask for format \"text\" to read its start",
                display_url(&url)
            )));
        }
        // The guard refuses a URL with userinfo at every hop, so the final one has none; it is
        // shown the one way all the same.
        let final_url = display_url(&url).into_owned();
        let shown_type = if content_type.is_empty() {
            media
        } else {
            content_type
        };
        let converted = {
            let url = final_url.clone();
            let content_type = shown_type.clone();
            crate::tools::blocking(move || {
                let text = extract::decode(&body, &content_type, kind);
                extract::convert(&text, kind, format, &url, &content_type)
                    .map_err(|e| ToolError::ExecutionFailed(e.to_string()))
            })
            .await?
        };
        Ok(Fetched {
            url: final_url,
            status: status.as_u16(),
            content_type: shown_type,
            title: converted.title,
            content: converted.content,
            fetched_at: SystemTime::now(),
            cut,
        })
    }

    fn transport_error(&self, error: reqwest::Error, url: &Url) -> ToolError {
        // A refusal by the guard's resolver travels inside the connect error.
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(e) = source {
            if let Some(refusal) = e.downcast_ref::<Refusal>() {
                return refused(refusal, url);
            }
            source = e.source();
        }
        let host = url.host_str().unwrap_or_default();
        let error = error.without_url();
        if error.is_timeout() {
            ToolError::Timeout(format!(
                "{host} did not answer within {} (web.fetch.timeout)",
                human(self.settings.timeout)
            ))
        } else if error.is_connect() {
            ToolError::Unavailable(format!("could not connect to {host} ({})", chain(&error)))
        } else {
            ToolError::Unavailable(format!("network error with {host} ({})", chain(&error)))
        }
    }
}

fn refused(refusal: &Refusal, url: &Url) -> ToolError {
    ToolError::PermissionDenied(format!("refused {}: {refusal}", display_url(url)))
}

fn not_text(url: &Url, media: &str) -> ToolError {
    ToolError::ExecutionFailed(format!(
        "{} is {media}, not text; fetch_url reads only text (HTML, plain text, markdown, JSON, XML)",
        display_url(url)
    ))
}

/// Parse the `url` argument, with a hint for the usual mistakes.
fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let raw = raw.trim();
    Url::parse(raw).map_err(|e| {
        let shown = hide_userinfo(raw);
        let hint = if e == url::ParseError::RelativeUrlWithoutBase {
            format!("; write the whole URL, e.g. https://{shown}")
        } else {
            String::new()
        };
        ToolError::InvalidArguments(format!("`url` {shown:?} is not a valid URL ({e}){hint}"))
    })
}

fn render(out: &FetchOutput, start: u64) -> String {
    let mut text = heading(out);
    text.push_str("\n\n");
    text.push_str(&out.content);
    if let Some(note) = position(out, start) {
        text.push_str("\n\n");
        text.push_str(&note);
    }
    text
}

/// The character of the page the returned content starts at.
fn start_of(out: &FetchOutput) -> u64 {
    out.next_start_index
        .unwrap_or(out.total_length)
        .saturating_sub(out.content.chars().count() as u64)
}

/// The text beside a structured result that carries the content.
fn summary(out: &FetchOutput, start: u64) -> String {
    let mut text = heading(out);
    text.push_str("\n[the content is in structuredContent.content]");
    if let Some(note) = position(out, start) {
        text.push('\n');
        text.push_str(&note);
    }
    text
}

/// The title, the URL, the status and the type.
fn heading(out: &FetchOutput) -> String {
    let mut text = String::new();
    if let Some(title) = &out.title {
        text.push_str(&format!("# {title}\n"));
    }
    text.push_str(&format!(
        "{} ({} {}){}",
        out.url,
        out.status,
        out.content_type,
        if out.cached { ", cached" } else { "" }
    ));
    text
}

/// Where the returned characters are in the page, and how to read on.
fn position(out: &FetchOutput, start: u64) -> Option<String> {
    let end = start + out.content.chars().count() as u64;
    match out.next_start_index {
        Some(next) => Some(format!(
            "[characters {start} to {end} of {}; to read on, call fetch_url again with start_index = {next}]",
            out.total_length
        )),
        None if out.truncated => Some(
            "[the response was larger than the byte cap and was cut; the rest of the page is not available]".to_owned(),
        ),
        None if start > 0 => Some(format!(
            "[characters {start} to {end} of {}; end of the page]",
            out.total_length
        )),
        None => None,
    }
}

#[async_trait]
impl TypedTool for FetchUrl {
    type Params = Params;
    type Output = FetchOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME,
            title: "Fetch URL",
            description: self.description.clone(),
            purpose: PURPOSE,
            example: json!({"url": "https://docs.rs/reqwest/latest/reqwest/", "format": "markdown"}),
            category: CATEGORY,
            tags: &["web", "fetch", "http"],
            annotations: ANNOTATIONS,
        }
    }

    /// `max_length`'s default and maximum are the operator's.
    fn adjust_input_schema(&self, schema: &mut JsonObject) {
        if let Some(max_length) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("max_length"))
            .and_then(serde_json::Value::as_object_mut)
        {
            let cap = self.settings.max_length;
            max_length.insert("default".into(), json!(DEFAULT_FETCH_PAGE_CHARS.min(cap)));
            max_length.insert("maximum".into(), json!(cap));
        }
    }

    fn render(&self, output: &FetchOutput) -> String {
        render(output, start_of(output))
    }

    const PAYLOAD: &'static [&'static str] = &["content"];

    fn summary(&self, output: &FetchOutput) -> String {
        summary(output, start_of(output))
    }

    async fn run(&self, p: Params, ctx: &ToolContext) -> Result<FetchOutput, ToolError> {
        let url = parse_url(&p.url)?;
        // Checked before the cache too: a page cached before the operator changed nothing
        // still cannot be served for a URL the guard refuses now.
        self.guard.check_url(&url).map_err(|r| refused(&r, &url))?;
        let format = p.format.unwrap_or(Format::Markdown);
        let cap = self.settings.max_length as u64;
        let max_length = p
            .max_length
            .unwrap_or(DEFAULT_FETCH_PAGE_CHARS as u64)
            .min(cap);
        if p.max_length.is_some_and(|m| m == 0 || m > cap) {
            return Err(ToolError::InvalidArguments(format!(
                "`max_length` is {}; allowed is 1 to {cap} (default {DEFAULT_FETCH_PAGE_CHARS})",
                p.max_length.unwrap_or_default()
            )));
        }
        let start_index = p.start_index.unwrap_or(0);

        let key = (url.to_string(), format);
        let (page, cached) = match self.cache.get(&key) {
            Some(page) => (page, true),
            None => {
                let fetch =
                    tokio::time::timeout(self.settings.timeout, self.fetch(url.clone(), format));
                let fetched = tokio::select! {
                    biased;
                    _ = ctx.cancel.cancelled() => {
                        return Err(ToolError::Cancelled("the fetch was cancelled".into()));
                    }
                    fetched = fetch => fetched.map_err(|_| ToolError::Timeout(format!(
                        "{} did not answer in full within {} (web.fetch.timeout)",
                        display_url(&url),
                        human(self.settings.timeout)
                    )))??,
                };
                let page = Arc::new(fetched);
                self.cache.put(key, page.clone());
                (page, false)
            }
        };

        let start = usize::try_from(start_index).unwrap_or(usize::MAX);
        let length = usize::try_from(max_length).unwrap_or(usize::MAX);
        let Some(part) = extract::page(&page.content, start, length) else {
            let total = page.content.chars().count();
            return Err(ToolError::InvalidArguments(format!(
                "`start_index` {start_index} is past the end of the content ({total} characters); use 0 to {}",
                total.saturating_sub(1)
            )));
        };
        Ok(FetchOutput {
            url: page.url.clone(),
            status: page.status,
            content_type: page.content_type.clone(),
            title: page.title.clone(),
            content: part.content,
            total_length: part.total_length as u64,
            next_start_index: part.next_start_index.map(|n| n as u64),
            truncated: part.next_start_index.is_some() || page.cut,
            fetched_at: humantime::format_rfc3339_seconds(page.fetched_at).to_string(),
            cached,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_robots_agent_is_the_product_token() {
        assert_eq!(robots_agent("toolport/0.1.0"), "toolport");
        assert_eq!(robots_agent("MyBot 2.0"), "MyBot");
        assert_eq!(robots_agent("plain"), "plain");
    }

    #[test]
    fn urls_without_a_scheme_get_a_hint() {
        let err = parse_url("example.com/page").unwrap_err().to_string();
        assert!(err.contains("https://example.com/page"), "{err}");
    }

    #[test]
    fn the_description_states_the_limits() {
        let d = description(&FetchSettings::default());
        assert!(d.contains("20000") && d.contains("100000"), "{d}");
        assert!(d.contains("Only public addresses"), "{d}");
    }

    #[test]
    fn the_rendering_says_where_to_read_on() {
        let out = FetchOutput {
            url: "https://x.example/".into(),
            status: 200,
            content_type: "text/html".into(),
            title: Some("X".into()),
            content: "abc".into(),
            total_length: 10,
            next_start_index: Some(6),
            truncated: true,
            fetched_at: "2026-01-01T00:00:00Z".into(),
            cached: false,
        };
        let text = TypedTool::render(&FetchUrl::new(&FetchSettings::default()), &out);
        assert!(
            text.starts_with("# X\nhttps://x.example/ (200 text/html)"),
            "{text}"
        );
        assert!(
            text.contains("characters 3 to 6 of 10") && text.contains("start_index = 6"),
            "{text}"
        );
    }
}
