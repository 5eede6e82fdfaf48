//! Sending one provider's request: the shared HTTP client (rustls, connect and total timeouts,
//! User-Agent), the per-provider throttle, 429 retries that honour `Retry-After` within bounds,
//! a response size cap, and errors that never carry a URL.
//!
//! [`client_builder`] is the one HTTP client stack of the web tools (rustls, timeouts, proxies
//! from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`). `fetch_url` builds a separate `Client` from it
//! with the SSRF guard's resolver and its own redirect handling, so no header a search
//! provider needs (its key) can ever be sent to a fetched host: the two never share a request
//! builder, a default header or a connection pool.
//!
//! URLs are dropped from every reqwest error (`without_url`): a URL names the endpoint and the
//! query, and with a careless provider it could carry a key. Keys themselves travel in headers
//! only (see [`super::provider::SearchProvider::request`]).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER, USER_AGENT};
use reqwest::{Client, StatusCode};

use super::provider::{Failure, FailureKind, Hit, Query, SearchProvider};
use super::settings::{DEFAULT_USER_AGENT, DUCKDUCKGO_USER_AGENT, ProviderId, WebSettings};
use super::throttle::Throttle;

/// How long to wait after a 429 that carries no `Retry-After`: long enough for a per-second
/// quota (Brave's free plan) to refill.
const DEFAULT_429_BACKOFF: Duration = Duration::from_secs(1);
/// Most redirects followed: APIs do not redirect, but a SearXNG instance may send http to
/// https or add a trailing slash.
const MAX_REDIRECTS: usize = 3;

