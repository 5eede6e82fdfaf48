//! The consent page and the operator's secret that approves it.
//!
//! **The page** is server-rendered HTML that needs no script: it names the client (its name,
//! marked as its own claim, its client id and the host its answer goes to), the scopes asked
//! for and granted, and what is withheld (what this server may not grant: `builtin_max_scopes`).
//! It is sent with a strict Content-Security-Policy (nothing loads; the form may post only
//! here and go on only to the client's redirect origin), `X-Frame-Options: DENY` and
//! `frame-ancestors 'none'` (no clickjacking), `Referrer-Policy: no-referrer` and
//! `Cache-Control: no-store`. Every value shown is HTML-escaped.
//!
//! **The secret.** Approval needs what only the operator has: by default a one-time code made
//! for this request and printed on the server's stderr (not through the log: a log file never
//! holds it), [`ONE_TIME_CODE_BYTES`] of randomness, good for [`super::store::PENDING_LIFETIME`]; or the
//! passphrase the operator configured. It is compared in constant time. The form also carries
//! a per-request token bound to the pending authorization (CSRF: a form another site makes
//! cannot name a pending request and its token).
//!
//! **Attempts** are limited three ways: [`MAX_ATTEMPTS`] wrong secrets end the request (the
//! client is told `access_denied`), and a rate per client and an overall rate bound guessing
//! across requests. Each wrong attempt is logged with the client, never with what was typed.

use std::num::NonZeroU32;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use subtle::ConstantTimeEq;

use super::store::Pending;
use super::store::hash;

/// Bytes of randomness in a one-time code: 5 bytes, ten hex characters (40 bits). With
/// [`MAX_ATTEMPTS`] per code and the rates below, a guess succeeds with odds of about
/// 5 in 10^12; short enough to type from a terminal.
pub(crate) const ONE_TIME_CODE_BYTES: usize = 5;
/// Wrong secrets one consent page takes before it is refused.
pub(crate) const MAX_ATTEMPTS: u32 = 5;
/// Attempts per minute for one client id, and for everyone: a person types a few.
/// With replicas, these are counted across all of them.
pub(crate) const ATTEMPTS_PER_CLIENT_PER_MINUTE: NonZeroU32 = NonZeroU32::new(10).unwrap();
pub(crate) const ATTEMPTS_PER_MINUTE: NonZeroU32 = NonZeroU32::new(30).unwrap();
/// The page's Content-Security-Policy, before the redirect origin is added to `form-action`.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// The rates consent attempts are held to.
#[derive(Debug)]
pub(crate) struct AttemptLimits {
    per_client: DefaultKeyedRateLimiter<String>,
    overall: DefaultDirectRateLimiter,
}

impl AttemptLimits {
    pub(crate) fn new() -> Self {
        Self {
            per_client: RateLimiter::keyed(Quota::per_minute(ATTEMPTS_PER_CLIENT_PER_MINUTE)),
            overall: RateLimiter::direct(Quota::per_minute(ATTEMPTS_PER_MINUTE)),
        }
    }

    /// Whether another attempt for `client_id` may be checked now.
    pub(crate) fn admit(&self, client_id: &str) -> bool {
        self.per_client.check_key(&client_id.to_owned()).is_ok() && self.overall.check().is_ok()
    }
}

/// A one-time code as typed, in its normal form: case, spaces and dashes aside (it is shown
/// grouped).
fn one_time_normal(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// What is kept of a one-time code: the hash of its normal form.
pub(crate) fn one_time_code_hash(code: &str) -> String {
    hash(&one_time_normal(code))
}

/// Whether `typed` is the one-time code kept as `kept` ([`one_time_code_hash`]), in constant
/// time over the hashes.
pub(crate) fn one_time_code_matches(kept: &str, typed: &str) -> bool {
    let typed = one_time_normal(typed);
    !typed.is_empty() && bool::from(kept.as_bytes().ct_eq(hash(&typed).as_bytes()))
}

/// Whether `typed` is the passphrase `expected` (surrounding space aside), in constant time
/// over the contents.
pub(crate) fn passphrase_matches(expected: &str, typed: &str) -> bool {
    let (expected, typed) = (expected.trim(), typed.trim());
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(typed.as_bytes()))
}

/// A one-time code as shown: two groups of five.
pub(crate) fn grouped(code: &str) -> String {
    let (a, b) = code.split_at(code.len() / 2);
    format!("{a}-{b}")
}

/// `text` escaped for HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An HTML answer with the page's security headers; `form_to` is the origin the form may go
/// on to (the client's redirect URI's).
fn html(status: StatusCode, body: String, form_to: Option<&str>) -> Response {
    let mut response = (status, Html(body)).into_response();
    let csp = match form_to {
        Some(origin) if !origin.contains([';', ',', '\'', '"', ' ']) => format!("{CSP} {origin}"),
        _ => CSP.to_owned(),
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}code{background:#eee;padding:0 .2em}.warn{color:#a00}li{margin:.2em 0}";

fn document(title: &str, inner: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>{inner}</body></html>",
        escape(title),
        escape(title)
    )
}

/// A page saying why a request cannot go on (shown, never redirected: the redirect URI is not
/// trusted yet, or the request is gone). `message` must hold no secret.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    let inner = format!(
        "<p class=\"warn\">{}</p><p>Nothing was granted. Start the connection again from the client.</p>",
        escape(message)
    );
    html(
        status,
        document("toolport: authorization refused", &inner),
        None,
    )
}

