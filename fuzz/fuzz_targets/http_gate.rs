//! The HTTP gate's header checks (src/transport/http/gate.rs, `Gate::check`) and the
//! `--allowed-origin` rule parser, through their doors `fuzz_gate_check` (beside
//! `HttpSettings::gate`) and `fuzz_origin_rule`.
//!
//! Input: lines of bytes: `Name: value` (a request header, in order; names and values that
//! are not valid HTTP are dropped, as hyper would), `@origin RULE` (an extra
//! `--allowed-origin` rule), `@noauth` (the gate has no token, as with `--no-auth`). The gate is the default `[http]` one (loopback
//! hosts and origins) with the token `fuzz-token-0123456789abcdef`.
//! Property: no panic; a request passes only with an `Authorization` header whose scheme is
//! `Bearer` (any case) followed by exactly the token (surrounding blanks aside), and with a
//! loopback `Host`; the same headers with the right token first never fail on the token; a
//! parsed origin rule prints as text that parses back to itself.
#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use toolport::transport::{fuzz_gate_check, fuzz_origin_rule as origin_rule};

const TOKEN: &str = "fuzz-token-0123456789abcdef";

/// Whether hyper would deliver this header (a valid name and value).
fn valid_header(name: &[u8], value: &[u8]) -> bool {
    HeaderName::from_bytes(name).is_ok() && HeaderValue::from_bytes(value).is_ok()
}

/// The headers as a request carries them, in order; invalid ones dropped, as hyper would.
fn header_map(headers: &[(&[u8], &[u8])]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        {
            map.append(name, value);
        }
    }
    map
}

fuzz_target!(|data: &[u8]| {
    let mut headers: Vec<(&[u8], &[u8])> = Vec::new();
    let mut origins: Vec<String> = Vec::new();
    let mut no_auth = false;
    for line in data.split(|&b| b == b'\n') {
        if let Some(rule) = line.strip_prefix(b"@origin ") {
            origins.push(String::from_utf8_lossy(rule).into_owned());
        } else if line == b"@noauth" {
            no_auth = true;
        } else if let Some(colon) = line.iter().position(|&b| b == b':') {
            let value = &line[colon + 1..];
            headers.push((&line[..colon], value.strip_prefix(b" ").unwrap_or(value)));
        }
    }
    let origins: Vec<&str> = origins.iter().take(3).map(String::as_str).collect();
    for origin in &origins {
        if let Ok(printed) = origin_rule(origin) {
            assert_eq!(
                origin_rule(&printed).as_deref(),
                Ok(printed.as_str()),
                "{origin:?}"
            );
        }
    }
    let token = (!no_auth).then_some(TOKEN);
    let check = |headers: &[(&[u8], &[u8])]| fuzz_gate_check(token, &origins, &header_map(headers));
    let first = |wanted: &str| {
        headers
            .iter()
            .find(|(n, v)| n.eq_ignore_ascii_case(wanted.as_bytes()) && valid_header(n, v))
            .map(|(_, v)| *v)
    };
    let verdict = check(&headers);
    if verdict.is_ok() {
        let host = first("host").expect("a request without Host passed");
        let host = String::from_utf8_lossy(host).to_ascii_lowercase();
        assert!(
            ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .any(|h| host.trim().starts_with(h)),
            "Host {host:?} passed"
        );
        if token.is_some() {
            let auth = first("authorization").expect("a request without a token passed");
            let (scheme, presented) = auth
                .split_at_checked(7)
                .expect("a short Authorization passed");
            assert!(
                scheme.eq_ignore_ascii_case(b"bearer "),
                "scheme {scheme:?} passed"
            );
            assert_eq!(
                presented.trim_ascii(),
                TOKEN.as_bytes(),
                "a wrong token passed"
            );
        }
    }
    if token.is_some() {
        let right = format!("Bearer {TOKEN}");
        let mut with_token: Vec<(&[u8], &[u8])> = vec![(b"authorization", right.as_bytes())];
        with_token.extend(headers.iter().copied());
        if let Err(rejection) = check(&with_token) {
            assert!(
                !rejection.starts_with("NoToken")
                    && !rejection.starts_with("WrongScheme")
                    && !rejection.starts_with("WrongToken"),
                "the right token was refused: {rejection}"
            );
        }
    }
});