/// Follow a few redirects on the same host only. reqwest drops `Authorization` on a redirect
/// to another host but not the providers' own key headers (`X-Subscription-Token`,
/// `X-goog-api-key`), so a redirect elsewhere is not followed: the 3xx becomes the answer, and
/// the provider counts as failed. The same goes for a redirect from https to http (the key
/// would cross the network in the clear) and for one whose URL carries credentials (reqwest
/// would send them as basic auth).
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let follow = attempt
            .previous()
            .first()
            .is_some_and(|first| may_follow(first, attempt.url(), attempt.previous().len()));
        if follow {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// Whether a provider's redirect to `next`, after `hops` requests that began at `first`, is
/// followed (see [`redirect_policy`]).
fn may_follow(first: &reqwest::Url, next: &reqwest::Url, hops: usize) -> bool {
    hops <= MAX_REDIRECTS
        && first.host_str() == next.host_str()
        && !(first.scheme() == "https" && next.scheme() != "https")
        && next.username().is_empty()
        && next.password().is_none()
}

/// The shared client stack: rustls, a total and a connect timeout; proxies come from the
/// environment (reqwest's default).
pub(crate) fn client_builder(
    timeout: Duration,
    connect_timeout: Duration,
) -> reqwest::ClientBuilder {
    Client::builder()
        .timeout(timeout)
        .connect_timeout(connect_timeout)
}

/// Sends requests for every provider. The HTTP client is built on first use, so a server that
/// never searches never sets up TLS, and a TLS set-up failure becomes an error result instead
/// of keeping the other tools from starting.
pub(crate) struct Fetcher {
    client: OnceLock<Result<Client, String>>,
    timeout: Duration,
    connect_timeout: Duration,
    max_response_bytes: usize,
    max_retries: u32,
    max_retry_wait: Duration,
    user_agent: Option<String>,
}

impl Fetcher {
    /// A fetcher with the `[web]` settings.
    pub(crate) fn new(settings: &WebSettings) -> Self {
        Self {
            client: OnceLock::new(),
            timeout: settings.timeout,
            connect_timeout: settings.connect_timeout,
            max_response_bytes: settings.max_response_bytes,
            max_retries: settings.max_retries,
            max_retry_wait: settings.max_retry_wait,
            user_agent: settings.user_agent.clone(),
        }
    }

    fn client(&self, provider: ProviderId) -> Result<&Client, Failure> {
        let built = self.client.get_or_init(|| {
            client_builder(self.timeout, self.connect_timeout)
                .redirect(redirect_policy())
                .build()
                .map_err(|e| chain(&e.without_url()))
        });
        built.as_ref().map_err(|why| {
            Failure::new(
                provider,
                FailureKind::Network,
                format!(
                    "{}: cannot set up the HTTP client ({why})",
                    provider.display_name()
                ),
            )
        })
    }

    fn user_agent(&self, provider: ProviderId) -> &str {
        match (&self.user_agent, provider) {
            (Some(agent), _) => agent,
            (None, ProviderId::Duckduckgo) => DUCKDUCKGO_USER_AGENT,
            (None, _) => DEFAULT_USER_AGENT,
        }
    }

    /// Ask `provider` for `query`: wait for the throttle, send, retry 429s as allowed, read the
    /// body up to the cap, and let the provider parse (on a blocking thread: a results page
    /// takes milliseconds, and a stdio session's async work shares one thread) or explain it.
    pub(crate) async fn search(
        &self,
        provider: &Arc<dyn SearchProvider>,
        throttle: &Throttle,
        query: Query<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        let id = provider.id();
        let name = id.display_name();
        let client = self.client(id)?;
        let mut retries = 0;
        loop {
            throttle.wait().await;
            let response = provider
                .request(client, query)
                .header(USER_AGENT, self.user_agent(id))
                .send()
                .await
                .map_err(|e| self.transport_failure(id, e))?;
            let status = response.status();
            if status == StatusCode::TOO_MANY_REQUESTS {
                let asked = retry_after(response.headers(), SystemTime::now());
                let wait = asked.unwrap_or(DEFAULT_429_BACKOFF);
                if retries >= self.max_retries {
                    return Err(Failure::new(
                        id,
                        FailureKind::RateLimited,
                        format!(
                            "{name} 429: rate limited, still after {retries} retries (web.max_retries); the plan's quota may be used up"
                        ),
                    ));
                }
                if wait > self.max_retry_wait {
                    return Err(Failure::new(
                        id,
                        FailureKind::RateLimited,
                        format!(
                            "{name} 429: rate limited; it asks to retry after {} s, longer than toolport waits (web.max_retry_wait = {})",
                            wait.as_secs_f64().ceil(),
                            crate::settings::human(self.max_retry_wait)
                        ),
                    ));
                }
                retries += 1;
                tracing::info!(
                    provider = id.as_str(),
                    wait_ms = wait.as_millis() as u64,
                    retry = retries,
                    "rate limited (429); waiting before retrying"
                );
                // The next turn through the throttle waits this out, as do other queued calls.
                throttle.pause_for(wait);
                continue;
            }
            let body = self.read_body(id, response).await;
            if !status.is_success() {
                // An unreadable or oversized error body still has a status worth explaining.
                return Err(provider.explain_status(status, body.as_deref().unwrap_or_default()));
            }
            let (body, provider, text, count) =
                (body?, provider.clone(), query.text.to_owned(), query.count);
            let parsed = crate::tools::blocking(move || {
                Ok(provider.parse(&body, Query { text: &text, count }))
            })
            .await;
            return parsed.unwrap_or_else(|error| {
                Err(Failure::new(
                    id,
                    FailureKind::Parse,
                    format!("{name}: the answer was not read ({error})"),
                ))
            });
        }
    }

    /// Read the body in chunks, stopping at the cap.
    async fn read_body(
        &self,
        id: ProviderId,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, Failure> {
        let cap = self.max_response_bytes;
        let too_large = || {
            Failure::new(
                id,
                FailureKind::TooLarge,
                format!(
                    "{}: the response is larger than {cap} bytes (web.max_response_bytes); not read further",
                    id.display_name()
                ),
            )
        };
        if response
            .content_length()
            .is_some_and(|len| len > cap as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_failure(id, e))?
        {
            if body.len() + chunk.len() > cap {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn transport_failure(&self, id: ProviderId, error: reqwest::Error) -> Failure {
        let error = error.without_url();
        let name = id.display_name();
        if error.is_timeout() {
            Failure::new(
                id,
                FailureKind::Timeout,
                format!(
                    "{name}: no complete answer within {} (web.timeout)",
                    crate::settings::human(self.timeout)
                ),
            )
        } else if error.is_connect() {
            Failure::new(
                id,
                FailureKind::Network,
                format!("{name}: could not connect ({})", chain(&error)),
            )
        } else {
            Failure::new(
                id,
                FailureKind::Network,
                format!("{name}: network error ({})", chain(&error)),
            )
        }
    }
}

/// An error and its sources, "a: b: c", without repeats.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// The wait a `Retry-After` header asks for: delay-seconds or an HTTP date.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn a_redirect_is_followed_only_on_the_same_host_without_a_downgrade_or_credentials() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        let first = url("https://api.example.com/search?q=x");
        assert!(may_follow(
            &first,
            &url("https://api.example.com/search/"),
            1
        ));
        assert!(may_follow(
            &url("http://s.example/"),
            &url("https://s.example/"),
            1
        ));
        assert!(!may_follow(
            &first,
            &url("https://api.example.com/x"),
            MAX_REDIRECTS + 1
        ));
        assert!(!may_follow(&first, &url("https://elsewhere.example/"), 1));
        assert!(!may_follow(
            &first,
            &url("http://api.example.com/search"),
            1
        ));
        assert!(!may_follow(&first, &url("https://u:p@api.example.com/"), 1));
        assert!(!may_follow(&first, &url("https://u@api.example.com/"), 1));
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        h.insert(RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
    }
}