/// The consent page of `pending` (whose id is `id`); `problem` is said above the form (a wrong
/// secret).
pub(crate) fn page(
    id: &str,
    pending: &Pending,
    problem: Option<&str>,
    status: StatusCode,
) -> Response {
    let list = |scopes: &[String]| -> String {
        if scopes.is_empty() {
            return "<li>nothing</li>".to_owned();
        }
        scopes
            .iter()
            .map(|s| format!("<li><code>{}</code></li>", escape(s)))
            .collect()
    };
    let name = pending.client_name.as_deref().unwrap_or("(no name given)");
    let how = match (&pending.one_time_code, &pending.replica) {
        (Some(_), None) => {
            "the one-time code toolport printed on its terminal (stderr) for this request"
                .to_owned()
        }
        (Some(_), Some(replica)) => format!(
            "the one-time code replica <code>{}</code> printed on its terminal (stderr) for this request",
            escape(replica)
        ),
        (None, _) => "the consent passphrase configured for this toolport".to_owned(),
    };
    let problem = problem
        .map(|p| format!("<p class=\"warn\">{}</p>", escape(p)))
        .unwrap_or_default();
    let inner = format!(
        "<p>A client asks to use the tools of this toolport as you.</p>\
<ul><li>Client: <strong>{name}</strong> (its own name for itself)</li>\
<li>Client id: <code>{client_id}</code></li>\
<li>Answer goes to: <code>{host}</code></li>\
<li>Resource: <code>{resource}</code></li></ul>\
<h2>Granted if you approve</h2><ul>{granted}</ul>\
<h2>Withheld</h2><p>This server may not grant these (the operator's <code>builtin_max_scopes</code>):</p><ul>{withheld}</ul>\
{problem}\
<form method=\"post\" action=\"{action}\">\
<input type=\"hidden\" name=\"request\" value=\"{id}\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<p><label>To approve, enter {how}:<br><input name=\"secret\" type=\"password\" autocomplete=\"off\" autofocus required></label></p>\
<p><button name=\"decision\" value=\"approve\">Approve</button> \
<button name=\"decision\" value=\"deny\" formnovalidate>Deny</button></p></form>",
        name = escape(name),
        client_id = escape(&pending.client_id),
        host = escape(&pending.redirect_host),
        resource = escape(&pending.resource),
        granted = list(&pending.granted),
        withheld = list(&pending.withheld),
        action = super::AUTHORIZE_PATH,
        id = escape(id),
        csrf = escape(&pending.csrf),
    );
    html(
        status,
        document("toolport: approve a connection?", &inner),
        Some(&pending.redirect_origin),
    )
}

/// A 429 page: too many attempts.
pub(crate) fn too_many() -> Response {
    let mut response = error_page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many approval attempts; wait a minute and reload this page.",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_check() {
        let kept = one_time_code_hash("a1b2c3d4e5");
        assert_ne!(kept, "a1b2c3d4e5", "only a hash is kept");
        assert!(one_time_code_matches(&kept, "A1B2C-3D4E5"));
        assert!(one_time_code_matches(&kept, " a1b2c 3d4e5 "));
        assert!(!one_time_code_matches(&kept, "a1b2c3d4e6"));
        assert!(!one_time_code_matches(&kept, ""));
        assert!(
            !one_time_code_matches(&one_time_code_hash(""), ""),
            "an empty secret never approves"
        );
        assert!(passphrase_matches(
            "correct horse battery",
            "correct horse battery\n"
        ));
        assert!(!passphrase_matches(
            "correct horse battery",
            "Correct horse battery"
        ));
        assert!(!passphrase_matches("", ""));
        assert_eq!(grouped("a1b2c3d4e5"), "a1b2c-3d4e5");
    }

    #[test]
    fn attempts_are_rate_limited_per_client_and_overall() {
        let limits = AttemptLimits::new();
        let per_client = ATTEMPTS_PER_CLIENT_PER_MINUTE.get();
        for _ in 0..per_client {
            assert!(limits.admit("a"));
        }
        assert!(!limits.admit("a"), "client a is over its rate");
        let mut others = 0;
        while limits.admit(&format!("c{others}")) {
            others += 1;
        }
        assert_eq!(
            per_client + others,
            ATTEMPTS_PER_MINUTE.get(),
            "the overall rate"
        );
    }

    #[test]
    fn everything_shown_is_escaped() {
        assert_eq!(
            escape("<script>\"x\"&'y'"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;"
        );
    }
}
