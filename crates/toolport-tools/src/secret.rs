//! Secrets: the HTTP bearer token and the web search API keys. One small module because this
//! is security-relevant: a [`Secret`] never shows its value in `Debug`, `Display`-like logging
//! or `toolport config` output (both print [`MASK`]); only [`Secret::expose`] gives the value,
//! at the few places that must send or compare it.
//!
//! A URL's userinfo (`user:password@`) is a secret of the same kind: a URL is shown (in an
//! error, a result, a log line, the audit log, `toolport config`) only through
//! [`display_url`] / [`hide_userinfo`], which write it as `scheme://***@host/…`.
//!
//! [`Source`] records where a secret was read from, which is what `toolport config` prints
//! instead of it (a key file as its `*_file` key, anything else as a comment).

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};

use crate::settings::Note;

/// What a secret prints as.
pub const MASK: &str = "********";

/// A credential held masked from the moment it is read (clap, the TOML file, the
/// environment).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself. Call sites: an outgoing request header, the bearer-token comparison,
    /// the one start-up line that shows a generated token to the operator. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    /// For clap: `--token` / `TOOLPORT_TOKEN` are masked from the moment they are parsed.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(MASK)
    }
}

/// Where a secret was read from: what `toolport config` prints in its place, since the secret
/// itself is never printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An environment variable or a flag, named as the operator sets it (`TOOLPORT_BRAVE_API_KEY`).
    Env(&'static str),
    /// A file that holds only the secret: printed as its `*_file` key, which reads it again.
    File(PathBuf),
    /// Written in the config file itself (`api_key = "…"`).
    Inline,
}

impl Source {
    /// What `toolport config` says of the secret `key` (`web.brave.api_key`) read from here,
    /// or `None` for a key file (printed as its key instead). `carry` names where the secret
    /// could be put for a printed config to carry it.
    pub fn note(&self, key: &str, carry: &str) -> Option<Note> {
        let text = match self {
            Self::Env(name) => format!("set from {name} (a secret: never printed)"),
            Self::File(_) => return None,
            Self::Inline => format!(
                "set in the config file (a secret: never printed; put it in {carry} for a printed config to carry it)"
            ),
        };
        Some(Note::new(key, text))
    }

    /// The key file, when the secret was read from one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Env(_) | Self::Inline => None,
        }
    }
}

/// `#[serde(skip_serializing_if)]` of a secret's source printed as its `*_file` key.
pub(crate) fn no_key_file(source: &Option<Source>) -> bool {
    source.as_ref().and_then(Source::file).is_none()
}

/// `#[serde(serialize_with)]` of a secret's source printed as its `*_file` key: the path.
pub(crate) fn serialize_key_file<S: Serializer>(
    source: &Option<Source>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match source.as_ref().and_then(Source::file) {
        Some(path) => path.serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// Argument, field and variable names whose values are secrets (matched case-insensitively as
/// a part of the name: `api_key`, `githubToken`, `DB_PASSWORD` …).
const SECRET_NAME_PARTS: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "authorization",
    "credential",
    "cookie",
];

/// Whether an argument, field or variable name looks like it holds a secret (the audit log
/// redacts its value; `toolport config` does not print an upstream's `env` value under it).
pub fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| lower.contains(part))
}

/// What a URL's userinfo is shown as: `http://***@host/`. Neither the user name nor the
/// password is repeated (a user name is often a token itself, `https://TOKEN@github.com`).
pub(crate) const USERINFO_MASK: &str = "***";

/// `url` as it may be shown anywhere: with its userinfo, if any, written as
/// [`USERINFO_MASK`] (`http://***@host/…`). The one way a URL is formatted for people.
pub fn display_url(url: &url::Url) -> Cow<'_, str> {
    hide_userinfo(url.as_str())
}

/// `text` with the userinfo of every URL in it replaced by [`USERINFO_MASK`] (see
/// [`display_url`]); for text that may hold a URL that is not parsed (a tool argument, a
/// string that is not a valid URL).
pub fn hide_userinfo(text: &str) -> Cow<'_, str> {
    let spans = userinfo_spans(text);
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    let mut copied = 0;
    for span in spans {
        shown.push_str(&text[copied..span.start]);
        shown.push_str(USERINFO_MASK);
        copied = span.end;
    }
    shown.push_str(&text[copied..]);
    Cow::Owned(shown)
}

/// The credentials of every URL in `text`, for scrubbing wherever else they are repeated:
/// its userinfo (`user:password`, without the `@`) and, when there is one, the password
/// alone (an error or a command may repeat it without the URL).
pub fn url_credentials(text: &str) -> impl Iterator<Item = &str> {
    userinfo_spans(text).into_iter().flat_map(move |span| {
        let userinfo = &text[span];
        let password = userinfo.split_once(':').map(|(_, password)| password);
        std::iter::once(userinfo).chain(password)
    })
}

