//! Secrets: the HTTP bearer token and the web search API keys. One small module because this
//! is security-relevant: a [`Secret`] never shows its value in `Debug`, `Display`-like logging
//! or `toolport config` output (both print [`MASK`]); only [`Secret::expose`] gives the value,
//! at the few places that must send or compare it.

use serde::{Deserialize, Serialize, Serializer};

/// What a secret prints as.
pub(crate) const MASK: &str = "********";

/// A credential held masked from the moment it is read (clap, the TOML file, the
/// environment).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself. Call sites: an outgoing request header, the bearer-token comparison,
    /// the one start-up line that shows a generated token to the operator. Never log it.
    pub(crate) fn expose(&self) -> &str {
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

/// A random hex string of `bytes` bytes from the operating system's CSPRNG: generated bearer
/// tokens and legacy-SSE session ids.
pub(crate) fn random_token(bytes: usize) -> Result<String, getrandom::Error> {
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
pub(crate) fn replace_all<'a>(
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
    fn random_tokens_are_hex_of_the_asked_length() {
        let token = random_token(16).unwrap_or_default();
        assert_eq!(token.len(), 32);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    }
}
