//! Redirect URIs: which a client may register, and whether a presented one is registered.
//!
//! **Registering** (RFC 7591, OAuth 2.1 §2.3.1, RFC 8252): an `https` URL (claude.ai's
//! `https://claude.ai/api/mcp/auth_callback`, ChatGPT's), an `http` URL on a loopback host
//! (native clients: mcp-remote, VS Code, the SDKs listen on `127.0.0.1:PORT`), or a
//! private-use scheme with a dot in it (RFC 8252 §7.1, `com.example.app:/cb`). No fragment, no
//! credentials, never `javascript:`/`data:` and the like (not in the list).
//!
//! **Matching** is exact, character for character, with one exception RFC 8252 §7.3 requires:
//! for an `http` loopback URI the port may differ (a native client listens on whatever port is
//! free), everything else still equal. No prefix or pattern matching: that is how open
//! redirects through an authorization server happen.

use url::Url;

use super::super::settings::is_loopback;

/// Longest redirect URI accepted.
pub(crate) const MAX_URI_CHARS: usize = 2000;

/// The reason `text` cannot be registered, or the parsed URL.
pub(crate) fn registrable(text: &str) -> Result<Url, String> {
    if text.len() > MAX_URI_CHARS {
        return Err(format!(
            "a redirect URI is longer than {MAX_URI_CHARS} characters"
        ));
    }
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not a URL ({e})"))?;
    if url.fragment().is_some() {
        return Err(format!(
            "{text:?} has a fragment, which a redirect URI must not"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{text:?} carries credentials"));
    }
    let fits = match url.scheme() {
        "https" => url.host().is_some(),
        "http" => is_loopback(&url),
        scheme => scheme.contains('.'),
    };
    if !fits {
        return Err(format!(
            "{text:?} is not an https URL, an http URL on a loopback host (127.0.0.1, [::1], localhost), or a private-use scheme such as com.example.app:/callback"
        ));
    }
    Ok(url)
}

/// Whether `presented` is one of `registered`.
pub(crate) fn matches(registered: &[String], presented: &str) -> bool {
    if registered.iter().any(|r| r == presented) {
        return true;
    }
    let Ok(presented) = Url::parse(presented) else {
        return false;
    };
    if presented.scheme() != "http" || !is_loopback(&presented) {
        return false;
    }
    registered
        .iter()
        .filter_map(|r| Url::parse(r).ok())
        .any(|mut r| {
            r.scheme() == "http"
                && is_loopback(&r)
                && r.set_port(presented.port()).is_ok()
                && r == presented
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_can_be_registered() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "http://[::1]:9/cb",
            "com.example.app:/oauth",
        ] {
            registrable(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "http://evil.example/cb",
            "javascript:alert(1)",
            "data:text/html,x",
            "https://claude.ai/cb#frag",
            "https://user:pw@claude.ai/cb",
            "not a url",
        ] {
            assert!(registrable(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching_is_exact_but_for_a_loopback_port() {
        let registered = vec![
            "https://claude.ai/api/mcp/auth_callback".to_owned(),
            "http://127.0.0.1:5000/callback".to_owned(),
        ];
        assert!(matches(
            &registered,
            "https://claude.ai/api/mcp/auth_callback"
        ));
        assert!(matches(&registered, "http://127.0.0.1:61234/callback"));
        for bad in [
            "https://claude.ai/api/mcp/auth_callback/",
            "https://claude.ai/api/mcp/auth_callback?x=1",
            "https://claude.ai/api/mcp/auth_callback/../../evil",
            "https://claude.ai:444/api/mcp/auth_callback",
            "https://evil.example/api/mcp/auth_callback",
            "http://127.0.0.1:61234/other",
            "http://localhost:5000/callback",
            "http://127.0.0.2:5000/callback",
        ] {
            assert!(!matches(&registered, bad), "{bad}");
        }
    }
}