/// Where the userinfo of each URL in `text` lies: after each `://`, everything up to the last
/// `@` of the authority, which ends at `/`, `?`, `#`, whitespace or the end of the text (how
/// URL parsers split it, so `u:p@ss@host` hides `u:p@ss`). Hand-written rather than a regex:
/// it is this one rule, and it runs on every string of every audit record.
fn userinfo_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + "://".len();
        let end = text[start..]
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .map_or(text.len(), |len| start + len);
        if let Some(at) = text[start..end].rfind('@') {
            spans.push(start..start + at);
        }
        from = end;
    }
    spans
}

/// A random hex string of `bytes` bytes from the operating system's CSPRNG: generated bearer
/// tokens and legacy-SSE session ids.
pub fn random_token(bytes: usize) -> Result<String, getrandom::Error> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// `text` with every occurrence of each secret replaced by [`MASK`]: a last line of defence
/// should an upstream service ever echo a credential back in an error.
pub(crate) fn scrub<'a>(text: &str, secrets: impl IntoIterator<Item = &'a Secret>) -> String {
    replace_all(text, secrets.into_iter().map(Secret::expose), MASK)
}

/// `text` with every occurrence of each non-empty pattern replaced by `with`, in the order
/// given (put a pattern before any it contains).
pub fn replace_all<'a>(
    text: &str,
    patterns: impl IntoIterator<Item = &'a str>,
    with: &str,
) -> String {
    patterns
        .into_iter()
        .filter(|p| !p.is_empty())
        .fold(text.to_owned(), |acc, p| {
            if acc.contains(p) {
                acc.replace(p, with)
            } else {
                acc
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_its_value() {
        let secret = Secret::new("hunter2-hunter2-hunter2");
        assert_eq!(format!("{secret:?}"), MASK);
        assert_eq!(
            serde_json::to_value(&secret).ok(),
            Some(serde_json::json!(MASK))
        );
        assert_eq!(secret.expose(), "hunter2-hunter2-hunter2");
    }

    #[test]
    fn scrub_masks_every_occurrence_and_ignores_empty_secrets() {
        let secrets = [Secret::new("k3y"), Secret::new("")];
        assert_eq!(
            scrub("bad key k3y (k3y)", &secrets),
            format!("bad key {MASK} ({MASK})")
        );
    }

    #[test]
    fn a_url_is_shown_without_its_userinfo() {
        let url = |text: &str| url::Url::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        for (given, shown) in [
            (
                "http://user:s3cret@10.0.0.1/a?b#c",
                "http://***@10.0.0.1/a?b#c",
            ),
            (
                "https://token@github.com/o/r.git",
                "https://***@github.com/o/r.git",
            ),
            (
                "https://:pw@example.com:8443/",
                "https://***@example.com:8443/",
            ),
            ("http://u:p%40ss@[::1]:8080/", "http://***@[::1]:8080/"),
            (
                "https://example.com/a@b?c=d@e",
                "https://example.com/a@b?c=d@e",
            ),
        ] {
            assert_eq!(display_url(&url(given)), shown, "{given}");
        }
    }

    #[test]
    fn userinfo_is_hidden_in_any_text() {
        for (given, shown) in [
            (
                "refused http://u:p@h/x and ftp://a@b, not mail@example.com",
                "refused http://***@h/x and ftp://***@b, not mail@example.com",
            ),
            (
                "\"http://u:p@ss@[::1/\" is not a URL",
                "\"http://***@[::1/\" is not a URL",
            ),
            (
                "git clone https://x-token:ghp_abc@github.com/o/r",
                "git clone https://***@github.com/o/r",
            ),
            ("http://***@h/", "http://***@h/"),
            ("no url: a@b://", "no url: a@b://"),
            (
                "https://host?to=http://u:p@h/",
                "https://host?to=http://***@h/",
            ),
        ] {
            assert_eq!(hide_userinfo(given), shown, "{given}");
        }
        assert!(matches!(hide_userinfo("https://h/p"), Cow::Borrowed(_)));
        assert_eq!(
            url_credentials("a http://u:pw@h b https://t@g").collect::<Vec<_>>(),
            ["u:pw", "pw", "t"]
        );
    }

    #[test]
    fn random_tokens_are_hex_of_the_asked_length() {
        let token = random_token(16).unwrap_or_default();
        assert_eq!(token.len(), 32);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    }
}
